"""What a checker's reads cost, to choose how to read the next chunk.

llguidance's matcher reads a chunk two ways: ``validate_tokens`` says how many of its bytes are
valid and moves nothing; ``consume_tokens`` moves, but a byte it refuses leaves the matcher in an
error state that nothing undoes (not even ``rollback``). Validating a chunk and then consuming its
valid part reads every accepted byte twice, and on a character-level grammar (each byte an Earley
row) the two reads cost the same.

A chunk can instead be read once: copy the matcher (``deep_copy``), consume the chunk, and only if
it is refused go back to the copy and validate there. That pays off when the copy costs less than a
validation: the copy grows with the text held (the Earley chart: about 0.03 µs a byte of JSON, 0.25
of sympy's LaTeX), the validation with the chunk (about 1 and 110 µs a byte), and a refused chunk
pays the copy and its consumed part on top, and what llguidance spends making its error: a fixed
cost, about 3 µs, but 300 µs where ``RUST_BACKTRACE`` is set (a backtrace is captured for each
error), as much as validating several hundred bytes of JSON. ``FeedCosts`` keeps the rates,
that fixed cost and how often chunks are refused, as measured, and says which way is expected to
cost less. Either way the checker accepts the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["COPY_BASE", "FeedCosts"]

#: A copy's fixed part (the lexer's tables), counted as that many bytes of text held.
COPY_BASE = 64
#: How fast the averages follow new measurements.
_WEIGHT = 0.25


@dataclass
class FeedCosts:
    """Running averages of one checker's reads (seconds; a share for ``refused``)."""

    consume_per_byte: float | None = None
    copy_per_byte: float = 0.0
    refused: float = 0.0
    refusal: float = 0.0  # what a refused consumption costs beyond its bytes (seconds)

    def read_once(self, held: int, chunk: int) -> bool:
        """Whether to copy and consume a chunk of ``chunk`` bytes, with ``held`` bytes of text
        already read, rather than validate it first.

        A chunk accepted whole saves its validation less the copy; a refused one (after about half
        its bytes, on average) costs the copy, those bytes again and the refusal: the expected
        saving is ``consume * chunk * (1 - 1.5 * refused) - copy - refused * refusal``. Until a
        consumption is measured, read once.
        """
        if self.consume_per_byte is None:
            return True
        copy = self.copy_per_byte * (held + COPY_BASE)
        return copy + self.refused * self.refusal < self.consume_per_byte * chunk * (1.0 - 1.5 * self.refused)

    def consumed(self, seconds: float, n_bytes: int) -> None:
        rate = seconds / n_bytes
        if self.consume_per_byte is None:
            self.consume_per_byte = rate
        else:
            # A chunk that costs far more (the lexer building its tables, a pause of the process)
            # moves the average no more than double: overrating a read would copy long texts.
            self.consume_per_byte = _average(self.consume_per_byte, min(rate, 2 * self.consume_per_byte))

    def refused_after(self, seconds: float, n_bytes: int) -> None:
        """A consumption of ``n_bytes`` was refused after ``seconds`` (about half its bytes read)."""
        beyond = max(seconds - (self.consume_per_byte or 0.0) * n_bytes / 2, 0.0)
        self.refusal = beyond if not self.refusal else _average(self.refusal, beyond)

    def copied(self, seconds: float, held: int) -> None:
        rate = seconds / (held + COPY_BASE)
        self.copy_per_byte = rate if not self.copy_per_byte else _average(self.copy_per_byte, rate)

    def read(self, *, whole: bool) -> None:
        """A chunk was read: accepted whole or not."""
        self.refused = _average(self.refused, 0.0 if whole else 1.0)

    def copy(self) -> FeedCosts:
        return replace(self)


def _average(old: float, new: float) -> float:
    return old + _WEIGHT * (new - old)
