"""A completion found a terminal at a time, for grammars whose completions are long.

The character search of ``_complete`` finds a close of a few characters. A language whose calls
need arguments (SMCalFlow's Lispress: ``(NextDOW `` needs a day, then ``(DateAtTimeWithDefaults``
its time, then ``(&`` its second constraint) needs dozens, beyond its reach. This search steps by
whole terminals, each written as its shortest text, and tries first the terminal that costs
least: its own length and the fewest characters that must follow it before the rule it is in can
end (``TerminalCosts``, from the grammar's rules). A depth-first search over the checker, within
a budget of tries; the text it finds is complete, not necessarily the shortest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ._automaton import dfa_of
from ._checker import Checker
from ._compile import Terminal
from ._text import is_word_char

__all__ = ["TerminalCosts", "shortest_text", "terminal_completion"]

_UNKNOWN = 1 << 20
_CLOSING = frozenset(")]}")  # a symbol no finite text derives (or one the search knows nothing of)


@dataclass(frozen=True)
class TerminalCosts:
    """Per terminal name, its shortest text and the fewest characters that must follow it in the
    rules that hold it (the rest of the rule's alternative, each symbol at its shortest; the most
    of its rules, as the search does not know which one it is in: ``(&`` that begins a list of
    two constraints is not taken for the ``(&`` of a cheaper rule, over and over)."""

    texts: dict[str, str]
    tails: dict[str, int]

    @classmethod
    def of(
        cls, terminals: Mapping[str, Terminal], rules: Iterable[tuple[str, Sequence[tuple[str, bool]]]]
    ) -> TerminalCosts:
        """From the grammar's terminals and its rules as ``(origin, [(symbol, is_terminal), ...])``."""
        rules = list(rules)
        texts = {name: text for name, t in terminals.items() if (text := shortest_text(t)) is not None}
        least: dict[str, int] = {}
        changed = True
        while changed:  # the fewest characters each rule derives: a least fixed point
            changed = False
            for origin, expansion in rules:
                size = sum(_size(symbol, term, texts, least) for symbol, term in expansion)
                if size < least.get(origin, _UNKNOWN):
                    least[origin], changed = size, True
        tails: dict[str, int] = {}
        for _, expansion in rules:
            for i, (symbol, term) in enumerate(expansion):
                if term:
                    rest = sum(_size(s, t, texts, least) for s, t in expansion[i + 1 :])
                    tails[symbol] = max(tails.get(symbol, 0), rest)
        return cls(texts, tails)

    def cost(self, name: str) -> int:
        text = self.texts.get(name)
        return _UNKNOWN if text is None else len(text) + self.tails.get(name, 0)


def _size(symbol: str, terminal: bool, texts: dict[str, str], least: dict[str, int]) -> int:
    if terminal:
        text = texts.get(symbol)
        return _UNKNOWN if text is None else len(text)
    return least.get(symbol, _UNKNOWN)


@functools.lru_cache(maxsize=1024)
def _regex_text(pattern: str) -> str | None:
    try:
        dfa = dfa_of(pattern)
    except Exception:  # a pattern the automaton does not read (look-arounds, back-references)
        return None
    # Breadth-first over the DFA, each edge by its first printable character.
    seen, frontier = {dfa.start}, [(dfa.start, "")]
    while frontier:
        next_frontier = []
        for state, text in frontier:
            if state in dfa.accepting:
                return text
            for lo, hi, target in dfa.edges[state]:
                cp = max(lo, 0x20) if hi >= 0x20 else lo
                if target not in seen and cp <= hi:
                    seen.add(target)
                    next_frontier.append((target, text + chr(cp)))
        frontier = next_frontier
    return None


def shortest_text(terminal: Terminal) -> str | None:
    """A shortest text of the terminal (``None`` if none is found); a literal is itself."""
    if terminal.literal is not None:
        return terminal.literal
    return _regex_text(terminal.pattern) or None


def terminal_completion(
    checker: Checker, costs: TerminalCosts, *, max_tries: int = 400, max_depth: int = 64
) -> str | None:
    """A text that completes ``checker``'s text, found a terminal at a time (see the module
    docstring), or ``None`` within ``max_tries`` feeds and ``max_depth`` terminals."""
    if checker.is_complete:
        return ""
    tries = [max_tries]
    with checker.trial() as trial:
        return _complete_from(trial, costs, tries, max_depth)


def _complete_from(state: Checker, costs: TerminalCosts, tries: list[int], depth: int) -> str | None:
    if depth <= 0:
        return None
    mark = state.snapshot()
    for piece in _pieces(state, costs):
        if tries[0] <= 0:
            return None
        tries[0] -= 1
        if state.feed(piece) == len(piece):
            if state.is_complete:
                return piece
            if state.can_continue:
                rest = _complete_from(state, costs, tries, depth - 1)
                if rest is not None:
                    return piece + rest
        state.rollback(mark)
    return None


def _pieces(state: Checker, costs: TerminalCosts) -> list[str]:
    """What to try next, cheapest first: each expected terminal's shortest text (its rest, where
    the text ends inside it; after a space, where the text ends in a word character)."""
    text = state.text
    glued = is_word_char(text[-1:])
    pieces: dict[str, tuple[bool, int, bool]] = {}
    for terminal in state.expected():
        whole = costs.texts.get(terminal.name)
        if whole is None:
            continue
        cost = costs.cost(terminal.name)
        started = [whole[k:] for k in range(len(whole) - 1, 0, -1) if text.endswith(whole[:k])]
        # A word glued to the word the text ends in would be one longer word (``0`` + ``0``).
        whole_pieces = [" " + whole] if glued and is_word_char(whole[:1]) else [whole, " " + whole]
        for piece in [*started, *whole_pieces]:
            # Closing brackets first (they invent nothing), then by cost; among equal costs,
            # marks first.
            key = (not set(piece.strip()) <= _CLOSING, cost, is_word_char(piece.strip()[:1]))
            pieces[piece] = min(pieces.get(piece, key), key)
    return sorted(pieces, key=lambda p: pieces[p])
