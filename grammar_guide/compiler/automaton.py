"""Deterministic automata of Python regexes, over code-point ranges.

The character-level reading of a grammar (``compile``) needs a terminal's matches split by where
they end (what a longer match could still add) and cut where lark's ``re.match`` stops (a lazy
quantifier's shortest match). A regex is read with CPython's parser, its classes as Python's
``re`` has them (``charclass``), and built into a minimal DFA whose edges carry ranges.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .._errors import GrammarError
from .charclass import Ranges, char_set, normalise
from .regex import sre_constants as _c
from .regex import sre_parse as _sre_parse

__all__ = [
    "Dfa",
    "closure",
    "concatenation",
    "dfa_of",
    "equivalent_states",
    "merged_edges",
    "minimal_dfa",
    "ranges_of",
    "share_a_prefix",
    "split_ranges",
    "union",
]

_MAX_NFA_STATES = 20000

T = TypeVar("T")

Edge = tuple[int, int, int]  # lo, hi, target


@dataclass(frozen=True)
class Dfa:
    """A trimmed minimal DFA: every state can reach an accepting one; a missing edge is death."""

    start: int
    accepting: frozenset[int]
    edges: tuple[tuple[Edge, ...], ...]  # per state, sorted and disjoint

    @property
    def empty(self) -> bool:
        return not self.edges

    def step(self, state: int, cp: int) -> int | None:
        for lo, hi, target in self.edges[state]:
            if lo <= cp <= hi:
                return target
            if lo > cp:
                break
        return None

    def shortest(self) -> Dfa:
        """The matches none of whose proper prefixes is a match (``re.match`` of a lazy regex in
        the shapes the compiler accepts)."""
        edges = [() if s in self.accepting else e for s, e in enumerate(self.edges)]
        return _minimal(self.start, self.accepting, edges)

    def prefix_free(self) -> bool:
        """Whether no match is a proper prefix of another."""
        return all(not self.edges[s] for s in self.accepting)


def split_ranges(groups: Iterable[Iterable[tuple[int, int, Any]]]) -> list[tuple[int, int, tuple[Any, ...]]]:
    """Cut several lists of ``(lo, hi, label)`` into elementary intervals, each with the labels
    of the lists that cover it (``None`` for a list that does not)."""
    lists = [list(g) for g in groups]
    cuts = sorted({p for g in lists for lo, hi, _ in g for p in (lo, hi + 1)})
    out: list[tuple[int, int, tuple[Any, ...]]] = []
    positions = [0] * len(lists)
    for lo, nxt in itertools.pairwise(cuts):
        labels = []
        for i, g in enumerate(lists):
            while positions[i] < len(g) and g[positions[i]][1] < lo:
                positions[i] += 1
            if positions[i] < len(g) and g[positions[i]][0] <= lo:
                labels.append(g[positions[i]][2])
            else:
                labels.append(None)
        if any(label is not None for label in labels):
            if out and out[-1][1] == lo - 1 and out[-1][2] == tuple(labels):
                out[-1] = (out[-1][0], nxt - 1, out[-1][2])
            else:
                out.append((lo, nxt - 1, tuple(labels)))
    return out


@functools.lru_cache(maxsize=1024)
def dfa_of(regex: str, lazy_as_greedy: bool = True) -> Dfa:
    """The minimal DFA of the regex's language (``*?`` read as ``*``: the same set of strings)."""
    parsed = _sre_parse.parse(regex, 0)
    nfa = _Nfa()
    start = nfa.new()
    end = nfa.sequence(list(parsed), parsed.state.flags, start)
    return _determinise(nfa, start, end)


class _Nfa:
    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.chars: list[list[tuple[Ranges, int]]] = []

    def new(self) -> int:
        if len(self.eps) >= _MAX_NFA_STATES:
            raise GrammarError("a terminal's regex is too large to read at the character level")
        self.eps.append([])
        self.chars.append([])
        return len(self.eps) - 1

    def sequence(self, items: list[Any], flags: int, at: int) -> int:
        for op, av in items:
            at = self.item(op, av, flags, at)
        return at

    def item(self, op: Any, av: Any, flags: int, at: int) -> int:
        chars = char_set([(op, av)], flags)
        if chars is not None:
            end = self.new()
            if chars:
                self.chars[at].append((chars, end))
            return end
        if op is _c.SUBPATTERN:
            return self.sequence(list(av[3]), (flags | av[1]) & ~av[2], at)
        if op is _c.BRANCH:
            end = self.new()
            for alt in av[1]:
                begin = self.new()
                self.eps[at].append(begin)
                self.eps[self.sequence(list(alt), flags, begin)].append(end)
            return end
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            low, high, body = av
            for _ in range(low):
                at = self.sequence(list(body), flags, at)
            if high == _c.MAXREPEAT:
                loop = self.new()
                self.eps[at].append(loop)
                self.eps[self.sequence(list(body), flags, loop)].append(loop)
                return loop
            end = self.new()
            self.eps[at].append(end)
            for _ in range(high - low):
                at = self.sequence(list(body), flags, at)
                self.eps[at].append(end)
            return end
        raise GrammarError(f"no exact translation for the regex construct {op}")

    def embed(self, dfa: Dfa, start: int, end: int) -> None:
        """A copy of ``dfa`` entered from ``start`` that leaves to ``end`` after each match."""
        ids = [self.new() for _ in dfa.edges]
        if ids:
            self.eps[start].append(ids[dfa.start])
        for state, edges in enumerate(dfa.edges):
            for lo, hi, target in edges:
                self.chars[ids[state]].append(([(lo, hi)], ids[target]))
            if state in dfa.accepting:
                self.eps[ids[state]].append(end)

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        work = list(seen)
        while work:
            for nxt in self.eps[work.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    work.append(nxt)
        return frozenset(seen)


def concatenation(first: Dfa, second: Dfa) -> Dfa:
    """The strings made of a match of ``first`` then a match of ``second``."""
    nfa = _Nfa()
    start = nfa.new()
    middle = nfa.new()
    end = nfa.new()
    nfa.embed(first, start, middle)
    nfa.embed(second, middle, end)
    return _determinise(nfa, start, end)


def union(dfas: Iterable[Dfa]) -> Dfa:
    """The strings that match any of ``dfas``."""
    nfa = _Nfa()
    start = nfa.new()
    end = nfa.new()
    for dfa in dfas:
        nfa.embed(dfa, start, end)
    return _determinise(nfa, start, end)


def share_a_prefix(a: Dfa, b: Dfa) -> bool:
    """Whether some text begins with a match of ``a`` and with a match of ``b`` (both trimmed:
    every state on a common path can still reach a match)."""
    if a.empty or b.empty:
        return False
    seen = {(a.start, b.start)}
    work = [(a.start, b.start)]
    while work:
        x, y = work.pop()
        if x in a.accepting or y in b.accepting:
            return True
        for _, _, (tx, ty) in split_ranges([a.edges[x], b.edges[y]]):
            if tx is not None and ty is not None and (tx, ty) not in seen:
                seen.add((tx, ty))
                work.append((tx, ty))
    return False


def _determinise(nfa: _Nfa, start: int, end: int) -> Dfa:
    first = nfa.closure([start])
    ids = {first: 0}
    order = [first]
    edges: list[list[Edge]] = []
    while len(edges) < len(order):
        current = order[len(edges)]
        groups = [[(lo, hi, target) for lo, hi in ranges] for s in current for ranges, target in nfa.chars[s]]
        out: list[Edge] = []
        for lo, hi, targets in split_ranges(sorted(g) for g in groups):
            nxt = nfa.closure(t for t in targets if t is not None)
            if nxt not in ids:
                if len(ids) >= _MAX_NFA_STATES:
                    raise GrammarError("a terminal's regex is too large to read at the character level")
                ids[nxt] = len(order)
                order.append(nxt)
            out.append((lo, hi, ids[nxt]))
        edges.append(merged_edges(out))
    accepting = frozenset(i for s, i in ids.items() if end in s)
    return _minimal(0, accepting, edges)


def merged_edges(edges: list[Edge]) -> list[Edge]:
    """The edges sorted, adjacent ranges into one target joined."""
    out: list[Edge] = []
    for lo, hi, target in sorted(edges):
        if out and out[-1][2] == target and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, target)
        else:
            out.append((lo, hi, target))
    return out


def _minimal(start: int, accepting: frozenset[int], edges: list[tuple[Edge, ...]] | list[list[Edge]]) -> Dfa:
    """Trim (keep the states reachable from ``start`` that reach an accepting state), then merge
    equivalent states (Moore's refinement), renumbered from the start in breadth-first order."""
    reach = {start}
    work = [start]
    while work:
        for _, _, t in edges[work.pop()]:
            if t not in reach:
                reach.add(t)
                work.append(t)
    before: dict[int, list[int]] = {s: [] for s in reach}
    for s in reach:
        for _, _, t in edges[s]:
            before[t].append(s)
    live = closure({s for s in reach if s in accepting}, before)
    if start not in live:
        return Dfa(0, frozenset(), ())
    kept = {s: [(lo, hi, t) for lo, hi, t in edges[s] if t in live] for s in live}
    block = equivalent_states(kept, accepting)
    # Renumber the blocks breadth-first from the start.
    numbering = {block[start]: 0}
    representative = {block[start]: start}
    queue = [start]
    while queue:
        s = queue.pop(0)
        for _, _, t in kept[s]:
            if block[t] not in numbering:
                numbering[block[t]] = len(numbering)
                representative[block[t]] = t
                queue.append(t)
    out: list[tuple[Edge, ...]] = [()] * len(numbering)
    for b, n in numbering.items():
        s = representative[b]
        out[n] = tuple(merged_edges([(lo, hi, numbering[block[t]]) for lo, hi, t in kept[s]]))
    final = frozenset(numbering[block[s]] for s in kept if s in accepting)
    return Dfa(0, final, tuple(out))


def closure(seeds: set[T], next_of: Mapping[T, list[T]]) -> set[T]:
    """``seeds`` and every state reached from them through ``next_of`` (a state's predecessors,
    to find the states that reach ``seeds``)."""
    found = set(seeds)
    work = list(found)
    while work:
        for s in next_of[work.pop()]:
            if s not in found:
                found.add(s)
                work.append(s)
    return found


def equivalent_states(kept: dict[int, list[Edge]], accepting: frozenset[int]) -> dict[int, int]:
    """Each state's block of equivalent states (Moore's refinement from accepting / not), in an
    automaton with no dead state (``kept``: each state's sorted disjoint edges).

    A state's signature in a round is what it reads into each block: the characters of all its
    edges into that block's states, as one set of ranges. Those sets are interned once, per
    target and per union of targets that fall in one block, so that a round costs a few steps
    per state, not one per edge (a class such as ``\\W`` has hundreds of ranges)."""
    interned: dict[tuple[tuple[int, int], ...], int] = {}
    spans: list[list[tuple[int, int]]] = []

    def intern(ranges: list[tuple[int, int]]) -> int:
        key = tuple(_joined(sorted(ranges)))
        n = interned.setdefault(key, len(interned))
        if n == len(spans):
            spans.append(list(key))
        return n

    reads: dict[int, list[tuple[int, int]]] = {}  # state -> (target, its characters' id)
    for s, out in kept.items():
        by_target: dict[int, list[tuple[int, int]]] = {}
        for lo, hi, t in out:
            by_target.setdefault(t, []).append((lo, hi))
        reads[s] = [(t, intern(r)) for t, r in by_target.items()]
    unions: dict[tuple[int, ...], int] = {}

    def union_of(ids: list[int]) -> int:
        if len(ids) == 1:
            return ids[0]
        key = tuple(sorted(ids))
        if key not in unions:
            unions[key] = intern([r for i in key for r in spans[i]])
        return unions[key]

    block = {s: int(s in accepting) for s in kept}
    while True:
        signatures: dict[tuple[Any, ...], int] = {}
        new_block = {}
        for s in sorted(kept):
            into: dict[int, list[int]] = {}
            for t, r in reads[s]:
                into.setdefault(block[t], []).append(r)
            sig = (block[s], tuple(sorted((b, union_of(ids)) for b, ids in into.items())))
            new_block[s] = signatures.setdefault(sig, len(signatures))
        if len(signatures) == len(set(block.values())):
            return block
        block = new_block


def _joined(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted disjoint ranges with the adjacent ones joined."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if out and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def minimal_dfa(start: int, accepting: frozenset[int], edges: list[list[Edge]]) -> Dfa:
    """The trimmed minimal DFA of an automaton given by its edges (equal languages, equal DFAs)."""
    return _minimal(start, accepting, edges)


def ranges_of(edges: Iterable[Edge]) -> Ranges:
    return normalise([(lo, hi) for lo, hi, _ in edges])
