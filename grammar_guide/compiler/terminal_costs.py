"""What each terminal of a grammar costs to write: its shortest text, and the fewest characters
that must follow it before the rule it is in can end (``TerminalCosts``, from the grammar's
rules). The terminal-at-a-time completion (``grammar_guide._terminal_completion``) tries the
cheapest first.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .automaton import dfa_of
from .compile import Terminal

__all__ = ["CLOSING", "TerminalCosts", "least_sizes", "shortest_text"]

_UNKNOWN = 1 << 20
_SURROGATES = (0xD800, 0xDFFF)  # code points no UTF-8 text holds
CLOSING = frozenset(")]}")  # a symbol no finite text derives (or one the search knows nothing of)


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
        least = least_sizes([(origin, [symbol for symbol, _ in expansion]) for origin, expansion in rules], texts)
        tails: dict[str, int] = {}
        for _, expansion in rules:
            for i, (symbol, term) in enumerate(expansion):
                if term:
                    rest = sum(least.get(s, _UNKNOWN) for s, _ in expansion[i + 1 :])
                    tails[symbol] = max(tails.get(symbol, 0), rest)
        return cls(texts, tails)

    def cost(self, name: str) -> int:
        text = self.texts.get(name)
        return _UNKNOWN if text is None else len(text) + self.tails.get(name, 0)


def least_sizes(rules: Sequence[tuple[str, Sequence[str]]], texts: Mapping[str, str]) -> dict[str, int]:
    """The fewest characters each symbol derives (a terminal: its shortest text; one with none
    derives nothing a search can write): a least fixed point over ``(origin, [symbol, ...])``."""
    least = {name: len(text) for name, text in texts.items()}
    changed = True
    while changed:
        changed = False
        for origin, expansion in rules:
            size = sum(least.get(symbol, _UNKNOWN) for symbol in expansion)
            if size < least.get(origin, _UNKNOWN):
                least[origin], changed = size, True
    return least


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
                if _SURROGATES[0] <= cp <= _SURROGATES[1]:  # no text holds one: the next past them
                    cp = _SURROGATES[1] + 1
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
