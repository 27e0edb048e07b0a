"""Character classes exactly as Python's ``re`` reads them (str patterns, Unicode).

lark matches terminals with Python's ``re``; the matcher's regex engine (Rust) has other ideas of
``\\w``, ``\\s``, case-insensitivity and ``[[:alpha:]]``. Classes are therefore written out as
code-point ranges computed with ``re`` itself.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from .regex import sre_constants as _sre_c

__all__ = [
    "SURROGATES",
    "UNICODE_MAX",
    "Ranges",
    "all_chars",
    "case_closed",
    "category",
    "char_set",
    "complement",
    "matched_code_points",
    "normalise",
    "pattern_pieces",
    "python_class",
    "re_classes_written_out",
    "subtract_surrogates",
]

UNICODE_MAX = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
Ranges = list[tuple[int, int]]


def char_set(items: list[Any], flags: int) -> Ranges | None:
    """The code points a one-character regex item matches, or None if it is not one."""
    if len(items) != 1:
        return None
    op, av = items[0]
    ignorecase = bool(flags & _sre_c.SRE_FLAG_IGNORECASE)
    if op is _sre_c.LITERAL:
        return case_closed([(av, av)]) if ignorecase else [(av, av)]
    if op is _sre_c.NOT_LITERAL:
        base = case_closed([(av, av)]) if ignorecase else [(av, av)]
        return complement(base)
    if op is _sre_c.ANY:
        return [(0, UNICODE_MAX)] if flags & _sre_c.SRE_FLAG_DOTALL else complement([(10, 10)])
    if op is _sre_c.IN:
        negate = bool(av) and av[0][0] is _sre_c.NEGATE
        ranges: Ranges = []
        for iop, iav in av[1:] if negate else av:
            if iop is _sre_c.LITERAL:
                ranges.append((iav, iav))
            elif iop is _sre_c.RANGE:
                ranges.append(iav)
            elif iop is _sre_c.CATEGORY:
                ranges.extend(category(iav))
            else:  # pragma: no cover - sre has no other class items
                return None
        ranges = normalise(ranges)
        if ignorecase:
            ranges = case_closed(ranges)
        return complement(ranges) if negate else ranges
    if op is _sre_c.SUBPATTERN and not av[1] and not av[2]:
        return char_set(list(av[3]), flags)
    return None


def normalise(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    at = 0
    for lo, hi in normalise(ranges):
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= UNICODE_MAX:
        out.append((at, UNICODE_MAX))
    return out


@functools.cache
def all_chars() -> str:
    return "".join(chr(c) for c in range(UNICODE_MAX + 1) if not SURROGATES[0] <= c <= SURROGATES[1])


@functools.cache
def category(code: Any) -> Ranges:
    """The code points of ``\\d``, ``\\w``, ``\\s`` (or their negations) as Python's ``re`` has
    them for str patterns (Unicode)."""
    names = {
        _sre_c.CATEGORY_DIGIT: r"\d",
        _sre_c.CATEGORY_NOT_DIGIT: r"\D",
        _sre_c.CATEGORY_WORD: r"\w",
        _sre_c.CATEGORY_NOT_WORD: r"\W",
        _sre_c.CATEGORY_SPACE: r"\s",
        _sre_c.CATEGORY_NOT_SPACE: r"\S",
    }
    return matched_code_points(re.finditer(names[code] + "+", all_chars()))


def matched_code_points(runs: Iterable[Any]) -> Ranges:
    """The code points of the runs a one-character class matched, ``(?:item)+`` over ``all_chars()``
    (``runs``: the matches of ``finditer``, from ``re`` or the ``regex`` module)."""
    text = all_chars()
    out: Ranges = []
    for m in runs:
        lo, hi = ord(text[m.start()]), ord(text[m.end() - 1])
        if lo < SURROGATES[0] and hi > SURROGATES[1]:  # the run jumps over the surrogates
            out += [(lo, SURROGATES[0] - 1), (SURROGATES[1] + 1, hi)]
        else:
            out.append((lo, hi))
    return normalise(out)


@functools.cache
def case_groups() -> dict[int, tuple[int, ...]]:
    """For each code point with other case forms, the code points that Python's ``re`` matches
    against it under IGNORECASE (candidates share a ``lower()`` or an ``upper()``; each is then
    checked with ``re`` itself, which also folds ``ſ`` with ``s`` and ``ı`` with ``i``)."""
    by_key: dict[str, set[str]] = {}
    for ch in all_chars():
        lower, upper = ch.lower(), ch.upper()
        if lower != ch or upper != ch:
            for key in (lower, upper, ch):
                by_key.setdefault(key, set()).add(ch)
    groups: dict[int, tuple[int, ...]] = {}
    for members in by_key.values():
        for ch in members:
            pattern = re.compile("(?i)" + re.escape(ch))
            partners = {ord(d) for d in members if d != ch and pattern.fullmatch(d)}
            if partners:
                groups[ord(ch)] = tuple(sorted(set(groups.get(ord(ch), ())) | partners))
    return groups


def case_closed(ranges: Ranges) -> Ranges:
    groups = case_groups()
    extra: Ranges = []
    for lo, hi in ranges:
        if hi - lo > 0x3000:
            # A wide range: its case partners are (nearly) all inside it already; check the
            # cased code points only.
            points: Iterable[int] = (cp for cp in groups if lo <= cp <= hi)
        else:
            points = range(lo, hi + 1)
        for cp in points:
            for other in groups.get(cp, ()):
                if not lo <= other <= hi:
                    extra.append((other, other))
    return normalise(ranges + extra)


def subtract_surrogates(ranges: Ranges) -> Ranges:
    out: Ranges = []
    lo_s, hi_s = SURROGATES
    for lo, hi in ranges:
        if hi < lo_s or lo > hi_s:
            out.append((lo, hi))
            continue
        if lo < lo_s:
            out.append((lo, lo_s - 1))
        if hi > hi_s:
            out.append((hi_s + 1, hi))
    return out


def python_class(ranges: Ranges, *, in_lark: bool = False) -> str:
    """A Python (and llguidance) regex class for these code points, every one escaped.

    ``in_lark``: for a ``/.../`` of Lark text that the ``lark`` package reads too. lark turns
    ``\\x5c`` into the character itself before Python's ``re`` sees it, so the class's own
    metacharacters are escaped with a backslash there."""
    ranges = subtract_surrogates(normalise(ranges))
    if not ranges:
        return "[^\\x00-\\U0010ffff]"

    def esc(cp: int) -> str:
        if in_lark and chr(cp) in "\\[]^-":
            return "\\" + chr(cp)
        if cp < 0x100:
            return f"\\x{cp:02x}"
        if cp < 0x10000:
            return f"\\u{cp:04x}"
        return f"\\U{cp:08x}"

    return "[" + "".join(esc(lo) if lo == hi else f"{esc(lo)}-{esc(hi)}" for lo, hi in ranges) + "]"


_CLASS_ESCAPES = {
    "d": _sre_c.CATEGORY_DIGIT,
    "D": _sre_c.CATEGORY_NOT_DIGIT,
    "w": _sre_c.CATEGORY_WORD,
    "W": _sre_c.CATEGORY_NOT_WORD,
    "s": _sre_c.CATEGORY_SPACE,
    "S": _sre_c.CATEGORY_NOT_SPACE,
}


def re_classes_written_out(pattern: str) -> str:
    """``pattern`` with its ``\\d``, ``\\w``, ``\\s`` (and negations) written as the code points
    Python's ``re`` gives them, and ``\\b``, ``\\B`` as look-arounds on that ``\\w``: the ``regex``
    module then matches it as ``re`` does (its own ``\\w`` has ``‿`` and lacks ``²``, its ``\\s``
    lacks ``\\x1c``). Everything else is kept as written."""
    out: list[str] = []
    for piece, in_class in pattern_pieces(pattern):
        if piece[1:] in _CLASS_ESCAPES and piece[0] == "\\":
            body = python_class(category(_CLASS_ESCAPES[piece[1]]))[1:-1]
            out.append(body if in_class else f"[{body}]")
        elif piece in ("\\b", "\\B") and not in_class:
            out.append(_boundary(negated=piece == "\\B"))
        else:
            out.append(piece)
    return "".join(out)


def pattern_pieces(pattern: str) -> Iterator[tuple[str, bool]]:
    """A regex's text in pieces (an escape, or one character), each with whether it is inside
    a class ``[...]`` (the brackets themselves are not)."""
    i, n = 0, len(pattern)
    class_body = -1  # where the open class's items begin (a ``]`` there is a literal); -1: none open
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            yield pattern[i : i + 2], class_body >= 0
            i += 2
            continue
        if class_body < 0 and c == "[":
            yield c, False
            class_body = i + 1 + (pattern.startswith("^", i + 1))
        elif class_body >= 0 and c == "]" and i > class_body:
            yield c, False
            class_body = -1
        else:
            yield c, class_body >= 0
        i += 1


def _boundary(*, negated: bool) -> str:
    word = python_class(category(_sre_c.CATEGORY_WORD))
    if negated:
        return f"(?:(?<={word})(?={word})|(?<!{word})(?!{word}))"
    return f"(?:(?<={word})(?!{word})|(?<!{word})(?={word}))"
