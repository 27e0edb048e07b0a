"""The watchers of the character-level reading: what a terminal's lark match forbids after it.

lark ends a terminal where its longest match (or its look-ahead) says; read one character at a
time, the text after a match may not be one that lark would have read as part of it. A watcher
follows such a match on into the text with its DFA; the watchers' state is carried through the
rule variants that ``character_level`` writes. ``Watchers.transitions`` gives each terminal's rules
restricted by the state before it.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Mapping

from .._errors import GrammarError
from .automaton import Dfa, dfa_of, minimal_dfa, ranges_of, split_ranges
from .charclass import Ranges, python_class
from .exact import choice, first_chars, regex_rules, regex_rules_not_starting
from .languages import EMPTY, LanguageClasses
from .lazy import LazyReading, lazy_reading
from .lookahead import Lookahead, LookaheadPart, restricted, without_words
from .regex import regex_features
from .terminal import Terminal

__all__ = ["MARK", "MAX_VARIANTS", "Marks", "State", "TooLarge", "Watcher", "Watchers", "lazy_of", "unmarked"]


#: The most rule variants (or product states of one terminal) the character-level reading may have.
MAX_VARIANTS = 20000


#: The watchers' state: the terminals whose last match could still be extended by what follows,
#: each with the state its DFA is in after the text read since; and, where a terminal looks
#: behind, the mark ``(MARK, k)`` of the class ``k`` of the last character read (no mark at the
#: text's start, or where nothing read next can look behind).
Watcher = tuple[str, int]
State = frozenset[Watcher]
MARK = "<"


def unmarked(state: State) -> tuple[State, Watcher | None]:
    """The watchers of ``state``, and its mark (``None``: none)."""
    mark = next((w for w in state if w[0] == MARK), None)
    return (state - {mark}, mark) if mark is not None else (state, None)


class Marks:
    """The classes of characters that the look-behinds of the token symbols (``behind``) tell
    apart, and the class of the last character of each match: a token symbol's DFA whose matches
    may end in characters of several classes, or be empty and not, is refined to states that know
    it (``refined``). Falsy where no token looks behind: then nothing is marked."""

    def __init__(self, behind: Mapping[str, Lookahead]) -> None:
        self.behind = dict(behind)
        conditions = list(dict.fromkeys(b.allowed for b in self.behind.values()))
        cuts = sorted({0, 0x110000} | {p for c in conditions for lo, hi in c for p in (lo, hi + 1)})
        ids: dict[tuple[bool, ...], int] = {}
        #: The code points cut into intervals, each with its class: (lo, hi, class).
        self.intervals: list[tuple[int, int, int]] = []
        for lo, nxt in itertools.pairwise(cuts):
            k = ids.setdefault(tuple(_covers(c, lo) for c in conditions), len(ids))
            if self.intervals and self.intervals[-1][2] == k:
                self.intervals[-1] = (self.intervals[-1][0], nxt - 1, k)
            else:
                self.intervals.append((lo, nxt - 1, k))
        self._starts = [lo for lo, _, _ in self.intervals]
        self._allowed = {
            x: frozenset(k for vector, k in ids.items() if vector[conditions.index(b.allowed)])
            for x, b in self.behind.items()
        }
        self._class_at: dict[str, list[int] | int] = {}  # per DFA state, or one for every state but the start

    def __bool__(self) -> bool:
        return bool(self.behind)

    def holds(self, x: str, mark: Watcher | None) -> bool:
        """Whether ``x`` may begin where the last character read is of the class ``mark``."""
        behind = self.behind.get(x)
        if behind is None:
            return True
        return behind.end_ok if mark is None else mark[1] in self._allowed[x]

    def after(self, x: str, d: int, mark: Watcher | None) -> Watcher | None:
        """The mark after a match of ``x`` that ends in the state ``d`` of its (refined) DFA;
        ``mark`` the one before it."""
        if not self:
            return None
        at = self._class_at[x]
        k = at[d] if isinstance(at, list) else at
        return mark if k < 0 else (MARK, k)

    def refined(self, x: str, dfa: Dfa) -> Dfa:
        """``dfa`` (``x``'s), refined where its states do not tell the class of the last
        character (see the class)."""
        if not self or dfa.empty:
            self._class_at[x] = -1
            return dfa
        last = {k for edges in dfa.edges for lo, hi, t in edges if t in dfa.accepting for _, _, k in self._cut(lo, hi)}
        if len(last) == 1 and dfa.start not in dfa.accepting:
            self._class_at[x] = last.pop()
            return dfa
        ids = {(dfa.start, -1): 0}
        order = [(dfa.start, -1)]
        edges: list[tuple[tuple[int, int, int], ...]] = []
        while len(edges) < len(order):
            d, _ = order[len(edges)]
            out: list[tuple[int, int, int]] = []
            for lo, hi, t in dfa.edges[d]:
                for a, b, k in self._cut(lo, hi):
                    n = ids.setdefault((t, k), len(ids))
                    if n == len(order):
                        order.append((t, k))
                    if out and out[-1][2] == n and out[-1][1] + 1 == a:
                        out[-1] = (out[-1][0], b, n)
                    else:
                        out.append((a, b, n))
            edges.append(tuple(out))
        self._class_at[x] = [k for _, k in order]
        return Dfa(0, frozenset(i for (d, _), i in ids.items() if d in dfa.accepting), tuple(edges))

    def _cut(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """``lo..hi`` cut at the classes' bounds, each piece with its class."""
        i = bisect.bisect_right(self._starts, lo) - 1
        pieces = []
        while i < len(self.intervals) and self.intervals[i][0] <= hi:
            a, b, k = self.intervals[i]
            pieces.append((max(a, lo), min(b, hi), k))
            i += 1
        return pieces


def _covers(ranges: tuple[tuple[int, int], ...], cp: int) -> bool:
    i = bisect.bisect_right(ranges, (cp, 0x110000)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]


class TooLarge(Exception):
    """The character-level reading grew past ``MAX_VARIANTS``."""


def _beginning_with(dfa: Dfa, chars: Ranges) -> Dfa:
    """The minimal DFA of the texts of ``dfa`` that begin with one of ``chars``."""
    if dfa.empty:
        return dfa
    first = [
        (max(lo, clo), min(hi, chi), t)
        for lo, hi, t in dfa.edges[dfa.start]
        for clo, chi in chars
        if lo <= chi and clo <= hi
    ]
    edges = [list(e) for e in dfa.edges] + [sorted(first)]
    start = len(dfa.edges)
    ends_there = {start} if dfa.start in dfa.accepting else set()  # the text's end is forbidden
    return minimal_dfa(start, frozenset(dfa.accepting | ends_there), edges)


def lazy_of(terminal: Terminal) -> LazyReading | None:
    """The lazy reading of a terminal whose regex has a lazy quantifier (``_terminal`` refused
    the others)."""
    if terminal.regex is None or not regex_features(terminal.regex)[1]:
        return None
    reading = lazy_reading(terminal.regex)
    assert not isinstance(reading, str), reading
    return reading


class Watchers:
    """The terminals' rules at the character level, restricted by the watchers' state before
    them: ``transitions(x, p)`` maps each state after a match of ``x`` to the rule for those
    matches of ``x`` that no watcher of ``p`` forbids and that end in that state."""

    def __init__(
        self,
        terminals: Mapping[str, Terminal],
        watched: set[str],
        source: str | None,
        parts: Mapping[str, LookaheadPart],
    ) -> None:
        self.terminals = terminals
        #: The parts whose lark match is the longest whose look-ahead holds (``LookaheadPart.longest``):
        #: watched by ``longer`` (a watcher ``(symbol + "^", d)``), not as the longest match.
        self.longest = {x for x, p in parts.items() if p.longest}
        self.watched = watched - self.longest
        self.source = source
        #: The look-ahead after each token symbol that has one; its watcher is ``(symbol + "~", 0)``.
        self.ahead: dict[str, Lookahead] = {x: p.lookahead for x, p in parts.items() if p.lookahead is not None}
        #: The look-aheads inside lexemes: at which offset, which characters the lexeme may have.
        self.within = {x: p.within for x, p in parts.items() if p.within is not None}
        #: The words a look-ahead at the start keeps from being lexemes (a regex).
        self.excluded = {x: p.excluded for x, p in parts.items() if p.excluded is not None}
        #: The watchers that forbid the text's end where they stand (a ``(?=...)``'s).
        self.end_forbidden = frozenset((f"{x}~", 0) for x, a in self.ahead.items() if not a.end_ok)
        #: What may come before each token symbol that has a look-behind, and the classes of
        #: characters those tell apart (see ``Marks``).
        self.marks = Marks({x: p.behind for x, p in parts.items() if p.behind is not None})
        for x in self.longest:  # where the text ends after a longer match, that match was lark's
            if self.ahead[x].end_ok:
                done, n = self.dfa(x), len(self.dfa(x).edges)
                self.end_forbidden |= {(f"{x}^", n + q) for q in done.accepting}
        self.rules: dict[str, tuple[str, str]] = {}  # rule -> (compiled terminal or "", body)
        self._ids: dict[State, int] = {frozenset(): 0}
        self._done: dict[tuple[str, State], dict[State, str]] = {}
        # One state for each language of forbidden continuations (see ``canonical``).
        self._canonical: dict[State, State] = {frozenset(): frozenset()}
        #: The language each state forbids after it, as a class (``languages``).
        self._languages = LanguageClasses(self._step, self.forbids_end)
        self._first_of: dict[int, State] = {EMPTY: frozenset()}
        self._within: dict[tuple[State, tuple[tuple[int, int], ...]], State] = {}
        self._by_forbidden_within: dict[tuple[tuple[tuple[int, int], ...], Dfa], State] = {}

    def index(self, state: State) -> int:
        return self._ids.setdefault(state, len(self._ids))

    def forbids_end(self, state: State) -> bool:
        """Whether the text may not end where the watchers are in ``state``."""
        return not self.end_forbidden.isdisjoint(state)

    @functools.cache  # noqa: B019 - one per compilation
    def dfa(self, x: str) -> Dfa:
        if x.endswith("~"):  # a look-ahead's watcher: a forbidden character is a hit
            forbidden = tuple((lo, hi, 1) for lo, hi in self.ahead[x[:-1]].forbidden)
            return Dfa(0, frozenset({1}), (forbidden, ()))
        if x.endswith("^"):
            return self._longer(x[:-1])
        terminal = self.terminals[x]
        try:
            reading = lazy_of(terminal)
            dfa = reading.dfa if reading else dfa_of(terminal.pattern)
            if x in self.within:
                dfa = restricted(dfa, self.within[x])
            if x in self.excluded:
                dfa = without_words(dfa, self.excluded[x])
            return self.marks.refined(x, dfa)
        except GrammarError as error:  # an automaton too large to build
            raise GrammarError(
                f"terminal {terminal.name}: {error.message}", construct=terminal.name, source=self.source
            ) from None

    def _longer(self, x: str) -> Dfa:
        """The watcher of a match of ``x`` in ``longest``: it hits where the text after the match
        makes a longer match (one character at least) and then a character its look-ahead allows.
        State ``d`` is the match's DFA state ``d`` before a character is read, ``n + d`` after."""
        dfa, allowed = self.dfa(x), self.ahead[x].allowed
        n = len(dfa.edges)
        hit = 2 * n
        edges: list[tuple[tuple[int, int, int], ...]] = []
        for moved in (False, True):
            for d, out in enumerate(dfa.edges):
                if not (moved and d in dfa.accepting):
                    edges.append(tuple((lo, hi, n + t) for lo, hi, t in out))
                    continue
                cut = split_ranges([out, [(lo, hi, 0) for lo, hi in allowed]])
                edges.append(tuple((lo, hi, hit if a is not None else n + t) for lo, hi, (t, a) in cut))
        edges.append(())
        return Dfa(0, frozenset({hit}), tuple(edges))

    def transitions(self, x: str, p: State) -> dict[State, str]:
        key = (x, p)
        if key not in self._done:
            watching, mark = unmarked(p)
            self._done[key] = self._explore(x, watching, mark) if self.marks.holds(x, mark) else {}
        return self._done[key]

    def _final(self, x: str, d: int, watching: State, mark: Watcher | None) -> State:
        """The state after a match of ``x`` that ends in its DFA's state ``d``, the watchers then
        ``watching``, the last character read before it of the class ``mark``."""
        added = {(x, d)} if x in self.watched and self.dfa(x).edges[d] else set()
        if x in self.ahead:
            added.add((f"{x}~", 0))
        if x in self.longest:
            added.add((f"{x}^", d))
        state = self.canonical(watching | added) if added else watching
        if not self.marks:
            return state
        self.dfa(x)  # (which tells the class of its states' last characters)
        after = self.marks.after(x, d, mark)
        return state | {after} if after is not None else state

    def canonical(self, state: State) -> State:
        """The first state met that forbids the same texts after it as ``state``: the watchers
        forbid every text that begins with a ``v`` taking one of them to a match, and that set
        is all the reading asks of them (``_product`` steps and forbids by it), so states that
        forbid the same set are one (``\\le`` and ``\\ge`` each forbid what begins ``q``).
        Fewer states, fewer rule variants: the matcher's Earley sets shrink in proportion."""
        watching, mark = unmarked(state)
        if mark is not None:
            return self.canonical(watching) | {mark}
        if state not in self._canonical:
            self._canonical[state] = self._first_of.setdefault(self._languages.of(state), state)
        return self._canonical[state]

    def canonical_within(self, state: State, chars: Ranges) -> State:
        """``canonical`` where what comes next begins with one of ``chars`` (or the text ends):
        there a state reads as any state that forbids the same texts beginning with one of them
        (after ``1`` a number also forbids ``.``, which nothing after it may begin with where no
        ``.`` follows a number: there it is ``1.``'s state), and as no state when it forbids none
        of them. ``character_level``'s relevance asks it with the characters that may follow a rule."""
        watching, mark = unmarked(state)
        if mark is not None:
            return self.canonical_within(watching, chars) | {mark}
        if not state:
            return state
        key = (state, tuple(chars))
        if key not in self._within:
            forbidden = _beginning_with(self._forbidden(state), chars)
            if forbidden.empty:
                self._within[key] = frozenset()
            else:
                self._within[key] = self._by_forbidden_within.setdefault((key[1], forbidden), state)
        return self._within[key]

    def _forbidden(self, state: State) -> Dfa:
        """The minimal DFA of the texts ``state`` forbids after it (a canonical form: equal
        languages give equal automata)."""
        return self._languages.dfa(self._languages.of(state))

    def _step(self, watching: State) -> list[tuple[int, int, State | None]]:
        """The watchers after each character read from ``watching`` (``None``: one of them hits:
        every text from there on is forbidden)."""
        ordered = sorted(watching)
        out: list[tuple[int, int, State | None]] = []
        for lo, hi, labels in split_ranges(self.dfa(y).edges[e] for y, e in ordered):
            pairs = [(y, t) for (y, _), t in zip(ordered, labels, strict=True) if t is not None]
            hits = any(t in self.dfa(y).accepting for y, t in pairs)
            out.append((lo, hi, None if hits else frozenset(pairs)))
        return out

    def _name(self, x: str, p: State, q: State) -> str:
        return f"gg_t_{x.lower()}__{self.index(p)}_{self.index(q)}"

    def _explore(self, x: str, p: State, mark: Watcher | None) -> dict[State, str]:
        """``transitions`` after the watchers ``p`` (no mark), the last character read of the
        class ``mark``."""
        terminal = self.terminals[x]
        if lazy_of(terminal) or x in self.within or x in self.excluded:
            return {} if self.dfa(x).empty else self._product(x, p, mark)
        # When every watcher of p dies or forbids at the first character, and every match of x
        # ends in the same state, x's regex as rules does, its first character restricted (no
        # automaton of x is needed when x is not watched: a large bounded repeat stays cheap).
        if x in self.watched or x in self.ahead or self.marks:
            dfa = self.dfa(x)
            finals = {self._final(x, d, frozenset(), mark) for d in dfa.accepting}
            nullable = dfa.start in dfa.accepting
        else:
            finals, nullable = {frozenset()}, first_chars(terminal.pattern)[1]
        one_step = all(all(t in self.dfa(y).accepting for _, _, t in self.dfa(y).edges[e]) for y, e in p)
        if len(finals) == 1 and (not p or (one_step and not nullable)):
            (q,) = finals
            forbidden = ranges_of(edge for y, e in p for edge in self.dfa(y).edges[e])
            body = regex_rules(terminal.pattern) if not p else regex_rules_not_starting(terminal.pattern, forbidden)
            if body is None:
                return {}
            name = self._name(x, p, q)
            self.rules[name] = (x, body)
            return {q: name}
        if self.dfa(x).empty:
            return {}
        return self._product(x, p, mark)

    def _product(self, x: str, p: State, mark: Watcher | None) -> dict[State, str]:
        """The matches of ``x`` read together with the watchers of ``p``, as right-linear rules."""
        dfa = self.dfa(x)
        first = (dfa.start, p)
        ids = {first: 0}
        order = [first]
        edges: list[list[tuple[int, int, int]]] = []
        while len(edges) < len(order):
            d, watching = order[len(edges)]
            ordered = sorted(watching)
            out = []
            groups = [dfa.edges[d], *(self.dfa(y).edges[e] for y, e in ordered)]
            for lo, hi, labels in split_ranges(groups):
                if labels[0] is None:
                    continue
                kept = set()
                for (y, _), t in zip(ordered, labels[1:], strict=True):
                    if t is None:
                        continue
                    if t in self.dfa(y).accepting:
                        break  # lark would have read y on: its longer match is a match
                    kept.add((y, t))
                else:
                    nxt = (labels[0], self.canonical(frozenset(kept)))
                    if nxt not in ids:
                        if len(ids) > MAX_VARIANTS:
                            raise TooLarge
                        ids[nxt] = len(order)
                        order.append(nxt)
                    out.append((lo, hi, ids[nxt]))
            edges.append(out)
        ends = {i: self._final(x, d, w, mark) for (d, w), i in ids.items() if d in dfa.accepting}
        result: dict[State, str] = {}
        for q in dict.fromkeys(ends.values()):  # (in the order met: the names are the same every run)
            # The product states from which a match ending in q can still be completed.
            live = {i for i, e in ends.items() if e == q}
            grew = True
            while grew:
                grew = False
                for i, out in enumerate(edges):
                    if i not in live and any(t in live for _, _, t in out):
                        live.add(i)
                        grew = True
            if 0 not in live:
                continue
            top = self._name(x, p, q)
            names = {i: top if i == 0 else f"{top}_{i}" for i in live}
            for i in sorted(live):
                loop = [(lo, hi) for lo, hi, t in edges[i] if t == i]
                by_target: dict[int, list[tuple[int, int]]] = {}
                for lo, hi, t in edges[i]:
                    if t in live and t != i:
                        by_target.setdefault(t, []).append((lo, hi))
                alts = [f"/{python_class(r, in_lark=True)}/ {names[t]}" for t, r in by_target.items()]
                if ends.get(i) == q:
                    alts.append("")
                body = choice(alts, nested=bool(loop))
                if loop:
                    body = f"/{python_class(loop, in_lark=True)}/* {body}".rstrip()
                self.rules[names[i]] = (x if i == 0 else "", body)
            result[q] = top
        return result
