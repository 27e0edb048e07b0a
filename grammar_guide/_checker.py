"""The incremental, byte-exact checker.

llguidance's matcher works on tokens. The checker gives it a vocabulary of the 256 single bytes
(plus an end-of-text token), so consuming a "token" is consuming one byte: the matcher then
answers, byte by byte, whether the text is still a prefix of some valid text, which bytes may
follow, which bytes are forced, and whether the text is complete. Each ``feed`` costs time in
proportion to its chunk; ``rollback`` undoes bytes without re-reading the text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import lark
import lark.exceptions

from ._matcher import regex_accepts_prefix
from ._text import line_column

if TYPE_CHECKING:
    from ._compile import Terminal
    from ._grammar import Grammar

__all__ = ["Checker", "CheckerState", "Violation"]


@dataclass(frozen=True)
class CheckerState:
    """A point to ``Checker.rollback`` to (taken with ``Checker.snapshot``)."""

    n_bytes: int
    violation: Violation | None


@dataclass(frozen=True)
class Violation:
    """Where the text stopped being a valid prefix.

    ``offset`` is in characters from the start of the checked text; ``line``/``column`` are
    1-based; ``found`` is the rejected character(s) (up to the end of the chunk's line).
    """

    offset: int
    line: int
    column: int
    found: str
    expected: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        text = f"line {self.line}, column {self.column}: unexpected {self.found!r}"
        if self.expected:
            text += f"; expected {', '.join(self.expected)}"
        return text


class Checker:
    """Reads text as it arrives and tells how much of it is a valid prefix of the grammar.

    ``feed`` accepts ``str`` or ``bytes``; after the first invalid byte the checker stays at the
    end of the valid prefix (``violation`` says where) and accepts nothing more until rolled back.
    """

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self._matcher = grammar.new_matcher()
        self._bytes = bytearray()
        self._text_cache: str | None = ""
        self._violation: Violation | None = None

    # -- reading ----------------------------------------------------------------------------

    def feed(self, chunk: str | bytes) -> int:
        """Consume ``chunk``; return how much of it was accepted (characters for ``str``, bytes for
        ``bytes``). A ``str`` is accepted whole characters at a time."""
        if self._violation is not None or not chunk:
            return 0
        is_text = isinstance(chunk, str)
        data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        tokens = list(data)
        # Validating, then consuming the valid part, measured about twice as fast as
        # ``try_consume_tokens`` (benchmarks/checker_bench.py).
        n = self._matcher.validate_tokens(tokens)
        if is_text:
            # Do not consume part of a multi-byte character.
            while 0 < n < len(data) and (data[n] & 0xC0) == 0x80:
                n -= 1
        if n and not self._matcher.consume_tokens(tokens[:n] if n < len(tokens) else tokens):
            raise RuntimeError(f"llguidance refused bytes it validated: {self._matcher.get_error()}")
        self._bytes += data[:n]
        self._text_cache = None
        if n < len(data):
            self._violation = self._make_violation(data[n:])
        if is_text:
            return len(data[:n].decode("utf-8"))
        return n

    def _make_violation(self, rest: bytes) -> Violation:
        text = self.text
        found = rest.decode("utf-8", errors="replace").split("\n", 1)[0][:40] or "\\n"
        line, column = line_column(text, len(text))
        return Violation(offset=len(text), line=line, column=column, found=found)

    # -- state ------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The accepted text (complete characters only)."""
        if self._text_cache is None:
            self._text_cache = self._bytes.decode("utf-8", errors="ignore")
        return self._text_cache

    @property
    def accepted_bytes(self) -> bytes:
        return bytes(self._bytes)

    @property
    def violation(self) -> Violation | None:
        """The first rejected position, or ``None`` while everything fed was accepted."""
        return self._violation

    @property
    def is_valid(self) -> bool:
        return self._violation is None

    @property
    def is_complete(self) -> bool:
        """Whether the accepted text is a complete text of the grammar."""
        return self._matcher.is_accepting()

    @property
    def can_continue(self) -> bool:
        """Whether some byte may follow the accepted text."""
        return any(self._mask_bytes()[:32])

    def is_dead_end(self) -> bool:
        """Whether the accepted text, though reported valid, can never be completed: it is not
        complete and only ignored text (white space, comments) may follow. A grammar's dead-end
        guard (a word that leads to a terminal matching nothing) leaves the matcher there."""
        if self._violation is not None or self.is_complete:
            return False
        return self.allowed_bytes() <= self.grammar.ignored_start_bytes

    def allowed_bytes(self) -> frozenset[int]:
        """The bytes that may come next."""
        mask = self._mask_bytes()
        return frozenset(b for b in range(256) if mask[b >> 3] >> (b & 7) & 1)

    def _mask_bytes(self) -> bytes:
        return self._matcher.compute_bitmask()

    def forced_text(self) -> str:
        """The text the grammar forces next (every valid continuation starts with it)."""
        forced = self._matcher.compute_ff_bytes()
        # Only whole characters.
        return forced.decode("utf-8", errors="ignore") if forced else ""

    def forced_bytes(self) -> bytes:
        return self._matcher.compute_ff_bytes()

    def expected(self) -> list[Terminal]:
        """The terminals that may come next: the one in progress, or those that may start here.

        Uses the lark reference parser, so it is for diagnostics, not the hot path. Grammars
        built from a regex or a JSON schema have no named terminals and give ``[]``.
        """
        return expected_terminals(self.grammar, self.text)

    def snapshot(self) -> CheckerState:
        return CheckerState(len(self._bytes), self._violation)

    def rollback(self, state: CheckerState | int) -> None:
        """Return to a snapshot (or to a length in bytes of the accepted text)."""
        n_bytes = state.n_bytes if isinstance(state, CheckerState) else state
        if n_bytes > len(self._bytes) or n_bytes < 0:
            raise ValueError(f"cannot roll back to {n_bytes} bytes; {len(self._bytes)} accepted")
        drop = len(self._bytes) - n_bytes
        if drop:
            if not self._matcher.rollback(drop):
                raise RuntimeError(f"matcher could not roll back {drop} bytes: {self._matcher.get_error()}")
            del self._bytes[n_bytes:]
            self._text_cache = None
        self._violation = state.violation if isinstance(state, CheckerState) else None

    def rollback_chars(self, n_chars: int) -> None:
        """Keep only the first ``n_chars`` characters of the accepted text."""
        self.rollback(len(self.text[:n_chars].encode("utf-8")))

    def copy_clear(self) -> Checker:
        """A copy at the same accepted text, without the violation."""
        other = self.copy()
        other._violation = None
        return other

    def copy(self) -> Checker:
        other = Checker.__new__(Checker)
        other.grammar = self.grammar
        other._matcher = self._matcher.deep_copy()
        other._bytes = bytearray(self._bytes)
        other._text_cache = self._text_cache
        other._violation = self._violation
        return other

    def __repr__(self) -> str:
        state = "complete" if self.is_complete else "valid prefix"
        if self._violation:
            state = f"violation at {self._violation.offset}"
        return f"<Checker {self.grammar.name}: {len(self._bytes)} bytes, {state}>"


# -- expected terminals (diagnostics) ---------------------------------------------------------

_WORD_RUN = re.compile(r"\w+$")
_NONSPACE_RUN = re.compile(r"\S+$")


def expected_terminals(grammar: Grammar, text: str) -> list[Terminal]:
    """Terminals that can continue ``text``: either finish the lexeme in progress or start next."""
    parser = grammar.lark_parser
    if parser is None:
        return []
    candidates = [len(text)]
    for run in (_WORD_RUN, _NONSPACE_RUN):
        match = run.search(text)
        if match and match.start() not in candidates:
            candidates.append(match.start())
    names: dict[str, None] = {}
    for k in candidates:
        rest = text[k:]
        if rest and not any(_terminal_accepts_prefix(t, rest) for t in grammar.terminals.values()):
            continue  # no terminal begins with the rest: nothing to ask lark
        for name in _lark_expected(parser, text[:k]):
            terminal = grammar.terminals.get(name)
            if terminal is None or name in grammar.guard_terminals:
                continue
            if rest and not _terminal_accepts_prefix(terminal, rest):
                continue
            names[name] = None
    return [grammar.terminals[n] for n in names]


@functools.lru_cache(maxsize=8)
def _lark_expected(parser: lark.Lark, text: str) -> frozenset[str]:
    """What lark expects after ``text``. Each call parses the whole text; one violation asks
    about the same few prefixes several times (the message, each repair), hence the cache."""
    return frozenset(_lark_expected_uncached(parser, text))


def _lark_expected_uncached(parser: lark.Lark, text: str) -> set[str]:
    try:
        parser.parse(text)
    except lark.exceptions.UnexpectedEOF as exc:
        return set(exc.expected)
    except lark.exceptions.UnexpectedCharacters as exc:
        if exc.pos_in_stream is not None and exc.pos_in_stream >= len(text):
            return set(exc.allowed or ())
        return set()
    except lark.exceptions.UnexpectedInput:
        return set()
    # Complete text: ask what may follow by offering an impossible character.
    try:
        parser.parse(text + "\x00")
    except lark.exceptions.UnexpectedCharacters as exc:
        if exc.pos_in_stream == len(text):
            return set(exc.allowed or ())
    except lark.exceptions.UnexpectedInput:
        pass
    return set()


def _terminal_accepts_prefix(terminal: Terminal, rest: str) -> bool:
    if terminal.literal is not None:
        lit, r = terminal.literal, rest
        if terminal.case_insensitive:
            lit, r = lit.lower(), r.lower()
        return lit.startswith(r)
    return regex_accepts_prefix(terminal.pattern, rest)
