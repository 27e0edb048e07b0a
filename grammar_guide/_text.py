"""Positions in text: one helper per fact."""

from __future__ import annotations

__all__ = ["line_column", "offset_of"]


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
