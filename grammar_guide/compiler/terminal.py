"""A grammar's terminal as the compiler writes it, and the compiled grammar."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import NamedTuple

from .matcher import regex_is_void

__all__ = ["Compiled", "Terminal"]


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
