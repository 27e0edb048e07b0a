"""The least completion of a text, read from an Earley chart over the grammar's terminals.

``TerminalCosts`` ranks a terminal by what its own rule needs after it, blind to the rules the
text has open around it: in ``CASE a | b |`` an operator (``&``, then a number) looks cheaper than
the ``WHEN … THEN … END`` the ``CASE`` still needs, and a search that takes the cheapest first writes
``0 & 0 & 0 …`` to its depth. A chart knows the open rules. ``CompletionChart`` reads a text as a
greedy lexer does (at each point the longest match among the terminals the chart expects there),
one Earley column per terminal, and ``Column.costs`` gives, for each terminal that may come next,
the fewest characters of a complete text that writes it next: its own text, the rest of its rule,
and the rest of every rule open around it, each symbol at its shortest (white space not counted).
Following the least cost terminal after terminal writes a least completion without a step back.

A chart is a reading, not the checker: where its lexing and the grammar's engine part (a look-
ahead, a terminal the chart has no text for), ``read`` gives ``None`` and the caller ranks
terminals as before.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .matcher import regex_accepts_prefix
from .terminal import Terminal
from .terminal_costs import least_sizes, shortest_text

__all__ = ["Column", "CompletionChart"]

_UNKNOWN = 1 << 20

# An Earley item: (rule index, dot, origin column).
_Item = tuple[int, int, int]


@dataclass
class Column:
    """The chart's items after some terminals of the text, and where in the text they end."""

    end: int
    begin: int  # where the terminal read last begins (-1 in the first column)
    items: set[_Item]
    by_next: dict[str, list[_Item]]  # items by the symbol after their dot
    origins: list[Column]  # the columns before this one, oldest first
    _needs: dict[str, int] | None = field(default=None, repr=False)
    _costs: dict[str, int] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CompletionChart:
    """A grammar's rules as an Earley recognizer over terminals, with each symbol's least size."""

    start: str
    rules: tuple[tuple[str, tuple[str, ...]], ...]
    by_origin: Mapping[str, tuple[int, ...]]
    terminals: Mapping[str, Terminal]
    texts: Mapping[str, str]
    nullable: frozenset[str]
    tails: tuple[tuple[int, ...], ...]  # per rule, the least size of its expansion from each dot
    ignored: re.Pattern[str]
    _patterns: dict[str, re.Pattern[str] | None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        terminals: Mapping[str, Terminal],
        rules: Iterable[tuple[str, Sequence[str]]],
        *,
        start: str = "start",
        ignored: re.Pattern[str],
    ) -> CompletionChart:
        """From the grammar's terminals and its rules as ``(origin, [symbol, ...])`` (a symbol
        that names a terminal is one)."""
        read = tuple((origin, tuple(expansion)) for origin, expansion in rules)
        texts = {name: text for name, t in terminals.items() if (text := shortest_text(t)) is not None}
        least = least_sizes(read, texts)
        by_origin: dict[str, list[int]] = {}
        for index, (origin, _) in enumerate(read):
            by_origin.setdefault(origin, []).append(index)
        tails = tuple(_tail_sizes(expansion, least) for _, expansion in read)
        return cls(
            start=start,
            rules=read,
            by_origin={name: tuple(indices) for name, indices in by_origin.items()},
            terminals=terminals,
            texts=texts,
            nullable=frozenset(name for name, size in least.items() if size == 0 and name not in texts),
            tails=tails,
            ignored=ignored,
        )

    def first(self) -> Column:
        """The column before any text."""
        return self._closed(0, -1, {(index, 0, 0) for index in self.by_origin.get(self.start, ())}, [])

    def read(self, text: str) -> Column | None:
        """The column after ``text``'s last whole terminal, or ``None`` where the reading stops
        short of the text's end. The text may end inside a terminal: one the column expects has
        begun at ``Column.end`` (``tru`` of ``true``), or the terminal read last is the start of a
        longer one (``FRO`` of ``FROM``; ``Column.origins[-1]`` is the column before it)."""
        column = self.first()
        at = self._skip(text, 0)
        while at < len(text):
            step = self._longest(column, text, at)
            if step is None:
                return column if self._begins(column, text[at:]) else None
            names, length = step
            read = self.scan(column, names, at, at + length)
            if read is None:
                return None
            column, at = read, self._skip(text, at + length)
        return column

    def scan(self, column: Column, names: Iterable[str], begin: int, end: int) -> Column | None:
        """The column after one of ``names`` (terminals written as one token, from ``begin`` to
        ``end``), or ``None`` where the chart expects none of them."""
        advanced = {(r, d + 1, o) for name in names for (r, d, o) in column.by_next.get(name, ())}
        if not advanced:
            return None
        return self._closed(end, begin, advanced, [*column.origins, column])

    def pending(self, text: str, column: Column) -> int:
        """How many characters at the end of ``text`` (read to ``column``) begin a terminal not
        yet whole: 0 where the column reads to the text's end."""
        return len(text) - self._skip(text, column.end)

    def is_complete(self, column: Column) -> bool:
        """Whether the text read to ``column`` is a whole text of the grammar."""
        return any(self.rules[r][0] == self.start and o == 0 and d == len(self.rules[r][1]) for r, d, o in column.items)

    def costs(self, column: Column) -> dict[str, int]:
        """Per terminal the chart expects next: the fewest characters of a whole text that writes
        it next, counted from ``column`` (its own shortest text included). Read once a column:
        the search asks again of the column before the text's last terminal."""
        if column._costs is not None:
            return column._costs
        columns = [*column.origins, column]
        found: dict[str, int] = {}
        for name, items in column.by_next.items():
            text = self.texts.get(name)
            if text is None or name not in self.terminals:
                continue
            after = min(
                self.tails[r][d + 1] + self._needs(columns[o]).get(self.rules[r][0], _UNKNOWN) for r, d, o in items
            )
            if after < _UNKNOWN:
                found[name] = len(text) + after
        column._costs = found
        return found

    # -- Earley ------------------------------------------------------------------------------

    def _closed(self, end: int, begin: int, items: set[_Item], origins: list[Column]) -> Column:
        """Predict and complete from ``items`` (in the column ``len(origins)``) to a fixed point."""
        here = len(origins)
        column = Column(end, begin, set(), {}, origins)
        columns = [*origins, column]
        todo = list(items)
        while todo:
            item = todo.pop()
            if item in column.items:
                continue
            column.items.add(item)
            r, d, o = item
            origin, expansion = self.rules[r]
            if d == len(expansion):
                for waiting in list(columns[o].by_next.get(origin, ())):
                    todo.append((waiting[0], waiting[1] + 1, waiting[2]))
                continue
            symbol = expansion[d]
            column.by_next.setdefault(symbol, []).append(item)
            if symbol in self.by_origin:
                todo.extend((index, 0, here) for index in self.by_origin[symbol])
                if symbol in self.nullable:  # Aycock and Horspool: an empty symbol is passed at once
                    todo.append((r, d + 1, o))
        return column

    def _skip(self, text: str, at: int) -> int:
        match = self.ignored.match(text, at)
        return match.end() if match and match.end() > at else at

    def _begins(self, column: Column, rest: str) -> bool:
        """Whether ``rest`` (no white space in it) begins a terminal ``column`` expects."""
        if any(ch.isspace() for ch in rest):
            return False
        return any(
            regex_accepts_prefix(terminal.pattern, rest)
            for name in column.by_next
            if (terminal := self.terminals.get(name)) is not None
        )

    def _longest(self, column: Column, text: str, at: int) -> tuple[list[str], int] | None:
        """The expected terminals with the longest match at ``at``, and its length."""
        best: list[str] = []
        length = 0
        for name in column.by_next:
            pattern = self._pattern(name)
            if pattern is None:
                continue
            match = pattern.match(text, at)
            if match is None or match.end() == at:
                continue
            size = match.end() - at
            if size > length:
                best, length = [name], size
            elif size == length:
                best.append(name)
        return (best, length) if best else None

    def _pattern(self, name: str) -> re.Pattern[str] | None:
        """The terminal's pattern as Python's ``re`` reads it (compiled on first use: the SQLite
        name's is 40 KB); ``None`` for a nonterminal, or a pattern ``re`` does not read
        (``\\p{L}`` of the ``regex`` module: a reading stops where the text holds it)."""
        if name not in self._patterns:
            terminal = self.terminals.get(name)
            try:
                self._patterns[name] = re.compile(terminal.pattern) if terminal is not None else None
            except re.error:
                self._patterns[name] = None
        return self._patterns[name]

    # -- costs -------------------------------------------------------------------------------

    def _needs(self, column: Column) -> dict[str, int]:
        """Per symbol the column waits on: the fewest characters that must follow it once it is
        complete here, for the text to be whole (a shortest path through the open rules)."""
        if column._needs is not None:
            return column._needs
        for before in column.origins:  # oldest first: no recursion as deep as the text is long
            if before._needs is None:
                self._needs(before)
        here = len(column.origins)
        needs: dict[str, int] = {}
        heap: list[tuple[int, str]] = []
        if here == 0:
            heap.append((0, self.start))
        inner: dict[str, list[tuple[int, str]]] = {}  # symbol -> (tail, parent) within this column
        for symbol, items in column.by_next.items():
            for r, d, o in items:
                parent, tail = self.rules[r][0], self.tails[r][d + 1]
                if o == here:
                    inner.setdefault(symbol, []).append((tail, parent))
                else:
                    outer = self._needs(column.origins[o]).get(parent, _UNKNOWN)
                    if outer < _UNKNOWN:
                        heap.append((tail + outer, symbol))
        heapq.heapify(heap)
        # Items predicted here lead back to the symbols they wait on here: relax those edges.
        waits_on: dict[str, list[tuple[int, str]]] = {}
        for symbol, edges in inner.items():
            for tail, parent in edges:
                waits_on.setdefault(parent, []).append((tail, symbol))
        while heap:
            cost, symbol = heapq.heappop(heap)
            if symbol in needs:
                continue
            needs[symbol] = cost
            for tail, child in waits_on.get(symbol, ()):
                if child not in needs:
                    heapq.heappush(heap, (cost + tail, child))
        column._needs = needs
        return needs


def _tail_sizes(expansion: tuple[str, ...], least: Mapping[str, int]) -> tuple[int, ...]:
    sizes = [0]
    for symbol in reversed(expansion):
        sizes.append(min(sizes[-1] + least.get(symbol, _UNKNOWN), _UNKNOWN))
    return tuple(reversed(sizes))
