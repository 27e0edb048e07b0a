"""The checker of LALR grammars: exactly what lark's LALR parser says, on texts and on prefixes.

A prefix is valid when some continuation makes lark accept the text. The checker reads the text
with lark's own parse table, contextual lexers and ``Indenter`` (``compiler.lalr``): tokens that no
continuation can change are *settled* and fed to the parser once; the rest of the text (usually
the last lexeme) is read again at each question. There, two readings are possible: a lexeme runs
on past the end (some terminal lark would choose can grow, and the parser takes it there: the
prefix is valid) or lark's match on the text as it is stands, and the reading goes on after it.

Settled points are kept every ``_KEEP_EVERY`` characters or more, so a rollback reads again only from the
point before it. Bytes are read as the characters they encode; ``allowed_bytes`` tries every ASCII
character and one letter for each lead byte of longer characters.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lark import Token

from ._checker import CheckedGrammar, Checker, CheckerState, Violation
from ._text import line_column
from .compiler.postlex import IndentState

if TYPE_CHECKING:
    from .compiler.compile import Terminal
    from .compiler.lalr import LalrLanguage, Parser, StateLexer

__all__ = ["LalrChecker"]

_KEEP_EVERY = 16  # characters between kept settled points
_MAX_FORCED = 256


@functools.cache
def _lead_letters() -> dict[int, str]:
    """For each lead byte of a multi-byte UTF-8 character, a letter it begins (else any character);
    worked out on first use (about 0.2 s), not when ``grammar_guide`` is imported."""
    found: dict[int, str] = {}
    for code in range(0x80, 0x30000):
        ch = chr(code)
        lead = ch.encode("utf-8", errors="ignore")[:1]
        if lead and (lead[0] not in found or (ch.isalpha() and not found[lead[0]].isalpha())):
            found[lead[0]] = ch
    return found


@dataclass(frozen=True)
class _Point:
    """The parser after the settled tokens before ``pos``; settled for texts of ``valid_from``
    characters or more that begin with the same text."""

    pos: int
    parser: Parser
    indent: IndentState
    valid_from: int


class LalrChecker(Checker):
    """``Checker``'s interface for a grammar read by lark's LALR parser (``LalrGrammar``)."""

    def __init__(self, grammar: CheckedGrammar, language: LalrLanguage) -> None:
        self.grammar = grammar
        self._lang = language
        start = _Point(0, self._lang.start(), IndentState(), 0)
        self._kept: list[_Point] = [start]
        self._frontier = start
        self._text = ""
        self._violation: Violation | None = None
        self._complete: tuple[int, bool] | None = None

    # -- reading ----------------------------------------------------------------------------

    def feed(self, chunk: str | bytes) -> int:
        if self._violation is not None or not chunk:
            return 0
        text = chunk if isinstance(chunk, str) else _whole_chars(bytes(chunk))
        old = len(self._text)
        self._set_text(self._text + text)
        n = len(self._text)
        if not self._valid(n):
            n = self._longest_valid(old, n)
            rest = self._text[n:]
            self._set_text(self._text[:n])
            self._violation = self._violation_at(rest)
        accepted = self._text[old:]
        return len(accepted) if isinstance(chunk, str) else len(accepted.encode("utf-8"))

    def _longest_valid(self, low: int, high: int) -> int:
        """The longest valid prefix's length in ``[low, high)`` (``low`` valid, ``high`` not)."""
        while high - low > 1:
            mid = (low + high) // 2
            if self._valid(mid):
                low = mid
            else:
                high = mid
        self._trim(low)
        return low

    def _violation_at(self, rest: str) -> Violation:
        text = self._text
        found = rest.split("\n", 1)[0][:40] or "\\n"
        line, column = line_column(text, len(text))
        return Violation(offset=len(text), line=line, column=column, found=found)

    def _set_text(self, text: str) -> None:
        self._trim(_common_length(self._text, text))
        self._text = text
        self._complete = None

    def _trim(self, length: int) -> None:
        """Forget the settled points that the first ``length`` characters do not settle."""
        while self._kept[-1].valid_from > length:
            self._kept.pop()
        if self._frontier.valid_from > length:
            self._frontier = self._kept[-1]

    def _settle(self, point: _Point) -> None:
        self._frontier = point
        if point.pos - self._kept[-1].pos >= _KEEP_EVERY:
            self._kept.append(point)

    def _point_for(self, end: int) -> _Point:
        if self._frontier.valid_from <= end:
            return self._frontier
        return next(p for p in reversed(self._kept) if p.valid_from <= end)

    def _valid(self, end: int, text: str | None = None) -> bool:
        """Whether ``text[:end]`` (the checker's text by default) is a valid prefix. Reading the
        checker's own text settles the tokens it can; another text (the checker's text and more)
        is read from the frontier without settling."""
        own = text is None
        text = self._text if text is None else text
        point = self._point_for(end) if own else self._frontier
        lang = self._lang
        while point.pos < end:
            lexer = lang.lexer(point.parser)
            step = lexer.settled(text, point.pos, end)
            if step is None:
                break
            name, value, stop, horizon = step
            parser, indent = point.parser, point.indent
            if name not in lexer.ignore:
                fed = lang.feed(parser, indent, lexer.token(name, value, point.pos))
                if fed is None:
                    return False
                parser, indent = fed
            point = _Point(stop, parser, indent, max(point.valid_from, horizon))
            if own:
                self._settle(point)
        return self._tail_valid(text, end, point)

    def _tail_valid(self, text: str, end: int, point: _Point) -> bool:
        """Whether some continuation completes the unsettled ``text[point.pos:end]``."""
        lang, pos, parser, indent = self._lang, point.pos, point.parser, point.indent
        while pos < end:
            lexer = lang.lexer(parser)
            if self._may_run_on(lexer, text, pos, end, parser, indent):
                return True
            match = lexer.match(text, pos, end)
            if match is None:
                return False
            name, value, stop = match
            if name not in lexer.ignore:
                fed = lang.feed(parser, indent, lexer.token(name, value, pos))
                if fed is None:
                    return False
                parser, indent = fed
            pos = stop
        return lang.completable(parser, indent)

    def _may_run_on(
        self, lexer: StateLexer, text: str, pos: int, end: int, parser: Parser, indent: IndentState
    ) -> bool:
        """Whether a lexeme from ``pos`` may run on past ``end`` as a token the parser takes."""
        prefix = text[pos:end]
        for name in lexer.extending(text, pos, end):
            if name in lexer.ignore:
                return self._lang.completable(parser, indent)
            for kind in (name, *lexer.keywords_after(name, prefix)):
                for token in self._lang.tokens_of(kind, prefix, pos, indent):
                    whole = kind != name or token == prefix or lexer.single(name).fullmatch(token)
                    fed = self._lang.feed(parser, indent, token) if whole else None
                    if fed is not None and self._lang.completable(*fed):
                        return True
        return False

    # -- state ------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        return self._text

    @property
    def accepted_bytes(self) -> bytes:
        return self._text.encode("utf-8")

    @property
    def is_complete(self) -> bool:
        """Whether lark's LALR parser accepts the accepted text as a whole."""
        if self._complete is None or self._complete[0] != len(self._text):
            self._complete = (len(self._text), self._reads_whole(self._text))
        return self._complete[1]

    def _reads_whole(self, text: str) -> bool:
        end = len(text)
        point = self._point_for(end)
        lang, pos, parser, indent = self._lang, point.pos, point.parser, point.indent
        while pos < end:
            lexer = lang.lexer(parser)
            match = lexer.match(text, pos, end)
            if match is None:
                return False
            name, value, pos = match
            if name not in lexer.ignore:
                fed = lang.feed(parser, indent, lexer.token(name, value, pos - len(value)))
                if fed is None:
                    return False
                parser, indent = fed
        return lang.accepts_end(parser, indent)

    @property
    def can_continue(self) -> bool:
        text, end = self._text, len(self._text) + 1
        likely = [*" \n)a0:", *map(chr, range(128)), *_lead_letters().values()]
        return any(self._valid(end, text + ch) for ch in likely)

    def is_dead_end(self) -> bool:
        return False

    def allowed_bytes(self) -> frozenset[int]:
        """The bytes that may come next: each ASCII character tried, and for a lead byte of a
        longer character, one letter it begins."""
        text, end = self._text, len(self._text) + 1
        out = {b for b in range(128) if self._valid(end, text + chr(b))}
        out |= {lead for lead, ch in _lead_letters().items() if self._valid(end, text + ch)}
        return frozenset(out)

    def forced_bytes(self) -> bytes:
        forced = ""
        while len(forced) < _MAX_FORCED:
            text = self._text + forced
            if self._reads_whole(text):
                break
            allowed = [chr(b) for b in range(128) if self._valid(len(text) + 1, text + chr(b))]
            if len(allowed) != 1 or any(self._valid(len(text) + 1, text + ch) for ch in _lead_letters().values()):
                break
            forced += allowed[0]
        return forced.encode("utf-8")

    def forced_text(self) -> str:
        return self.forced_bytes().decode("utf-8")

    def expected(self, upto: int | None = None) -> list[Terminal]:
        """The terminals that may come after the first ``upto`` characters of the accepted text:
        those the parser takes next, and those that may continue the lexeme at its end."""
        text = self._text if upto is None else self._text[:upto]
        end = len(text)
        lang = self._lang
        point = self._point_for(end)
        pos, parser, indent = point.pos, point.parser, point.indent
        names: dict[str, None] = {}
        while True:
            lexer = lang.lexer(parser)
            for name in lexer.extending(text, pos, end) if pos < end else ():
                if name not in lexer.ignore and self._takes(parser, indent, name, text[pos:end]):
                    names[name] = None
            match = lexer.match(text, pos, end) if pos < end else None
            if match is None:
                break
            name, value, stop = match
            if name not in lexer.ignore:
                fed = lang.feed(parser, indent, lexer.token(name, value, pos))
                if fed is None:
                    return self._terminals(names)
                parser, indent = fed
            pos = stop
        if pos == end:
            lexer = lang.lexer(parser)
            for name in lexer.names:
                if name not in lexer.ignore and self._takes(parser, indent, name, ""):
                    names[name] = None
        return self._terminals(names)

    def _takes(self, parser: Parser, indent: IndentState, name: str, prefix: str) -> bool:
        tokens = self._lang.tokens_of(name, prefix or "\n", 0, indent) if prefix == "" else [Token(name, prefix)]
        return any(self._lang.feed(parser, indent, t) is not None for t in tokens)

    def _terminals(self, names: dict[str, None]) -> list[Terminal]:
        terminals = self._lang.terminals
        return [terminals[n] for n in names if n in terminals]

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot(self) -> CheckerState:
        return CheckerState(len(self._text.encode("utf-8")), self._violation)

    def rollback(self, state: CheckerState | int) -> None:
        n_bytes = state.n_bytes if isinstance(state, CheckerState) else state
        data = self._text.encode("utf-8")
        if n_bytes > len(data) or n_bytes < 0:
            raise ValueError(f"cannot roll back to {n_bytes} bytes; {len(data)} accepted")
        self._set_text(data[:n_bytes].decode("utf-8", errors="ignore"))
        self._violation = state.violation if isinstance(state, CheckerState) else None

    def rollback_chars(self, n_chars: int) -> None:
        if n_chars > len(self._text) or n_chars < 0:
            raise ValueError(f"cannot roll back to {n_chars} characters; {len(self._text)} accepted")
        self._set_text(self._text[:n_chars])
        self._violation = None

    @contextlib.contextmanager
    def trial(self, *, clear: bool = True) -> Iterator[Checker]:
        # Settled points the trial's text shares with the saved text stay (``_set_text``).
        saved, violation = self._text, self._violation
        self._violation = None if clear else violation
        try:
            yield self
        finally:
            self._set_text(saved)
            self._violation = violation

    def accepts(self, more: str) -> int:
        if self._violation is not None or not more:
            return 0
        with self.trial(clear=False):
            return self.feed(more)

    def copy(self) -> LalrChecker:
        other = LalrChecker.__new__(LalrChecker)
        other.__dict__.update(self.__dict__)
        other._kept = list(self._kept)
        return other

    def __repr__(self) -> str:
        where = self._violation and f"violation at {self._violation.offset}"
        return f"<LalrChecker {self.grammar.name}: {len(self._text)} characters, {where or self._reading()}>"

    def _reading(self) -> str:
        return "complete" if self.is_complete else "valid prefix"


def _common_length(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (cheap when one extends the other)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _whole_chars(data: bytes) -> str:
    """The whole UTF-8 characters at the start of ``data``."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="ignore")
