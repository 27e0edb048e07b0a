"""Where the matcher's greedy lexer could read a Lark grammar differently from lark.

lark's Earley parser with its default ("dynamic") lexer matches each expected terminal on its
own at each position, with Python's ``re.match`` (one match per terminal and position, the
longest for the regexes the compiler accepts), and skips ``%ignore``d text the same way between
any two terminals. llguidance's lexer instead reads one lexeme as far as any terminal allowed
there can go, without going back. The two readings differ only where

- **greedy**: a whole match ``w`` of a terminal A may be followed by a character ``c`` that
  starts what may follow A, while ``w c`` is the beginning of a match of some terminal B: the
  matcher reads on into B (``"list"`` then ``"ed"`` against ``"listen"``; ``1..5`` against
  ``/\\d+\\.\\d*/``); or
- **munch**: a match ``w`` of A may be extended into a longer match ``w v`` of A where ``v`` is
  the beginning of what may follow A: lark's ``re.match`` then takes the longer match, and a
  reading that splits after ``w`` is not lark's (``%ignore /[ ;]+/`` before ``";"``);
- **byte**: the matcher's lexer reads bytes, so it also goes on when the next *byte* could
  continue a lexeme: a match ``w`` of A followed by a character ``c`` of several bytes that starts
  what may follow A, where ``w d`` begins a match of A or another terminal for some ``d`` that
  shares its first byte with ``c`` (``/\\s+/`` before ``/\\w+/``: a space, then ``₂`` (E2 82 82),
  whose first byte also begins ``U+2000``, a space). The lexer is then inside a character when
  the next byte ends every lexeme, and rejects ``" ₂"``.

Both are decided on the terminals' automata (llguidance's own regex engine: intersections and
emptiness) and on which terminals may follow which (FIRST/FOLLOW sets of lark's resolved rules),
with the first character of a following regex terminal standing for the whole of it (so the
analysis may report a hazard that is not one, never the reverse).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lark.grammar import Terminal as LarkTerminal

from .._errors import GrammarError
from .charclass import python_class
from .exact import first_chars
from .matcher import ByteMatcherFactory

__all__ = ["Hazards", "find_hazards"]

_ANY = "/(?s:.)*/"
_END = "$END"


@dataclass(frozen=True)
class Hazards:
    """The terminals whose greedy reading may differ from lark's, with an example partner each."""

    greedy: Mapping[str, str]  # terminal -> a terminal it may run into
    munch: Mapping[str, str]  # terminal -> a terminal that may follow it and extend it
    followers: Mapping[str, tuple[str, ...]]  # terminal (of munch) -> all that may follow it

    def __bool__(self) -> bool:
        return bool(self.greedy or self.munch)


def find_hazards(
    rules: Iterable[Any],
    start: str,
    expressions: Mapping[str, str],
    literals: Mapping[str, str | None],
    patterns: Mapping[str, str],
    ignore: Iterable[str],
) -> Hazards:
    """``expressions``: each terminal's llguidance lexeme expression; ``literals``: its literal text
    (``None`` for a regex or a case-insensitive literal); ``patterns``: its Python regex."""
    ignore = [name for name in ignore if name in expressions]
    follow = _follow_sets(list(rules), start)
    anywhere = set().union(*follow.values()) if follow else set()
    anywhere |= set(follow.get("$START", ()))
    greedy: dict[str, str] = {}
    munch: dict[str, str] = {}
    followers_of: dict[str, tuple[str, ...]] = {}
    for name, expr in expressions.items():
        if name in ignore:
            followers = (anywhere | set(ignore)) - {name, _END}
        else:
            followers = (set(follow.get(name, ())) | set(ignore)) - {_END}
        followers = {f for f in followers if f in expressions}
        if not followers:
            continue
        first = _first_class([patterns[f] for f in sorted(followers)])
        if first is None:
            continue
        others = {n: e for n, e in expressions.items() if n != name}
        runs_into = f"({expr}) {first} {_ANY}"
        same_lead = _same_lead_class([patterns[f] for f in sorted(followers)])
        byte_runs_into = f"({expr}) {same_lead} {_ANY}" if same_lead else None
        if others and not _is_empty(runs_into, "|".join(f"({e})" for e in others.values())):
            greedy[name] = _partner(runs_into, others) or name
        elif byte_runs_into and not _is_empty(byte_runs_into, "|".join(f"({e})" for e in expressions.values())):
            greedy[name] = _partner(byte_runs_into, others) or name
        elif not _is_empty(f"((({expr}) {first}) & ~({expr})) /(?s:.)+/", expr):
            # Reading on into the same terminal is lark's longest match too, unless the text
            # read on is not a match itself (``1.`` of ``/\d+(\.\d+)?/`` before ``..``).
            greedy[name] = name
        prefixes = {f: _prefix_expr(expressions[f], literals.get(f), patterns[f]) for f in sorted(followers)}
        if not _is_empty(f"({expr}) ({'|'.join(prefixes.values())})", expr):
            munch[name] = next((f for f, p in prefixes.items() if not _is_empty(f"({expr}) ({p})", expr)), name)
            followers_of[name] = tuple(sorted(followers))
    for name in ignore:
        # A lexeme that is also ignored text: the matcher's lexer takes it as ignored.
        for other, expr in expressions.items():
            if other != name and other not in greedy and not _is_empty(expressions[name], expr):
                greedy[other] = name
    return Hazards(greedy, munch, followers_of)


def _partner(left: str, expressions: Mapping[str, str]) -> str | None:
    return next((name for name, expr in expressions.items() if not _is_empty(left, expr)), None)


def _prefix_expr(expr: str, literal: str | None, pattern: str) -> str:
    """A superset of the nonempty beginnings of text that starts with a match of ``expr``: the
    literal's own prefixes when it is a literal, else its first character then anything."""
    if literal:
        parts = [_quote(literal[:k]) for k in range(1, len(literal))]
        parts.append(f"{_quote(literal)} {_ANY}")
        return "(" + " | ".join(parts) + ")"
    first = _first_class([pattern])
    return f"(({expr}) {_ANY} | {first} {_ANY})" if first else f"(({expr}) {_ANY})"


def _quote(text: str) -> str:
    return (
        '"'
        + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
        + '"'
    )


@functools.lru_cache(maxsize=4096)
def _is_empty(left: str, right: str) -> bool:
    """Whether the intersection of two lexeme expressions matches nothing."""
    grammar = f"start: GG_H\nGG_H: ({left}) & ({right})\n"
    try:
        matcher = ByteMatcherFactory(grammar, "hazard analysis").new()
    except GrammarError:
        return False
    return not matcher.is_accepting() and not any(matcher.compute_bitmask()[:32])


def _first_ranges(patterns: list[str]) -> list[tuple[int, int]] | None:
    """The characters the matches of these regexes may begin with (``None``: unknown)."""
    ranges: list[tuple[int, int]] = []
    for pattern in patterns:
        try:
            ranges += first_chars(pattern)[0]
        except (GrammarError, re.error):
            return None
    return ranges


def _first_class(patterns: list[str]) -> str | None:
    """A one-character lexeme for the first characters of these regexes (``None``: unknown)."""
    ranges = _first_ranges(patterns)
    return "/" + python_class(ranges) + "/" if ranges else None


def _same_lead_class(patterns: list[str]) -> str | None:
    """A one-character lexeme for every character whose UTF-8 first byte is the first byte of a
    character of several bytes that may begin these regexes (``None``: none, or unknown)."""
    ranges = _first_ranges(patterns) or []
    spans = [span for span in _LEAD_SPANS if any(lo <= span[1] and span[0] <= hi for lo, hi in ranges)]
    return "/" + python_class(spans) + "/" if spans else None


def _lead_spans() -> list[tuple[int, int]]:
    """The code points of each first byte of a character of several UTF-8 bytes (C2 .. F4)."""
    spans = [((lead & 0x1F) << 6, ((lead & 0x1F) << 6) + 0x3F) for lead in range(0xC2, 0xE0)]
    spans += [((lead & 0x0F) << 12, ((lead & 0x0F) << 12) + 0xFFF) for lead in range(0xE0, 0xF0)]
    spans += [((lead & 0x07) << 18, min(((lead & 0x07) << 18) + 0x3FFFF, 0x10FFFF)) for lead in range(0xF0, 0xF5)]
    # E0's and F0's characters begin at U+0800 and U+10000 (shorter forms are overlong).
    spans[0xE0 - 0xC2], spans[0xF0 - 0xC2] = (0x800, 0xFFF), (0x10000, 0x3FFFF)
    return spans


_LEAD_SPANS = _lead_spans()


def _follow_sets(rules: list[Any], start: str) -> dict[str, set[str]]:
    """Terminal -> the terminals (or ``$END``) that may come right after it; ``$START`` -> the
    terminals a text may begin with."""
    nullable: set[str] = set()
    first: dict[str, set[str]] = {}
    bodies = [(r.origin.name, [(isinstance(s, LarkTerminal), s.name) for s in r.expansion]) for r in rules]
    changed = True
    while changed:
        changed = False
        for origin, body in bodies:
            f = first.setdefault(origin, set())
            before = len(f)
            all_null = True
            for is_term, name in body:
                if is_term:
                    f.add(name)
                    all_null = False
                    break
                f |= first.get(name, set())
                if name not in nullable:
                    all_null = False
                    break
            if all_null and origin not in nullable:
                nullable.add(origin)
                changed = True
            changed |= len(f) != before
    follow_nt: dict[str, set[str]] = {start: {_END}}
    follow_t: dict[str, set[str]] = {}
    changed = True
    while changed:
        changed = False
        for origin, body in bodies:
            trailer = set(follow_nt.get(origin, set()))
            for is_term, name in reversed(body):
                target = follow_t if is_term else follow_nt
                have = target.setdefault(name, set())
                if not trailer <= have:
                    have |= trailer
                    changed = True
                if is_term:
                    trailer = {name}
                elif name in nullable:
                    trailer = trailer | first.get(name, set())
                else:
                    trailer = set(first.get(name, set()))
    follow_t["$START"] = set(first.get(start, set())) | ({_END} if start in nullable else set())
    return follow_t
