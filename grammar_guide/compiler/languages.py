"""The language of each state of an automaton given one state at a time, as a class number.

``Watchers.canonical`` (``watchers``) asks, of many states of the watchers, which texts each
forbids after it, and takes two states as one when those languages are equal. Building a minimal
DFA per state costs the whole automaton each time, though the states after a first character
recur from one state to the next (blark's identifier watchers: 183 states each time, hundreds of
ranges per state). Here the states are classified once: two states are in one class exactly when
they accept the same texts, and each class keeps its minimal transitions, over classes.

A state new here whose successors are all classified is classified by its signature (whether it
accepts, and the class after each character): in the minimal automaton of the classes met so far
a signature names one class, so an equal signature is an equal language, and a new one a new
language. Where new states reach one another (a loop), Moore's refinement runs over them and
every class met so far, which tells which of them are old languages.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from .automaton import Dfa, closure, equivalent_states, merged_edges

__all__ = ["EMPTY", "LanguageClasses"]

#: The class of the empty language (no accepted text), and of the language of every text.
EMPTY, EVERYTHING = 0, 1

_Edges = tuple[tuple[int, int, int], ...]


class LanguageClasses:
    """``step(state)``: the state after each character, as sorted disjoint ``(lo, hi, next)``,
    ``next`` ``None`` where every text from there on is accepted; ``accepts(state)``: whether
    the text may end there."""

    def __init__(self, step: Callable[[Any], list[tuple[int, int, Any]]], accepts: Callable[[Any], bool]) -> None:
        self.step = step
        self.accepts = accepts
        self._class: dict[Hashable, int] = {}
        #: Per class: whether it accepts the empty text, and its transitions (merged, over classes).
        self._sig: list[tuple[bool, _Edges]] = [(False, ()), (True, ((0, 0x10FFFF, EVERYTHING),))]
        self._by_sig: dict[tuple[bool, _Edges], int] = {s: i for i, s in enumerate(self._sig)}
        self._dfas: dict[int, Dfa] = {}

    def of(self, state: Hashable) -> int:
        """The class of the language ``state`` accepts."""
        if state not in self._class:
            self._classify(state)
        return self._class[state]

    def dfa(self, cls: int) -> Dfa:
        """The minimal DFA of the class's language (``automaton.minimal_dfa``'s form)."""
        if cls not in self._dfas:
            self._dfas[cls] = self._dfa(cls)
        return self._dfas[cls]

    def _dfa(self, cls: int) -> Dfa:
        if cls == EMPTY:
            return Dfa(0, frozenset(), ())
        numbering = {cls: 0}
        order = [cls]
        for c in order:
            for _, _, t in self._sig[c][1]:
                if t not in numbering:
                    numbering[t] = len(order)
                    order.append(t)
        edges = tuple(tuple((lo, hi, numbering[t]) for lo, hi, t in self._sig[c][1]) for c in order)
        return Dfa(0, frozenset(numbering[c] for c in order if self._sig[c][0]), edges)

    def _classify(self, root: Hashable) -> None:
        new = self._explore(root)
        live = self._live(new)
        for state in new:
            if state not in live:
                self._class[state] = EMPTY
        pending = [s for s in new if s in live]
        while pending:  # bottom-up: a state whose successors all have a class
            left = []
            for state in pending:
                if all(t is None or t in self._class for _, _, t in new[state]):
                    self._class[state] = self._intern(self._signature(state, new[state]))
                else:
                    left.append(state)
            if len(left) == len(pending):
                self._refine(left, new)
                return
            pending = left

    def _explore(self, root: Hashable) -> dict[Hashable, list[tuple[int, int, Any]]]:
        """The states reachable from ``root`` that have no class yet, each with its step."""
        new = {root: self.step(root)}
        order = [root]
        for state in order:
            for _, _, t in new[state]:
                if t is not None and t not in self._class and t not in new:
                    new[t] = self.step(t)
                    order.append(t)
        return new

    def _live(self, new: dict[Hashable, list[tuple[int, int, Any]]]) -> set[Hashable]:
        """The new states from which some text is accepted."""
        before: dict[Hashable, list[Hashable]] = {s: [] for s in new}
        live = set()
        for state, out in new.items():
            if self.accepts(state):
                live.add(state)
            for _, _, t in out:
                if t is None or (t in self._class and self._class[t] != EMPTY):
                    live.add(state)
                elif t in new:
                    before[t].append(state)
        return closure(live, before)

    def _target(self, t: Any) -> int:
        return EVERYTHING if t is None else self._class[t]

    def _signature(self, state: Hashable, out: list[tuple[int, int, Any]]) -> tuple[bool, _Edges]:
        edges = [(lo, hi, self._target(t)) for lo, hi, t in out]
        return (self.accepts(state), tuple(merged_edges([e for e in edges if e[2] != EMPTY])))

    def _intern(self, sig: tuple[bool, _Edges]) -> int:
        cls = self._by_sig.setdefault(sig, len(self._sig))
        if cls == len(self._sig):
            self._sig.append(sig)
        return cls

    def _refine(self, left: list[Hashable], new: dict[Hashable, list[tuple[int, int, Any]]]) -> None:
        """Classify the states of ``left``, which wait on one another (a loop, and the states
        before it), by Moore's refinement over them and every class so far (numbered as classes)."""
        old = len(self._sig)
        number = {s: old + i for i, s in enumerate(left)}
        kept: dict[int, list[tuple[int, int, int]]] = {c: list(self._sig[c][1]) for c in range(old) if c != EMPTY}
        accepting = {c for c in kept if self._sig[c][0]}
        for state in left:
            out = []
            for lo, hi, t in new[state]:
                c = number[t] if t in number else self._target(t)
                if c != EMPTY:
                    out.append((lo, hi, c))
            kept[number[state]] = out
            if self.accepts(state):
                accepting.add(number[state])
        block = equivalent_states(kept, frozenset(accepting))
        old_of_block = {block[c]: c for c in kept if c < old}
        fresh: dict[int, int] = {}  # a block with no old class: a new language, numbered in order met
        for state in left:
            b = block[number[state]]
            known = old_of_block.get(b)
            self._class[state] = known if known is not None else fresh.setdefault(b, old + len(fresh))
        self._sig += [(False, ())] * len(fresh)  # (written below, once every state has its class)
        for state in left:
            cls = self._class[state]
            if cls >= old and self._sig[cls] == (False, ()):
                sig = self._signature(state, new[state])
                self._sig[cls] = sig
                self._by_sig[sig] = cls
