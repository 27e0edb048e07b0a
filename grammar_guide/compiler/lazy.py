"""Lazy quantifiers (``*?``, ``+?``, ``??``, ``{m,n}?``) read as lark's lexer reads them.

lark matches a terminal with Python's ``re.match`` at each position, which returns *one* match:
the first that its backtracking finds. For a lazy quantifier that is, in general, a property of
the whole remaining text, not of the lexeme alone. In the shapes below it is a property of the
lexeme, a regular language, which this module computes both as an automaton (``Dfa``, for the
character-level reading) and as a lexeme expression of llguidance's Lark dialect:

- a sequence ``H X{m,n}? M Q``, where the matches of ``H`` are prefix-free (at most one begins the
  text), ``X`` is one character, ``M`` a fixed-length run of single characters (``\\d{2}`` is two)
  and ``Q`` matches empty text (so it never fails and backtracking never returns into the
  quantifier) and is a run of single characters and greedy repeats of one (so Python's match of
  it is its longest). ``re.match`` then takes the fewest repetitions of ``X`` after which ``M``
  follows: the matches of ``H X{m,n} M`` none of whose proper prefixes is one, then ``Q`` as a
  greedy regex is read;
- an alternation of such sequences (or of runs as ``Q`` is) whose matches never begin the same
  text (``re.match`` takes the first alternative that matches, and at most one can): the union
  of their readings.

Anything else with a lazy quantifier (``"(\\\\.|.)*?"``, whose match depends on whether a later
quote follows) is described, for a ``GrammarError``, with what to write instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .automaton import Dfa, concatenation, dfa_of, share_a_prefix, union
from .charclass import char_set, normalise
from .exact import first_chars, greedy_regex_of, lark_regex
from .regex import sre_constants as _c
from .regex import sre_parse as _sre_parse

__all__ = ["LazyReading", "lazy_reading"]

_Item = tuple[Any, Any, int]  # sre op, its argument, the flags in force


@dataclass(frozen=True)
class LazyReading:
    """The matches ``re.match`` can return for a lazy regex, in two forms."""

    expression: str  # a lexeme expression of llguidance's Lark dialect
    dfa: Dfa


@functools.lru_cache(maxsize=256)
def lazy_reading(regex: str) -> LazyReading | str:
    """The reading of ``regex`` (see the module), or a description of the construct that has none,
    with what to write instead."""
    parsed = _sre_parse.parse(regex, 0)
    return _reading(_opened(list(parsed), parsed.state.flags))


def _opened(items: list[Any], flags: int) -> list[_Item]:
    """The items with groups opened, each with the flags in force there."""
    out: list[_Item] = []
    for op, av in items:
        if op is _c.SUBPATTERN:
            out += _opened(list(av[3]), (flags | av[1]) & ~av[2])
        else:
            out.append((op, av, flags))
    return out


def _reading(items: list[_Item]) -> LazyReading | str:
    lazy = [i for i, (op, av, _) in enumerate(items) if _lazy_inside(op, av)]
    if not lazy:
        return _greedy(items)
    i = lazy[0]
    op, av, flags = items[i]
    if len(lazy) > 1 or not (op is _c.MIN_REPEAT or (op is _c.BRANCH and i == len(items) - 1)):
        return (
            "more than one lazy quantifier, or one inside a repeated group or before more text than "
            "its alternation: Python's re then returns a match that depends on the text after the "
            "terminal; write one lazy quantifier at the top level of the regex, or none"
        )
    head = items[:i]
    if op is _c.MIN_REPEAT and _single_char(list(av[2]), flags) is None:
        return (
            "a lazy quantifier over a sub-pattern longer than one character: Python's re then "
            "returns a match that depends on the text after the terminal (a backslash read as an "
            "escape or as itself, as a later quote allows); write the repeated sub-pattern so "
            'that its alternatives exclude one another ([^"\\\\] rather than .) and make it greedy'
        )
    if not dfa_of(_written(head)).prefix_free():
        return (
            "a lazy quantifier after a part whose matches are not prefix-free: Python's re then "
            "returns a match that depends on the text after the terminal; write the part before "
            "the quantifier so that at most one of its matches begins any text"
        )
    if op is _c.BRANCH:
        alternatives = _alternatives(av[1], flags)
        if isinstance(alternatives, str) or not head:
            return alternatives
        return _then(_greedy(head), alternatives)
    low, high, body = av
    j = next(j for j in range(i + 1, len(items) + 1) if first_chars(_written(items[j:]))[1])
    middle, tail = items[i + 1 : j], items[j:]
    if not all(_fixed_length(o, a, f) for o, a, f in middle):
        return (
            "a lazy quantifier followed by text of varying length: Python's re then returns a "
            "match that depends on the text after the terminal; write fixed characters after the "
            "quantifier (as in /\\*(.|\\n)*?\\*\\//)"
        )
    if not all(_single_char_run(o, a, f) for o, a, f in tail):
        return _NOT_LONGEST
    cut = _written([*head, (_c.MAX_REPEAT, (low, high, body), flags), *middle])
    shortest = LazyReading(f"({lark_regex(cut)} & ~{lark_regex(f'(?:{cut})(?s:.)+')})", dfa_of(cut).shortest())
    return _then(shortest, _greedy(tail)) if tail else shortest


def _then(first: LazyReading, second: LazyReading) -> LazyReading:
    """A match of ``first``, then one of ``second`` (``first``'s matches being prefix-free, the
    text after it is ``second``'s to read)."""
    return LazyReading(f"({first.expression} {second.expression})", concatenation(first.dfa, second.dfa))


def _alternatives(alternatives: list[Any], flags: int) -> LazyReading | str:
    readings = []
    for alt in alternatives:
        items = _opened(list(alt), flags)
        lazy = any(_lazy_inside(op, av) for op, av, _ in items)
        if not lazy and not all(_single_char_run(o, a, f) for o, a, f in items):
            return _NOT_LONGEST
        reading = _reading(items)
        if isinstance(reading, str):
            return reading
        readings.append(reading)
    for k, first in enumerate(readings):
        if any(share_a_prefix(first.dfa, later.dfa) for later in readings[k + 1 :]):
            return (
                "an alternation with a lazy quantifier whose alternatives may begin the same "
                "text: Python's re then takes the first that matches, which depends on the text "
                "after the terminal; write the alternatives so that they begin differently"
            )
    expression = "(" + " | ".join(r.expression for r in readings) + ")"
    return LazyReading(expression, union(r.dfa for r in readings))


def _greedy(items: list[_Item]) -> LazyReading:
    regex = _written(items)
    return LazyReading(lark_regex(regex), dfa_of(regex))


def _written(items: list[_Item]) -> str:
    """The items as one Python regex without flags, its classes as explicit ranges."""
    return "".join(f"(?:{greedy_regex_of([(op, av)], flags)})" for op, av, flags in items)


def _lazy_inside(op: Any, av: Any) -> bool:
    if op is _c.MIN_REPEAT:
        return True
    if op is _c.SUBPATTERN:
        return any(_lazy_inside(o, a) for o, a in av[3])
    if op is _c.BRANCH:
        return any(_lazy_inside(o, a) for alt in av[1] for o, a in alt)
    if op is _c.MAX_REPEAT:
        return any(_lazy_inside(o, a) for o, a in av[2])
    return False


_NOT_LONGEST = (
    "a lazy quantifier beside a part that Python's re may not match as far as it can (it takes "
    "the first way its backtracking finds: /b*(?:a|bc)*/ reads 'b' of 'bc'); write the parts "
    "beside the quantifier as single characters or repeats of one character"
)


def _single_char_run(op: Any, av: Any, flags: int) -> bool:
    """Whether an item is one character or a greedy repeat of one: a sequence of such items is
    matched as far as it can go (Python's first match is its longest)."""
    if op is _c.MAX_REPEAT:
        return _single_char(list(av[2]), flags) is not None
    return _single_char([(op, av)], flags) is not None


def _fixed_length(op: Any, av: Any, flags: int) -> bool:
    """Whether an item is one character, or one character repeated a fixed number of times."""
    if op is _c.MAX_REPEAT and av[0] == av[1]:
        return _single_char(list(av[2]), flags) is not None
    return _single_char([(op, av)], flags) is not None


def _single_char(items: list[Any], flags: int) -> list[tuple[int, int]] | None:
    """The code points of a sub-pattern whose every match is one character (else ``None``)."""
    found = char_set(items, flags)
    if found is not None or len(items) != 1:
        return found
    op, av = items[0]
    if op is _c.SUBPATTERN:
        return _single_char(list(av[3]), (flags | av[1]) & ~av[2])
    if op is _c.BRANCH:
        parts = [_single_char(list(alt), flags) for alt in av[1]]
        if all(p is not None for p in parts):
            return normalise([r for p in parts if p is not None for r in p])
    return None
