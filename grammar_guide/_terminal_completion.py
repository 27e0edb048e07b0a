"""A completion found a terminal at a time, for grammars whose completions are long.

The character search of ``_complete`` finds a close of a few characters. A language whose calls
need arguments (SMCalFlow's Lispress: ``(NextDOW `` needs a day, then ``(DateAtTimeWithDefaults``
its time, then ``(&`` its second constraint) needs dozens, beyond its reach. This search steps by
whole terminals, each written as its shortest text (a keyword in capitals where the text writes
its own so), and tries first the terminal that begins the least whole completion: its own
length, the rest of its rule and of every rule open around it, read from an Earley chart of the
text (``CompletionChart``). That order writes a least completion without a step back. Where the
chart cannot read the text, terminals are ranked by their own rule alone (``TerminalCosts``:
in ``CASE a | b |`` an operator then looks cheaper than ``WHEN … END``, and the search may spend
its budget writing ``0 & 0 & …``). A depth-first search over the checker, within a budget of
tries; the checker has the last word on every terminal."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._checker import Checker
from ._lexemes import is_word, keywords_in_capitals
from ._text import is_word_char
from .compiler.completion_chart import Column, CompletionChart
from .compiler.terminal import Terminal
from .compiler.terminal_costs import CLOSING, TerminalCosts

__all__ = ["terminal_completion"]


def terminal_completion(
    checker: Checker,
    costs: TerminalCosts,
    *,
    chart: CompletionChart | None = None,
    max_tries: int = 400,
    max_depth: int = 64,
) -> str | None:
    """A text that completes ``checker``'s text, found a terminal at a time (see the module
    docstring), or ``None`` within ``max_tries`` feeds and ``max_depth`` terminals. With a
    ``chart`` that reads the text, terminals are ranked by the least whole completion each
    begins (``CompletionChart.costs``); elsewhere by ``costs``."""
    if checker.is_complete:
        return ""
    column = chart.read(checker.text) if chart is not None else None
    capitals = keywords_in_capitals(checker.text, checker.grammar.keywords)
    search = _Search(costs, chart, [max_tries], checker.grammar.terminals, capitals)
    # The chart's ranking writes a least completion without a step back; where it finds none
    # (its reading and the checker's part), the terminals the checker expects, ranked by
    # ``costs``; then, where that order led into a construct opened again and again (a ``WITH``
    # inside ``WITH a AS (``), with words the text's end has not written first.
    passes = [(column, False)] if column is not None else []
    for start, fresh_first in [*passes, (None, False), (None, True)]:
        with checker.trial() as trial:
            found = search.complete(trial, start, max_depth, fresh_first)
        if found is not None:
            return found
    return None


@dataclass
class _Search:
    """One completion's depth-first search: its budget of tries (shared by its passes), and how
    it ranks and writes terminals."""

    costs: TerminalCosts
    chart: CompletionChart | None
    tries: list[int]
    terminals: Mapping[str, Terminal]
    capitals: bool  # keywords written in capitals, as the text writes its own

    def complete(self, state: Checker, column: Column | None, depth: int, fresh_first: bool) -> str | None:
        if depth <= 0:
            return None
        mark = state.snapshot()
        pieces = self._pieces(state, column)
        if fresh_first:
            pieces.sort(key=lambda piece: _written_lately(state.text, piece.text))
        for piece in pieces:
            if self.tries[0] <= 0:
                return None
            self.tries[0] -= 1
            if state.feed(piece.text) == len(piece.text):
                if state.is_complete:
                    return piece.text
                if state.can_continue:
                    after = self._scanned(piece, len(state.text))
                    rest = self.complete(state, after, depth - 1, fresh_first)
                    if rest is not None:
                        return piece.text + rest
            state.rollback(mark)
        return None

    def _scanned(self, piece: _Piece, end: int) -> Column | None:
        """The chart's column after ``piece`` (``None``: the chart is not read here)."""
        if self.chart is None or piece.column is None:
            return None
        begin = end - len(piece.text.lstrip()) - piece.written
        return self.chart.scan(piece.column, [piece.terminal], begin, end)

    def _pieces(self, state: Checker, column: Column | None) -> list[_Piece]:
        """What to try next, cheapest first: each expected terminal's shortest text (its rest, where
        the text ends inside it; after a space, where the text ends in a word character)."""
        text = state.text
        glued = is_word_char(text[-1:])
        ranks = _Ranks.of(self.chart, column, text) if self.chart is not None and column is not None else None
        names = ranks.names() if ranks is not None else [t.name for t in state.expected()]
        pieces: dict[str, tuple[tuple[int, bool, int, bool, bool], _Piece]] = {}
        for name in names:
            whole = self._written(name)
            if whole is None:
                continue
            fold = str.lower if self._keyword(name) else str
            started = [(whole[k:], k) for k in range(len(whole) - 1, 0, -1) if fold(text).endswith(fold(whole[:k]))]
            # A word glued to the word the text ends in would be one longer word (``0`` + ``0``).
            whole_pieces = [" " + whole] if glued and is_word_char(whole[:1]) else [whole, " " + whole]
            for piece, written in [*started, *((p, 0) for p in whole_pieces)]:
                least, from_column = ranks.least(name, written) if ranks is not None else (_UNRANKED, None)
                # By the least whole completion the chart sees; then closing brackets (they invent
                # nothing), then by the terminal's own cost; among equal costs, a number (a value
                # that needs nothing more: SQL's ``?`` is a parameter the caller must bind), then
                # marks.
                first = piece.strip()[:1]
                key = (
                    least,
                    not set(piece.strip()) <= CLOSING,
                    self.costs.cost(name),
                    not first.isdigit(),
                    is_word_char(first),
                )
                if piece not in pieces or key < pieces[piece][0]:
                    pieces[piece] = (key, _Piece(piece, name, written, from_column))
        return [p for _, p in sorted(pieces.values(), key=lambda kp: kp[0])]

    def _keyword(self, name: str) -> bool:
        terminal = self.terminals.get(name)
        return terminal is not None and terminal.case_insensitive and is_word(terminal.literal or "")

    def _written(self, name: str) -> str | None:
        """The terminal's shortest text, a keyword in capitals where the text writes its own so."""
        whole = self.costs.texts.get(name)
        return whole.upper() if whole is not None and self.capitals and self._keyword(name) else whole


@dataclass(frozen=True)
class _Ranks:
    """The chart's least whole completion per terminal at the text's end (``here``), and from the
    column before the text's last terminal (``back``: the text may end inside a longer one)."""

    text: str
    column: Column
    pending: int  # the characters at the text's end inside a terminal begun after the column
    here: dict[str, int]
    back: dict[str, int]

    @classmethod
    def of(cls, chart: CompletionChart, column: Column, text: str) -> _Ranks:
        before = column.origins[-1] if column.origins else None
        back = chart.costs(before) if before is not None else {}
        return cls(text, column, chart.pending(text, column), chart.costs(column), back)

    def names(self) -> list[str]:
        return list({**self.here, **self.back})

    def least(self, name: str, written: int) -> tuple[int, Column | None]:
        """The terminal's least whole completion with the column it is scanned from, given how
        many of its characters the text already ends in (``_UNRANKED``, ``None``: not known)."""
        if written == self.pending and name in self.here:
            return self.here[name] - written, self.column
        # The text ends inside the terminal: the chart read those characters as its last one.
        at_end = self.pending == 0 and self.column.origins
        if written and at_end and self.column.begin == len(self.text) - written and name in self.back:
            return self.back[name] - written, self.column.origins[-1]
        return _UNRANKED, None


_UNRANKED = 1 << 20


@dataclass(frozen=True)
class _Piece:
    """A terminal's text to try next: ``text``, of terminal ``terminal``, whose first ``written``
    characters the text already ends in, scanned from ``column`` in the chart."""

    text: str
    terminal: str
    written: int
    column: Column | None


_LATELY = 64  # the characters at the text's end in which a word counts as written lately


def _written_lately(text: str, piece: str) -> bool:
    """Whether ``piece`` is a word the last ``_LATELY`` characters of ``text`` hold (any case)."""
    word = piece.strip()
    if not word or not is_word_char(word[0]):
        return False
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text[-_LATELY:], re.IGNORECASE) is not None
