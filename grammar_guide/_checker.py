"""The incremental, byte-exact checker.

llguidance's matcher works on tokens. The checker gives it a vocabulary of the 256 single bytes
(plus an end-of-text token), so consuming a "token" is consuming one byte: the matcher then
answers, byte by byte, whether the text is still a prefix of some valid text, which bytes may
follow, which bytes are forced, and whether the text is complete. Each ``feed`` costs time in
proportion to its chunk (reading it once costs a copy of the matcher besides, only where that is
measured to cost less than reading it twice: ``_feed_costs``); ``rollback`` undoes bytes without
re-reading the text, and ``trial`` tries text on the checker and comes back, for the same cost.

Which terminals may come next (``expected``, for diagnostics and repairs) is asked of lark's
parser while the text is short; from ``PROBE_FROM`` bytes on, of the matcher itself: its grammar
then has a probe beside every terminal (``compiler.compile.probe_grammar``), so the answer costs the same
at 1 KB and at 1 MB of text.
"""

from __future__ import annotations

import contextlib
import functools
import re
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import lark
import lark.exceptions
import llguidance as llg

from ._feed_costs import FeedCosts
from ._rewrites import Rewrite
from ._text import is_word_char, line_column, run_start
from .compiler.compile import PROBE_IDS, PROBE_MARKERS, Terminal
from .compiler.completion_chart import CompletionChart
from .compiler.matcher import ByteMatcherFactory, regex_accepts_prefix
from .compiler.terminal_costs import TerminalCosts

__all__ = ["CheckedGrammar", "Checker", "CheckerState", "Violation"]

#: From how many accepted bytes on ``Checker.expected`` probes the matcher instead of asking lark
#: (whose parse reads the whole text: about 20 µs a character).
PROBE_FROM = 2048


class CheckedGrammar(Protocol):
    """What a checker, and the repairs through ``Checker.grammar``, read of a grammar.

    ``Grammar`` is the one implementation: it makes checkers (``Grammar.checker()``), so this
    module names the interface rather than import it.
    """

    @property
    def name(self) -> str: ...
    @property
    def terminals(self) -> Mapping[str, Terminal]: ...
    @property
    def rewrites(self) -> tuple[Rewrite, ...]: ...
    @property
    def lark_parser(self) -> lark.Lark | None: ...
    @property
    def ignored_text(self) -> re.Pattern[str]: ...
    @property
    def ignored_start_bytes(self) -> frozenset[int]: ...
    @property
    def guard_terminals(self) -> frozenset[str]: ...
    @property
    def keywords(self) -> frozenset[str]: ...
    @property
    def terminal_costs(self) -> TerminalCosts | None: ...
    @property
    def completion_chart(self) -> CompletionChart | None: ...
    @property
    def probe_matchers(self) -> tuple[ByteMatcherFactory, Mapping[tuple[int, int], str]] | None: ...
    def new_matcher(self) -> llg.LLMatcher: ...
    def checker(self, *, probe_from: int | None = None) -> Checker: ...


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
    ``probe_from``: from how many accepted bytes on ``expected`` is read from the matcher's probes
    rather than from a lark parse of the whole text (0: always; ``None``, the default: never).
    Probing makes every violation's diagnostics cost the same at any length of text, for a
    slower ``feed`` past that point (the probe grammar's matcher: about 2x on JSON and SQLite):
    the guide loop, which repairs violation after violation, probes from ``PROBE_FROM`` bytes,
    and from the first ``expected`` on (a grammar read as lark reads it, ``lexer="dynamic"``, has
    probes that answer as lark does; a greedy one's matcher is its reference);
    a one-shot check (``Grammar.checker()``, ``grammar-guide check``) reads at full speed and
    asks lark once.
    """

    def __init__(self, grammar: CheckedGrammar, *, probe_from: int | None = None) -> None:
        self.grammar = grammar
        self._matcher = grammar.new_matcher()
        self._bytes = bytearray()
        self._text_cache: str | None = ""
        self._violation: Violation | None = None
        # From ``probe_from`` accepted bytes on, the matcher is one whose grammar has a probe
        # beside every terminal (``expected`` then costs the same at any length of text).
        self._probe_from = (1 << 62) if probe_from is None else probe_from
        self._probing = False
        # A grammar read as lark reads it (the dynamic lexer) has probes that answer as lark's
        # parser does: a checker that may probe then probes from the first ``expected`` on,
        # rather than parse the whole text with lark at each violation (about 2 ms a question).
        # (A greedy grammar's matcher is its reference: its probes answer as it reads.)
        self._probe_on_expected = probe_from is not None
        self._low_water = 0  # the fewest bytes accepted since the innermost ``trial`` began
        self._costs = _feed_costs(grammar)  # how to read the next chunk: once, or validated first

    # -- reading ----------------------------------------------------------------------------

    def feed(self, chunk: str | bytes) -> int:
        """Consume ``chunk``; return how much of it was accepted (characters for ``str``, bytes for
        ``bytes``). A ``str`` is accepted whole characters at a time."""
        if self._violation is not None or not chunk:
            return 0
        is_text = isinstance(chunk, str)
        data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        if not self._probing and len(self._bytes) + len(data) >= self._probe_from:
            self._start_probing()
        tokens = list(data)
        if not is_text:
            # Bytes no UTF-8 text holds are never accepted (the probes' markers are among them).
            stray = _NOT_UTF8.search(data)
            if stray is not None:
                tokens = tokens[: stray.start()]
        n = self._consume_valid_prefix(tokens, data if is_text else None)
        self._costs.read(whole=n == len(data))
        self._bytes += data[:n]
        self._text_cache = None
        if n < len(data):
            self._violation = self._make_violation(data[n:])
        if is_text:
            return len(data[:n].decode("utf-8"))
        return n

    def _consume_valid_prefix(self, tokens: list[int], text: bytes | None) -> int:
        """Consume the longest valid prefix of ``tokens`` (whole characters of ``text``, the
        chunk's UTF-8, when it is a ``str``); return its length in bytes.

        A chunk is read once where that is expected to cost less (``FeedCosts``): the matcher is
        copied and the chunk consumed; only a refused chunk is then validated, on the copy (a
        refused byte leaves llguidance's matcher in an error state that nothing undoes).
        Otherwise it is validated and its valid part consumed, as a refused chunk is.
        (``try_consume_tokens`` validates each byte before consuming it: two reads too.)
        """
        if not tokens:
            return 0
        if self._costs.read_once(len(self._bytes), len(tokens)):
            started = time.perf_counter()
            saved = self._matcher.deep_copy()
            self._costs.copied(time.perf_counter() - started, len(self._bytes))
            if self._timed_consume(tokens):
                return len(tokens)
            self._matcher = saved
        n = self._matcher.validate_tokens(tokens)
        if text is not None:
            # Do not consume part of a multi-byte character.
            while 0 < n < len(text) and (text[n] & 0xC0) == 0x80:
                n -= 1
        if n and not self._timed_consume(tokens[:n] if n < len(tokens) else tokens):
            raise RuntimeError(f"llguidance refused bytes it validated: {self._matcher.get_error()}")
        return n

    def _timed_consume(self, tokens: list[int]) -> bool:
        started = time.perf_counter()
        ok: bool = self._matcher.consume_tokens(tokens)
        if ok:
            self._costs.consumed(time.perf_counter() - started, len(tokens))
        else:
            self._costs.refused_after(time.perf_counter() - started, len(tokens))
        return ok

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
        return _bytes_in_mask(self._mask_bytes()[:32])

    def _mask_bytes(self) -> bytes:
        mask = self._matcher.compute_bitmask()
        if self._probing:  # the probes' markers are not text
            mask = mask[:30] + bytes([mask[30] & 0x1F, 0]) + mask[32:]
        return mask

    def forced_text(self) -> str:
        """The text the grammar forces next (every valid continuation starts with it)."""
        forced = self.forced_bytes()
        # Only whole characters.
        return forced.decode("utf-8", errors="ignore") if forced else ""

    def forced_bytes(self) -> bytes:
        if not self._probing:
            return self._matcher.compute_ff_bytes()
        # The probes may begin wherever a terminal may, so the matcher forces nothing there;
        # the same loop as llguidance's, over the bytes of text: one allowed byte is forced.
        forced = bytearray()
        while not self._matcher.is_accepting() and len(forced) < _MAX_FORCED:
            allowed = self.allowed_bytes()
            if len(allowed) != 1:
                break
            (byte,) = allowed
            if not self._matcher.consume_token(byte):
                raise RuntimeError(f"llguidance refused a byte it allowed: {self._matcher.get_error()}")
            forced.append(byte)
        if forced and not self._matcher.rollback(len(forced)):
            raise RuntimeError(f"matcher could not roll back: {self._matcher.get_error()}")
        return bytes(forced)

    def expected(self, upto: int | None = None) -> list[Terminal]:
        """The terminals that may come after the first ``upto`` characters of the accepted text
        (all of it by default): the one in progress, or those that may start there.

        A text shorter than ``probe_from`` bytes is asked of the lark reference parser; from there
        on the matcher answers (its grammar has a probe beside each terminal, so the answer costs
        the same at any length of text). Grammars built from a regex or a JSON schema have no
        named terminals and give ``[]``.
        """
        if not self._probing and self._probe_on_expected:
            self._start_probing()
        text = self.text if upto is None else self.text[:upto]
        if not self._probing:
            return expected_terminals(self.grammar, text)
        return _expected(self.grammar, text, self._probe_at)

    def _probe_at(self, end: int) -> frozenset[str]:
        """The terminals the matcher predicts after the first ``end`` characters of the text
        (the lexeme in progress there closed), read from its probes."""
        probes = self.grammar.probe_matchers
        assert probes is not None
        names = probes[1]
        keep = self._byte_offset(end)
        tail = list(self._bytes[keep:])
        matcher = self._matcher
        if tail and not matcher.rollback(len(tail)):
            raise RuntimeError(f"matcher could not roll back: {matcher.get_error()}")
        found: set[str] = set()
        try:
            for marker in PROBE_MARKERS:
                if not matcher.validate_tokens([marker]):
                    continue
                if not matcher.consume_token(marker):
                    raise RuntimeError(f"llguidance refused a probe it allowed: {matcher.get_error()}")
                mask = matcher.compute_bitmask()
                if not matcher.rollback(1):
                    raise RuntimeError(f"matcher could not roll back a probe: {matcher.get_error()}")
                for probe_id in PROBE_IDS:
                    if mask[probe_id >> 3] >> (probe_id & 7) & 1 and (marker, probe_id) in names:
                        found.add(names[marker, probe_id])
        finally:
            if tail and not matcher.consume_tokens(tail):
                raise RuntimeError(f"llguidance refused bytes it accepted: {matcher.get_error()}")
        return frozenset(found)

    def _start_probing(self) -> None:
        probes = self.grammar.probe_matchers
        self._probe_on_expected = False
        if probes is None or self.grammar.lark_parser is None:
            self._probe_from = 1 << 62  # nothing to probe: lark (or nothing) answers
            return
        matcher = probes[0].new()
        if self._bytes and not matcher.consume_tokens(list(self._bytes)):
            raise RuntimeError(f"the probing matcher refused accepted text: {matcher.get_error()}")
        self._matcher = matcher
        self._probing = True

    def _byte_offset(self, chars: int) -> int:
        """How many bytes the first ``chars`` characters of the text take."""
        text = self.text
        if len(text) == len(self._bytes):  # ASCII
            return chars
        return len(text[:chars].encode("utf-8"))

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
            self._low_water = min(self._low_water, n_bytes)
        self._violation = state.violation if isinstance(state, CheckerState) else None

    def rollback_chars(self, n_chars: int) -> None:
        """Keep only the first ``n_chars`` characters of the accepted text."""
        self.rollback(self._byte_offset(n_chars))

    @contextlib.contextmanager
    def trial(self, *, clear: bool = True) -> Iterator[Checker]:
        """This checker, to try text on and come back: on leaving the block the accepted text and
        the violation are as they were. Costs in proportion to the text rolled back and fed
        (``copy`` costs in proportion to the whole text). ``clear`` starts without the violation.
        """
        saved = bytes(self._bytes)
        violation, text, outer_low = self._violation, self._text_cache, self._low_water
        self._low_water = len(saved)
        if clear:
            self._violation = None
        try:
            yield self
        finally:
            # The first ``low`` bytes were never rolled back: only the rest is read again.
            low = min(self._low_water, len(self._bytes), len(saved))
            self.rollback(low)
            rest = list(saved[low:])
            if rest and not self._matcher.consume_tokens(rest):
                raise RuntimeError(f"llguidance refused text it had accepted: {self._matcher.get_error()}")
            self._bytes += saved[low:]
            self._violation, self._text_cache = violation, text
            self._low_water = min(outer_low, low)

    def accepts(self, more: str) -> int:
        """How many characters of ``more`` the checker would accept next (nothing is fed)."""
        if self._violation is not None or not more:
            return 0
        data = more.encode("utf-8")
        n = self._matcher.validate_tokens(list(data))
        while 0 < n < len(data) and (data[n] & 0xC0) == 0x80:
            n -= 1
        return len(data[:n].decode("utf-8"))

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
        other._probe_from, other._probing, other._low_water = self._probe_from, self._probing, self._low_water
        other._probe_on_expected = self._probe_on_expected
        other._costs = self._costs.copy()
        return other

    def __repr__(self) -> str:
        state = "complete" if self.is_complete else "valid prefix"
        if self._violation:
            state = f"violation at {self._violation.offset}"
        return f"<Checker {self.grammar.name}: {len(self._bytes)} bytes, {state}>"


# What a grammar's reads cost, shared by its new checkers (a guide run makes one): each starts
# from what the ones before it measured, rather than pay again for what they learnt (a refused
# read can cost 300 µs: ``FeedCosts``). Copies keep their own (``Checker.copy``).
_COSTS: weakref.WeakKeyDictionary[CheckedGrammar, FeedCosts] = weakref.WeakKeyDictionary()


def _feed_costs(grammar: CheckedGrammar) -> FeedCosts:
    try:
        return _COSTS.setdefault(grammar, FeedCosts())
    except TypeError:  # a grammar nothing can refer to weakly
        return FeedCosts()


# -- expected terminals (diagnostics) ---------------------------------------------------------

_NOT_UTF8 = re.compile(rb"[\xf5-\xff]")
_MAX_FORCED = 1 << 16


@functools.lru_cache(maxsize=4096)
def _bytes_in_mask(mask: bytes) -> frozenset[int]:
    """The bytes whose bits are set in a 32-byte mask (the same few masks recur: hence the cache)."""
    return frozenset(b for b in range(256) if mask[b >> 3] >> (b & 7) & 1)


def _is_nonspace(ch: str) -> bool:
    return not ch.isspace()


def expected_terminals(grammar: CheckedGrammar, text: str) -> list[Terminal]:
    """Terminals that can continue ``text``: either finish the lexeme in progress or start next
    (asked of the lark reference parser, which reads the whole text)."""
    parser = grammar.lark_parser
    if parser is None:
        return []
    return _expected(grammar, text, lambda k: _lark_expected(parser, text[:k]))


def _expected(grammar: CheckedGrammar, text: str, names_at: Callable[[int], frozenset[str]]) -> list[Terminal]:
    """The terminals that finish the lexeme in progress at the end of ``text`` or start after it,
    given ``names_at(k)``: the terminals that may start after ``text[:k]``."""
    candidates = [len(text)]
    for is_run_char in (is_word_char, _is_nonspace):
        start = run_start(text, len(text), is_run_char)
        if start < len(text) and start not in candidates:
            candidates.append(start)
    names: dict[str, None] = {}
    for k in candidates:
        rest = text[k:]
        if rest and not any(_terminal_accepts_prefix(t, rest) for t in grammar.terminals.values()):
            continue  # no terminal begins with the rest: nothing to ask
        for name in sorted(names_at(k)):  # a set: its order varies by process
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
