"""The steps where someone other than the draft writes: text the grammar forces, the target
model's continuation (after a violation, when the draft stalls, to finish), and the grammar's
shortest completion that closes the text. A base of ``GuideLoop``; events go through its ``emit``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from . import _repair as repair
from ._checker import Checker
from ._complete import shortest_completion
from ._errors import GuideExhausted
from ._events import Correction, CorrectionReason, Cut, Event, GuideStats
from ._grammar import Grammar
from ._limits import GuideLimits
from ._trace import GuideResult

if TYPE_CHECKING:
    from .local.target import TargetModel

__all__ = ["TargetSteps"]

_TIE_CONTEXT = 40  # characters of the draft's text after an edit that its likelihood is read over
_SHORT_CLOSE = 8  # characters of the grammar's completion that close a finished draft's answer


class TargetSteps:
    """Forced text, target steps and the finish, for the loop that holds this state."""

    checker: Checker
    grammar: Grammar
    prompt: str
    target: TargetModel | Literal[False] | None
    limits: GuideLimits
    stats: GuideStats
    floor: int
    on_target_text: Callable[[str], None] | None

    def emit(self, event: Event) -> None:
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        raise NotImplementedError

    def result(self, complete: bool = True) -> GuideResult:
        raise NotImplementedError

    def _append_forced(self, reason: CorrectionReason, detail: str = "") -> bool:
        forced = self.checker.forced_text()
        if not forced:
            return False
        offset = len(self.checker.text)
        forced = forced[: self.checker.feed(forced)]
        if not forced:
            return False
        self.stats.forced_tokens += self.count_tokens(forced)
        self.emit(Correction(offset, forced, source="forced", reason=reason, detail=detail))
        return True

    async def _target_step(self, reason: CorrectionReason, *, finish: bool = False, detail: str = "") -> bool:
        target = await self._get_target()
        if target is None:
            return False
        self._revive()
        text = self.checker.text
        started = time.perf_counter()
        budget = self.limits.finish_tokens if finish else self.limits.repair_tokens
        continuation = await target.acontinue_text(
            self.prompt, text, self.grammar, max_new_tokens=budget, finish=finish, on_text=self.on_target_text
        )
        stats = self.stats
        stats.target_seconds += time.perf_counter() - started
        stats.target_tokens += continuation.sampled_tokens + continuation.healed_tokens
        stats.forced_tokens += continuation.forced_tokens
        stats.healed_tokens += continuation.healed_tokens
        if continuation.healed_text and continuation.text:  # a healed token alone changes nothing
            healed_at = len(text) - len(continuation.healed_text)
            self.emit(
                Correction(
                    healed_at,
                    continuation.healed_text,
                    "healed",
                    reason,
                    tokens=continuation.healed_tokens,
                    detail=detail,
                )
            )
        if not continuation.text:
            return False
        accepted = self.checker.feed(continuation.text)
        if accepted != len(continuation.text):
            raise RuntimeError(
                f"target text {continuation.text!r} left the grammar at {accepted}: {self.checker.violation}"
            )
        c = continuation
        self.emit(Correction(len(text), c.text, "target", reason, c.alternatives, c.tokens, c.seconds, detail))
        return True

    async def _finish(self, why: str, *, draft_done: bool = False) -> None:
        """Complete the text: the grammar's shortest completion when the draft finished its
        answer and a few marks close it (``"}``: no words, nothing invented), else the target
        model, then the shortest completion for what the target left open (its budget spent).
        Without a target a text that needs more than such a close is not completed:
        ``GuideExhausted``."""
        if self.checker.is_complete:
            return
        self._revive()
        self._append_forced("finish", detail=why)
        if self.checker.is_complete:
            return
        closing = shortest_completion(self.checker) if draft_done else None
        if closing is None or len(closing) > _SHORT_CLOSE or any(ch.isalnum() for ch in closing):
            closing = None
            if await self._get_target() is not None:
                start = len(self.checker.text)
                await self._target_step("finish", finish=True, detail=why)
                closing = shortest_completion(self.checker)
                if closing is None and len(self.checker.text) > start:
                    # What the target wrote leads nowhere the search can see: take it back.
                    self.emit(
                        Cut(
                            start,
                            self.checker.text[start:],
                            "unrepaired",
                            self.stats.draft_calls,
                            detail="the target's text could not be completed",
                        )
                    )
                    self.checker.rollback_chars(start)
                    closing = shortest_completion(self.checker)
        if closing:
            offset = len(self.checker.text)
            self.checker.feed(closing)
            self.emit(Correction(offset, closing, "completion", "finish", detail=why))
        if not self.checker.is_complete:
            raise GuideExhausted(
                f"could not complete the text ({why}); the partial result holds the valid prefix",
                self.result(complete=False),
            )

    async def _likeliest(self, edit: repair.Edit) -> repair.Edit:
        """Of an edit and its ties (equally supported by the draft's text), the one the target
        finds likeliest, scored in one batched forward pass; without a target, ``edit``."""
        if not edit.ties:
            return edit
        target = await self._get_target()
        if target is None:
            return replace(edit, ties=())
        candidates = (edit, *edit.ties)
        text = self.checker.text
        # Each candidate up to the same point of the draft's text, a little after the last edit.
        end = max(e.start + len(e.removed) for e in candidates) + _TIE_CONTEXT
        texts = [text[: e.start] + e.text + e.kept[: max(end - e.start - len(e.removed), 0)] for e in candidates]
        started = time.perf_counter()
        scores = await target.alog_likelihoods(self.prompt, texts)
        self.stats.target_seconds += time.perf_counter() - started
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        chosen = candidates[best]
        detail = f"{chosen.description} (the target's likeliest of {len(candidates)} equal edits)"
        return replace(chosen, description=detail, ties=())

    def _revive(self) -> None:
        """Before the target writes: step back out of a dead end, recording it as a cut."""
        dead = repair.dead_end(self.checker, self.floor)
        if dead is not None:
            taken = self.checker.text[dead:]
            self.checker.rollback_chars(dead)
            self.emit(Cut(dead, taken, reason="dead end", call=self.stats.draft_calls))

    async def _get_target(self) -> TargetModel | None:
        target = self.target
        if target is False:
            return None
        if target is None:
            from .local.target import TargetModel

            loaded = await asyncio.to_thread(TargetModel.load)
            self.target = loaded
            return loaded
        return target
