"""Loading Lark text with lark's own loader, and positions for grammar errors.

lark reports many grammar errors as text; this module turns them into ``GrammarError`` with a
``line``, ``column`` and ``offset`` recovered from the message or from the grammar text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypedDict

import lark
import lark.exceptions

from .._errors import GrammarError
from .._text import line_column, offset_of
from .regex import is_regex_error

__all__ = [
    "Imported",
    "Position",
    "RegexLiteral",
    "bad_regex_error",
    "imported_definition",
    "load_lark",
    "position",
    "position_of_definition",
    "position_of_terminal",
    "position_of_use",
    "regex_literals",
]


def load_lark(
    text: str,
    start: str,
    *,
    import_paths: Sequence[str | Path] = (),
    source: str | None = None,
    regex: bool = False,
    parser: Literal["earley", "lalr"] = "earley",
    postlex: Any = None,
    g_regex_flags: int = 0,
) -> lark.Lark:
    """``lark.Lark(text, parser="earley", lexer="dynamic", regex=regex, g_regex_flags=...)`` (with
    ``parser="lalr"``: lark's contextual lexer and ``postlex``), lark's errors as ``GrammarError``."""
    try:
        return lark.Lark(
            text,
            start=start,
            parser=parser,
            lexer="dynamic" if parser == "earley" else "contextual",
            postlex=postlex,
            regex=regex,
            g_regex_flags=g_regex_flags,
            import_paths=[str(p) for p in import_paths],
            source_path=source,
        )
    except lark.exceptions.UnexpectedInput as exc:
        expected = tuple(sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()))
        raise GrammarError(
            f"syntax error in grammar: unexpected {_describe_unexpected(exc)}",
            line=exc.line if exc.line != -1 else None,
            column=exc.column if exc.column != -1 else None,
            offset=exc.pos_in_stream,
            expected=expected,
            source=source,
        ) from None
    except lark.exceptions.GrammarError as exc:
        raise _lark_grammar_error(exc, text, source) from None
    except lark.exceptions.LarkError as exc:
        raise GrammarError(f"invalid grammar: {exc}", source=source) from None
    except FileNotFoundError as exc:
        raise GrammarError(
            f"%import: grammar file {Path(exc.filename or '?').name!r} not found "
            f"(searched the import paths {[str(p) for p in import_paths]})",
            construct="%import",
            source=source,
        ) from None
    except Exception as exc:
        if not is_regex_error(exc):
            raise
        raise bad_regex_error(exc, text, source) from None


def bad_regex_error(exc: BaseException, text: str, source: str | None) -> GrammarError:
    """The regex lark could not compile, found in the text (lark does not say which): the first
    ``/.../`` literal that Python's ``re`` refuses with the same message."""
    advice = ""
    if "bad escape \\p" in str(exc) or "bad escape \\P" in str(exc):
        advice = "; lark reads Unicode properties (\\p{...}) only with regex=True: pass regex=True"
    literals = regex_literals(text)
    for wanted in (str(exc), None):
        for literal in literals:
            try:
                re.compile(literal.regex)
            except re.error as own:
                if wanted is None or str(own) == wanted:
                    return GrammarError(
                        f"invalid regex: {own}{advice}",
                        construct=literal.text,
                        **position(literal.start, text),
                        source=source,
                    )
    return GrammarError(f"invalid regex: {exc}{advice}", source=source)


class RegexLiteral(NamedTuple):
    """A ``/.../flags`` literal of Lark text: where it starts, its text, and the regex lark
    compiles from it."""

    start: int
    text: str
    regex: str


# lark's own tokens for its grammar text (lark/load_grammar.py): strings and comments are read
# past, so a slash inside them starts no regex.
_GRAMMAR_TOKENS = re.compile(
    r'(?P<string>"(?:\\"|\\\\|[^"\n])*?"i?)'
    r"|(?P<comment>//[^\n]*|#[^\n]*)"
    r"|(?P<regex>/(?!/)(?:\\/|\\\\|[^/])*?/(?P<flags>[imslux]*))"
)


def regex_literals(text: str) -> list[RegexLiteral]:
    """The regex literals of Lark text, in order."""
    out = []
    for match in _GRAMMAR_TOKENS.finditer(text):
        if match.group("regex"):
            flags = match.group("flags")
            body = match.group("regex")[1 : -len(flags) - 1 if flags else -1]
            out.append(RegexLiteral(match.start(), match.group("regex"), f"(?{flags}:{body})" if flags else body))
    return out


class Position(TypedDict):
    """``GrammarError``'s position keywords: all ``None`` when the place is unknown."""

    line: int | None
    column: int | None
    offset: int | None


def position_of_definition(name: str, text: str, last: bool) -> Position:
    """Where ``name`` is defined (its last definition when ``last``)."""
    found = list(re.finditer(rf"(?m)^[ \t]*[?!]?({re.escape(name)})\b(?:\{{[^}}]*\}})?(?:\.-?\d+)?[ \t]*:", text))
    if not found:
        return _position_of_name(name, text)
    return position((found[-1] if last else found[0]).start(1), text)


def _position_of_name(name: str, text: str) -> Position:
    match = re.search(rf"(?m)^[ \t]*{re.escape(name)}\b", text)
    return position(match.start() + len(match.group()) - len(name) if match else None, text)


def position_of_use(name: str, text: str) -> Position:
    """Where ``name`` is first used in a rule body (after a colon on its line, or a ``|``)."""
    for match in re.finditer(rf"(?<![\w\"'/.]){re.escape(name)}\b", text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[line_start : match.start()]
        if ":" in before or before.strip().startswith("|"):
            return position(match.start(), text)
    return _position_of_name(name, text)


def position_of_terminal(
    name: str, regex_value: str, text: str, faulty: Callable[[str], bool] | None = None
) -> tuple[Position, str | None]:
    """Where a terminal's regex is written, and that literal's text: the first literal of its
    definition (or anywhere, for lark's anonymous ``__`` terminals) whose regex is ``faulty``,
    else the one lark read ``regex_value`` from, else its definition (and ``None``)."""
    literals = regex_literals(text)
    if not name.startswith("__"):
        start, end = _definition_span(name, text)
        literals = [lit for lit in literals if start <= lit.start < end]
    found = next((lit for lit in literals if faulty is not None and _is_faulty(faulty, lit.regex)), None)
    key = _loose(regex_value)
    found = found or next((lit for lit in literals if _loose(lit.regex) == key), None)
    if found is not None:
        return position(found.start, text), found.text
    return position_of_definition(name, text, last=False), None


def _is_faulty(faulty: Callable[[str], bool], regex: str) -> bool:
    try:
        return faulty(regex)
    except Exception as exc:  # a literal that is no regex on its own: not the one
        if not is_regex_error(exc):
            raise
        return False


def _loose(regex: str) -> str:
    """A regex's text without escapes and control characters: the same for a literal as
    written and as lark reads it (``\\n`` or a newline; ``\\/`` or ``/``)."""
    body = re.sub(r"^\(\?[imslux]+:(.*)\)$", r"\1", regex, flags=re.S)
    return re.sub(r"\\.|[\x00-\x1f/]", "", body)


def _definition_span(name: str, text: str) -> tuple[int, int]:
    """From a definition of ``name`` to the next line that starts another statement."""
    where = position_of_definition(name, text, last=False)["offset"]
    if where is None:
        return 0, len(text)
    following = re.compile(r"(?m)^(?=[^\s|])").search(text, text.find("\n", where) + 1)
    return where, following.start() if following and text.find("\n", where) >= 0 else len(text)


def position(offset: int | None, text: str) -> Position:
    if offset is None:
        return {"line": None, "column": None, "offset": None}
    line, column = line_column(text, offset)
    return {"line": line, "column": column, "offset": offset}


def _describe_unexpected(exc: lark.exceptions.UnexpectedInput) -> str:
    token = getattr(exc, "token", None)
    if token is not None:
        return f"{token!r}" if str(token) else "end of grammar"
    char = getattr(exc, "char", None)
    if char is not None:
        return f"character {char!r}"
    return "end of grammar"


def _lark_grammar_error(exc: Exception, text: str, source: str | None) -> GrammarError:
    message = str(exc)
    # lark reports most grammar errors as text; recover a position where it names one.
    match = re.search(r"[Ll]ine (\d+),? col(?:umn)? (\d+)", message)
    if match:
        line, column = int(match.group(1)), int(match.group(2))
        offset = offset_of(text, line, column)
        head = message.splitlines()[0]
        head = re.sub(r",? at line \d+,? col(?:umn)? \d+.*$", "", head)
        head = re.sub(r" at line \d+ column \d+ in \S+: *$", "", head)
        found = text[offset : offset + 1]
        construct = repr(found) if found and found != "\n" else "end of line"
        return GrammarError(
            f"syntax error in grammar: {head} (at {construct})",
            line=line,
            column=column,
            offset=offset,
            construct=construct,
            source=source,
        )
    if "collision" in message:
        return _collision_error(message, text, source)
    if message.startswith("Empty terminals"):
        empty = re.search(r"""(?<![\\\w])(""|'')""", text)
        where = position(empty.start(1) if empty else None, text)
        return GrammarError(message.splitlines()[0], construct='""', source=source, **where)
    name = re.search(r"(?:Terminal|Rule|Template|terminal|rule)s? '?(?!are\b)([A-Za-z_][\w]*)'?", message)
    if name and "used but not defined" in message:
        where = position_of_use(name.group(1), text)
    elif name:
        where = position_of_definition(name.group(1), text, "more than once" in message)
    else:
        where = position(None, text)
    named = name.group(1) if name else None
    if "%declare" in message or "declared" in message:
        named = named or "%declare"
    return GrammarError(message.splitlines()[0], construct=named, source=source, **where)


def _collision_error(message: str, text: str, source: str | None) -> GrammarError:
    """lark's LALR(1) conflict, at the definition of the first rule it names."""
    # lark lists the rules in no fixed order: in the grammar's, the first one defined first.
    rules = sorted(
        re.findall(r"<(\w+) :([^>]*)>", message),
        key=lambda rule: (position_of_definition(rule[0], text, False)["offset"] or 0, rule),
    )
    head = message.splitlines()[0].rstrip(": ")
    listed = "; ".join(f"{origin} :{body}" for origin, body in rules)
    where = position_of_definition(rules[0][0], text, False) if rules else position(None, text)
    return GrammarError(
        f"parser='lalr': lark's LALR(1) table has a conflict: {head}" + (f" ({listed})" if listed else ""),
        construct=rules[0][0] if rules else None,
        source=source,
        **where,
    )


_IMPORT = re.compile(
    r"(?m)^[ \t]*%import[ \t]+(\.?[\w.]+?)(?:\.(\w+)(?:[ \t]*->[ \t]*(\w+))?|[ \t]*\(([^)]*)\))[ \t]*$"
)


class Imported(NamedTuple):
    """Where a terminal of an imported grammar is defined: its name there, that file's text and path."""

    name: str
    text: str
    path: Path


def imported_definition(name: str, text: str, folders: Sequence[str | Path]) -> Imported | None:
    """The grammar file an ``%import`` of ``text`` takes terminal ``name`` from (as lark names it:
    its alias, or ``module__NAME`` for what an imported terminal needs), searched for in
    ``folders`` (a relative ``.module`` in the first) and lark's own grammars; ``None`` if no
    import gives it."""
    for match in _IMPORT.finditer(text):
        module, single, alias, listed = match.groups()
        stem = module.rsplit(".", 1)[-1]
        if single is not None and name == (alias or single):
            original = single
        elif listed is not None and name in re.split(r"[\s,]+", listed):
            original = name
        elif name.startswith(f"{stem}__"):
            original = name[len(stem) + 2 :]
        else:
            continue
        relative = module.startswith(".")
        tail = Path(*module.lstrip(".").split(".")).with_suffix(".lark")
        roots = list(folders)[:1] if relative else [*folders, Path(lark.__file__).parent / "grammars"]
        for root in roots:
            path = Path(root) / tail
            if path.is_file():
                found = path.read_text(encoding="utf-8")
                return imported_definition(original, found, [path.parent]) or Imported(original, found, path)
    return None
