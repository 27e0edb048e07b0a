"""Guards on the token the target chose, for a small model that would otherwise run on.

Each guard says when a chosen token must be chosen again (the decoder then takes the best token
the guard allows, still under the grammar's mask):

- ``repeats``: a unit of 1, 2 or 3 tokens written once more than ``MAX_REPEATS`` allows, as a
  model caught in a loop writes (``BODY_BODY_BODY_``, ``1000000000``);
- ``TokenRuns``: a number longer than ``MAX_DIGITS`` or a name longer than ``MAX_WORD`` bytes
  (``500000001000000100…``), to be ended where the grammar allows;
- ``DeadEndProbe``: a token the mask allows that leads the byte checker into a dead end (a
  keyword glued to a word, in grammars with dead-end guards).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._loops import TEXT_COPIES, TEXT_UNIT, text_repeats

if TYPE_CHECKING:
    import torch

    from .._grammar import Grammar
    from .loading import LoadedModel

__all__ = [
    "DEAD_END_CANDIDATES",
    "MAX_DIGITS",
    "MAX_REPEATS",
    "MAX_WORD",
    "TEXT_COPIES",
    "TEXT_UNIT",
    "WORD_BYTES",
    "DeadEndProbe",
    "TokenRuns",
    "repeats",
    "text_repeats",
    "word_start_mask",
]

#: A unit of 1, 2 or 3 tokens (not white space) is written at most this many times in a row.
MAX_REPEATS = {1: 6, 2: 4, 3: 4}
#: The longest run of digits, and of word characters, that the target writes before it must end it.
MAX_DIGITS = 20
MAX_WORD = 48
#: Bytes of a word: ``_``, letters and digits, and every byte of a non-ASCII character.
WORD_BYTES = frozenset(b for b in range(256) if b == 0x5F or b >= 0x80 or chr(b).isalnum())
#: How many of the best allowed tokens are probed for one that leads somewhere.
DEAD_END_CANDIDATES = 256


def repeats(new: list[int], token: int, token_bytes: list[bytes]) -> bool:
    """Whether writing ``token`` after ``new`` repeats a unit of the target's own tokens once more
    than ``MAX_REPEATS`` allows (white space, such as indentation, may repeat)."""
    seq = [*new[-16:], token]
    for period, most in MAX_REPEATS.items():
        tail = seq[-period * (most + 1) :]
        if (
            len(tail) == period * (most + 1)
            and all(tail[i] == tail[i - period] for i in range(period, len(tail)))
            and b"".join(token_bytes[t] for t in tail[-period:]).strip()
        ):
            return True
    return False


@dataclass(frozen=True)
class TokenRuns:
    """The digits and word characters the text ends with (bytes), as the target writes on."""

    digits: int = 0
    word: int = 0

    @staticmethod
    def starts_word(piece: bytes) -> bool:
        """Whether ``piece`` begins with a word character (goes on with a number or a name)."""
        return bool(piece) and piece[0] in WORD_BYTES

    @classmethod
    def after(cls, data: bytes) -> TokenRuns:
        return cls().then(data[-MAX_WORD - 1 :])

    def then(self, piece: bytes) -> TokenRuns:
        digits, word = self.digits, self.word
        for b in piece:
            word = word + 1 if b in WORD_BYTES else 0
            digits = digits + 1 if 0x30 <= b <= 0x39 and word else 0
        return TokenRuns(digits, word)

    def too_long(self, piece: bytes) -> bool:
        """Whether writing ``piece`` makes a run longer than the target may write."""
        after = self.then(piece)
        return self.starts_word(piece) and (after.digits > MAX_DIGITS or after.word > MAX_WORD)


def word_start_mask(lm: LoadedModel) -> torch.Tensor:
    """The tokens of ``lm`` that begin with a word character (go on with a number or a name)."""
    import torch

    starts = [TokenRuns.starts_word(piece) for piece in lm.token_bytes]
    return torch.tensor(starts, dtype=torch.bool, device=lm.device)


class DeadEndProbe:
    """The text so far in a byte checker, to ask whether a token would lead into a dead end."""

    def __init__(self, grammar: Grammar, data: bytes) -> None:
        self._checker = grammar.checker()
        self._checker.feed(data)

    def advance(self, piece: bytes) -> None:
        self._checker.feed(piece)

    def leads_nowhere(self, piece: bytes) -> bool:
        with self._checker.trial(clear=False) as trial:
            if trial.feed(piece) < len(piece):
                return False  # the mask decides what is invalid
            if trial.is_dead_end():
                return True
            if 0x20 in trial.allowed_bytes():
                # Inside a word: would it end there? A glued keyword (INTORE) cannot.
                trial.feed(b" ")
                return trial.is_dead_end()
            return False
