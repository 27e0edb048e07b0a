"""Prompt-lookup speculation: guess the next tokens from the text so far, check them in one pass."""

from __future__ import annotations

import array
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from .kv_cache import KVCache

__all__ = ["LookupCache", "TokenLookup"]


class TokenLookup:
    """Guesses of the next tokens from the tokens so far ("prompt lookup" speculation).

    Two sources of guesses, tried in this order:

    - the guess before, carried on: when the model wrote some of the last guess and then a token
      of its own, the next guess is what follows in the same place of the earlier text, one
      token on (read as a substitution). Repeated structure with a changing part (``"key7":
      "key7",`` after ``"key6": "key6",``, a column list after another) is then followed
      across the change, which a fresh lookup loses;
    - a fresh lookup: what followed the latest earlier occurrence of the last 3, 2 or 1 tokens
      (the longest that occurred), so the prompt's names and the answer's own repetitions come
      back.

    A ``LookupCache`` runs the guess through the model in one forward pass. That pass costs more
    than a one-token step (on a 2-core CPU, SmolLM2-135M: a 6-token pass about 1.6 one-token
    steps), so each source keeps a running mean of right tokens per guess; while it is below
    ``WORTH``, that source guesses only once in a while (once in ``PROBE`` times, then half as
    often after each probe that leaves the mean below, down to once in ``MAX_WAIT``), so that a
    text that turns repetitive is noticed while prose loses little.
    """

    WORTH = 0.55
    PROBE = 4
    MAX_WAIT = 32
    _RATE = 0.25  # weight of the newest guess in a running mean
    _CARRIED = 0  # the source key of a carried-on guess (fresh lookups use their match length)

    def __init__(self, size: int = 5) -> None:
        if size < 1:
            raise ValueError("a lookup guesses at least one token")
        self.size = size
        #: Tokens guessed, and how many of them were right (the model then wrote them).
        self.guessed = 0
        self.right = 0
        self._mean = {self._CARRIED: 1.0, 3: 1.0, 2: 1.0, 1: 1.0}  # per source
        self._skipped = dict.fromkeys(self._mean, 0)
        self._wait = dict.fromkeys(self._mean, self.PROBE)  # while the mean is below WORTH
        self._source = 1  # the source of the last guess
        self._probing = False  # whether it was made while its source's mean was below WORTH
        self._start = 0  # where in the text the last guess was read
        self._length = 0  # the length of the text it followed
        # Where the next guess would carry on (an index of the text), and for a text of which
        # length; None when the last guess was all wrong.
        self._carry: tuple[int, int] | None = None

    def guess(self, ids: list[int], limit: int) -> list[int]:
        """Up to ``min(size, limit)`` tokens that may follow ``ids`` (none when guessing is off)."""
        size = min(self.size, limit)
        if size <= 0:
            return []
        end = len(ids)
        carry, self._carry = self._carry, None
        if carry is not None and carry[1] == end and carry[0] < end:
            return self._take(ids, self._CARRIED, carry[0], size)
        # The search runs on the ids as 4-byte words (bytes.rfind, in C): a Python loop over a
        # long text cost 0.8 ms a step at 8,000 tokens, a tenth of a small model's step on a GPU.
        text = array.array("I", ids).tobytes()
        for n in (3, 2, 1):
            if end <= n:
                continue
            tail = text[4 * (end - n) :]
            stop = 4 * (end - 1)  # an occurrence ends before the last token
            at = text.rfind(tail, 0, stop)
            while at > 0 and at % 4:  # across word boundaries: not a token match
                at = text.rfind(tail, 0, at + len(tail) - 1)
            if at >= 0 and at % 4 == 0:
                return self._take(ids, n, at // 4 + n, size)
        return []

    def _take(self, ids: list[int], source: int, start: int, size: int) -> list[int]:
        if self._mean[source] < self.WORTH and self._skipped[source] < self._wait[source] - 1:
            self._skipped[source] += 1
            return []
        self._skipped[source] = 0
        self._probing = self._mean[source] < self.WORTH
        self._source, self._start, self._length = source, start, len(ids)
        return ids[start : start + size]

    def record(self, guessed: int, right: int) -> None:
        """How the last guess, of ``guessed`` tokens, went: the first ``right`` were written
        (and then one token the model chose)."""
        self.guessed += guessed
        self.right += right
        source = self._source
        self._mean[source] += self._RATE * (right - self._mean[source])
        if self._mean[source] >= self.WORTH:
            self._wait[source] = self.PROBE
        elif self._probing:
            self._wait[source] = min(2 * self._wait[source], self.MAX_WAIT)
        # Carry on past the token the model chose, in the text the guess was read from.
        self._carry = (self._start + right + 1, self._length + right + 1) if right else None


class LookupCache:
    """``KVCache.advance`` that computes the logits of guessed tokens ahead, in one forward pass.

    ``advance(ids, limit)`` returns the logits after ``ids``, like ``KVCache.advance``; with a
    ``TokenLookup`` it also runs the tokens it guesses will follow, so that when the caller's
    next ``ids`` adds a guessed token, its logits are already there. What the caller chooses is
    up to the caller (a mask, sampling): guessing changes how many forward passes are made, not
    what is written (the logits agree to float rounding). One ``LookupCache`` serves one
    decoding run of one caller; the ``KVCache`` under it may be shared between runs.
    """

    def __init__(self, kv: KVCache, lookup: TokenLookup | None) -> None:
        self.kv = kv
        self.lookup = lookup
        self._base = 0  # the length of the context the last guess followed
        self._guess: list[int] = []
        self._rows: torch.Tensor | None = None  # set while a guess is pending
        self._generation = -1

    def advance(self, ids: list[int], limit: int) -> torch.Tensor:
        """Logits after ``ids``; guess at most ``limit`` tokens beyond them."""
        if self._guess:
            done = len(ids) - self._base
            guess, base = self._guess, self._base
            if self.kv.generation != self._generation:
                self._guess, self._rows = [], None  # another user changed the cache meanwhile
            elif 0 <= done <= len(guess) and self.kv.ids[: len(ids)] == ids:
                rows = self._rows
                assert rows is not None
                if done == len(guess):
                    # All of it was right: the next guess follows the token chosen after it.
                    self._settle(done)
                return rows[done]
        if self._guess:
            right = 0
            while right < len(guess) and base + right < len(ids) and ids[base + right] == guess[right]:
                right += 1
            self._settle(right)
        guess = self.lookup.guess(ids, limit) if self.lookup is not None and limit > 0 else []
        if not guess:
            return self.kv.advance(ids)
        self._rows = rows = self.kv.verify(ids, guess)
        self._base, self._guess = len(ids), guess
        self._generation = self.kv.generation
        return rows[0]

    def _settle(self, right: int) -> None:
        """The guess is over: ``right`` of its tokens were written; drop the others."""
        assert self.lookup is not None
        self.lookup.record(len(self._guess), right)
        self.kv.keep(self._base + right)
        self._generation = self.kv.generation
        self._guess, self._rows = [], None
