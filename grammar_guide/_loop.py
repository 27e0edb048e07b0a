"""The guide loop: draft → check → repair → resume, within budgets, reporting events.

Each round the draft writes (``_drafting``), the checker closes its stream at the first invalid
byte, ``_repair.decide`` says what to do at the violation (an ``Edit``, a ``Cut``, or the target
model), and the next round resumes from the corrected text. When a budget runs out the target
finishes the text under the grammar.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import math
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal, ParamSpec, TypeVar

from . import _repair as repair
from ._checker import PROBE_FROM, Checker
from ._draft import Draft
from ._drafting import Drafting, Round
from ._errors import ProviderError
from ._events import REWRITE_RULES, Correction, Cut, CutReason, DraftSpan, Event, GrammarViolation, GuideStats
from ._grammar import Grammar
from ._limits import GuideLimits
from ._reader import fenced_blocks
from ._target_steps import TargetSteps
from ._text import line_column
from ._trace import GuideResult

if TYPE_CHECKING:
    from .local.target import TargetModel

__all__ = ["GuideLoop", "Outcome", "off_loop"]

_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")
#: A word or number of the answer: text without one (``]``, ``,}``) holds nothing to keep.
_ANSWER_WORD = re.compile(r"\w")
#: A fenced block's body: from a fence (tagged or not) and its line end to the next fence or the end.
_FENCED_BODY = re.compile(r"```[\w+-]*[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)

_P = ParamSpec("_P")
_R = TypeVar("_R")


async def off_loop(fn: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """``fn(*args, **kwargs)`` in a worker thread, so that the other generations on this event
    loop (a batch's rows) go on reading their drafts while this one searches for a repair. A
    cancellation waits for ``fn`` to end before it goes on: ``fn`` works on this loop's checker,
    which the partial result is then read from. With no other task on the loop (``guide``'s one
    generation) ``fn`` runs here: a thread would let nothing else run, and costs its start."""
    if len(asyncio.all_tasks()) <= 1:
        return fn(*args, **kwargs)
    future = asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait([future])  # returns when done; the future's own error stays in it
        raise


class Outcome(enum.Enum):
    """How a round ended."""

    DONE = "done"  # the text is complete: stop
    CONTINUE = "continue"  # the draft wrote on: call it again
    REPAIRED = "repaired"  # a violation was repaired: the draft resumes after it
    STALLED = "stalled"  # the draft added nothing
    DRAFT_DONE = "draft done"  # the draft added nothing and says it has finished its answer


class GuideLoop(TargetSteps):
    """One guided generation."""

    def __init__(
        self,
        draft: Draft,
        grammar: Grammar,
        prompt: str,
        target: TargetModel | Literal[False] | None,
        limits: GuideLimits,
        *,
        stops: tuple[str, ...] = (),
        fences: bool = True,
        on_event: Callable[[Event], None] | None = None,
        on_draft_text: Callable[[str], None] | None = None,
        on_target_text: Callable[[str], None] | None = None,
    ) -> None:
        self.grammar, self.prompt, self.target, self.limits = grammar, prompt, target, limits
        self.on_event = on_event
        self.on_target_text = on_target_text
        self.checker: Checker = grammar.checker(probe_from=PROBE_FROM)
        self.events: list[Event] = []
        self.stats = GuideStats()
        self.deadline: float | None = None
        self.exhausted: str | None = None
        self.budget_reached: str | None = None  # the budget that ended the run, if one did
        self.unread_draft = ""  # the draft's text a budget kept from being read, where known
        self.last_violation: tuple[int, str] | None = None
        self.floor = 0  # text someone other than the draft chose is never taken back
        self.rewrite_floor = 0  # nor by a rewrite, which may take back the loop's own rewrites
        self.take_back_floor = 0  # nor by the finish, which may take back text forced since with the draft's
        self.reasked: set[str] = set()  # valid prefixes the draft was asked again from
        self.unanswered: Cut | None = None  # the rejected text the draft was last asked again after
        self.continued: set[str] = set()  # complete texts the draft was asked to continue
        self.drafting = Drafting(
            draft,
            self.checker,
            prompt,
            stops,
            fences,
            self.stats,
            self.emit,
            self.count_discarded,
            on_draft_text,
            count_tokens=self.count_tokens,
        )
        self.text_tokens = 0  # tokens of the accepted text, as last counted

    async def run(self, seed_text: str) -> GuideResult:
        started = time.perf_counter()
        if self.limits.timeout is not None:
            self.deadline = self.drafting.deadline = time.monotonic() + self.limits.timeout
        try:
            if seed_text:
                if self.checker.feed(seed_text) != len(seed_text):
                    raise ValueError(f"seed_text is not a valid prefix of the grammar: {self.checker.violation}")
                self.emit(DraftSpan(0, seed_text, call=0))
            await self._rounds()
            self._cut_unanswered()
            self.keep_within_engine_limits()
        except ProviderError as exc:
            exc.result = self.result(complete=False)
            raise
        finally:
            self.stats.total_seconds = time.perf_counter() - started
        return self.result(complete=self.budget_reached is None)

    async def _rounds(self) -> None:
        stalls = 0
        broken: ProviderError | None = None  # the last round's stream broke after some text
        while not self._done():
            spent = self._budget_spent()
            if spent:
                if broken is not None:
                    # No budget left to resume the broken stream: its text may be cut short, so
                    # the run ends with the provider's error, not a quiet result.
                    raise broken
                self._cut_at_budget(spent)
                await self._finish(spent)
                return
            self._append_forced("forced", finish_word=False)
            if self._done():
                return
            outcome, broken = await self._round()
            if outcome is Outcome.DONE:
                return
            if outcome is Outcome.DRAFT_DONE:
                self._cut_unanswered()
                await self._finish("the draft finished its answer")
                return
            stalls = stalls + 1 if outcome is Outcome.STALLED else 0
            if outcome is Outcome.STALLED and self.checker.is_complete:
                return  # the draft has nothing to add to a complete text
            if stalls >= 2:
                # The draft adds nothing: let the target write a terminal, then try again.
                stalls = 0
                if not await self._target_step("stalled"):
                    await self._finish("the draft stopped adding text")
                    return

    def _done(self) -> bool:  # complete, and nothing but white space may follow
        return self.checker.is_complete and self.checker.allowed_bytes() <= _WHITESPACE

    def _cut_at_budget(self, spent: str) -> None:
        """A budget ended the run: the result is not complete, and a cut says so (with the
        draft's text it kept from being read, where known), whatever closes the text after it."""
        self.budget_reached = spent
        offset = len(self.checker.text)
        self.emit(Cut(offset, self.unread_draft, reason="budget", call=self.stats.draft_calls, detail=spent))

    def _past_deadline(self) -> bool:
        if self.deadline is None or time.monotonic() < self.deadline:
            return False
        self.exhausted = self.exhausted or f"timeout ({self.limits.timeout} s) reached"
        return True

    def _budget_spent(self) -> str | None:
        limits = self.limits
        if self.exhausted:
            return self.exhausted
        if self.stats.corrections >= limits.max_corrections and self.last_violation is not None:
            return f"max_corrections ({limits.max_corrections}) reached"
        if self.stats.draft_calls >= limits.max_draft_calls:
            return f"max_draft_calls ({limits.max_draft_calls}) reached"
        self.text_tokens = self.count_tokens(self.checker.text)
        if self.text_tokens >= limits.max_new_tokens:
            return f"max_new_tokens ({limits.max_new_tokens}) reached"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"timeout ({limits.timeout} s) reached"
        return None

    # -- draft, check ------------------------------------------------------------------------

    async def _round(self) -> tuple[Outcome, ProviderError | None]:
        """Run one round; how it ended, and the error that broke its stream, if one did."""
        tokens_left = self.limits.max_new_tokens - self.text_tokens
        self.unread_draft = ""
        rnd = await self.drafting.read(self.limits.lookahead, self.floor, tokens_left)
        try:
            while True:
                outcome, broken = await self._settle(rnd)
                pending, rnd.resume = rnd.resume, None
                if pending is None or outcome is not Outcome.REPAIRED or not self.drafting.may_read_on(rnd):
                    return outcome, broken
                # The edit let the draft's own text go on: read on in the same call.
                await self.drafting.read_on(rnd, pending)
        finally:
            await self.drafting.close(rnd)

    async def _settle(self, rnd: Round) -> tuple[Outcome, ProviderError | None]:
        """What a call's reading comes to: a repair at its violation, or how the round ends."""
        if rnd.timed_out:
            self.exhausted = f"timeout ({self.limits.timeout} s) reached"
        if rnd.over_budget:
            self.exhausted = f"max_new_tokens ({self.limits.max_new_tokens}) reached"
            self.unread_draft = rnd.beyond_budget
            self.count_discarded(rnd.beyond_budget)
        if rnd.retry:
            return Outcome.CONTINUE, None
        if rnd.repeated and rnd.call.whole_answer:
            # The same whole answer again: all of it was read before, so what the alignment let
            # through now (the ``1`` of ``[1`` once more, a hundred times), or rejects (a comment
            # an edit at its end dropped), is not the draft's.
            self._take_back_repeat(rnd)
            if rnd.evidence:
                self.count_discarded(rnd.evidence)
                self.checker.rollback_chars(len(self.checker.text))  # (its violation cleared)
            return Outcome.DRAFT_DONE, None
        if rnd.evidence is not None:
            return await self._repair(rnd, rnd.evidence), None
        self._emit_span(rnd)
        more = self._fenced_values(rnd)
        if more is not None:
            return await self._repair(rnd, more), None
        if rnd.reader.stopped_text:
            after = rnd.reader.stopped_text
            self.emit(Cut(len(self.checker.text), after, reason=self._stop_reason(after), call=rnd.index))
        if rnd.broken is not None:
            # A broken stream is never the end of the answer, whatever the text: call again.
            return Outcome.CONTINUE, rnd.broken
        if self.exhausted:
            return Outcome.CONTINUE, None
        if self.checker.is_complete and rnd.call.finish_reason != "length":
            return (Outcome.CONTINUE if self._may_go_on(rnd) else Outcome.DONE), None
        # A provider that says its model stopped ("stop": the end of its answer) is believed,
        # even where the text is unfinished: asking again would bill the prompt and the text
        # once more for an answer that has ended (what it lacks is closed or taken back at the
        # finish). A function's answer that added text may go on when asked again; one that
        # adds nothing has nothing to add.
        stopped = rnd.call.finish_reason == "stop" and rnd.ended
        if rnd.kept.strip() and not stopped:
            return Outcome.CONTINUE, None
        said_done = (stopped or rnd.call.whole_answer) and rnd.ended
        return (Outcome.DRAFT_DONE if said_done else Outcome.STALLED), None

    def _fenced_values(self, rnd: Round) -> str | None:
        """Several fenced blocks, where the grammar's rewrites read values written one after
        another (``\\A`` patterns: JSON's array of them, as the repair libraries read them):
        after a complete answer from a draft that has ended, the next blocks' bodies are read on
        as more of it, one a line, their fences and the prose between them cut as formatting.
        The text to read, or ``None``."""
        stopped = rnd.reader.stopped_text
        if not (stopped and rnd.ended and self.checker.is_complete and self.grammar.joins_values):
            return None
        blocks = [b for b in fenced_blocks(stopped, self.grammar.name) if self._begins_value(stopped[b[0] : b[1]])]
        if not blocks:
            return None
        offset = len(self.checker.text)
        ends = [0, *(end for _, end in blocks)]
        for i, (start, _) in enumerate(blocks):
            gap = stopped[ends[i] + 1 : start]  # (its first character, a line break, joins the values)
            words = re.sub(r"```[\w+-]*", "", gap).strip()
            reason: CutReason = "prose" if words else "formatting"
            self.emit(Cut(offset, gap, reason=reason, call=rnd.index, detail="between fenced values"))
        if stopped[ends[-1] :]:
            self.emit(Cut(offset, stopped[ends[-1] :], reason="formatting", call=rnd.index))
        self.checker.feed("\n")
        rnd.start, rnd.kept = offset, "\n"
        return "\n".join(stopped[start:end] for start, end in blocks)

    def _stop_reason(self, stopped: str) -> CutReason:
        """Why the text from the stop on (``stopped``) is cut: ``another answer`` where the text is
        complete and a fenced block there begins another answer of the grammar's (``SELECT a FROM
        t\n```sql\nSELECT b FROM u\n```\n``: a second statement, named as issue 28 item 1 asks,
        not a stop that leaves out nothing of the answer); else ``stop``."""
        bodies = _FENCED_BODY.findall(stopped) if self.checker.is_complete else []
        return "another answer" if any(repair.begins_answer(self.grammar, b) for b in bodies) else "stop"

    def _begins_value(self, body: str) -> bool:
        """Whether a fenced block begins with the grammar's text, not a word (``see above``)."""
        head = body.lstrip()
        return not head[:1].isalpha() and self.grammar.valid_prefix(head) > 0

    def _take_back_repeat(self, rnd: Round) -> None:
        if rnd.kept:
            self.emit(Cut(rnd.start, rnd.kept, reason="restated", call=rnd.index))
            self.count_discarded(rnd.kept)
            self.checker.rollback_chars(rnd.start)
            rnd.kept = ""

    def _may_go_on(self, rnd: Round) -> bool:
        """A complete-looking text from a draft that cannot say its answer ended (a function that
        ignores ``max_new_tokens``) gets one continuation call before it is taken as finished."""
        call, text = rnd.call, self.checker.text
        if not call.may_stop_short or call.finish_reason == "stop" or rnd.reader.stopped_text:
            return False
        if text in self.continued:
            return False
        self.continued.add(text)
        return True

    # -- repair ------------------------------------------------------------------------------

    async def _repair(self, rnd: Round, evidence: str) -> Outcome:
        """Act on ``repair.decide`` at the violation; a finished draft's answer is gone through
        to its end, one edit after another."""
        while True:
            checker = self.checker
            decision = await off_loop(
                repair.decide,
                checker,
                evidence,
                final=rnd.ended,
                floor=rnd.floor,
                last=self.last_violation,
                rewrite_floor=min(rnd.floor, self.rewrite_floor),
                no_target=self.target is False,
            )
            if isinstance(decision, repair.Edit):
                decision = await self._likeliest(decision)
            self.last_violation = repair.signature(checker.text, evidence, decision.at)
            self.count_discarded(checker.text[decision.at :] + evidence)
            self._emit_kept(rnd, decision.start)
            if isinstance(decision, repair.Cut):
                self.emit(
                    Cut(
                        decision.start,
                        checker.text[decision.start :] + evidence,
                        reason=decision.reason,
                        call=rnd.index,
                    )
                )
                checker.rollback_chars(decision.start)
                # Prose cut from an unfinished answer: the answer ends there, and is finished.
                return Outcome.DONE if checker.is_complete else Outcome.DRAFT_DONE
            rejected = checker.text[decision.start :] + evidence
            self.emit(self._violation_event(decision.start, rejected, rnd.index))
            checker.rollback_chars(decision.start)
            self.stats.corrections += 1
            if isinstance(decision, repair.NeedTarget):
                await self.drafting.close(rnd)  # the target writes here: the draft's text after it is no use
                return await self._target_repair(rnd, rejected)
            unread = self._apply_edit(rnd, decision)
            if unread is None:
                return Outcome.DONE
            if not rnd.ended:
                if self.stats.corrections < self.limits.max_corrections and not self._past_deadline():
                    rnd.resume = unread  # the draft's text goes on after the edit: read on
                    self._undiscard(unread)
                return Outcome.REPAIRED
            # The draft's whole answer is known: go on through the rest of it.
            if not unread:
                return Outcome.DONE if checker.is_complete else Outcome.REPAIRED
            if self.stats.corrections >= self.limits.max_corrections or self._past_deadline():
                # (A finished answer's edits, one after another, stop at the timeout too.)
                self.unread_draft = unread  # (counted as discarded with the evidence)
                return Outcome.REPAIRED
            rnd.start, rnd.kept, evidence = len(checker.text), "", unread
            self._undiscard(unread)

    def _undiscard(self, unread: str) -> None:
        """The draft's text an edit left unread is read after all: no longer counted as discarded
        (it was, with the evidence, when the edit was decided)."""
        self.stats.discarded_chars -= len(unread)
        self.stats.discarded_tokens -= self.count_tokens(unread)

    def _apply_edit(self, rnd: Round, edit: repair.Edit) -> str | None:
        """Write the edit and the draft's text it lets through; the evidence still unread, or
        ``None`` when that turned out to be prose after the answer (cut)."""
        if edit.text:
            self.checker.feed(edit.text)
        self.emit(
            Correction(
                edit.start, edit.text, source="repair", detail=edit.description, rule=edit.rule, removed=edit.removed
            )
        )
        if edit.kept:
            offset = len(self.checker.text)
            self.checker.feed(edit.kept)
            rnd.start, rnd.kept = offset, edit.kept
            cut = repair.prose_cut(self.checker, edit.unread, offset)
            if cut is not None:
                self.count_discarded(self.checker.text[cut.start :] + edit.unread)
                self._emit_kept(rnd, cut.start)
                self.emit(
                    Cut(cut.start, self.checker.text[cut.start :] + edit.unread, reason=cut.reason, call=rnd.index)
                )
                self.checker.rollback_chars(cut.start)
                return None
            self.emit(DraftSpan(offset, edit.kept, call=rnd.index))
        return edit.unread

    def _left_out(self, rejected: str) -> Literal["repeated", "unrepaired"]:
        """Why text no edit fixes is left out: it repeats the complete answer, or it is unrepaired."""
        return "repeated" if repair.repeats_answer(self.checker, rejected) else "unrepaired"

    async def _target_repair(self, rnd: Round, rejected: str) -> Outcome:
        if self._append_forced("forced"):
            return Outcome.REPAIRED
        if self.target is not False and rnd.ended and self.checker.text.strip() and not _ANSWER_WORD.search(rejected):
            # The answer ended, and what no edit fixes has no word of it: the target would only
            # invent text before those marks (``[2e+]`` as ``[2e+2, 2e+2]``); the finish closes.
            why = "no edit fixes the violation and the rest holds no word of the answer"
            self.emit(Cut(len(self.checker.text), rejected, self._left_out(rejected), rnd.index, detail=why))
            await self._finish(why)
            return Outcome.DONE
        if await self._get_target() is None:
            asked = self.checker.text.rstrip()  # (white space the draft wrote again is no new prefix)
            if asked not in self.reasked:
                # No edit fixes it and no model may write here: ask the draft again from the
                # valid prefix, once.
                self.reasked.add(asked)
                self.unanswered = Cut(len(self.checker.text), rejected, reason=self._left_out(rejected), call=rnd.index)
                return Outcome.REPAIRED
            # Give up on the rest of the draft: it is left out, and says so.
            self.emit(Cut(len(self.checker.text), rejected, reason=self._left_out(rejected), call=rnd.index))
            await self._finish("no edit fixes the violation and there is no target model")
            return Outcome.DONE
        if not await self._target_step("violation"):
            # The rest of the draft is left out (the text may already be complete), and says so.
            why = "the target wrote nothing at the violation"
            self.emit(Cut(len(self.checker.text), rejected, self._left_out(rejected), rnd.index, detail=why))
            await self._finish(why)
            return Outcome.DONE
        return Outcome.REPAIRED

    def _cut_unanswered(self) -> None:
        """The draft, asked again after a violation nothing could repair, added nothing and
        finished: the text it was asked again after is left out, and says so."""
        cut, self.unanswered = self.unanswered, None
        if cut is not None and cut.offset == len(self.checker.text):
            self.emit(
                replace(
                    cut,
                    detail="no edit fixes the violation, no target model, and asked again the draft wrote nothing new",
                )
            )

    # -- bookkeeping -------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if isinstance(event, Correction) and (event.text or event.source != "repair"):
            # (An edit that only dropped the draft's text wrote nothing to keep: the draft's text
            # before it may still be edited, a trailing comma before a dropped comment.)
            self.floor = event.offset + len(event.text)
            self.rewrite_floor = _rewrite_floor(event, self.rewrite_floor, self.floor)
            if event.source != "forced":
                self.take_back_floor = self.floor
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _emit_kept(self, rnd: Round, end: int) -> None:
        """Emit the draft's kept text of this round, up to ``end``."""
        rnd.kept = self.checker.text[rnd.start : max(end, rnd.start)]
        self._emit_span(rnd)

    def _emit_span(self, rnd: Round) -> None:
        if rnd.kept:
            self.emit(DraftSpan(rnd.start, rnd.kept, call=rnd.index))

    def _violation_event(self, offset: int, rejected: str, call: int) -> GrammarViolation:
        text = self.checker.text[:offset]
        expected = tuple(dict.fromkeys(t.display for t in self.checker.expected(offset)))
        line, column = line_column(text, offset)
        return GrammarViolation(offset, rejected, expected, line, column, call)

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return self.target.count_tokens(text) if self.target else math.ceil(len(text) / 4)

    def count_discarded(self, text: str) -> None:
        self.stats.discarded_chars += len(text)
        self.stats.discarded_tokens += self.count_tokens(text)

    def result(self, complete: bool = True) -> GuideResult:
        self.stats.settle_path(cut=any(isinstance(e, Cut) for e in self.events))
        return GuideResult(
            self.checker.text,
            self.prompt,
            self.grammar.name,
            list(self.events),
            self.stats,
            complete=complete and self.checker.is_complete,
        )


def _rewrite_floor(event: Correction, before: int, floor: int) -> int:
    """Where a later rewrite may begin after ``event``: at a rewrite of the loop's repair, where
    the loop's rewrites begin (it may take its own rewrite back: ``WHERE a WHERE b WHERE c``,
    the second WHERE joined with the text the first one wrote); after any other correction,
    ``floor`` (text someone other than the draft chose is never taken back)."""
    return before if event.source == "repair" and event.rule in REWRITE_RULES else floor
