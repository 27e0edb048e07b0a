"""Python regexes written out exactly, for the matcher.

The matcher's regex engine (Rust) reads ``\\w``, ``\\s``, ``\\d``, case-insensitivity and
``[[:alpha:]]`` differently from Python's ``re``, which lark matches with. A regex is read with
CPython's parser and written again with every character class spelt out as code-point ranges:

- ``exact_regex``: one regex, for a lexeme;
- ``regex_rules``: an expression of grammar rules over one-character lexemes, for the
  character-level (scannerless) reading of a grammar, where the matcher's lexer has nothing left to
  be greedy about.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import llguidance as llg

from .._errors import GrammarError
from .charclass import Ranges, char_set, normalise, python_class
from .regex import count_ops
from .regex import sre_constants as _c
from .regex import sre_parse as _sre_parse

__all__ = [
    "choice",
    "exact_regex",
    "first_chars",
    "greedy_regex",
    "greedy_regex_of",
    "lark_regex",
    "lazy_is_greedy",
    "lazy_to_first_stop",
    "needs_exact_classes",
    "quantifier",
    "regex_rules",
    "regex_rules_not_starting",
    "rule_repeat",
]


_ESCAPED_CONTROL = re.compile(r"(?<!\\)(?:\\\\)*\\[\x00-\x1f\x7f]")


def needs_exact_classes(regex: str) -> bool:
    """Whether the matcher's engine could read the regex differently from Python's: it has a
    ``\\w``-like class, case-insensitivity, something that looks like a POSIX class, a named
    character, or a raw control character (lark writes a ``"\\t"`` inside a composite terminal as
    a backslash then a tab)."""
    if "[:" in regex or "\\N" in regex or _ESCAPED_CONTROL.search(regex):
        return True
    parsed = _sre_parse.parse(regex, 0)
    return bool(parsed.state.flags & _c.SRE_FLAG_IGNORECASE) or _has_category(list(parsed))


def _has_category(items: list[Any]) -> bool:
    for op, av in items:
        if op is _c.IN and any(iop is _c.CATEGORY for iop, _ in av):
            return True
        if op is _c.SUBPATTERN and (av[1] & _c.SRE_FLAG_IGNORECASE or _has_category(list(av[3]))):
            return True
        if op is _c.BRANCH and any(_has_category(list(alt)) for alt in av[1]):
            return True
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and _has_category(list(av[2])):
            return True
    return False


def exact_regex(regex: str) -> str:
    """``regex`` with every class written as explicit ranges (same matches as Python's ``re``)."""
    parsed = _sre_parse.parse(regex, 0)
    return exact_regex_of(list(parsed), parsed.state.flags)


def greedy_regex(regex: str) -> str:
    """``regex`` with its lazy quantifiers written greedy (and its classes as ``exact_regex``)."""
    parsed = _sre_parse.parse(regex, 0)
    return greedy_regex_of(list(parsed), parsed.state.flags)


def greedy_regex_of(items: list[Any], flags: int) -> str:
    """``greedy_regex`` of parsed items (``flags``: those in force there)."""
    writer = _Writer(python_class, "", "(?:", ")", "(?:)")
    writer.lazy_as_greedy = True
    return writer.sequence(items, flags) or "(?:)"


def lazy_is_greedy(regex: str) -> bool:
    """Whether each lazy quantifier of ``regex`` repeats one class and is followed, in its
    sequence, by an item that must match and cannot begin with a character of that class
    (pylogics' ``"[ -!#-~]+?"``): the repeat can then only end where the run of the class ends,
    so Python's ``re`` finds the same match with it greedy."""
    parsed = _sre_parse.parse(regex, 0)
    return _lazies_greedy(list(parsed), parsed.state.flags)


def _lazies_greedy(items: list[Any], flags: int) -> bool:
    for k, (op, av) in enumerate(items):
        if op is _c.MIN_REPEAT:
            chars = char_set(list(av[2]), flags)
            if chars is None or k + 1 == len(items):
                return False
            following, nullable = _first(items[k + 1 : k + 2], flags)
            if nullable or _subtract(following, chars) != normalise(following):
                return False
        elif op is _c.SUBPATTERN:
            if not _lazies_greedy(list(av[3]), (flags | av[1]) & ~av[2]):
                return False
        elif op is _c.BRANCH:
            if not all(_lazies_greedy(list(alt), flags) for alt in av[1]):
                return False
        elif op is _c.MAX_REPEAT and not _lazies_greedy(list(av[2]), flags):
            return False
    return True


def lazy_to_first_stop(regex: str) -> str | None:
    """``regex`` written greedy where its one lazy quantifier repeats a class ``S`` from zero, is
    followed by a one-character item ``F`` and then by what may match nothing, at the top level
    (d20's ``\\[.*?\\](?:[ \\t\\n]+)?``): Python's ``re`` then stops the repeat at the first ``F``,
    which ``(S-F)*F`` says greedy. ``None`` where the regex is not of that shape."""
    parsed = _sre_parse.parse(regex, 0)
    items, flags = list(parsed), parsed.state.flags
    lazy = [k for k, (op, _) in enumerate(items) if op is _c.MIN_REPEAT]
    if len(lazy) != 1 or lazy[0] + 1 >= len(items):
        return None
    k = lazy[0]
    low, high, body = items[k][1]
    repeated, stop = char_set(list(body), flags), char_set(items[k + 1 : k + 2], flags)
    if low != 0 or repeated is None or stop is None or count_ops(items[:k] + items[k + 1 :], _c.MIN_REPEAT):
        return None
    if not _first(items[k + 2 :], flags)[1]:
        return None
    kept = _subtract(repeated, stop)
    klass = (
        (_c.IN, [(_c.RANGE, pair) for pair in kept])
        if kept
        else (_c.IN, [(_c.NEGATE, None), (_c.RANGE, (0, 0x10FFFF))])
    )
    items[k] = (_c.MAX_REPEAT, (0, high, [klass]))
    return greedy_regex_of(items, flags)


def regex_rules(regex: str) -> str:
    """``regex`` as a rule expression over one-character lexemes (``/[...]/``) in llguidance's
    Lark dialect."""
    parsed = _sre_parse.parse(regex, 0)
    writer = _Writer(lambda ranges: "/" + python_class(ranges, in_lark=True) + "/", " ", "(", ")", '""')
    return writer.sequence(list(parsed), parsed.state.flags) or '""'


def choice(alternatives: list[str], *, nested: bool) -> str:
    """Alternatives of a rule in the Lark both lark and llguidance read: no ``""`` (lark has no
    empty terminal), an empty alternative written as an optional group (nested) or as nothing."""
    kept = list(dict.fromkeys(a for a in alternatives if a))
    if not kept:
        return ""
    if not all(alternatives):  # an empty alternative (not a repeated one)
        return f"({' | '.join(kept)})?" if nested else " | ".join(kept) + " |"
    if not nested or len(kept) == 1:
        return " | ".join(kept)
    return f"({' | '.join(kept)})"


def rule_repeat(item: str, low: int, high: int) -> str:
    """``item`` repeated ``low`` to ``high`` times, in rule syntax both lark and llguidance read
    (``~ n..m``; ``MAXREPEAT``: no bound)."""
    if high == _c.MAXREPEAT:
        return {0: f"{item}*", 1: f"{item}+"}.get(low, f"{item} ~ {low} {item}*")
    if (low, high) == (0, 1):
        return f"{item}?"
    if low == 0:
        return f"({item} ~ 1..{high})?"
    return f"{item} ~ {low}" if low == high else f"{item} ~ {low}..{high}"


def quantifier(low: int, high: int) -> str:
    """The suffix that repeats an item ``low`` to ``high`` times (``MAXREPEAT``: no bound)."""
    if high == _c.MAXREPEAT:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


class _Writer:
    def __init__(self, klass: Callable[[Ranges], str], sep: str, open_: str, close: str, empty: str) -> None:
        self.klass, self.sep, self.open, self.close, self.empty = klass, sep, open_, close, empty
        self.lazy_as_greedy = False

    def sequence(self, items: list[Any], flags: int) -> str:
        return self.sep.join(text for op, av in items if (text := self.item(op, av, flags)))

    def item(self, op: Any, av: Any, flags: int) -> str:
        chars = char_set([(op, av)], flags)
        if chars is not None:
            return self.klass(chars)
        if op is _c.SUBPATTERN:
            _group, add, remove, body = av
            inner = self.sequence(list(body), (flags | add) & ~remove)
            if self.sep:  # rules: nothing for an empty group
                return f"({inner})" if inner else ""
            return self.open + (inner or self.empty) + self.close
        if op is _c.BRANCH:
            alts = [self.sequence(list(alt), flags) for alt in av[1]]
            if self.sep:  # rules: an empty alternative makes the group optional
                return choice(alts, nested=True)
            return self.open + "|".join(a or self.empty for a in alts) + self.close
        if op is _c.MAX_REPEAT or (op is _c.MIN_REPEAT and self.lazy_as_greedy):
            low, high, body = av
            text = self.sequence(list(body), flags)
            if self.sep:
                return rule_repeat(f"({text})", low, high) if text else ""
            return self.open + (text or self.empty) + self.close + quantifier(low, high)
        raise GrammarError(f"no exact translation for the regex construct {op}")


def first_chars(regex: str) -> tuple[Ranges, bool]:
    """The characters a match of ``regex`` can begin with, and whether it matches empty text."""
    parsed = _sre_parse.parse(regex, 0)
    return _first(list(parsed), parsed.state.flags)


def _first(items: list[Any], flags: int) -> tuple[Ranges, bool]:
    out: Ranges = []
    for op, av in items:
        chars = char_set([(op, av)], flags)
        if chars is not None:
            return normalise(out + chars), False
        if op is _c.SUBPATTERN:
            sub, nullable = _first(list(av[3]), (flags | av[1]) & ~av[2])
        elif op is _c.BRANCH:
            parts = [_first(list(alt), flags) for alt in av[1]]
            sub = [r for p, _ in parts for r in p]
            nullable = any(n for _, n in parts)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            sub, nullable = _first(list(av[2]), flags)
            nullable = nullable or av[0] == 0
        else:
            raise GrammarError(f"no exact translation for the regex construct {op}")
        out += sub
        if not nullable:
            return normalise(out), False
    return normalise(out), True


def regex_rules_not_starting(regex: str, excluded: Ranges) -> str | None:
    """``regex_rules`` for the nonempty matches of ``regex`` whose first character is not in
    ``excluded`` (``None`` when there are none)."""
    parsed = _sre_parse.parse(regex, 0)
    writer = _Writer(lambda ranges: "/" + python_class(ranges, in_lark=True) + "/", " ", "(", ")", '""')
    return _Restricted(writer, normalise(excluded)).sequence(list(parsed), parsed.state.flags)


class _Restricted:
    """Nonempty strings of a regex item or sequence whose first character is not excluded."""

    def __init__(self, writer: _Writer, excluded: Ranges) -> None:
        self.writer, self.excluded = writer, excluded

    def sequence(self, items: list[Any], flags: int) -> str | None:
        if not items:
            return None
        (op, av), rest = items[0], items[1:]
        alternatives = []
        head = self.item(op, av, flags)
        if head is not None:
            tail = self.writer.sequence(rest, flags)
            alternatives.append(f"{head} {tail}" if tail else head)
        if _first([(op, av)], flags)[1]:
            later = self.sequence(rest, flags)
            if later is not None:
                alternatives.append(later)
        if not alternatives:
            return None
        return alternatives[0] if len(alternatives) == 1 else "(" + " | ".join(alternatives) + ")"

    def item(self, op: Any, av: Any, flags: int) -> str | None:
        chars = char_set([(op, av)], flags)
        if chars is not None:
            kept = _subtract(chars, self.excluded)
            return self.writer.klass(kept) if kept else None
        if op is _c.SUBPATTERN:
            return self.sequence(list(av[3]), (flags | av[1]) & ~av[2])
        if op is _c.BRANCH:
            parts = [p for p in (self.sequence(list(alt), flags) for alt in av[1]) if p is not None]
            return "(" + " | ".join(parts) + ")" if parts else None
        if op is _c.MAX_REPEAT:
            low, high, body = av
            if high == 0 or _first(list(body), flags)[1]:
                return None if high == 0 else _unsupported(op)
            first = self.sequence(list(body), flags)
            if first is None:
                return None
            more_high = _c.MAXREPEAT if high == _c.MAXREPEAT else high - 1
            if more_high == 0:
                return first
            more = self.writer.item(_c.MAX_REPEAT, (max(low - 1, 0), more_high, body), flags)
            return f"{first} {more}"
        return _unsupported(op)


def _unsupported(op: Any) -> str:
    raise GrammarError(f"no exact translation for the regex construct {op}")


def _subtract(ranges: Ranges, excluded: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in ranges:
        for elo, ehi in excluded:
            if ehi < lo or elo > hi:
                continue
            if elo > lo:
                out.append((lo, elo - 1))
            lo = ehi + 1
            if lo > hi:
                break
        if lo <= hi:
            out.append((lo, hi))
    return normalise(out)


def exact_regex_of(items: list[Any], flags: int) -> str:
    return _Writer(python_class, "", "(?:", ")", "(?:)").sequence(items, flags) or "(?:)"


def lark_regex(regex: str) -> str:
    """A Python regex as a lexeme of llguidance's Lark dialect (``/.../``)."""
    # Python's str regexes are Unicode-aware (\d, \w, \s), like the matcher's by default.
    # lark has already turned escapes such as \x00 into the characters themselves: spell
    # control characters out again so the grammar text stays plain.
    regex = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", regex)
    return "/" + llg.regex_to_lark(regex, "") + "/"
