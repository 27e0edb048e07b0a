"""The Lark compiler: lark's resolved grammar written in llguidance's Lark dialect.

``lark.Lark`` has already resolved ``%import``, templates, aliases, ``?``/``!``/``_`` rules and
``"kw"i``; this module writes its rules and terminals out for llguidance's incremental Earley
matcher, and raises ``GrammarError`` for a terminal the matcher cannot honour exactly.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import lark
import llguidance as llg
from lark.grammar import NonTerminal
from lark.grammar import Terminal as LarkTerminal
from lark.lexer import PatternRE, PatternStr, TerminalDef

from .._errors import GrammarError
from .automaton import Dfa, dfa_of, minimal_dfa, ranges_of, split_ranges
from .charclass import Ranges, normalise, python_class
from .exact import (
    choice,
    exact_regex,
    first_chars,
    greedy_regex,
    lark_regex,
    lazy_is_greedy,
    lazy_to_first_stop,
    needs_exact_classes,
    regex_rules,
    regex_rules_not_starting,
)
from .hazards import find_hazards
from .languages import EMPTY, LanguageClasses
from .lazy import LazyReading, lazy_reading
from .load import imported_definition, position, position_of_definition, position_of_terminal, position_of_use
from .lookahead import Lookahead, LookaheadPart, LookaheadReading, lookahead_reading, restricted, without_words
from .matcher import regex_is_void
from .regex import is_regex_error, regex_features, sre_constants, sre_parse, strip_verbose
from .rule_shape import Rules, for_matcher, rules_of, written
from .unicode_classes import case_insensitive_literal, python_re_of, word_characters

__all__ = [
    "PROBE_IDS",
    "PROBE_MARKERS",
    "Compiled",
    "Lexer",
    "Terminal",
    "compile_lark",
    "lark_regex",
    "probe_grammar",
    "validate",
]

#: How terminals are read: ``"dynamic"`` as lark's Earley parser does by default, ``"greedy"`` as
#: the matcher's lexer does (contextual longest match, as a tokenizer reads).
Lexer = Literal["dynamic", "greedy"]


_SHOWN = 60  # characters of a long pattern shown by str() and display


def _shorten(text: str) -> str:
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 12]}…({len(text)} chars)"


@dataclass(frozen=True)
class Terminal:
    """A grammar terminal: its Lark ``name``, and its ``literal`` or its ``regex`` (exactly one set)."""

    name: str
    literal: str | None = None
    regex: str | None = None
    case_insensitive: bool = False

    @property
    def pattern(self) -> str:
        """The terminal as a regular expression (a literal is escaped)."""
        if self.regex is not None:
            return self.regex
        escaped = re.escape(self.literal or "")
        return f"(?i:{escaped})" if self.case_insensitive else escaped

    @property
    def is_void(self) -> bool:
        """Whether the terminal matches no text at all (a dead-end guard such as ``/[^\\s\\S]/``)."""
        return self.literal is None and regex_is_void(self.regex or "")

    @property
    def display(self) -> str:
        """How to name the terminal to a person: a literal quoted (a case-insensitive keyword in
        capitals), a pattern by its name."""
        if self.literal is not None:
            literal = self.literal.upper() if self.case_insensitive else self.literal
            return json.dumps(literal, ensure_ascii=False)
        if self.name.startswith("__"):  # lark's name for an anonymous pattern says nothing
            return f"/{_shorten(self.regex or '')}/"
        return self.name

    def __str__(self) -> str:
        if self.literal is not None:
            return json.dumps(self.literal) + ("i" if self.case_insensitive else "")
        return f"/{_shorten(self.regex or '')}/"

    def __repr__(self) -> str:
        # Short: a pattern can be huge (the SQLite identifier's, which excludes every keyword,
        # is 47 KB); its first characters and its length say which it is.
        regex = repr(self.regex)
        if self.regex is not None and len(self.regex) > _REPR_LIMIT:
            regex = f"{self.regex[:_REPR_LIMIT]!r}... ({len(self.regex):,} characters)"
        return (
            f"Terminal(name={self.name!r}, literal={self.literal!r}, regex={regex}, "
            f"case_insensitive={self.case_insensitive!r})"
        )


_REPR_LIMIT = 60


class Compiled(NamedTuple):
    """A Lark grammar written for the matcher."""

    #: The grammar in llguidance's dialect.
    grammar: str
    #: The same grammar with every terminal occurrence captured under its Lark name (so a
    #: matcher reports each terminal as it completes).
    captured: str
    #: The terminals by Lark name.
    terminals: dict[str, Terminal]
    #: Whether ``grammar`` is the character-level reading: rules over one-character lexemes, no
    #: ``%ignore``, no ``""`` and no ``{m,n}``, so that it is plain Lark for lark too.
    character_level: bool


def compile_lark(parser: lark.Lark, text: str, source: str | None, lexer: Lexer = "dynamic") -> Compiled:
    """Write Lark's resolved grammar in llguidance's dialect (see ``Compiled``).

    ``lexer="dynamic"`` (lark's Earley default) is honoured exactly: where the matcher's greedy
    lexer could read the grammar differently (see ``hazards``), the grammar is written at the
    character level instead (``scannerless``), or ``GrammarError`` says why neither is exact.
    ``lexer="greedy"`` is the matcher's own lexer, contextual longest match, as a tokenizer
    reads (``SELECTa`` is one word).
    """
    rule_names: dict[str, str] = {}
    term_names: dict[str, str] = {}

    def rule_name(name: str) -> str:
        if name not in rule_names:
            base = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_") or "r"
            rule_names[name] = f"r{len(rule_names)}_{base}"
        return rule_names[name]

    def term_name(name: str) -> str:
        if name not in term_names:
            base = re.sub(r"[^A-Z0-9_]", "_", name.upper()).strip("_") or "T"
            term_names[name] = f"T{len(term_names)}_{base}"
        return term_names[name]

    terminals: dict[str, Terminal] = {}
    lines: list[str] = []
    compiled_terms: dict[str, str] = {}
    lookaheads: dict[str, LookaheadReading] = {}
    # An %ignore'd /^R/ matches only where the text begins (re.match at a later position never
    # holds ^): read as an optional R before the first token, at the character level.
    leading = _leading_ignores(parser) if lexer == "dynamic" else {}
    for tdef in parser.terminals:
        if tdef.name in leading:
            tdef = TerminalDef(tdef.name, PatternRE(leading[tdef.name], tdef.pattern.flags), tdef.priority)
        try:
            terminal, expression, ahead = _terminal(tdef, text, source, parser.options, lexer)
        except GrammarError as error:
            raise _in_imported_file(error, tdef, text, source, parser.options.import_paths) from None
        terminals[tdef.name] = terminal
        compiled_terms[tdef.name] = expression
        if ahead is not None:
            lookaheads[tdef.name] = ahead
        lines.append(f"{term_name(tdef.name)}: {expression}")

    start = parser.options.start[0]
    by_origin: dict[str, list[str]] = {}
    for rule in parser.rules:
        symbols = []
        for sym in rule.expansion:
            if isinstance(sym, LarkTerminal):
                if sym.name not in terminals:
                    declared = re.search(rf"(?m)^[ \t]*%declare\b[^\n]*?\b({re.escape(sym.name)})\b", text)
                    if declared:
                        raise GrammarError(
                            f"terminal {sym.name} is %declare'd: it is produced by a post-lexer or "
                            "lexer callback, which the incremental matcher cannot run",
                            construct=f"%declare {sym.name}",
                            **position(declared.start(1), text),
                            source=source,
                        )
                    raise GrammarError(
                        f"terminal {sym.name} has no definition",
                        construct=sym.name,
                        **position_of_use(sym.name, text),
                        source=source,
                    )
                symbols.append(term_name(sym.name))
            else:
                assert isinstance(sym, NonTerminal)
                symbols.append(rule_name(sym.name))
        by_origin.setdefault(rule.origin.name, []).append(" ".join(symbols) or '""')
    if start not in by_origin:
        raise GrammarError(f"start rule {start!r} is not defined", source=source)

    ignore = [name for name in parser.ignore_tokens if name not in leading]
    header = []
    if ignore:
        # Lark skips ignored text before the first and after the last token too.
        header.append('%llguidance {"allow_initial_skip": true}')
    body = [f"{rule_name(origin)}: {' | '.join(alts)}" for origin, alts in by_origin.items()]
    captured_body = [
        f"{rule_name(origin)}: {' | '.join(_capture_refs(alt, term_names) for alt in alts)}"
        for origin, alts in by_origin.items()
    ]
    captured_body += [
        f'gg_cap_{compiled.lower()}[capture="{lark_name}"]: {compiled}' for lark_name, compiled in term_names.items()
    ]
    trailing = []
    for name in ignore:
        if name not in terminals:
            raise GrammarError(f"%ignore names an undefined terminal {name}", source=source)
        body.append(f"%ignore {term_name(name)}")
        # The matcher stops skipping once no token can follow; Lark still skips ignored text
        # after the last token, so spell that trailing text out as its own tokens.
        trailing.append(f"{term_name(name)}_TRAILING")
        lines.append(f"{trailing[-1]}: {compiled_terms[name]}")
    if trailing:
        header.append(f"start: {rule_name(start)} gg_trailing")
        body.append('gg_trailing: "" | ' + " | ".join(f"gg_trailing {t}" for t in trailing))
    else:
        header.append(f"start: {rule_name(start)}")
    _check_not_empty(parser.rules, start, terminals, text, source)
    if lexer == "dynamic":
        literals = {n: (t.literal if not t.case_insensitive else None) for n, t in terminals.items()}
        patterns = {n: lookaheads[n].body if n in lookaheads else t.pattern for n, t in terminals.items()}
        hazards = find_hazards(parser.rules, start, compiled_terms, literals, patterns, ignore)
        if hazards.greedy or leading or lookaheads:
            try:
                return _scannerless(
                    by_origin,
                    rule_name,
                    start,
                    term_names,
                    terminals,
                    (ignore, list(leading)),
                    (hazards.munch, lookaheads),
                    source,
                )
            except _TooLarge:
                raise _too_large(hazards.munch or hazards.greedy, text, source) from None
            except _NoText:
                raise GrammarError(
                    f"the grammar's language is empty: no text is valid as lark reads it (rule {start!r} "
                    "needs a terminal where lark's longest match of the one before never lets it begin)",
                    construct=start,
                    **position_of_definition(start, text, last=False),
                    source=source,
                ) from None
            except GrammarError as error:
                raise _placed(error, text) from None
    tail = body[len(by_origin) :]
    plain = "\n".join(header + body + lines) + "\n"
    captured = "\n".join(header + captured_body + tail + lines) + "\n"
    return Compiled(plain, captured, terminals, character_level=False)


def _scannerless(
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
    (``_Watchers``): its state is the set of such terminals whose match could still be extended,
    each with its DFA state.

    A terminal in ``lookaheads`` (see ``lookahead``) forbids what its look-ahead forbids after
    its lexeme: a watcher of one character, which may also forbid the text's end there. One whose
    alternatives have different look-aheads is a rule of one terminal for each. One that looks
    behind (``LookaheadPart.behind``) may begin only where the last character read is one it
    allows: the state then also marks the class of that character (``_Marks``).
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
    tokens = _Watchers(token_terminals, {term_names[n] for n in [*munch, *leading]}, source, ahead)
    empty: _State = frozenset()
    relevant = _Relevance(rules, by_compiled, tokens)
    reach = _reach(rules, by_compiled, tokens, relevant)
    text_ends = [q for q in reach[("gg_start", empty)] if not tokens.forbids_end(q)]
    if not text_ends:
        raise _NoText
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
        raise _NoText
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


_MAX_VARIANTS = 20000


def _reach(
    rules: Mapping[str, list[list[str]]], by_compiled: Mapping[str, str], tokens: _Watchers, relevant: _Relevance
) -> dict[_Key, dict[_State, None]]:
    """Which states each (rule, state before) may end in: a least fixed point, from ``gg_start``
    at the empty state. (Sets of states are dicts, kept in the order met, so that states are met,
    and variants named, the same way in every run: a frozenset's order depends on the process's
    string hashes.)

    Each pass reads the entries in order; an entry none of whose inputs (the entries it read)
    grew since it was last read finds what it found then, and is not read again."""
    empty: _State = frozenset()
    reach: dict[_Key, dict[_State, None]] = {("gg_start", empty): {}}
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
            found: dict[_State, None] = {}
            for alt in rules[n]:
                states = {p: None}
                for x in alt:
                    after: dict[_State, None] = {}
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
        if len(reach) > _MAX_VARIANTS:
            raise _TooLarge
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
        tokens: _Watchers,
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
        self._memo: dict[tuple[str, _State], _State] = {}
        self._after: dict[tuple[str, _State], _State] = {}

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

    def after(self, n: str, state: _State) -> _State:
        """The part of the state a rule ``n`` ends in that what may follow it can feel: a watcher
        none of whose next characters may come after ``n`` dies there, wherever ``n`` is used."""
        follow = self.follow.get(n)
        if not state or follow is None:
            return state
        key = (n, state)
        if key not in self._after:
            kept = frozenset(
                w for w in state if w[0] == _MARK or self._overlaps(w, follow) or w in self.tokens.end_forbidden
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

    def __call__(self, x: str, state: _State) -> _State:
        if not state or x in self.nullable or self.first.get(x) is None:
            return state
        key = (x, state)
        if key not in self._memo:
            first = self.first[x] or []
            kept = frozenset(
                w for w in state if (x in self.looks_behind if w[0] == _MARK else self._overlaps(w, first))
            )
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


class _TooLarge(Exception):
    """The character-level reading grew past ``_MAX_VARIANTS``."""


class _NoText(Exception):
    """The character-level reading derives no text."""


def _placed(error: GrammarError, text: str) -> GrammarError:
    """``error``, which names a terminal as its construct, at that terminal's definition."""
    if error.line is not None or not error.construct:
        return error
    where = position_of_definition(error.construct, text, last=False)
    return GrammarError(error.message, construct=error.construct, **where, source=error.source)


def _too_large(hazardous: Mapping[str, str], text: str, source: str | None) -> GrammarError:
    """The refusal of a grammar too large to read at the character level, at the first terminal
    that made it so (with the terminal it may run into or be extended by)."""
    names = sorted(hazardous, key=lambda n: position_of_definition(n, text, last=False)["offset"] or len(text))
    first = names[0]
    return GrammarError(
        f"the grammar is too large to read at the character level (over {_MAX_VARIANTS:,} rule variants): "
        f"a greedy lexer would read {len(names)} terminals differently from lark ({', '.join(names[:8])}"
        f"{', ...' if len(names) > 8 else ''}; {first} with {hazardous[first]}), and each must be watched "
        "for where lark ends it; keep the terminals that may follow one another from running into each "
        "other (keywords with a rule-level alternative rather than a shared name pattern), or pass "
        'lexer="greedy" to read it as a tokenizer does',
        construct=first,
        **position_of_definition(first, text, last=False),
        source=source,
    )


#: The watchers' state: the terminals whose last match could still be extended by what follows,
#: each with the state its DFA is in after the text read since; and, where a terminal looks
#: behind, the mark ``(_MARK, k)`` of the class ``k`` of the last character read (no mark at the
#: text's start, or where nothing read next can look behind).
_Watcher = tuple[str, int]
_State = frozenset[_Watcher]
_MARK = "<"


def _unmarked(state: _State) -> tuple[_State, _Watcher | None]:
    """The watchers of ``state``, and its mark (``None``: none)."""
    mark = next((w for w in state if w[0] == _MARK), None)
    return (state - {mark}, mark) if mark is not None else (state, None)


class _Marks:
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

    def holds(self, x: str, mark: _Watcher | None) -> bool:
        """Whether ``x`` may begin where the last character read is of the class ``mark``."""
        behind = self.behind.get(x)
        if behind is None:
            return True
        return behind.end_ok if mark is None else mark[1] in self._allowed[x]

    def after(self, x: str, d: int, mark: _Watcher | None) -> _Watcher | None:
        """The mark after a match of ``x`` that ends in the state ``d`` of its (refined) DFA;
        ``mark`` the one before it."""
        if not self:
            return None
        at = self._class_at[x]
        k = at[d] if isinstance(at, list) else at
        return mark if k < 0 else (_MARK, k)

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


_Variant = tuple[str, _State, frozenset[_State]]
_Key = tuple[str, _State]


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
        tokens: _Watchers,
        relevant: _Relevance,
        reach: Mapping[tuple[str, _State], Mapping[_State, None]],
    ) -> None:
        self.rules = rules
        self.by_compiled = by_compiled
        self.tokens = tokens
        self.relevant = relevant
        self.reach = reach
        self.size = 0
        self._names: dict[_Variant, str] = {}
        self._grouped: dict[tuple[str, _State, str], list[list[tuple[_State, str | None]]]] = {}
        self._ended: dict[tuple[str, str, _State], list[tuple[_State, str | None, _State]]] = {}

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
            partial: list[tuple[list[str], _State]] = [([], p)]
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
            if self.size > _MAX_VARIANTS * 4:
                raise _TooLarge
            alts += [" ".join(syms) for syms, _ in partial]
        return alts, wanted

    def _pairs(self, x: str, s: _State) -> list[tuple[_State, str | None]]:
        """The states after ``x`` read from ``s``, each with the rule that reads a token there."""
        if x in self.by_compiled:
            return list(self.tokens.transitions(x, s).items())
        return [(q, None) for q in self.reach[(x, s)]]

    def _groups(self, x: str, s: _State, y: str) -> list[list[tuple[_State, str | None]]]:
        """``_pairs(x, s)`` grouped by what ``y`` after them feels of their states."""
        key = (x, s, y)
        if key not in self._grouped:
            groups: dict[_State, list[tuple[_State, str | None]]] = {}
            for q, rule in self._pairs(x, s):
                groups.setdefault(self.relevant(y, q), []).append((q, rule))
            self._grouped[key] = list(groups.values())
        return self._grouped[key]

    def _endings(self, n: str, x: str, s: _State) -> list[tuple[_State, str | None, _State]]:
        """``_pairs(x, s)`` with the state rule ``n`` ends in after each, ``x`` its last symbol."""
        key = (n, x, s)
        if key not in self._ended:
            self._ended[key] = [(q, rule, self.relevant.after(n, q)) for q, rule in self._pairs(x, s)]
        return self._ended[key]


class _Watchers:
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
        #: characters those tell apart (see ``_Marks``).
        self.marks = _Marks({x: p.behind for x, p in parts.items() if p.behind is not None})
        for x in self.longest:  # where the text ends after a longer match, that match was lark's
            if self.ahead[x].end_ok:
                done, n = self.dfa(x), len(self.dfa(x).edges)
                self.end_forbidden |= {(f"{x}^", n + q) for q in done.accepting}
        self.rules: dict[str, tuple[str, str]] = {}  # rule -> (compiled terminal or "", body)
        self._ids: dict[_State, int] = {frozenset(): 0}
        self._done: dict[tuple[str, _State], dict[_State, str]] = {}
        # One state for each language of forbidden continuations (see ``canonical``).
        self._canonical: dict[_State, _State] = {frozenset(): frozenset()}
        #: The language each state forbids after it, as a class (``languages``).
        self._languages = LanguageClasses(self._step, self.forbids_end)
        self._first_of: dict[int, _State] = {EMPTY: frozenset()}
        self._within: dict[tuple[_State, tuple[tuple[int, int], ...]], _State] = {}
        self._by_forbidden_within: dict[tuple[tuple[tuple[int, int], ...], Dfa], _State] = {}

    def index(self, state: _State) -> int:
        return self._ids.setdefault(state, len(self._ids))

    def forbids_end(self, state: _State) -> bool:
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
            reading = _lazy_of(terminal)
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

    def transitions(self, x: str, p: _State) -> dict[_State, str]:
        key = (x, p)
        if key not in self._done:
            watching, mark = _unmarked(p)
            self._done[key] = self._explore(x, watching, mark) if self.marks.holds(x, mark) else {}
        return self._done[key]

    def _final(self, x: str, d: int, watching: _State, mark: _Watcher | None) -> _State:
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

    def canonical(self, state: _State) -> _State:
        """The first state met that forbids the same texts after it as ``state``: the watchers
        forbid every text that begins with a ``v`` taking one of them to a match, and that set
        is all the reading asks of them (``_product`` steps and forbids by it), so states that
        forbid the same set are one (``\\le`` and ``\\ge`` each forbid what begins ``q``).
        Fewer states, fewer rule variants: the matcher's Earley sets shrink in proportion."""
        watching, mark = _unmarked(state)
        if mark is not None:
            return self.canonical(watching) | {mark}
        if state not in self._canonical:
            self._canonical[state] = self._first_of.setdefault(self._languages.of(state), state)
        return self._canonical[state]

    def canonical_within(self, state: _State, chars: Ranges) -> _State:
        """``canonical`` where what comes next begins with one of ``chars`` (or the text ends):
        there a state reads as any state that forbids the same texts beginning with one of them
        (after ``1`` a number also forbids ``.``, which nothing after it may begin with where no
        ``.`` follows a number: there it is ``1.``'s state), and as no state when it forbids none
        of them. ``_Relevance.after`` asks it with the characters that may follow a rule."""
        watching, mark = _unmarked(state)
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

    def _forbidden(self, state: _State) -> Dfa:
        """The minimal DFA of the texts ``state`` forbids after it (a canonical form: equal
        languages give equal automata)."""
        return self._languages.dfa(self._languages.of(state))

    def _step(self, watching: _State) -> list[tuple[int, int, _State | None]]:
        """The watchers after each character read from ``watching`` (``None``: one of them hits:
        every text from there on is forbidden)."""
        ordered = sorted(watching)
        out: list[tuple[int, int, _State | None]] = []
        for lo, hi, labels in split_ranges(self.dfa(y).edges[e] for y, e in ordered):
            pairs = [(y, t) for (y, _), t in zip(ordered, labels, strict=True) if t is not None]
            hits = any(t in self.dfa(y).accepting for y, t in pairs)
            out.append((lo, hi, None if hits else frozenset(pairs)))
        return out

    def _name(self, x: str, p: _State, q: _State) -> str:
        return f"gg_t_{x.lower()}__{self.index(p)}_{self.index(q)}"

    def _explore(self, x: str, p: _State, mark: _Watcher | None) -> dict[_State, str]:
        """``transitions`` after the watchers ``p`` (no mark), the last character read of the
        class ``mark``."""
        terminal = self.terminals[x]
        if _lazy_of(terminal) or x in self.within or x in self.excluded:
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

    def _product(self, x: str, p: _State, mark: _Watcher | None) -> dict[_State, str]:
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
                        if len(ids) > _MAX_VARIANTS:
                            raise _TooLarge
                        ids[nxt] = len(order)
                        order.append(nxt)
                    out.append((lo, hi, ids[nxt]))
            edges.append(out)
        ends = {i: self._final(x, d, w, mark) for (d, w), i in ids.items() if d in dfa.accepting}
        result: dict[_State, str] = {}
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


def _check_not_empty(rules: Any, start: str, terminals: Mapping[str, Terminal], text: str, source: str | None) -> None:
    """``GrammarError`` when no text at all is valid (``start: start "a"``, ``/[^\\s\\S]/``)."""
    productive = {n for n, t in terminals.items() if t.literal is not None or not regex_is_void(t.regex or "")}
    bodies = [(r.origin.name, [s.name for s in r.expansion]) for r in rules]
    changed = True
    while changed:
        changed = False
        for origin, body in bodies:
            if origin not in productive and all(s in productive for s in body):
                productive.add(origin)
                changed = True
    if start not in productive:
        raise GrammarError(
            f"the grammar's language is empty: rule {start!r} derives no text (every alternative needs "
            "itself again, or a terminal that matches nothing)",
            construct=start,
            **position_of_definition(start, text, last=False),
            source=source,
        )


def _capture_refs(alternative: str, term_names: Mapping[str, str]) -> str:
    compiled = set(term_names.values())
    return " ".join(f"gg_cap_{sym.lower()}" if sym in compiled else sym for sym in alternative.split())


def _in_imported_file(
    error: GrammarError, tdef: Any, text: str, source: str | None, import_paths: Sequence[Any]
) -> GrammarError:
    """A refusal of a terminal that an ``%import`` brings (pylogics' ``%import .pl.SYMBOL_NAME``),
    placed at its definition in the imported file; ``error`` itself where it has a place."""
    if error.line is not None:
        return error
    folders = [*([Path(source).parent] if source else []), *import_paths]
    found = imported_definition(tdef.name, text, folders)
    if found is None:
        return error
    where, written = position_of_terminal(found.name, tdef.pattern.value, found.text)
    if where["line"] is None:
        return error
    return GrammarError(error.message, construct=written or error.construct, **where, source=str(found.path))


def _terminal(
    tdef: Any, text: str, source: str | None, options: Any, lexer: Lexer
) -> tuple[Terminal, str, LookaheadReading | None]:
    """The terminal, its definition in llguidance's dialect (the text after ``NAME:``), and its
    reading by look-ahead where it ends in one (read at the character level: ``lexer="dynamic"``
    only). ``options``: lark's; with ``regex=True`` lark matches with the ``regex`` module, not
    ``re``; ``g_regex_flags`` are added to every terminal's."""
    pattern = tdef.pattern
    regex_module = bool(options.regex)
    global_flags = _flag_letters(options.g_regex_flags, source)
    if isinstance(pattern, PatternStr):
        flags = set(pattern.flags) | ({"i"} & global_flags)
        ci = "i" in flags
        escaped = _escape_literal(pattern.value)
        if ci and regex_module:  # the regex module's case folding (``ı`` is no ``i``)
            folded = case_insensitive_literal(pattern.value)
            return Terminal(tdef.name, regex=folded), lark_regex(folded), None
        if ci:  # case-insensitivity as Python's re has it (``ſ`` is an ``s``)
            return (
                Terminal(tdef.name, literal=pattern.value, case_insensitive=True),
                lark_regex(exact_regex(f"(?i:{re.escape(pattern.value)})")),
                None,
            )
        return Terminal(tdef.name, literal=pattern.value), lark_regex(escaped), None
    if isinstance(pattern, PatternRE):
        value = pattern.value
        flags = set(pattern.flags) | global_flags
        if "x" in flags:
            # Newlines reach the matcher as \\x0a escapes, which end no verbose-mode comment:
            # remove comments and insignificant whitespace here.
            value = strip_verbose(value)
            flags.discard("x")
        if regex_module:
            value = _python_re_of(tdef.name, pattern.value, value, flags, text, source)
        value = _known_equivalent(value)
        regex = f"(?{''.join(sorted(flags))}:{value})" if flags else value
        regex = _lazy_as_greedy(regex)
        try:
            word = word_characters() if regex_module else None
            ahead = lookahead_reading(regex, word) if lexer == "dynamic" else None
            problem, lazy = regex_features(regex) if not isinstance(ahead, LookaheadReading) else (None, False)
            if isinstance(ahead, str) and (problem or "").startswith(("a look-around", "a word boundary")):
                problem = ahead  # why this look-around has no reading (another construct first: that one)
        except Exception as exc:  # the regex does not compile: lark would have failed first
            if not is_regex_error(exc):
                raise
            problem, lazy = f"an invalid regex ({exc})", False
        if isinstance(ahead, LookaheadReading):
            ahead, problem = _lookahead_parts(ahead)
            if ahead is not None:
                return Terminal(tdef.name, regex=regex), lark_regex(greedy_regex(ahead.body)), ahead
        if problem:
            what, _, instead = problem.partition("; ")
            where, written = position_of_terminal(tdef.name, pattern.value, text, _has_unsupported)
            raise GrammarError(
                f"terminal {tdef.name} uses {what}, which the incremental matcher cannot honour exactly"
                + (f"; {instead}" if instead else ""),
                construct=written or f"/{pattern.value}/",
                **where,
                source=source,
            )
        # Classes as Python's re reads them; control characters (lark writes a "\t" inside a
        # composite terminal as a backslash then a tab) come out as plain escapes.
        if lazy:
            # The matches Python's re.match returns (see ``lazy``), or no exact reading.
            try:
                reading = lazy_reading(regex)
            except GrammarError as error:  # an automaton too large to build
                reading = error.message
            if isinstance(reading, str):
                where, written = position_of_terminal(tdef.name, pattern.value, text, _has_lazy)
                raise GrammarError(
                    f"terminal {tdef.name} uses {reading}",
                    construct=written or f"/{pattern.value}/",
                    **where,
                    source=source,
                )
            return Terminal(tdef.name, regex=regex), reading.expression, None
        exact = regex if not needs_exact_classes(regex) else exact_regex(regex)
        return Terminal(tdef.name, regex=regex), lark_regex(exact), None
    raise GrammarError(  # pragma: no cover - lark has only these two
        f"terminal {tdef.name} has an unknown pattern type", construct=tdef.name, source=source
    )


_FLAG_LETTERS = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s"}


def _flag_letters(flags: int, source: str | None) -> set[str]:
    """lark's ``g_regex_flags`` as the letters of inline flags (``re.UNICODE`` is ``re``'s own
    default for text); ``GrammarError`` for the others."""
    rest = flags & ~re.UNICODE
    for flag in _FLAG_LETTERS:
        rest &= ~flag
    if rest:
        raise GrammarError(
            f"g_regex_flags={flags!r}: only re.IGNORECASE, re.MULTILINE and re.DOTALL are read exactly; "
            "write the others into the terminals that need them",
            source=source,
        )
    return {letter for flag, letter in _FLAG_LETTERS.items() if flags & flag}


def _lookahead_parts(reading: LookaheadReading) -> tuple[LookaheadReading | None, str | None]:
    """The reading with each part's lazy quantifiers read (``_lazy_as_greedy``, ``lazy``), or why
    a part has no exact reading."""
    parts = []
    for part in reading.parts:
        regex = _lazy_as_greedy(part.regex)
        if _has_lazy(regex):
            lazy = lazy_reading(regex)
            if isinstance(lazy, str):
                return None, lazy
        parts.append(dataclasses.replace(part, regex=regex))
    return LookaheadReading(tuple(parts)), None


def _python_re_of(name: str, written: str, value: str, flags: set[str], text: str, source: str | None) -> str:
    """A pattern of ``regex=True`` in Python's ``re`` (see ``unicode_classes``), or ``GrammarError``
    where the two modules differ in a way not written out."""
    problem = None
    try:
        value = python_re_of(value)
        sre_parse.parse(value, 0)
    except Exception as exc:
        if not is_regex_error(exc):
            raise
        problem = f"a construct of the regex module that Python's re lacks ({exc}); write it without it"
    if problem is None and _case_insensitive(value if not flags else f"(?{''.join(sorted(flags))}:{value})"):
        if regex_features(value)[0] is not None:
            return value  # refused for that construct, which no reading has
        problem = (
            "case-insensitive matching with regex=True: the regex module folds case differently "
            'from Python\'s re (``ı`` is no ``i``); write the cases out ([iI]) or use a "..."i literal'
        )
    if problem is None:
        return value
    where, literal = position_of_terminal(name, written, text, _case_insensitive if "case" in problem else None)
    raise GrammarError(f"terminal {name} uses {problem}", construct=literal or f"/{written}/", **where, source=source)


def _case_insensitive(regex: str) -> bool:
    return (
        re.match(r"\(\?[a-zA-Z]*i", regex) is not None or re.search(r"\(\?[a-zA-Z]*i[a-zA-Z]*[:)]", regex) is not None
    )


def _leading_ignores(parser: lark.Lark) -> dict[str, str]:
    """The ignored terminals written ``/^R/`` or ``/\\AR/`` (no ``m`` flag), each with ``R``."""
    out = {}
    for tdef in parser.terminals:
        pattern = tdef.pattern
        if tdef.name not in parser.ignore_tokens or not isinstance(pattern, PatternRE) or "m" in pattern.flags:
            continue
        try:
            items = list(sre_parse.parse(pattern.value, 0))
        except Exception as exc:  # lark compiled it: only a regex module's pattern gets here
            if not is_regex_error(exc):
                raise
            continue
        anchors = {sre_constants.AT_BEGINNING: "^", sre_constants.AT_BEGINNING_STRING: "\\A"}
        if items and items[0][0] is sre_constants.AT and items[0][1] in anchors:
            anchor = anchors[items[0][1]]
            if pattern.value.startswith(anchor) and pattern.value != anchor:
                out[tdef.name] = pattern.value[len(anchor) :]
    return out


def _has_unsupported(regex: str) -> bool:
    return regex_features(regex)[0] is not None


def _has_lazy(regex: str) -> bool:
    return regex_features(regex)[1]


def _lazy_of(terminal: Terminal) -> LazyReading | None:
    """The lazy reading of a terminal whose regex has a lazy quantifier (``_terminal`` refused
    the others)."""
    if terminal.regex is None or not regex_features(terminal.regex)[1]:
        return None
    reading = lazy_reading(terminal.regex)
    assert not isinstance(reading, str), reading
    return reading


def _lazy_as_greedy(regex: str) -> str:
    """The regex with its lazy quantifiers made greedy when that changes no match: when no match
    is a proper prefix of another (``"(?:[^"\\\\]|\\\\.)*?"``), ``re.match`` finds the one match at
    a position either way; or when each repeats a class up to what no character of it begins
    (``lazy_is_greedy``); or, one lazy repeat up to a character, then what may match nothing,
    as the repeat that stops at the first such character (``lazy_to_first_stop``)."""
    try:
        if regex_features(regex) == (None, False):
            return regex
        if lazy_is_greedy(regex) or dfa_of(regex).prefix_free():
            return greedy_regex(regex)
        return lazy_to_first_stop(regex) or regex
    except (GrammarError, re.error):
        return regex


# Terminals of lark's own grammars/common.lark that use constructs the matcher lacks, with an
# exactly equivalent regular expression. ESCAPED_STRING is ``".*?(?<!\\)(\\\\)*?"``: under
# re.match it ends at the first quote preceded by an even run of backslashes, on one line.
_KNOWN_EQUIVALENTS = {
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:\\[^\n]|[^"\\\n])*"',
    # C_COMMENT: the shortest /* ... */, that is, no */ before the last.
    "/\\*(.|\n)*?\\*/": r"/\*(?:[^*]|\*+[^*/])*\*+/",
}


def _known_equivalent(value: str) -> str:
    """``value`` with a known terminal it begins with written exactly (``_KNOWN_EQUIVALENTS``),
    where what follows it may match empty text (lark.lark's ``STRING``, ``_STRING "i"?``):
    ``re.match`` then ends the known part where it ends alone, and reads the rest after it."""
    if value in _KNOWN_EQUIVALENTS:
        return _KNOWN_EQUIVALENTS[value]
    for known, exact in _KNOWN_EQUIVALENTS.items():
        rest = value[len(known) :]
        if value.startswith(known) and _may_match_empty(rest):
            return exact + rest
    return value


def _may_match_empty(regex: str) -> bool:
    """Whether a regex standing alone, with nothing the matcher lacks, matches empty text."""
    try:
        return regex_features(regex) == (None, False) and first_chars(regex)[1]
    except Exception as exc:  # not a regex alone (a group opened before it)
        if not is_regex_error(exc):
            raise
        return False


_REGEX_META = set("\\.^$|?*+()[]{}")


def _escape_literal(value: str) -> str:
    out = []
    for ch in value:
        if ch in _REGEX_META:
            out.append("\\" + ch)
        elif ch.isprintable() and ch != " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{{{ord(ch):x}}}")
    return "".join(out)


def validate(grammar: str, source: str | None, lark_text: str | None) -> None:
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    if is_error:
        raise GrammarError(
            f"the matcher rejected the grammar: {messages[0].strip()}",
            source=source,
        )


#: Probe tokens (see ``probe_grammar``): a marker, then an id. Neither can occur in UTF-8 text as
#: a token boundary the checker feeds: the markers are bytes no UTF-8 text holds, the ids are
#: continuation bytes, which no lexeme (and no ignored text) begins with.
PROBE_MARKERS = tuple(range(0xF5, 0xFF))
PROBE_IDS = tuple(range(0x80, 0xC0))

_CAPTURED_RULE = re.compile(r'(?m)^(\S+)\[capture="([^"]+)"\]: (.*)$')


def probe_grammar(captured: str) -> tuple[str, dict[tuple[int, int], str]] | None:
    """The captured grammar (see ``compile_lark``) with a probe beside every terminal.

    Wherever a terminal may begin, the byte-level matcher also takes the two-token probe
    ``<[marker]> <[id]>`` (special-token references: in the byte vocabulary, tokens that text never
    holds). Fed a marker, the matcher closes the lexeme in progress, as lark's parse of the prefix
    does at its end, and its mask then lists the ids of exactly the terminals that the parser
    predicts there. Returns the grammar and the Lark name of each (marker, id), or ``None`` when the
    grammar has more terminals than there are probes.
    """
    names: dict[str, tuple[int, int]] = {}
    capacity = len(PROBE_MARKERS) * len(PROBE_IDS)

    def with_probe(match: re.Match[str]) -> str:
        rule, name, body = match.groups()
        if name not in names:
            i = len(names)
            names[name] = (PROBE_MARKERS[i // len(PROBE_IDS) % len(PROBE_MARKERS)], PROBE_IDS[i % len(PROBE_IDS)])
        marker, probe_id = names[name]
        return f"{rule}: {body} | <[{marker}]> <[{probe_id}]>"

    text = _CAPTURED_RULE.sub(with_probe, captured)
    if len(names) > capacity:
        return None
    return text, {probe: name for name, probe in names.items()}
