"""The character-level reading: a grammar's rules over one-character lexemes, multiplied by the
watchers' state (``watchers``) so that its language is exactly lark's."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from .._errors import GrammarError
from .charclass import normalise
from .exact import first_chars
from .lookahead import LookaheadPart, LookaheadReading
from .rule_shape import Rules, for_matcher, rules_of, written
from .terminal import Compiled, Terminal
from .watchers import MARK, MAX_VARIANTS, State, TooLarge, Watchers

__all__ = ["NoText", "character_level"]


def character_level(
    by_origin: Mapping[str, list[str]],
    rule_name: Callable[[str], str],
    start: str,
    term_names: Mapping[str, str],
    terminals: Mapping[str, Terminal],
    skipped: tuple[list[str], list[str]],
    watched: tuple[Iterable[str], Mapping[str, LookaheadReading]],
    source: str | None,
) -> Compiled:
    """The grammar at the character level: each terminal a rule over one-character lexemes,
    ignored text a rule before every terminal and at the end. The matcher's lexer then has
    nothing to be greedy about, and its language is exactly the rules' language. ``skipped``:
    the ignored terminals, and those ignored only where the text begins (``/^\\n/``).

    A terminal in ``munch`` (see ``hazards``) takes its longest match in lark: the text after
    a match ``w`` may not begin with a ``v`` that makes ``w v`` a match too. That is a regular
    condition on what follows, so the rules are multiplied by a small automaton that watches it
    (``Watchers``): its state is the set of such terminals whose match could still be extended,
    each with its DFA state.

    A terminal in ``lookaheads`` (see ``lookahead``) forbids what its look-ahead forbids after
    its lexeme: a watcher of one character, which may also forbid the text's end there. One whose
    alternatives have different look-aheads is a rule of one terminal for each. One that looks
    behind (``LookaheadPart.behind``) may begin only where the last character read is one it
    allows: the state then also marks the class of that character (``Marks``).
    """
    munch, lookaheads = watched
    by_compiled = {compiled: name for name, compiled in term_names.items()}
    # The symbol grammar: tokens are compiled terminal names, gg_skip the ignored text.
    ignore, leading = skipped
    rules: dict[str, list[list[str]]] = {
        "gg_start": [
            [*lead, rule_name(start)] + (["gg_skip"] if ignore else [])
            for lead in [[], *([term_names[n]] for n in leading)]
        ]
    }
    for origin, bodies in by_origin.items():
        rules[rule_name(origin)] = [
            [
                y
                for sym in body.split()
                if sym != '""'
                for y in (["gg_skip", sym] if ignore and sym in by_compiled else [sym])
            ]
            for body in bodies
        ]
    if ignore:
        rules["gg_skip"] = [[]] + [["gg_skip", term_names[name]] for name in ignore]
    token_terminals = {term_names[n]: t for n, t in terminals.items()}
    ahead = _split_lookaheads(rules, lookaheads, term_names, token_terminals, by_compiled)
    # Two symbols at most per alternative: the product then grows with the number of states,
    # not with its power (an alternative of k symbols would have up to states**k paths).
    for origin in list(rules):
        for i, alt in enumerate(rules[origin]):
            head = origin
            while len(alt) > 2:
                helper = f"{origin}_b{i}_{len(alt)}"
                rules[helper] = [alt[1:]]
                rules[head][0 if head != origin else i] = [alt[0], helper]
                head, alt = helper, alt[1:]
    tokens = Watchers(token_terminals, {term_names[n] for n in [*munch, *leading]}, source, ahead)
    empty: State = frozenset()
    relevant = _Relevance(rules, by_compiled, tokens)
    reach = _reach(rules, by_compiled, tokens, relevant)
    text_ends = [q for q in reach[("gg_start", empty)] if not tokens.forbids_end(q)]
    if not text_ends:
        raise NoText
    out = _Variants(rules, by_compiled, tokens, relevant, reach).written(("gg_start", empty, frozenset(text_ends)))
    # Drop what derives no text (a terminal none of whose matches may come there, and what needs one).
    productive: set[str] = set(tokens.rules)
    changed = True
    while changed:
        changed = False
        for variant, alts in out.items():
            if variant not in productive and any(all(x in productive for x in a.split()) for a in alts):
                productive.add(variant)
                changed = True
    # The text may end after gg_start only where no look-ahead asks for more.
    head = next(iter(out))
    if head not in productive:
        raise NoText
    reading: Rules = {"start": [[head]]}
    for variant, alts in out.items():
        if variant in productive:
            reading[variant] = [a.split() for a in dict.fromkeys(alts) if all(x in productive for x in a.split())]
    reading.update(rules_of({rule: body for rule, (_, body) in tokens.rules.items()}))
    # The same rules reshaped for the matcher (``rule_shape``), ``start: gg_start__...`` as before;
    # in the captured grammar, each rule that captures a terminal keeps its name.
    captures = {rule: by_compiled[compiled] for rule, (compiled, _) in tokens.rules.items() if compiled}
    plain = for_matcher(reading, {"start", head}, ["start"], set(tokens.rules))
    captured = for_matcher(reading, {"start", head, *captures}, ["start"], set(tokens.rules))
    plain_text = "\n".join(written(n, r) for n, r in plain.items()) + "\n"
    captured_text = "\n".join(
        written(f'{n}[capture="{captures[n]}"]' if n in captures else n, r) for n, r in captured.items()
    )
    return Compiled(plain_text, captured_text + "\n", dict(terminals), character_level=True)


class NoText(Exception):
    """The character-level reading derives no text."""


_Variant = tuple[str, State, frozenset[State]]
_Key = tuple[str, State]


class _Variants:
    """The rule variants of the character-level reading, written out from the reachable ones:
    ``(n, p, ends)`` is rule ``n`` read from the watchers' state ``p`` to any state of ``ends``.

    A symbol followed by one that feels no difference between some of the states it may end in
    (``expression "="``: no watcher of an expression's end feels ``=``) is one variant for them
    all, not one per state: the variants would derive the same texts, each as its own Earley
    items, predicted side by side and completed side by side wherever that symbol may begin."""

    def __init__(
        self,
        rules: Mapping[str, list[list[str]]],
        by_compiled: Mapping[str, str],
        tokens: Watchers,
        relevant: _Relevance,
        reach: Mapping[tuple[str, State], Mapping[State, None]],
    ) -> None:
        self.rules = rules
        self.by_compiled = by_compiled
        self.tokens = tokens
        self.relevant = relevant
        self.reach = reach
        self.size = 0
        self._names: dict[_Variant, str] = {}
        self._grouped: dict[tuple[str, State, str], list[list[tuple[State, str | None]]]] = {}
        self._ended: dict[tuple[str, str, State], list[tuple[State, str | None, State]]] = {}

    def name(self, variant: _Variant) -> str:
        known = self._names.get(variant)
        if known is None:
            known = self._names[variant] = self._name(variant)
        return known

    def _name(self, variant: _Variant) -> str:
        n, p, ends = variant
        index = self.tokens.index
        # (States met here for the first time are numbered in an order of their own, not the
        # frozenset's, which depends on the process's string hashes.)
        numbers = sorted(index(q) for q in sorted(ends, key=sorted))
        return f"{n}__{index(p)}_{'x'.join(map(str, numbers))}"

    def written(self, head: _Variant) -> dict[str, list[str]]:
        """Each variant's alternatives (symbols joined by spaces), from ``head`` (first) on."""
        out: dict[str, list[str]] = {}
        todo = [head]
        seen = {head}
        while todo:
            variant = todo.pop()
            alts, wanted = self._alternatives(variant)
            out[self.name(variant)] = alts
            for v in wanted:
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        head_name = self.name(head)
        return {head_name: out[head_name], **out}

    def _alternatives(self, variant: _Variant) -> tuple[list[str], list[_Variant]]:
        n, p, ends = variant
        alts: list[str] = []
        wanted: list[_Variant] = []
        for alt in self.rules[n]:
            partial: list[tuple[list[str], State]] = [([], p)]
            for i, x in enumerate(alt):
                grown = []
                for syms, s in partial:
                    s = self.relevant(x, s)
                    if i + 1 < len(alt):
                        groups = self._groups(x, s, alt[i + 1])
                    else:  # the last symbol: any of ``ends`` will do
                        members = [(q, rule) for q, rule, a in self._endings(n, x, s) if a in ends]
                        groups = [members] if members else []
                    for members in groups:
                        rep = members[0][0]
                        if x in self.by_compiled:
                            grown += [([*syms, rule], rep) for _, rule in members if rule is not None]
                        else:
                            wanted.append((x, s, frozenset(q for q, _ in members)))
                            grown.append(([*syms, self.name(wanted[-1])], rep))
                partial = grown
            if not alt and self.relevant.after(n, p) not in ends:
                partial = []
            self.size += len(partial)
            if self.size > MAX_VARIANTS * 4:
                raise TooLarge
            alts += [" ".join(syms) for syms, _ in partial]
        return alts, wanted

    def _pairs(self, x: str, s: State) -> list[tuple[State, str | None]]:
        """The states after ``x`` read from ``s``, each with the rule that reads a token there."""
        if x in self.by_compiled:
            return list(self.tokens.transitions(x, s).items())
        return [(q, None) for q in self.reach[(x, s)]]

    def _groups(self, x: str, s: State, y: str) -> list[list[tuple[State, str | None]]]:
        """``_pairs(x, s)`` grouped by what ``y`` after them feels of their states."""
        key = (x, s, y)
        if key not in self._grouped:
            groups: dict[State, list[tuple[State, str | None]]] = {}
            for q, rule in self._pairs(x, s):
                groups.setdefault(self.relevant(y, q), []).append((q, rule))
            self._grouped[key] = list(groups.values())
        return self._grouped[key]

    def _endings(self, n: str, x: str, s: State) -> list[tuple[State, str | None, State]]:
        """``_pairs(x, s)`` with the state rule ``n`` ends in after each, ``x`` its last symbol."""
        key = (n, x, s)
        if key not in self._ended:
            self._ended[key] = [(q, rule, self.relevant.after(n, q)) for q, rule in self._pairs(x, s)]
        return self._ended[key]


def _reach(
    rules: Mapping[str, list[list[str]]], by_compiled: Mapping[str, str], tokens: Watchers, relevant: _Relevance
) -> dict[_Key, dict[State, None]]:
    """Which states each (rule, state before) may end in: a least fixed point, from ``gg_start``
    at the empty state. (Sets of states are dicts, kept in the order met, so that states are met,
    and variants named, the same way in every run: a frozenset's order depends on the process's
    string hashes.)

    Each pass reads the entries in order; an entry none of whose inputs (the entries it read)
    grew since it was last read finds what it found then, and is not read again."""
    empty: State = frozenset()
    reach: dict[_Key, dict[State, None]] = {("gg_start", empty): {}}
    grown: dict[_Key, int] = {("gg_start", empty): 0}  # the tick at which each entry last grew
    read: dict[_Key, tuple[int, dict[_Key, None]]] = {}  # when each entry was read, and its inputs
    tick = 0
    changed = True
    while changed:
        changed = False
        for key, known in list(reach.items()):
            last = read.get(key)
            if last is not None and all(grown[d] <= last[0] for d in last[1]):
                continue
            tick += 1
            inputs: dict[_Key, None] = {}
            n, p = key
            found: dict[State, None] = {}
            for alt in rules[n]:
                states = {p: None}
                for x in alt:
                    after: dict[State, None] = {}
                    for s in states:
                        s = relevant(x, s)
                        if x in by_compiled:
                            after.update(dict.fromkeys(tokens.transitions(x, s)))
                        else:
                            if (x, s) not in reach:
                                reach[(x, s)] = {}
                                grown[(x, s)] = tick
                                changed = True
                            inputs[(x, s)] = None
                            after.update(reach[(x, s)])
                    states = after
                found.update(dict.fromkeys(relevant.after(n, q) for q in states))
            read[key] = (tick, inputs)
            if not found.keys() <= known.keys():
                known.update(found)
                tick += 1
                grown[key] = tick
                changed = True
        if len(reach) > MAX_VARIANTS:
            raise TooLarge
    return reach


def _split_lookaheads(
    rules: dict[str, list[list[str]]],
    lookaheads: Mapping[str, LookaheadReading],
    term_names: Mapping[str, str],
    token_terminals: dict[str, Terminal],
    by_compiled: dict[str, str],
) -> dict[str, LookaheadPart]:
    """The part of a look-ahead's terminal each token symbol reads. A terminal with one look-ahead keeps
    its symbol; one whose alternatives differ (``[+*]|[?](?![a-z])``) becomes a rule with a
    token symbol for each part, in ``rules``, ``token_terminals`` and ``by_compiled``."""
    ahead: dict[str, LookaheadPart] = {}
    for name, reading in lookaheads.items():
        x = term_names[name]
        symbols = [x] if len(reading.parts) == 1 else [f"{x}_P{i}" for i in range(len(reading.parts))]
        if len(symbols) > 1:
            helper = f"gg_parts_{x.lower()}"
            for alternatives in rules.values():
                for alt in alternatives:
                    alt[:] = [helper if y == x else y for y in alt]
            rules[helper] = [[y] for y in symbols]
            del token_terminals[x], by_compiled[x]
        for y, part in zip(symbols, reading.parts, strict=True):
            token_terminals[y] = Terminal(name, regex=part.regex)
            by_compiled[y] = name
            ahead[y] = part
    return ahead


class _Relevance:
    """The part of a watchers' state a symbol can feel: a watcher none of whose next characters
    may begin the symbol dies at its first character, so a symbol that cannot be empty reads the
    same after a state as after that state without such watchers. ``relevant(x, s)`` is that
    smaller state, so that ``x`` gets one variant for all the states that differ only in watchers
    it cannot feel (fewer rule variants: smaller Earley sets in the matcher, byte after byte)."""

    def __init__(
        self,
        rules: Mapping[str, list[list[str]]],
        by_compiled: Mapping[str, str],
        tokens: Watchers,
    ) -> None:
        self.tokens = tokens
        self.first: dict[str, list[tuple[int, int]] | None] = {}  # None: unknown, any character
        self.nullable: set[str] = set()
        for compiled in by_compiled:
            try:
                ranges, empty = first_chars(tokens.terminals[compiled].pattern)
            except (GrammarError, re.error):
                ranges, empty = None, True
            self.first[compiled] = ranges
            if empty:
                self.nullable.add(compiled)
        self._first_of_rules(rules)
        self.follow = self._follow_of_rules(rules)
        self.looks_behind = self._looking_behind(rules)
        self._memo: dict[tuple[str, State], State] = {}
        self._after: dict[tuple[str, State], State] = {}

    def _follow_of_rules(self, rules: Mapping[str, list[list[str]]]) -> dict[str, list[tuple[int, int]] | None]:
        """The characters that may come right after each rule (``None``: unknown); the text may
        also end there, which no watcher feels."""
        follow: dict[str, set[tuple[int, int]] | None] = {n: set() for n in rules}
        changed = True
        while changed:
            changed = False
            for origin, alts in rules.items():
                for alt in alts:
                    for i, x in enumerate(alt):
                        if x not in rules:
                            continue
                        after = self._first_of_sequence(alt[i + 1 :])
                        if after is not None and all(y in self.nullable for y in alt[i + 1 :]):
                            outer = follow[origin]
                            after = None if outer is None else after | outer
                        mine = follow[x]
                        if mine is None:
                            continue
                        if after is None:
                            follow[x] = None
                            changed = True
                        elif not after <= mine:
                            mine |= after
                            changed = True
        return {n: None if f is None else normalise(list(f)) for n, f in follow.items()}

    def _looking_behind(self, rules: Mapping[str, list[list[str]]]) -> set[str]:
        """The symbols whose text may begin with a token that looks behind: they feel the mark of
        the last character read before them; the others do not."""
        found = set(self.tokens.marks.behind)
        changed = bool(found)
        while changed:
            changed = False
            for origin, alts in rules.items():
                if origin in found:
                    continue
                for alt in alts:
                    if any(y in found for y in _up_to_first_solid(alt, self.nullable)):
                        found.add(origin)
                        changed = True
                        break
        return found

    def _first_of_sequence(self, symbols: list[str]) -> set[tuple[int, int]] | None:
        """The characters a text of these symbols may begin with (``None``: unknown)."""
        found: set[tuple[int, int]] = set()
        for y in symbols:
            theirs = self.first.get(y)
            if theirs is None:
                return None
            found |= set(theirs)
            if y not in self.nullable:
                break
        return found

    def after(self, n: str, state: State) -> State:
        """The part of the state a rule ``n`` ends in that what may follow it can feel: a watcher
        none of whose next characters may come after ``n`` dies there, wherever ``n`` is used."""
        follow = self.follow.get(n)
        if not state or follow is None:
            return state
        key = (n, state)
        if key not in self._after:
            kept = frozenset(
                w for w in state if w[0] == MARK or self._overlaps(w, follow) or w in self.tokens.end_forbidden
            )
            kept = state if kept == state else self.tokens.canonical(kept)
            self._after[key] = self.tokens.canonical_within(kept, follow)
        return self._after[key]

    def _overlaps(self, watcher: tuple[str, int], chars: list[tuple[int, int]]) -> bool:
        y, e = watcher
        return any(lo <= hi2 and lo2 <= hi for lo, hi, _ in self.tokens.dfa(y).edges[e] for lo2, hi2 in chars)

    def _first_of_rules(self, rules: Mapping[str, list[list[str]]]) -> None:
        firsts: dict[str, set[tuple[int, int]] | None] = {n: set() for n in rules}
        changed = True
        while changed:
            changed = False
            for origin, alts in rules.items():
                mine = firsts[origin]
                for alt in alts:
                    for x in alt:
                        theirs = firsts[x] if x in firsts else self.first.get(x)
                        if theirs is None:
                            if mine is not None:
                                mine = firsts[origin] = None
                                changed = True
                        elif mine is not None and not set(theirs) <= mine:
                            mine |= set(theirs)
                            changed = True
                        if x not in self.nullable:
                            break
                    else:
                        if origin not in self.nullable:
                            self.nullable.add(origin)
                            changed = True
        for origin, found in firsts.items():
            self.first[origin] = None if found is None else normalise(list(found))

    def __call__(self, x: str, state: State) -> State:
        if not state or x in self.nullable or self.first.get(x) is None:
            return state
        key = (x, state)
        if key not in self._memo:
            first = self.first[x] or []
            kept = frozenset(w for w in state if (x in self.looks_behind if w[0] == MARK else self._overlaps(w, first)))
            self._memo[key] = state if kept == state else self.tokens.canonical(kept)
        return self._memo[key]


def _up_to_first_solid(symbols: Iterable[str], nullable: set[str]) -> list[str]:
    """The symbols up to the first that cannot be empty, that one included."""
    out = []
    for y in symbols:
        out.append(y)
        if y not in nullable:
            break
    return out
