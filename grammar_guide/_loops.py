"""Whether a text ends in a loop: a unit written over and over, as a small model caught in one
writes (``extra == "a" and extra == "a" and …``, ``-language-language-…``, ``// \\n// \\n…``).

Both the local decoder (within one continuation) and the finish (across the target's steps, each
of which may write a single terminal) stop the target's text where it would loop (issue 28).
"""

from __future__ import annotations

import re

__all__ = ["TEXT_COPIES", "TEXT_UNIT", "text_repeats"]

#: A unit of text of these many bytes, white space aside, is written at most ``TEXT_COPIES`` times
#: in a row.
TEXT_UNIT = (2, 48)
TEXT_COPIES = 3
_SPACE = re.compile(rb"\s+")
#: A unit without a letter made of these alone is data or closing, not a loop: numbers (their
#: length is bounded elsewhere), ``0, 0, 0, 0``, ``]]]]``.
_DATA_MARKS = frozenset(b"0123456789.,;:)]}>+-")


def _is_loop_unit(unit: bytes) -> bool:
    return not set(unit) <= _DATA_MARKS


def text_repeats(data: bytes) -> bool:
    """Whether ``data``, white space aside, ends in a unit of ``TEXT_UNIT`` bytes written once
    more than ``TEXT_COPIES`` allows (a unit of digits and separators alone aside)."""
    text = _SPACE.sub(b"", data)
    copies = TEXT_COPIES + 1
    shortest, longest = TEXT_UNIT
    for unit in range(shortest, min(longest, len(text) // copies) + 1):
        tail = text[-unit * copies :]
        if tail == tail[:unit] * copies and _is_loop_unit(tail[:unit]):
            return True
    return False
