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

__all__ = ["Grammar", "Rewrite", "Terminal"]

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

    @property
    def display(self) -> str:
        """How to name the terminal to a person: a literal quoted (a case-insensitive keyword in
        capitals), a pattern by its name."""
        if self.literal is not None:
            literal = self.literal.upper() if self.case_insensitive else self.literal
            return json.dumps(literal, ensure_ascii=False)
        if self.name.startswith("__"):  # lark's name for an anonymous pattern says nothing
            return f"/{self.regex}/"
        return self.name

    def __str__(self) -> str:
        if self.literal is not None:
            return json.dumps(self.literal) + ("i" if self.case_insensitive else "")
        return f"/{self.regex}/"


@dataclass(frozen=True)
class Rewrite:
    """A slip that drafts often make in this grammar's language, and what they meant by it.

    ``pattern`` is a Python regular expression, ``replacement`` its ``re.sub`` template, ``reason``
    a few words for the trace: ``Rewrite(r"(\\w+)::(\\w+)", r"CAST(\\1 AS \\2)", "PostgreSQL
    cast")``. A rewrite is one more repair candidate at a violation: it is used when the match
    spans the violation and the checker then reads the draft's text on.
    """

    pattern: str
    replacement: str
    reason: str = ""

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise GrammarError(f"rewrite pattern {self.pattern!r}: {exc}", offset=exc.pos) from None

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


def _load_rewrites(path: Path) -> tuple[Rewrite, ...]:
    """The rewrites in a ``<grammar>.rewrites.json`` file: a list of objects with ``pattern``,
    ``replacement`` and ``reason``."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        return tuple(Rewrite(e["pattern"], e["replacement"], e.get("reason", "")) for e in entries)
    except json.JSONDecodeError as exc:
        raise GrammarError(f"bad rewrites file: {exc.msg}", line=exc.lineno, column=exc.colno,
                           source=str(path)) from None
    except (KeyError, TypeError) as exc:
        raise GrammarError(f"bad rewrites file: each entry needs 'pattern' and 'replacement' ({exc})",
                           source=str(path)) from None


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
        rewrites: Sequence[Rewrite] = (),
    ) -> None:
        self.name = name
        #: Known slips of drafts in this language and what they meant (see ``Rewrite``).
        self.rewrites: tuple[Rewrite, ...] = tuple(rewrites)
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
        rewrites: Sequence[Rewrite] = (),
    ) -> Grammar:
        """Load a Lark grammar (the ``lark`` package's syntax and meaning).

        ``import_paths`` are searched by ``%import`` of other grammar files; ``rewrites`` are
        repairs for slips drafts often make in this language (see ``Rewrite``). Raises
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
            if not _is_regex_error(exc):
                raise
            raise _bad_regex_error(exc, text, source) from None
        llg_text, captured, terminals = _compile_lark(parser, text, source)
        _validate(llg_text, source, text)
        return cls(
            llg_text,
            captured_grammar=captured,
            name=name or source or "lark",
            lark_parser=parser,
            terminals=terminals,
            lark_source=text,
            rewrites=rewrites,
        )

    @classmethod
    def from_file(cls, path: str | Path, start: str = "start") -> Grammar:
        """Load a ``.lark`` file; ``%import`` of sibling grammar files works. A sibling
        ``<name>.rewrites.json`` file gives the grammar's rewrites (see ``Rewrite``)."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        sidecar = path.with_name(f"{path.stem}.rewrites.json")
        rewrites = _load_rewrites(sidecar) if sidecar.is_file() else ()
        return cls.from_lark(
            text, start, name=path.stem, import_paths=[path.parent], source=str(path), rewrites=rewrites
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
            if isinstance(schema, str):
                json.loads(schema)
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

    @functools.cached_property
    def ignored_start_bytes(self) -> frozenset[int]:
        """The bytes that can begin text the grammar ignores (``%ignore``: white space, comments)."""
        if self._lark is None:
            return frozenset()
        starts: set[int] = set()
        for name in self._lark.ignore_tokens:
            terminal = self.terminals.get(name)
            if terminal is not None:
                starts |= Grammar.from_regex(terminal.pattern).checker().allowed_bytes()
        return frozenset(starts)

    @functools.cached_property
    def guard_terminals(self) -> frozenset[str]:
        """Names of terminals that lead nowhere: those matching no text, and those only ever
        followed by one (a dead-end guard ``_WORD _NEVER``). Diagnostics do not list them."""
        if self._lark is None:
            return frozenset()
        void = {name for name, t in self.terminals.items() if self.is_void(t)}
        followers: dict[str, set[bool]] = {}
        for rule in self._lark.rules:
            symbols = list(rule.expansion)
            for i, sym in enumerate(symbols):
                if isinstance(sym, LarkTerminal):
                    nxt = symbols[i + 1] if i + 1 < len(symbols) else None
                    followers.setdefault(sym.name, set()).add(
                        isinstance(nxt, LarkTerminal) and nxt.name in void
                    )
        return frozenset(void | {name for name, seen in followers.items() if seen == {True}})

    def is_void(self, terminal: Terminal) -> bool:
        """Whether ``terminal`` matches no text at all (a dead-end guard such as ``/[^\\s\\S]/``)."""
        if terminal.literal is not None:
            return False
        return _regex_is_void(terminal.regex or "")

    def to_plain_lark(self) -> str:
        """This grammar as plain Lark: the subset OpenAI's custom grammar tools and llguidance
        accept (templates expanded, imports inlined, priorities dropped; start rule ``start``).
        Raises ``GrammarError`` with the construct's line and column for what it cannot say."""
        from ._export import to_plain_lark

        return to_plain_lark(self)

    def to_gbnf(self) -> str:
        """This grammar as GBNF, for llama.cpp's server, Fireworks and xgrammar. Raises
        ``GrammarError`` with the construct's line and column for what GBNF cannot say."""
        from ._export import to_gbnf

        return to_gbnf(self)

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
    compiled_terms: dict[str, str] = {}
    for tdef in parser.terminals:
        terminal, expression = _terminal(tdef, text, source)
        terminals[tdef.name] = terminal
        compiled_terms[tdef.name] = expression
        lines.append(f"{term_name(tdef.name)}: {expression}")

    start = parser.options.start[0]
    by_origin: dict[str, list[str]] = {}
    for rule in parser.rules:
        symbols = []
        for sym in rule.expansion:
            if isinstance(sym, LarkTerminal):
                if sym.name not in terminals:
                    declared = re.search(rf"(?m)^[ \t]*%declare\b[^\n]*?\b({re.escape(sym.name)})\b", text)
                    if declared:
                        raise GrammarError(
                            f"terminal {sym.name} is %declare'd: it is produced by a post-lexer or "
                            "lexer callback, which the incremental matcher cannot run",
                            construct=f"%declare {sym.name}",
                            **_position(declared.start(1), text),
                            source=source,
                        )
                    raise GrammarError(
                        f"terminal {sym.name} has no definition",
                        construct=sym.name,
                        **_position_of_use(sym.name, text),
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
        lines.append(f"{trailing[-1]}: {compiled_terms[name]}")
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
    """The terminal, and its definition in llguidance's dialect (the text after ``NAME:``)."""
    pattern = tdef.pattern
    if isinstance(pattern, PatternStr):
        flags = set(pattern.flags)
        ci = "i" in flags
        escaped = _escape_literal(pattern.value)
        regex = f"(?i:{escaped})" if ci else escaped
        return Terminal(tdef.name, literal=pattern.value, case_insensitive=ci), _lark_regex(regex)
    if isinstance(pattern, PatternRE):
        value = pattern.value
        flags = set(pattern.flags)
        if "x" in flags:
            # Newlines reach the matcher as \\x0a escapes, which end no verbose-mode comment:
            # remove comments and insignificant whitespace here.
            value = _strip_verbose(value)
            flags.discard("x")
        value = _KNOWN_EQUIVALENTS.get(value, value)
        regex = f"(?{''.join(sorted(flags))}:{value})" if flags else value
        try:
            problem, lazy = _regex_features(regex)
        except Exception as exc:  # the regex does not compile: lark would have failed first
            if not _is_regex_error(exc):
                raise
            problem, lazy = f"an invalid regex ({exc})", False
        if problem:
            raise GrammarError(
                f"terminal {tdef.name} uses {problem}, which the incremental matcher cannot honour "
                "exactly",
                construct=f"/{pattern.value}/",
                **_position_of_terminal(tdef.name, pattern.value, text),
                source=source,
            )
        expression = _lark_regex(regex)
        if lazy:
            # Python's re returns the shortest match of this pattern (see _regex_features): the
            # strings of the language none of whose proper prefixes is in the language.
            expression = f"{expression} & ~{_lark_regex(f'(?:{regex})(?s:.)+')}"
        return Terminal(tdef.name, regex=regex), expression
    raise GrammarError(  # pragma: no cover - lark has only these two
        f"terminal {tdef.name} has an unknown pattern type", construct=tdef.name, source=source
    )


# Terminals of lark's own grammars/common.lark that use constructs the matcher lacks, with an
# exactly equivalent regular expression. ESCAPED_STRING is ``".*?(?<!\\)(\\\\)*?"``: under
# re.match it ends at the first quote preceded by an even run of backslashes, on one line.
_KNOWN_EQUIVALENTS = {
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:\\[^\n]|[^"\\\n])*"',
}


def _strip_verbose(value: str) -> str:
    """Rewrite a verbose-mode (``x`` flag) regex without insignificant whitespace and comments."""
    out: list[str] = []
    i, n, in_class = 0, len(value), False
    while i < n:
        ch = value[i]
        if ch == "\\" and i + 1 < n:
            out.append(value[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            if value.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(ch)
        elif ch in " \t\n\r\v\f":
            pass
        elif ch == "#":
            while i < n and value[i] != "\n":
                i += 1
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _is_regex_error(exc: BaseException) -> bool:
    return isinstance(exc, re.error) or (
        type(exc).__name__ == "error" and type(exc).__module__.startswith("regex")
    )


def _bad_regex_error(exc: BaseException, text: str, source: str | None) -> GrammarError:
    # lark does not say which regex failed: find the first one Python cannot compile.
    for match in re.finditer(r"/((?:\\.|[^/\\\n])+)/[imslux]*", text):
        try:
            re.compile(match.group(1))
        except re.error:
            return GrammarError(
                f"invalid regex: {exc}",
                construct=match.group(0),
                **_position(match.start(), text),
                source=source,
            )
    return GrammarError(f"invalid regex: {exc}", source=source)


try:  # Python >= 3.11
    from re import _constants as _sre_c, _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_SINGLE_CHAR_OPS = {_sre_c.LITERAL, _sre_c.NOT_LITERAL, _sre_c.IN, _sre_c.ANY}


def _regex_features(regex: str) -> tuple[str | None, bool]:
    r"""(a construct the matcher cannot honour exactly, or None; whether the regex is lazy).

    A lazy quantifier is honoured in one shape: fixed single characters, one lazily repeated
    single character, fixed single characters (``/\/\*(.|\n)*?\*\//``). There ``re.match``
    returns the shortest match, which the compiler expresses as an intersection.
    """
    parsed = _sre_parse.parse(regex, 0)
    problem = _first_unsupported(parsed) or _shadowed_alternative(parsed)
    if problem:
        return problem, False
    lazy = _count_ops(parsed, _sre_c.MIN_REPEAT)
    if not lazy:
        return None, False
    items = _flatten(parsed)
    if lazy == 1 and items is not None:
        lazy_items = [i for i, (op, _) in enumerate(items) if op is _sre_c.MIN_REPEAT]
        others_fixed = all(op in _SINGLE_CHAR_OPS for op, _ in items if op is not _sre_c.MIN_REPEAT)
        if len(lazy_items) == 1 and others_fixed:
            body = items[lazy_items[0]][1][2]
            if _is_single_char(body):
                return None, True
    return (
        "a lazy quantifier (*?, +?, ??) in a shape where Python's first match is not the "
        "shortest match",
        False,
    )


def _shadowed_alternative(parsed: Any) -> str | None:
    """A final alternation whose earlier literal alternative is a prefix of a later one.

    ``re.match`` takes the first alternative that matches, so in ``/a|ab/`` the later ``ab`` is
    never a whole lexeme, while the matcher's automaton takes the longest. (lark itself sorts
    the alternatives of ``"<" | "<="`` longest first, so only hand-written regexes hit this.)
    """
    items = list(parsed)
    while items:
        op, av = items[-1]
        if op is _sre_c.SUBPATTERN:
            items = list(av[-1])
            continue
        if op is not _sre_c.BRANCH:
            return None
        words = []
        for alt in av[1]:
            if not all(o is _sre_c.LITERAL for o, _ in alt):
                words.append(None)
                continue
            words.append("".join(chr(v) for _, v in alt))
        for i, first in enumerate(words):
            for later in words[i + 1 :]:
                if first is not None and later is not None and len(later) > len(first) and later.startswith(first):
                    return (
                        "an alternation whose earlier alternative is a prefix of a later one "
                        "(Python's re takes the first that matches, the matcher the longest; "
                        "put the longer alternative first)"
                    )
        return None
    return None


def _first_unsupported(parsed: Any) -> str | None:
    c = _sre_c
    for op, av in parsed:
        if op in (c.ASSERT, c.ASSERT_NOT):
            return "a look-around assertion"
        if op is c.GROUPREF:
            return "a back-reference"
        if op is c.GROUPREF_EXISTS:
            return "a conditional group"
        if op is c.AT:
            return {
                c.AT_BOUNDARY: "a word boundary (\\b)",
                c.AT_NON_BOUNDARY: "a non-boundary (\\B)",
            }.get(av, "an anchor (^, $, \\A, \\Z)")
        if getattr(c, "ATOMIC_GROUP", None) is not None and op is c.ATOMIC_GROUP:
            return "an atomic group"
        if getattr(c, "POSSESSIVE_REPEAT", None) is not None and op is c.POSSESSIVE_REPEAT:
            return "a possessive quantifier"
        for sub in _children(op, av):
            problem = _first_unsupported(sub)
            if problem:
                return problem
    return None


def _children(op: Any, av: Any) -> list[Any]:
    c = _sre_c
    if op is c.BRANCH:
        return list(av[1])
    if op is c.SUBPATTERN:
        return [av[-1]]
    if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
        return [av[2]]
    if op in (c.ASSERT, c.ASSERT_NOT):
        return [av[1]]
    if op is getattr(c, "ATOMIC_GROUP", None):
        return [av]
    if op is c.GROUPREF_EXISTS:
        return [x for x in av[1:] if x is not None]
    return []


def _count_ops(parsed: Any, wanted: Any) -> int:
    return sum((op is wanted) + sum(_count_ops(s, wanted) for s in _children(op, av)) for op, av in parsed)


def _flatten(parsed: Any) -> list[tuple[Any, Any]] | None:
    """The top-level items with plain groups opened; ``None`` if there is a top-level branch."""
    out: list[tuple[Any, Any]] = []
    for op, av in parsed:
        if op is _sre_c.SUBPATTERN:
            inner = _flatten(av[-1])
            if inner is None:
                if not _is_single_char(av[-1]):
                    return None
                out.append((_sre_c.ANY, None))
                continue
            out.extend(inner)
        elif op is _sre_c.BRANCH:
            if not _is_single_char([(op, av)]):
                return None
            out.append((_sre_c.ANY, None))
        else:
            out.append((op, av))
    return out


def _is_single_char(parsed: Any) -> bool:
    """Whether every string the sub-pattern matches is exactly one character."""
    items = list(parsed)
    if len(items) != 1:
        return False
    op, av = items[0]
    if op in _SINGLE_CHAR_OPS:
        return True
    if op is _sre_c.SUBPATTERN:
        return _is_single_char(av[-1])
    if op is _sre_c.BRANCH:
        return all(_is_single_char(alt) for alt in av[1])
    return False


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


def _position_of_definition(name: str, text: str, last: bool) -> dict[str, int | None]:
    """Where ``name`` is defined (its last definition when ``last``)."""
    found = list(re.finditer(rf"(?m)^[ \t]*[?!]?({re.escape(name)})\b(?:\{{[^}}]*\}})?(?:\.-?\d+)?[ \t]*:", text))
    if not found:
        return _position_of_name(name, text)
    return _position((found[-1] if last else found[0]).start(1), text)


def _position_of_name(name: str, text: str) -> dict[str, int | None]:
    match = re.search(rf"(?m)^[ \t]*{re.escape(name)}\b", text)
    return _position(match.start() + len(match.group()) - len(name) if match else None, text)


def _position_of_use(name: str, text: str) -> dict[str, int | None]:
    """Where ``name`` is first used in a rule body (after a colon on its line, or a ``|``)."""
    for match in re.finditer(rf"(?<![\w\"'/.]){re.escape(name)}\b", text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        before = text[line_start : match.start()]
        if ":" in before or before.strip().startswith("|"):
            return _position(match.start(), text)
    return _position_of_name(name, text)


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
    match = re.search(r"[Ll]ine (\d+),? col(?:umn)? (\d+)", message)
    if match:
        line, column = int(match.group(1)), int(match.group(2))
        lines = text.split("\n")
        offset = sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
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
    name = re.search(r"(?:Terminal|Rule|Template|terminal|rule)s? '?([A-Za-z_][\w]*)'?", message)
    if name and "used but not defined" in message:
        where = _position_of_use(name.group(1), text)
    elif name:
        where = _position_of_definition(name.group(1), text, "more than once" in message)
    else:
        where = _position(None, text)
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


@functools.lru_cache(maxsize=1024)
def _regex_is_void(regex: str) -> bool:
    try:
        checker = Grammar.from_regex(regex).checker()
    except GrammarError:
        return False
    return not checker.is_complete and not checker.allowed_bytes()


# -- builtins -----------------------------------------------------------------------------------


def _builtin_files() -> Iterable[Any]:
    try:
        return list(resources.files(_BUILTIN_PACKAGE).iterdir())
    except (ModuleNotFoundError, FileNotFoundError):
        return list(_BUILTIN_DIR.iterdir()) if _BUILTIN_DIR.is_dir() else []


@functools.lru_cache(maxsize=None)
def _builtin(name: str) -> Grammar:
    entries = {entry.name: entry for entry in _builtin_files()}
    if f"{name}.lark" in entries:
        with resources.as_file(entries[f"{name}.lark"]) as path:
            grammar = Grammar.from_file(path)
        if f"{name}.rewrites.json" in entries:
            with resources.as_file(entries[f"{name}.rewrites.json"]) as path:
                grammar.rewrites = _load_rewrites(path)
        return grammar
    names = ", ".join(Grammar.builtin_names()) or "none"
    raise GrammarError(f"no builtin grammar named {name!r} (available: {names})")
