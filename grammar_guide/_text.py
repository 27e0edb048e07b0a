"""Positions in text: one helper per fact."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "QUOTES",
    "is_word_char",
    "leaves_open",
    "line_column",
    "offset_of",
    "open_quote",
    "plain_space",
    "run_start",
]

QUOTES = frozenset("'\"`")  # the quotes a grammar's strings and quoted names are written in
_UNESCAPED_QUOTE = {q: re.compile(rf"(?<!\\){re.escape(q)}") for q in QUOTES}


def leaves_open(text: str, quote: str) -> bool:
    """Whether ``text`` has an odd number of ``quote`` (backslash escapes aside)."""
    return len(_UNESCAPED_QUOTE[quote].findall(text)) % 2 == 1


def open_quote(text: str) -> str | None:
    """The quote of a string ``text`` leaves open (an odd number of them), if any."""
    return next((q for q in sorted(QUOTES) if leaves_open(text, q)), None)


def line_column(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of character ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def offset_of(text: str, line: int, column: int) -> int:
    """The character offset of 1-based ``line`` and ``column`` in ``text`` (``line_column``'s
    inverse)."""
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return len(text)
    return start + column - 1


#: White space of a line's end: written as a line break, every other kind as a space.
_LINE_ENDS = frozenset("\x1c\x1d\x1e\x85\u2028\u2029")


def plain_space(ch: str) -> str | None:
    """The ASCII white space ``ch`` stands for, where it is white space of another kind (a
    vertical tab, a no-break space, U+2009 and the other Unicode spaces): ``" "``, or ``"\\n"``
    for a line or paragraph separator; ``None`` for ASCII's own (space, tab, line breaks) and for
    every other character."""
    if not ch.isspace() or ch in " \t\n\r":
        return None
    return "\n" if ch in _LINE_ENDS else " "


def is_word_char(ch: str) -> bool:
    """Whether ``ch`` is what ``\\w`` matches in a regular expression (a letter, digit or ``_``)."""
    return ch.isalnum() or ch == "_"


def run_start(text: str, end: int, is_char: Callable[[str], bool]) -> int:
    """Where the run of characters that ``is_char`` accepts and that ends at ``end`` begins (read
    backwards: the cost is the run's length, not the text's)."""
    start = end
    while start and is_char(text[start - 1]):
        start -= 1
    return start
