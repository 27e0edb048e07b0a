"""Grammars: load a Lark grammar with lark's own loader and compile it for llguidance.

A grammar written for the ``lark`` package means what Lark says it means: the text is loaded by
``lark.Lark`` (so ``%import``, templates, priorities, aliases, ``?``/``!``/``_`` rules, ``"kw"i``,
regex flags and ``%ignore`` all behave as in Lark), and the resolved rules and terminals are then
written out in llguidance's Lark dialect, which runs the incremental Earley matcher. Anything the
matcher cannot honour exactly raises ``GrammarError`` naming the construct and its position.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import lark
import lark.exceptions
import llguidance as llg
from lark.grammar import NonTerminal, Terminal as LarkTerminal
from lark.lexer import PatternRE, PatternStr

from ._errors import GrammarError

if TYPE_CHECKING:
    from ._checker import Checker

__all__ = ["Grammar", "Terminal"]

_BUILTIN_PACKAGE = "grammar_guide.grammars"
_BUILTIN_DIR = Path(__file__).resolve().parent.parent / "grammars"


@dataclass(frozen=True)
class Terminal:
    """A grammar terminal: its Lark ``name``, and its ``literal`` or its ``regex`` (exactly one set)."""

    name: str
    literal: str | None = None
    regex: str | None = None
    case_insensitive: bool = False

    @property
    def pattern(self) -> str:
        """The terminal as a regular expression (a literal is escaped)."""
        if self.regex is not None:
            return self.regex
        escaped = re.escape(self.literal or "")
        return f"(?i:{escaped})" if self.case_insensitive else escaped

    def __str__(self) -> str:
        if self.literal is not None:
            return json.dumps(self.literal) + ("i" if self.case_insensitive else "")
        return f"/{self.regex}/"


class Grammar:
    """A context-free grammar, ready for checking and constrained decoding.

    Build one with ``from_lark``, ``from_file``, ``builtin``, ``from_regex`` or
    ``from_json_schema``. ``checker()`` gives an incremental byte-exact checker;
    ``llguidance_grammar`` is the compiled form that token masks are computed from.
    """

    def __init__(
        self,
        llguidance_grammar: str,
        *,
        name: str,
        lark_parser: lark.Lark | None = None,
        terminals: Mapping[str, Terminal] | None = None,
        lark_source: str | None = None,
        captured_grammar: str | None = None,
    ) -> None:
        self.name = name
        self.llguidance_grammar = llguidance_grammar
        #: The same language with each terminal captured under its Lark name (``None`` for
        #: grammars without named terminals): ``LLMatcher.get_captures()`` then lists every
        #: terminal as it completes, which tells where whole terminals end.
        self.captured_grammar = captured_grammar
        self.lark_source = lark_source
        self.terminals: Mapping[str, Terminal] = dict(terminals or {})
        self._lark = lark_parser
        from ._checker import _ByteMatcherFactory

        self._factory = _ByteMatcherFactory(llguidance_grammar, name)

    def __repr__(self) -> str:
        return f"Grammar({self.name!r})"

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_lark(
        cls,
        text: str,
        start: str = "start",
        *,
        name: str | None = None,
        import_paths: Sequence[str | Path] = (),
        source: str | None = None,
    ) -> Grammar:
        """Load a Lark grammar (the ``lark`` package's syntax and meaning).

        ``import_paths`` are searched by ``%import`` of other grammar files. Raises
        ``GrammarError`` for syntax errors and for constructs the matcher cannot honour.
        """
        try:
            parser = lark.Lark(
                text,
                start=start,
                parser="earley",
                lexer="dynamic",
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
        except (lark.exceptions.LarkError, re.error) as exc:
            raise GrammarError(f"invalid grammar: {exc}", source=source) from None
        llg_text, captured, terminals = _compile_lark(parser, text, source)
        _validate(llg_text, source, text)
        return cls(
            llg_text,
            captured_grammar=captured,
            name=name or source or "lark",
            lark_parser=parser,
            terminals=terminals,
            lark_source=text,
        )

    @classmethod
    def from_file(cls, path: str | Path, start: str = "start") -> Grammar:
        """Load a ``.lark`` file; ``%import`` of sibling grammar files works."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        return cls.from_lark(
            text, start, name=path.stem, import_paths=[path.parent], source=str(path)
        )

    @classmethod
    def builtin(cls, name: str) -> Grammar:
        """A grammar shipped with grammar-guide: ``Grammar.builtin("sqlite")``, ``("json")``."""
        return _builtin(name)

    @staticmethod
    def builtin_names() -> list[str]:
        """Names accepted by ``builtin``."""
        return sorted(p.name[: -len(".lark")] for p in _builtin_files() if p.name.endswith(".lark"))

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """A grammar whose language is the full matches of a regular expression."""
        grammar = llg.LLMatcher.grammar_from_regex(pattern)
        _validate(grammar, None, None)
        return cls(grammar, name=f"regex {pattern!r}", terminals={"REGEX": Terminal("REGEX", regex=pattern)})

    @classmethod
    def from_json_schema(cls, schema: Mapping[str, Any] | str) -> Grammar:
        """JSON documents valid under a JSON Schema (llguidance's JSON Schema compiler)."""
        try:
            grammar = llg.LLMatcher.grammar_from_json_schema(
                schema if isinstance(schema, str) else json.dumps(schema)
            )
        except ValueError as exc:
            raise GrammarError(f"invalid JSON schema: {exc}") from None
        _validate(grammar, None, None)
        return cls(grammar, name="json-schema")

    # -- use --------------------------------------------------------------------------------

    def checker(self) -> Checker:
        """A new incremental checker positioned at the start of the text."""
        from ._checker import Checker

        return Checker(self)

    def valid_prefix(self, text: str) -> int:
        """Length, in characters, of the longest prefix of ``text`` that some valid text starts with."""
        checker = self.checker()
        return checker.feed(text)

    def is_complete(self, text: str) -> bool:
        """Whether ``text`` is a complete, valid text of the grammar."""
        checker = self.checker()
        return checker.feed(text) == len(text) and checker.is_complete

    def parse(self, text: str) -> lark.Tree:
        """Parse complete text with the ``lark`` package (Earley, dynamic lexer) into a Lark tree."""
        if self._lark is None:
            raise GrammarError(f"{self.name} is not a Lark grammar; it has no parse tree")
        return self._lark.parse(text)

    @property
    def lark_parser(self) -> lark.Lark | None:
        """The ``lark.Lark`` reference parser, for grammars loaded from Lark text."""
        return self._lark


# -- compiling Lark's resolved grammar into llguidance's dialect -------------------------------


def _compile_lark(parser: lark.Lark, text: str, source: str | None) -> tuple[str, str, dict[str, Terminal]]:
    """Write Lark's resolved grammar in llguidance's dialect.

    Returns the grammar, the same grammar with every terminal occurrence captured under its Lark
    name (so a matcher reports each terminal as it completes), and the terminals by Lark name.
    """
    rule_names: dict[str, str] = {}
    term_names: dict[str, str] = {}

    def rule_name(name: str) -> str:
        if name not in rule_names:
            base = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_") or "r"
            rule_names[name] = f"r{len(rule_names)}_{base}"
        return rule_names[name]

    def term_name(name: str) -> str:
        if name not in term_names:
            base = re.sub(r"[^A-Z0-9_]", "_", name.upper()).strip("_") or "T"
            term_names[name] = f"T{len(term_names)}_{base}"
        return term_names[name]

    terminals: dict[str, Terminal] = {}
    lines: list[str] = []
    for tdef in parser.terminals:
        terminal, regex = _terminal(tdef, text, source)
        terminals[tdef.name] = terminal
        lines.append(f"{term_name(tdef.name)}: {_lark_regex(regex)}")

    start = parser.options.start[0]
    by_origin: dict[str, list[str]] = {}
    for rule in parser.rules:
        symbols = []
        for sym in rule.expansion:
            if isinstance(sym, LarkTerminal):
                if sym.name not in terminals:
                    raise GrammarError(
                        f"terminal {sym.name} has no definition",
                        construct=sym.name,
                        **_position_of_name(sym.name, text),
                        source=source,
                    )
                symbols.append(term_name(sym.name))
            else:
                assert isinstance(sym, NonTerminal)
                symbols.append(rule_name(sym.name))
        by_origin.setdefault(rule.origin.name, []).append(" ".join(symbols) or '""')
    if start not in by_origin:
        raise GrammarError(f"start rule {start!r} is not defined", source=source)

    ignore = list(parser.ignore_tokens)
    header = []
    if ignore:
        # Lark skips ignored text before the first and after the last token too.
        header.append('%llguidance {"allow_initial_skip": true}')
    body = [f"{rule_name(origin)}: {' | '.join(alts)}" for origin, alts in by_origin.items()]
    captured_body = [
        f"{rule_name(origin)}: {' | '.join(_capture_refs(alt, term_names) for alt in alts)}"
        for origin, alts in by_origin.items()
    ]
    captured_body += [
        f'gg_cap_{compiled.lower()}[capture="{lark_name}"]: {compiled}' for lark_name, compiled in term_names.items()
    ]
    trailing = []
    for i, name in enumerate(ignore):
        if name not in terminals:
            raise GrammarError(f"%ignore names an undefined terminal {name}", source=source)
        body.append(f"%ignore {term_name(name)}")
        # The matcher stops skipping once no token can follow; Lark still skips ignored text
        # after the last token, so spell that trailing text out as its own tokens.
        trailing.append(f"{term_name(name)}_TRAILING")
        lines.append(f"{trailing[-1]}: {_lark_regex(_terminal(_tdef(parser, name), text, source)[1])}")
    if trailing:
        header.append(f"start: {rule_name(start)} gg_trailing")
        body.append("gg_trailing: \"\" | " + " | ".join(f"gg_trailing {t}" for t in trailing))
    else:
        header.append(f"start: {rule_name(start)}")
    tail = body[len(by_origin):]
    plain = "\n".join(header + body + lines) + "\n"
    captured = "\n".join(header + captured_body + tail + lines) + "\n"
    return plain, captured, terminals


def _capture_refs(alternative: str, term_names: Mapping[str, str]) -> str:
    compiled = set(term_names.values())
    return " ".join(f"gg_cap_{sym.lower()}" if sym in compiled else sym for sym in alternative.split())


def _tdef(parser: lark.Lark, name: str) -> Any:
    return next(t for t in parser.terminals if t.name == name)


def _terminal(tdef: Any, text: str, source: str | None) -> tuple[Terminal, str]:
    pattern = tdef.pattern
    if isinstance(pattern, PatternStr):
        flags = set(pattern.flags)
        ci = "i" in flags
        escaped = _escape_literal(pattern.value)
        regex = f"(?i:{escaped})" if ci else escaped
        return Terminal(tdef.name, literal=pattern.value, case_insensitive=ci), regex
    if isinstance(pattern, PatternRE):
        regex = pattern.to_regexp()
        problem = _unsupported_regex_feature(pattern.value)
        if problem:
            raise GrammarError(
                f"terminal {tdef.name} uses {problem}, which the incremental matcher does not support",
                construct=f"/{pattern.value}/",
                **_position_of_terminal(tdef.name, pattern.value, text),
                source=source,
            )
        return Terminal(tdef.name, regex=regex), regex
    raise GrammarError(  # pragma: no cover - lark has only these two
        f"terminal {tdef.name} has an unknown pattern type", construct=tdef.name, source=source
    )


_REGEX_META = set("\\.^$|?*+()[]{}")


def _escape_literal(value: str) -> str:
    out = []
    for ch in value:
        if ch in _REGEX_META:
            out.append("\\" + ch)
        elif ch.isprintable() and ch != " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{{{ord(ch):x}}}")
    return "".join(out)


def _lark_regex(regex: str) -> str:
    # Python's str regexes are Unicode-aware (\d, \w, \s), like the matcher's by default.
    # lark has already turned escapes such as \x00 into the characters themselves: spell
    # control characters out again so the grammar text stays plain.
    regex = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", regex)
    return "/" + llg.regex_to_lark(regex, "") + "/"


_UNSUPPORTED_REGEX = [
    (re.compile(r"\(\?<?[=!]"), "a look-around assertion"),
    (re.compile(r"\\[1-9]|\(\?P="), "a back-reference"),
    (re.compile(r"\(\?\("), "a conditional group"),
    (re.compile(r"(?<!\\)(?:\\\\)*\\[ZzAGb]"), "an anchor (\\A, \\Z, \\b, \\G)"),
    (re.compile(r"[*+?}][+]"), "a possessive quantifier"),
    (re.compile(r"\(\?>"), "an atomic group"),
]


def _unsupported_regex_feature(regex: str) -> str | None:
    # Strip escaped backslashes and character classes roughly before looking for constructs.
    for pattern, description in _UNSUPPORTED_REGEX:
        if pattern.search(regex):
            return description
    return None


def _position_of_name(name: str, text: str) -> dict[str, int | None]:
    match = re.search(rf"(?m)^[ \t]*{re.escape(name)}\b", text)
    return _position(match.start() + len(match.group()) - len(name) if match else None, text)


def _position_of_terminal(name: str, regex_value: str, text: str) -> dict[str, int | None]:
    index = text.find("/" + regex_value + "/")
    if index < 0:
        index = text.find(regex_value)
    if index >= 0:
        return _position(index, text)
    return _position_of_name(name, text)


def _position(offset: int | None, text: str) -> dict[str, int | None]:
    if offset is None:
        return {"line": None, "column": None, "offset": None}
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
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
    match = re.search(r"[Ll]ine (\d+)(?:, column (\d+))?", message)
    if match:
        return GrammarError(
            message.splitlines()[0],
            line=int(match.group(1)),
            column=int(match.group(2)) if match.group(2) else None,
            source=source,
        )
    name = re.search(r"(?:Terminal|Rule|Template|terminal|rule)s? '?([A-Za-z_][\w]*)'?", message)
    where = _position_of_name(name.group(1), text) if name else _position(None, text)
    construct = name.group(1) if name else None
    if "%declare" in message or "declared" in message:
        construct = construct or "%declare"
    return GrammarError(message.splitlines()[0], construct=construct, source=source, **where)


def _validate(grammar: str, source: str | None, lark_text: str | None) -> None:
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        raise GrammarError(
            f"the matcher rejected the grammar: {messages[0].strip()}",
            source=source,
        )


# -- builtins -----------------------------------------------------------------------------------


def _builtin_files() -> Iterable[Any]:
    try:
        return list(resources.files(_BUILTIN_PACKAGE).iterdir())
    except (ModuleNotFoundError, FileNotFoundError):
        return list(_BUILTIN_DIR.iterdir()) if _BUILTIN_DIR.is_dir() else []


@functools.lru_cache(maxsize=None)
def _builtin(name: str) -> Grammar:
    for entry in _builtin_files():
        if entry.name == f"{name}.lark":
            with resources.as_file(entry) as path:
                return Grammar.from_file(path)
    names = ", ".join(Grammar.builtin_names()) or "none"
    raise GrammarError(f"no builtin grammar named {name!r} (available: {names})")
