"""``Rewrite``: a slip that drafts often make in a grammar's language, and what they meant by it.

A grammar's rewrites come with it (``Grammar.from_lark(rewrites=...)``, or a ``<grammar>.rewrites.json``
file beside a grammar file, read by ``load_rewrites``); the repairs try them at a violation.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._errors import GrammarError
from ._events import EditRule

__all__ = ["Rewrite", "load_rewrites"]

#: A replacement template's pieces: a group reference (``\\1``, ``\\g<1>``), an escape, or literal text.
_TEMPLATE_TOKEN = re.compile(r"\\(?:(\d{1,2})|g<(\d+)>)|\\.|[^\\]+")


@dataclass(frozen=True)
class Rewrite:
    """A slip that drafts often make in this grammar's language, and what they meant by it.

    ``pattern`` is a Python regular expression, ``replacement`` its ``re.sub`` template, ``reason``
    a few words for the trace: ``Rewrite(r"(\\w+)::(\\w+)", r"CAST(\\1 AS \\2)", "PostgreSQL
    cast")``. A rewrite is one more repair candidate at a violation: it is used when the match
    spans the violation and the checker then reads the draft's text on.

    A rewrite that moves text to the end of a statement (T-SQL's ``SELECT TOP 5 ...`` is
    ``SELECT ... LIMIT 5``) needs the draft's text to that end: ``head`` is a regular expression
    for the beginning of its match. Where ``head`` spans a violation, the draft is read on to the
    end of its statement (``;`` or the end of its answer, 4 KB at most) before the repair is
    chosen. ``\\Z`` in ``pattern`` matches only at the end of a finished answer; a pattern that
    begins with ``\\A`` matches only at the start of the answer (JSON's values written one after
    another, read as an array of them).
    """

    pattern: str
    replacement: str
    reason: str = ""
    head: str = ""
    #: How many lexemes of the draft's text after the match must then read on for the rewrite to
    #: be taken (the match itself is evidence); 0 for a match that is certain on its own and is
    #: often followed by another slip (a Python tuple's ``)`` before the next ``)``).
    min_read: int = 1
    #: Substitutions (``pattern``, ``replacement``) made in each group's text before it is written
    #: into ``replacement``: a bare word quoted keeps its backslashes as themselves (the pattern
    #: ``\\\\`` with ``\\\\\\\\``: ``C:\\new`` is ``"C:\\\\new"``, not a line break).
    inner: tuple[tuple[str, str], ...] = ()
    #: How many characters before the violation the match may begin: more for a slip whose match
    #: holds a whole bracket group (``(SELECT … )::numeric``, ``CAST(…, REAL)``), less for one
    #: that may chain over the draft's own repeats (``WHERE a WHERE a WHERE a …``).
    reach: int = 200
    #: Whether the slip is also rewritten where it stands inside the draft's text that another
    #: rewrite copies, when that text is rejected as written: an expression inside an expression
    #: (SQL's ``LEFT(d, 6)`` inside MySQL's ``RIGHT(..., 2)``). Not for a slip whose meaning depends
    #: on the text around it (JSON's quote inside a string).
    within: bool = False
    #: Whether the slip is a clause of another dialect with no effect where the text runs, left
    #: out (SQL's ``GROUP BY ()``, ``FOR UPDATE``): recorded as an ``inert`` rewrite, the draft's
    #: meaning kept, not as its words dropped.
    inert: bool = False

    def __post_init__(self) -> None:
        for source in (self.pattern, self.head, *(pattern for pattern, _ in self.inner)):
            try:
                re.compile(source)
            except re.error as exc:
                raise GrammarError(f"rewrite pattern {source!r}: {exc}", offset=exc.pos) from None

    @property
    def rule(self) -> EditRule:
        """The rule its repairs are recorded under."""
        return "inert" if self.inert else "rewrite"

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    @property
    def at_start(self) -> bool:
        """Whether the pattern is anchored at the start of the answer (``\\A``)."""
        return self.pattern.startswith("\\A")

    def expand(self, match: re.Match[str], within: Callable[[str], str] | None = None) -> str:
        """The text that replaces ``match``: ``replacement`` with each group's text, after ``inner``
        and then ``within`` (another rewrite of a slip inside the draft's text that it copies)."""
        if not self.inner and within is None:
            return match.expand(self.replacement)
        tokens = _TEMPLATE_TOKEN.finditer(self.replacement)
        return "".join(self._piece(match, token, within) for token in tokens)

    def _piece(self, match: re.Match[str], token: re.Match[str], within: Callable[[str], str] | None) -> str:
        number = token.group(1) or token.group(2)
        if number is None:
            return match.expand(token.group())  # literal text, its escapes read as re.sub reads them
        text = match.group(int(number)) or ""
        for pattern, replacement in self.inner:
            text = re.sub(pattern, replacement, text)
        return within(text) if within is not None else text

    @functools.cached_property
    def head_regex(self) -> re.Pattern[str] | None:
        return re.compile(self.head) if self.head else None


def load_rewrites(path: Path) -> tuple[Rewrite, ...]:
    """The rewrites in a ``<grammar>.rewrites.json`` file: a list of objects with ``pattern``,
    ``replacement``, ``reason`` and (optional) ``head``, ``min_read``, ``inner`` (a list of
    ``[pattern, replacement]`` pairs), ``reach``, ``within`` and ``inert``."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        return tuple(
            Rewrite(
                e["pattern"],
                e["replacement"],
                e.get("reason", ""),
                e.get("head", ""),
                e.get("min_read", 1),
                tuple((pattern, replacement) for pattern, replacement in e.get("inner", ())),
                e.get("reach", 200),
                e.get("within", False),
                e.get("inert", False),
            )
            for e in entries
        )
    except json.JSONDecodeError as exc:
        raise GrammarError(
            f"bad rewrites file: {exc.msg}", line=exc.lineno, column=exc.colno, source=str(path)
        ) from None
    except (KeyError, TypeError) as exc:
        raise GrammarError(
            f"bad rewrites file: each entry needs 'pattern' and 'replacement' ({exc})", source=str(path)
        ) from None
