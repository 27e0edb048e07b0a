"""``compiler.languages``: the language classes of an automaton's states agree with minimal DFAs.

The character-level reading takes two watchers' states as one exactly when they forbid the same
texts (``Watchers.canonical``); ``LanguageClasses`` decides that once per state instead of
minimising an automaton per state. Here, on random automata (loops, dead states, states that
accept every text from there on, twins), asked in random orders (so that some states are classified
from their successors' classes, others by refinement over a loop), every state's class must have
the minimal DFA that ``minimal_dfa`` gives for that state, and two states share a class exactly
when those DFAs are equal.
"""

from __future__ import annotations

import itertools
import random

import pytest

from grammar_guide.compiler.automaton import Dfa, minimal_dfa
from grammar_guide.compiler.languages import EMPTY, LanguageClasses

Step = list[tuple[int, int, int | None]]


def random_automaton(rng: random.Random, size: int) -> tuple[dict[int, Step], set[int]]:
    """Each state's edges over the characters 0..11 (``None``: every text on is accepted), and a
    twin of each state (``size + state``)."""
    steps: dict[int, Step] = {}
    for state in range(size):
        cuts = sorted(rng.sample(range(1, 12), rng.randint(0, 4)))
        out: Step = []
        for lo, hi in zip([0, *cuts], [c - 1 for c in cuts] + [11], strict=True):
            kind = rng.random()
            if kind < 0.2:
                continue
            target = None if kind < 0.3 else rng.randrange(size)
            out.append((lo * 10, hi * 10 + 9, target))
        steps[state] = out
    accepts = {s for s in range(size) if rng.random() < 0.2}
    # A twin of every state: its loops are new when the first copy already has classes.
    for state in range(size):
        steps[size + state] = [(lo, hi, None if t is None else size + t) for lo, hi, t in steps[state]]
    accepts |= {size + s for s in accepts}
    return steps, accepts


def rooted_dfa(steps: dict[int, Step], accepts: set[int], root: int) -> Dfa:
    """The minimal DFA of what ``root`` accepts, the way ``Watchers`` built it before."""
    ids, order, edges = {root: 0}, [root], []
    while len(edges) < len(order):
        out = []
        for lo, hi, t in steps[order[len(edges)]]:
            if t is None:
                out.append((lo, hi, -1))
                continue
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
            out.append((lo, hi, ids[t]))
        edges.append(out)
    sink = len(order)
    edges = [[(lo, hi, sink if t == -1 else t) for lo, hi, t in out] for out in edges]
    edges.append([(0, 0x10FFFF, sink)])
    return minimal_dfa(0, frozenset({sink, *(ids[s] for s in order if s in accepts)}), edges)


@pytest.mark.parametrize("seed", range(40))
def test_classes_are_the_languages_of_minimal_dfas(seed: int) -> None:
    rng = random.Random(seed)
    steps, accepts = random_automaton(rng, rng.randint(2, 14))
    classes = LanguageClasses(steps.__getitem__, accepts.__contains__)
    asked = list(steps)
    rng.shuffle(asked)
    found = {s: classes.of(s) for s in asked}
    expected = {s: rooted_dfa(steps, accepts, s) for s in steps}
    for s in steps:
        assert classes.dfa(found[s]) == expected[s], s
        assert (found[s] == EMPTY) == expected[s].empty
        for t in steps:
            assert (found[s] == found[t]) == (expected[s] == expected[t]), (s, t)


def accepted(steps: dict[int, Step], accepts: set[int], state: int, text: list[int]) -> bool:
    for c in text:
        nxt = next((t for lo, hi, t in steps[state] if lo <= c <= hi), -1)
        if nxt is None:
            return True
        if nxt == -1:
            return False
        state = nxt
    return state in accepts


def dfa_accepts(dfa: Dfa, text: list[int]) -> bool:
    if dfa.empty:
        return False
    state: int | None = dfa.start
    for c in text:
        state = dfa.step(state, c)
        if state is None:
            return False
    return state in dfa.accepting


@pytest.mark.parametrize("seed", range(10))
def test_each_class_accepts_what_its_state_accepts(seed: int) -> None:
    """Every text of up to 3 characters (one per range of the alphabet) is in a state's class
    exactly when the state accepts it: no two languages were made one."""
    rng = random.Random(seed)
    steps, accepts = random_automaton(rng, rng.randint(2, 6))
    classes = LanguageClasses(steps.__getitem__, accepts.__contains__)
    texts = [[c * 10 + 5 for c in t] for n in range(4) for t in itertools.product(range(12), repeat=n)]
    for s in steps:
        dfa = classes.dfa(classes.of(s))
        assert all(dfa_accepts(dfa, t) == accepted(steps, accepts, s, t) for t in texts), s
