"""The language of lark's LALR parser with its contextual lexer (and an ``Indenter`` postlexer).

``LalrLanguage`` takes a ``lark.Lark(..., parser="lalr")`` and reads text with lark's own pieces:
the parse table (a ``Parser`` fed token by token), each parser state's ``BasicLexer`` (its
terminals in lark's order, its keyword callbacks, its ignored terminals) and the postlexer (through
``postlex``). A lexer's terminals are matched as lark matches them, the first alternative of one
alternation that matches, with the ``regex`` module, whose partial matching tells whether more
text could make a terminal lark tries first match, and ``first_path`` whether a path of the
matched terminal itself that comes first could go on: a token whose match no continuation can
change is *settled*.

Needs the ``regex`` module (the ``lalr`` extra).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import lark
from lark import Token
from lark.exceptions import LarkError
from lark.lexer import PatternStr, UnlessCallback
from lark.parsers.lalr_parser_state import ParseConf, ParserState

from .._errors import GrammarError
from .charclass import pattern_pieces, re_classes_written_out
from .compile import Terminal
from .exact import exact_regex, first_chars
from .first_path import FirstPath, compile_first_path
from .postlex import IndentDriver, IndentState

__all__ = ["LalrLanguage", "Parser", "StateLexer", "Step"]

#: lark's LALR parser state (fed token by token; its values are not kept as trees).
Parser = ParserState[Any]

#: A settled token: its terminal name, its text, where it ends, and from which length of text on
#: its match is settled (more text can no longer change it).
Step = tuple[str, str, int, int]


def _regex_module() -> Any:
    try:
        return importlib.import_module("regex")
    except ModuleNotFoundError:
        raise GrammarError(
            "parser='lalr' needs the 'regex' module to match lark's terminals on prefixes: "
            "pip install 'grammar-guide[lalr]'"
        ) from None


_SCOPED_I = re.compile(r"\(\?[a-zA-Z]*i[a-zA-Z]*[:)]")


def _as_lark_matches(pattern: str, basic: Any) -> str:
    """A terminal's pattern for the ``regex`` module, matching what lark's own module matches:
    where lark uses Python's ``re`` (no ``regex=True``), its ``\\w``, ``\\s``, ``\\d`` and ``\\b``
    are written out as ``re`` has them (``re_classes_written_out``), and a case-insensitive one's
    letters with their ``re`` case partners (``exact_regex``)."""
    if basic.re is not re:
        return pattern
    flags = re.compile(pattern, basic.g_regex_flags).flags
    if flags & re.ASCII:
        return pattern
    if (flags & re.IGNORECASE or _SCOPED_I.search(pattern)) and not basic.g_regex_flags & re.IGNORECASE:
        # Case folding differs too (re's "ı" is an "i"; the regex module's not): every class
        # written out, case-closed as re has it, where the pattern has nothing exact_regex lacks.
        with contextlib.suppress(GrammarError):
            return exact_regex(pattern)
    return re_classes_written_out(pattern)


def _with_flags(pattern: str, flags: int) -> str:
    """``pattern`` with lark's ``g_regex_flags`` written into it, for Python's regex parser."""
    letters = "".join(letter for flag, letter in ((re.I, "i"), (re.M, "m"), (re.S, "s")) if flags & flag)
    return f"(?{letters}:{pattern})" if letters else pattern


_QUANTIFIER_BOUNDS = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}$")


def _greedy(pattern: str) -> str:
    """``pattern`` with its lazy quantifiers (``*?``, ``+?``, ``??``, ``{m,n}?``) made greedy:
    the same language, so the same answer to "could more text make it match". The ``regex``
    module's partial matching errs on lazy ones (``"[ -~]+?"`` partially matches ``"~\\x1c``)."""
    out: list[str] = []
    quantified = False  # the last piece written is a quantifier
    for piece, in_class in pattern_pieces(pattern):
        if piece == "?" and quantified:
            quantified = False  # the lazy mark: dropped
            continue
        out.append(piece)
        quantified = not in_class and (
            piece in ("*", "+")
            or (piece == "?" and out[-2:-1] != ["("])
            or (piece == "}" and _QUANTIFIER_BOUNDS.search("".join(out[-24:])) is not None)
        )
    return "".join(out)


class StateLexer:
    """One of the contextual lexer's lexers: the terminals a set of parser states may read next."""

    def __init__(self, basic: Any) -> None:
        regex = _regex_module()
        scanner = basic.scanner  # builds lark's callbacks as well
        self._flags: int = basic.g_regex_flags
        self.names: list[str] = [t.name for t in scanner.terminals]
        self._patterns: list[str] = [_as_lark_matches(t.pattern.to_regexp(), basic) for t in scanner.terminals]
        self._index = {name: i for i, name in enumerate(self.names)}
        self.ignore: frozenset[str] = frozenset(basic.ignore_types)
        self.callback: Mapping[str, Any] = dict(basic.callback)
        self.alternation = regex.compile(self._alternation(), self._flags)
        self._regex = regex

    @functools.cached_property
    def pre_empted(self) -> frozenset[str]:
        """The terminals this lexer never returns: every character a match of one may begin with
        is, alone, a match of a terminal lark tries first (timefhuman's ``" "`` after ``%ignore``d
        ``WS``). Only terminals that begin with at most 256 characters are looked at."""
        found = set()
        for i, name in enumerate(self.names):
            try:
                ranges, nullable = first_chars(_with_flags(self._patterns[i], self._flags))
            except (GrammarError, re.error):
                continue
            if nullable or sum(hi - lo + 1 for lo, hi in ranges) > 256:
                continue
            chars = [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]
            if all(any(self.single(e).fullmatch(ch) for e in self.names[:i]) for ch in chars):
                found.add(name)
        return frozenset(found)

    @functools.cached_property
    def returned(self) -> frozenset[str] | None:
        """The terminals this lexer may return: its own that are not pre-empted, and the keywords
        the callbacks of the terminals not ignored make of them (``None`` where a callback of
        another kind may make anything)."""
        out = set(self.names) - self.pre_empted
        for name, callback in self.callback.items():
            if name in self.ignore:  # lark drops what an ignored terminal's callback makes
                continue
            if not isinstance(callback, UnlessCallback):
                return None
            out |= {t.name for t in callback.scanner.terminals}
        return frozenset(out)

    def _alternation(self) -> str:
        if not self.names:  # a state after which only the text's end may come: nothing matches
            return "(?!)"
        return "|".join(f"(?P<{name}>{p})" for name, p in zip(self.names, self._patterns, strict=True))

    @functools.cache  # noqa: B019 - one per lexer, kept with the grammar
    def single(self, name: str) -> Any:
        return self._regex.compile(self._patterns[self._index[name]], self._flags)

    @functools.cache  # noqa: B019 - one per lexer, kept with the grammar
    def viable(self, name: str) -> Any:
        """The terminal's pattern made greedy, for partial matching (``_greedy``)."""
        return self._regex.compile(_greedy(self._patterns[self._index[name]]), self._flags)

    @functools.cache  # noqa: B019
    def _starts(self, name: str) -> frozenset[str]:
        """The ASCII characters a match of terminal ``name`` may begin with."""
        pattern = self._patterns[self._index[name]]
        if "(?<" in pattern or "\\b" in pattern or "\\B" in pattern:  # looks behind: context decides
            return frozenset(map(chr, range(128)))
        viable = self.viable(name)
        return frozenset(ch for ch in map(chr, range(128)) if viable.match(ch, 0, 1, partial=True) is not None)

    def _may_begin(self, name: str, ch: str) -> bool:
        return ch >= "\x80" or ch in self._starts(name)

    def _reaches_end(self, before: int, text: str, pos: int, end: int) -> bool:
        """Whether one of the first ``before`` terminals, which do not match at ``pos``, reads up
        to ``end`` (so that more text could make it match)."""
        for i in self._beginning_with(text[pos]):
            if i >= before:
                return False
            if self.viable(self.names[i]).match(text, pos, end, partial=True) is not None:
                return True
        return False

    @functools.cache  # noqa: B019
    def _beginning_with(self, ch: str) -> list[int]:
        """The indices of the terminals a match of which may begin with ``ch``, in lark's order."""
        return [i for i, name in enumerate(self.names) if self._may_begin(name, ch)]

    def settled(self, text: str, pos: int, end: int) -> Step | None:
        """The token at ``pos`` of ``text[:end]`` if no continuation of that text can change it:
        its match ends before ``end`` and no terminal lark tries first reaches ``end`` (which
        more text could then complete). ``None`` otherwise."""
        m = self.alternation.match(text, pos, end)
        if m is None or m.end() >= end:
            return None
        name, stop = m.lastgroup, m.end()
        if self._may_change(name, text, pos, stop, end):
            return None
        return name, m.group(), stop, self._horizon(name, text, pos, stop, end)

    def _may_change(self, name: str, text: str, pos: int, stop: int, end: int) -> bool:
        """Whether more text after ``end`` could change lark's match of terminal ``name`` at
        ``pos``: a terminal lark tries first, or a path of its own that comes before its match,
        reads up to ``end``."""
        return self._reaches_end(self._index[name], text, pos, end) or self.grows(name, text, pos, stop, end)

    def grows(self, name: str, text: str, pos: int, stop: int, end: int) -> bool:
        """Whether a path of terminal ``name`` that comes before its match at ``pos`` in Python's
        backtracking order reads up to ``end`` (``-0.`` for a number whose ``(\\.[0-9]+)?`` gave
        it up: ``-0.5`` then matches further). ``stop``: where lark's match ends."""
        # A path that reads to ``end`` reads past ``stop`` first: if none does, none reaches ``end``.
        if self.viable(name).fullmatch(text, pos, min(end, stop + 1), partial=True) is None:
            return False
        first = self._first_path(name)
        if first is not None:
            return first.run(text, pos, end)[0] == "end"
        return self.viable(name).fullmatch(text, pos, end, partial=True) is not None  # any path at all

    @functools.cache  # noqa: B019
    def _first_path(self, name: str) -> FirstPath | None:
        return compile_first_path(self._patterns[self._index[name]], self._flags)

    def _horizon(self, name: str, text: str, pos: int, stop: int, high: int) -> int:
        """The least length of text in ``(stop, high]`` from which more text cannot change the
        match ending at ``stop`` (``high`` is one; the property holds from its least length on)."""
        low = stop + 1
        if not self._may_change(name, text, pos, stop, low):
            return low
        while high - low > 1:
            mid = (low + high) // 2
            if self._may_change(name, text, pos, stop, mid):
                low = mid
            else:
                high = mid
        return high

    def match(self, text: str, pos: int, end: int) -> tuple[str, str, int] | None:
        """lark's own match at ``pos`` of ``text[:end]``: terminal, text, end."""
        m = self.alternation.match(text, pos, end)
        return None if m is None else (m.lastgroup, m.group(), m.end())

    def extending(self, text: str, pos: int, end: int) -> list[str]:
        """The terminals whose match at ``pos`` more text could carry past ``end``, among those
        lark would still choose (up to the first whose match ends before ``end``)."""
        found = []
        for i in self._beginning_with(text[pos]):
            name = self.names[i]
            if self.viable(name).match(text, pos, end, partial=True) is None:
                continue
            m = self.single(name).match(text, pos, end, partial=True)
            if m is None:
                continue
            if m.partial:
                found.append(name)
                continue
            if m.end() == end or self.grows(name, text, pos, m.end(), end):
                found.append(name)
            break
        return found

    def keywords_after(self, name: str, prefix: str) -> list[str]:
        """The keywords lark's callback makes of a ``name`` token that begins with ``prefix`` and
        is longer (``NAME`` "whil" may become ``WHILE``)."""
        callback = self.callback.get(name)
        if not isinstance(callback, UnlessCallback):
            return []
        out = []
        for terminal in callback.scanner.terminals:
            value, flags = terminal.pattern.value, terminal.pattern.flags
            a, b = (value.lower(), prefix.lower()) if "i" in flags else (value, prefix)
            if len(a) > len(b) and a.startswith(b):
                out.append(terminal.name)
        return out

    def token(self, name: str, value: str, pos: int) -> Token:
        """The token lark's lexer returns for a match (its callbacks applied)."""
        token = Token(name, value, pos)
        callback = self.callback.get(name)
        return callback(token) if callback is not None else token


class LalrLanguage:
    """lark's LALR parser, contextual lexer and ``Indenter`` for one grammar, fed token by token."""

    def __init__(self, parser: lark.Lark, driver: IndentDriver | None) -> None:
        conf = parser.parse_interactive("").parser_state.parse_conf
        # No tree building: the checker needs the parser's states, not its values.
        self._conf = ParseConf(conf.parse_table, {}, conf.start)
        self._actions: dict[Any, dict[str, Any]] = conf.parse_table.states
        lexer = parser.parser.lexer
        lexer = getattr(lexer, "lexer", lexer)  # lark's PostLexConnector wraps the lexer
        by_id: dict[int, StateLexer] = {}
        self._lexers: dict[Any, StateLexer] = {}
        for state, basic in lexer.lexers.items():
            if id(basic) not in by_id:
                by_id[id(basic)] = StateLexer(basic)
            self._lexers[state] = by_id[id(basic)]
        self.driver = driver
        self._completable: dict[tuple[Any, ...], bool] = {}  # by parser stack (no indenter)
        self.terminals: dict[str, Terminal] = {t.name: _terminal(t) for t in parser.terminals}

    def start(self) -> Parser:
        return ParserState(self._conf, None)  # type: ignore[arg-type]

    def lexer(self, parser: Parser) -> StateLexer:
        return self._lexers[parser.position]

    def feed(self, parser: Parser, indent: IndentState, token: Token) -> tuple[Parser, IndentState] | None:
        """The parser and indenter after ``token`` (new objects), or ``None`` where lark refuses it."""
        if token.type not in self._actions[parser.position] and (
            self.driver is None or token.type != self.driver.nl_type
        ):
            return None  # what lark's table refuses at once (without building its error)
        state = parser.copy(deepcopy_values=False)
        try:
            if self.driver is None:
                state.feed_token(token)
                return state, indent
            out, indent = self.driver.emit(indent, token)
            for each in out:
                state.feed_token(each)
            return state, self.driver.count_brackets(indent, token)
        except (LarkError, AssertionError):
            return None

    def _unproduced(self, state: Any) -> set[str]:
        """The terminals the table takes in ``state`` that its lexer never returns (absent from
        it, or pre-empted)."""
        lexer = self._lexers[state]
        returned = lexer.returned
        if returned is None:
            return set()
        return {name for name in self._actions[state] if name in self.terminals and name not in returned}

    @functools.cached_property
    def has_pre_empted(self) -> bool:
        return self.driver is None and any(self._unproduced(state) for state in self._lexers)

    def completable(self, parser: Parser, indent: IndentState, depth: int = 32, width: int = 256) -> bool:
        """Whether the parser can reach the text's end on tokens its lexers return. Asked only
        where some lexer pre-empts a terminal (else lark's table says so for every state); a
        search that its bounds cut short says yes."""
        if not self.has_pre_empted:
            return True
        key = tuple(parser.state_stack)
        if key not in self._completable:
            if len(self._completable) >= 1 << 16:  # kept bounded: one grammar, many texts
                self._completable.clear()
            self._completable[key] = self._search_end(parser, indent, depth, width)
        return self._completable[key]

    def _search_end(self, parser: Parser, indent: IndentState, depth: int, width: int) -> bool:
        frontier, seen = [parser], {tuple(parser.state_stack)}
        for _ in range(depth):
            following = []
            for state in frontier:
                if self.accepts_end(state, indent):
                    return True
                unproduced = self._unproduced(state.position)
                for name in self._actions[state.position]:
                    if name not in self.terminals or name in unproduced:
                        continue
                    fed = self.feed(state, indent, Token(name, ""))
                    if fed is not None and tuple(fed[0].state_stack) not in seen:
                        seen.add(tuple(fed[0].state_stack))
                        following.append(fed[0])
            if not following:
                return False
            if len(following) > width:
                return True
            frontier = following
        return True

    def accepts_end(self, parser: Parser, indent: IndentState) -> bool:
        """Whether the text may end here (the indenter's closing ``DEDENT``s, then lark's ``$END``)."""
        state = parser.copy(deepcopy_values=False)
        try:
            for token in self.driver.end(indent) if self.driver is not None else ():
                state.feed_token(token)
            state.feed_token(Token("$END", ""), True)
        except (LarkError, AssertionError):
            return False
        return True

    def tokens_of(self, name: str, value: str, pos: int, indent: IndentState) -> Iterator[Token]:
        """Tokens a lexeme of terminal ``name`` that begins with ``value`` may end as (the
        newline's values through the indenter; the value is otherwise immaterial to the parser)."""
        if self.driver is not None and name == self.driver.nl_type:
            for each in self.driver.newline_values(value, indent):
                yield Token(name, each, pos)
        else:
            yield Token(name, value, pos)


def _terminal(definition: Any) -> Terminal:
    pattern = definition.pattern
    if isinstance(pattern, PatternStr):
        return Terminal(definition.name, literal=pattern.value, case_insensitive="i" in pattern.flags)
    return Terminal(definition.name, regex=pattern.to_regexp())
