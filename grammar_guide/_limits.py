"""The guide loop's budgets."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GuideLimits"]


@dataclass(frozen=True)
class GuideLimits:
    """The loop's budgets.

    ``lookahead``: tokens the draft may write per call. ``max_corrections``: violations repaired
    before the target finishes the text. ``max_draft_calls``: draft calls before the target
    finishes. ``max_new_tokens``: length of the text (in target tokens, or characters / 4 without a
    target) before the target finishes; it bounds each draft call too, whose text is cut where the
    budget ends (inside a chunk, however long) and whose stream is closed there. ``timeout``:
    seconds of drafting before the target finishes; a draft call still running then is abandoned
    at once (a blocking synchronous draft runs on in its own daemon thread, its answer unread).
    ``finish_tokens``: the target's budget for finishing; ``repair_tokens``: for one repair.

    Reaching any of the first five ends the run short of the draft's answer: the result is not
    ``complete`` and a ``Cut`` with reason ``budget`` says which budget and what of the draft was
    left unread, whatever closes the text after it. The defaults are sized so that real answers
    never reach them (8192 tokens is about 32 KB of text; 256 calls of 32 tokens write it).
    """

    lookahead: int = 32
    max_corrections: int = 16
    max_draft_calls: int = 256
    max_new_tokens: int = 8192
    timeout: float | None = None
    finish_tokens: int = 256
    repair_tokens: int = 24

    def __post_init__(self) -> None:
        for name in ("lookahead", "max_draft_calls", "max_new_tokens", "finish_tokens", "repair_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.max_corrections < 0:
            raise ValueError(f"max_corrections must be >= 0, not {self.max_corrections}")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout must be positive, not {self.timeout}")
