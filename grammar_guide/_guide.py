"""The guide loop: speculative grammar backtracking with a validity guarantee.

The draft writes freely; the checker reads its stream and closes it at the first invalid byte;
the violation is repaired (grammar-forced text, an edit the draft's own text supports, or the
target model under a full token mask), and the draft resumes from the corrected text. When a
budget runs out the target finishes the text under the grammar. The returned text is always
complete and valid; when even that is impossible ``GuideExhausted`` carries the partial result.

The loop is written once, async (``aguide``); ``guide`` is its synchronous face.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Literal

from ._align import Aligner
from ._checker import Checker, expected_terminals
from ._draft import Draft, DraftCall, DraftRequest, as_draft
from ._errors import GuideExhausted, ProviderError
from ._grammar import Grammar
from ._repair import propose_edit
from ._trace import Correction, Cut, DraftSpan, Event, GrammarViolation, GuideResult, GuideStats

if TYPE_CHECKING:
    from ._target import Continuation, TargetModel

__all__ = ["GuideLimits", "aguide", "guide"]

_PREAMBLE_LIMIT = 2000
# After a violation the draft is read on for up to this many chunks, until the rejected text
# holds this many words or punctuation marks (see ``_Run._read_evidence``).
_EVIDENCE_CHUNKS = 8
_EVIDENCE_LEXEMES = 6
_LEXEME = re.compile(r"\w+|[^\w\s]")
_WHITESPACE = frozenset(b" \t\n\r\x0b\x0c")


@dataclass(frozen=True)
class GuideLimits:
    """The loop's budgets.

    ``lookahead``: tokens the draft may write per call. ``max_corrections``: violations repaired
    before the target finishes the text. ``max_draft_calls``: draft calls before the target
    finishes. ``max_new_tokens``: length of the text (in target tokens, or characters / 4 without a
    target) before the target finishes. ``timeout``: seconds of drafting before the target finishes.
    ``finish_tokens``: the target's budget for finishing; ``repair_tokens``: for one repair.
    """

    lookahead: int = 32
    max_corrections: int = 16
    max_draft_calls: int = 32
    max_new_tokens: int = 512
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


def guide(
    draft: Draft | Callable[..., Any],
    grammar: Grammar | str,
    prompt: str,
    target: TargetModel | None | Literal[False] = None,
    **options: Any,
) -> GuideResult:
    """Generate text with ``draft`` that is complete and valid under ``grammar``.

    The synchronous face of ``aguide`` (same arguments and semantics). Inside a running event loop
    (a notebook) it runs the loop in a worker thread.
    """
    coroutine = aguide(draft, grammar, prompt, target, **options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grammar-guide") as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def aguide(
    draft: Draft | Callable[..., Any],
    grammar: Grammar | str,
    prompt: str,
    target: TargetModel | None | Literal[False] = None,
    *,
    lookahead: int = 32,
    max_corrections: int = 16,
    max_draft_calls: int = 32,
    max_new_tokens: int = 512,
    timeout: float | None = None,
    stop: str | list[str] | tuple[str, ...] | None = None,
    seed_text: str = "",
    limits: GuideLimits | None = None,
    on_event: Callable[[Event], None] | None = None,
    on_draft_text: Callable[[str], None] | None = None,
) -> GuideResult:
    """Generate text with ``draft`` that is complete and valid under ``grammar``.

    ``draft`` is a ``Draft`` (see ``providers``) or a plain function (wrapped by ``FunctionDraft``).
    ``grammar`` is a ``Grammar`` or the name of a builtin one. ``target`` repairs violations and
    finishes the text when a budget runs out: ``None`` loads the default local model on first use,
    ``False`` means no target model (repairs then use the grammar and the draft's evidence only).
    ``seed_text`` is a valid prefix the text must start with. ``stop`` ends the draft at any of
    these strings; by default (``None``) a code fence at the start of a line after the answer
    ends it (pass ``stop=[]`` for grammars where such a line is part of the text). ``on_event`` is called with each event
    as it happens, ``on_draft_text`` with each raw chunk the draft streams. ``limits`` overrides the
    individual budget arguments.

    Raises ``GuideExhausted`` (with the partial result) when the text cannot be completed, and
    ``ProviderError`` when the draft fails outright.
    """
    if limits is None:
        limits = GuideLimits(
            lookahead=lookahead,
            max_corrections=max_corrections,
            max_draft_calls=max_draft_calls,
            max_new_tokens=max_new_tokens,
            timeout=timeout,
        )
    if isinstance(grammar, str):
        grammar = Grammar.builtin(grammar)
    stops = (stop,) if isinstance(stop, str) else tuple(stop or ())
    run = _Run(as_draft(draft), grammar, prompt, target, limits, stops, on_event, on_draft_text)
    run.fence_stop = stop is None
    return await run.execute(seed_text)


class _Timeout(Exception):
    pass


@dataclass
class _Round:
    """What one draft call produced."""

    call: DraftCall
    index: int
    start: int  # where this call's next kept text begins
    kept: str = ""
    evidence: str | None = None
    ended: bool = False
    raw: str = ""
    stopped_text: str = ""  # what came from the stop string on, dropped
    held: str = ""  # the raw tail that may begin a stop string, not yet read
    floor: int = 0  # repairs do not take back text before this (the end of the last correction)


class _Run:
    def __init__(
        self,
        draft: Draft,
        grammar: Grammar,
        prompt: str,
        target: TargetModel | None | Literal[False],
        limits: GuideLimits,
        stops: tuple[str, ...],
        on_event: Callable[[Event], None] | None,
        on_draft_text: Callable[[str], None] | None,
    ) -> None:
        self.draft = draft
        self.grammar = grammar
        self.prompt = prompt
        self.target = target
        self.limits = limits
        self.stops = stops
        self.on_event = on_event
        self.on_draft_text = on_draft_text
        self.checker: Checker = grammar.checker()
        self.events: list[Event] = []
        self.stats = GuideStats()
        self.deadline: float | None = None
        self.exhausted: str | None = None
        self._last_violation: tuple[int, str] | None = None
        self._earlier_answers: list[str] = []
        self._floor = 0
        self.fence_stop = True
        self._prose_retry = 0  # 1: the next call gets a longer lookahead for prose, 2: done
        self._provider_failures = 0

    # -- the loop ----------------------------------------------------------------------------

    async def execute(self, seed_text: str) -> GuideResult:
        started = time.perf_counter()
        if self.limits.timeout is not None:
            self.deadline = time.monotonic() + self.limits.timeout
        try:
            if seed_text:
                if self.checker.feed(seed_text) != len(seed_text):
                    raise ValueError(f"seed_text is not a valid prefix of the grammar: {self.checker.violation}")
                self.emit(DraftSpan(0, seed_text, call=0))
            stalls = 0
            while not self._done():
                reason = self._budget_spent()
                if reason:
                    await self._finish(reason)
                    break
                self._append_forced("forced")
                if self._done():
                    break
                outcome = await self._draft_round()
                if outcome == "done":
                    break
                if outcome == "stalled":
                    if self.checker.is_complete:
                        break  # the draft has nothing to add to a complete text
                    stalls += 1
                    if stalls >= 2:
                        # The draft adds nothing: let the target write a terminal, then try again.
                        stalls = 0
                        if not await self._target_step("stalled"):
                            await self._finish("the draft stopped adding text")
                            break
                else:
                    stalls = 0
        finally:
            self.stats.total_seconds = time.perf_counter() - started
        return self._result()

    def _done(self) -> bool:
        """Complete, and nothing but white space may follow."""
        return self.checker.is_complete and self.checker.allowed_bytes() <= _WHITESPACE

    def _budget_spent(self) -> str | None:
        if self.exhausted:
            return self.exhausted
        if self.stats.corrections >= self.limits.max_corrections and self._last_violation is not None:
            return f"max_corrections ({self.limits.max_corrections}) reached"
        if self.stats.draft_calls >= self.limits.max_draft_calls:
            return f"max_draft_calls ({self.limits.max_draft_calls}) reached"
        if self._count_tokens(self.checker.text) >= self.limits.max_new_tokens:
            return f"max_new_tokens ({self.limits.max_new_tokens}) reached"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return f"timeout ({self.limits.timeout} s) reached"
        return None

    # -- one draft call ----------------------------------------------------------------------

    async def _draft_round(self) -> str:
        text = self.checker.text
        request = DraftRequest(
            prompt=self.prompt,
            accepted_text=text,
            max_new_tokens=self.limits.lookahead * (4 if self._prose_retry == 1 else 1),
            stop=self.stops,
        )
        call = DraftCall(request)
        self.stats.draft_calls += 1
        rnd = _Round(call=call, index=self.stats.draft_calls, start=len(text), floor=self._floor)
        if self._prose_retry == 1:
            self._prose_retry = 2
        aligner: Aligner | None = None
        mode_known = False
        # Prose before the answer ("Sure! Here is the query:") is read past, once, while nothing
        # has been accepted yet: the draft's answer follows it.
        preamble: str | None = None
        preamble_allowed = not text.strip()
        started = time.perf_counter()
        stream = self.draft.stream(call)
        try:
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                while True:
                    chunk = await self._next_chunk(stream)
                    if chunk is None:
                        rnd.ended = True
                        if not rnd.held:
                            break
                        # The stream ended on what might have begun a stop string: it is text.
                        chunk, rnd.held, stopped = rnd.held, "", True
                    else:
                        if self.on_draft_text is not None:
                            self.on_draft_text(chunk)
                        rnd.raw += chunk
                        if not mode_known:
                            # A provider may fall back to another mode for this call (a model
                            # that rejects assistant prefill): it says which in call.extra.
                            mode_known = True
                            if not (self.draft.continues_prefix if call.continued_prefix is None else call.continued_prefix):
                                aligner = Aligner(text, tuple(self._earlier_answers))
                        chunk, stopped = self._apply_stop(rnd, chunk)
                    if aligner is not None:
                        chunk = aligner.push(chunk)
                    if preamble is not None:
                        preamble += chunk
                        answer = self._leave_preamble(rnd, preamble)
                        if answer is None:
                            if stopped or len(preamble) > _PREAMBLE_LIMIT:
                                break
                            continue
                        preamble, chunk = None, answer
                    if self._feed(rnd, chunk):
                        if call.whole_answer:
                            rnd.ended = True
                        if not (preamble_allowed and _looks_like_prose(rnd.kept, rnd.evidence or "")):
                            break
                        preamble_allowed = False
                        preamble = rnd.kept + (rnd.evidence or "")
                        self.checker.rollback_chars(rnd.start)
                        rnd.kept, rnd.evidence = "", None
                        answer = self._leave_preamble(rnd, preamble)
                        if answer is None:
                            if stopped:
                                break
                            continue
                        preamble = None
                        if self._feed(rnd, answer):
                            break
                    if stopped:
                        rnd.ended = True
                        break
                if rnd.evidence is not None and not rnd.ended and preamble is None and not (
                    self.checker.is_complete and _looks_like_aside(self.checker.text, rnd.evidence, False)
                ):
                    await self._read_evidence(rnd, stream, aligner)
                if preamble is not None and rnd.ended and call.finish_reason == "length" and not self._prose_retry:
                    # The draft was still talking when its lookahead ran out: ask once more with
                    # room for the prose and the answer after it.
                    self._prose_retry = 1
                    self.emit(Cut(len(self.checker.text), preamble, reason="preamble", call=rnd.index))
                    self._count_discarded(preamble)
                    return "continue"
                if preamble is not None:
                    # No answer found after the prose: the violation is where it first was.
                    self._feed(rnd, preamble)
                elif rnd.ended and aligner is not None and rnd.evidence is None:
                    self._feed(rnd, aligner.finish())
        except _Timeout:
            self.exhausted = f"timeout ({self.limits.timeout} s) reached"
        except ProviderError as exc:
            # A stream that broke after some text (the provider already retried what could be
            # retried before the first chunk): keep the text read and call again, twice at most.
            self._provider_failures += 1
            if not exc.retryable or self._provider_failures > 2:
                self._emit_span(rnd)
                exc.result = self._result(complete=False)
                raise
            call.finish_reason = "error"
        finally:
            self.stats.draft_seconds += time.perf_counter() - started
            self.stats.add_draft_usage(call.tokens_in, call.tokens_out)
            self.stats.prefill_tokens_saved += call.prefill_tokens_saved
        if rnd.raw.strip():
            self._earlier_answers = (self._earlier_answers + [rnd.raw])[-3:]
        if aligner is not None and aligner.dropped:
            self.emit(Cut(rnd.start, "".join(aligner.dropped), reason="restated", call=rnd.index))

        if rnd.evidence is not None:
            return await self._handle_violation(rnd)
        self._emit_span(rnd)
        if rnd.stopped_text:
            self.emit(Cut(len(self.checker.text), rnd.stopped_text, reason="stop", call=rnd.index))
        if self.exhausted:
            return "continue"
        if self.checker.is_complete and call.finish_reason not in ("length", "error"):
            return "done"
        return "continue" if rnd.kept.strip() else "stalled"

    async def _next_chunk(self, stream: AsyncIterator[str]) -> str | None:
        try:
            if self.deadline is None:
                return await anext(stream)
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            return await asyncio.wait_for(anext(stream), remaining)
        except StopAsyncIteration:
            return None
        except asyncio.TimeoutError:
            raise _Timeout from None

    async def _read_evidence(self, rnd: _Round, stream: AsyncIterator[str], aligner: Aligner | None) -> None:
        """After a violation, read a few more tokens of the draft (``_EVIDENCE_CHUNKS`` at most)
        until the evidence holds ``_EVIDENCE_LEXEMES`` words or punctuation marks: enough for an
        edit to be judged on what the draft meant (``SELET STDDEV_POP(`` shows ``SELECT``), which
        costs far fewer tokens than a target repair followed by a new draft call."""
        for _ in range(_EVIDENCE_CHUNKS):
            if len(_LEXEME.findall(rnd.evidence or "")) >= _EVIDENCE_LEXEMES:
                return
            chunk = await self._next_chunk(stream)
            if chunk is None:
                rnd.ended = True
                rnd.evidence = (rnd.evidence or "") + rnd.held
                rnd.held = ""
                return
            if self.on_draft_text is not None:
                self.on_draft_text(chunk)
            rnd.raw += chunk
            chunk, stopped = self._apply_stop(rnd, chunk)
            if aligner is not None:
                chunk = aligner.push(chunk)
            rnd.evidence = (rnd.evidence or "") + chunk
            if stopped:
                rnd.ended = True
                return

    def _apply_stop(self, rnd: _Round, chunk: str) -> tuple[str, bool]:
        """The part of ``chunk`` (after what was held back before) that is the draft's text, and
        whether a stop string or a closing fence ended it (``rnd.raw`` ends with ``chunk``).

        A tail that may be the beginning of a stop string (``"\n``"``) is held back in
        ``rnd.held`` until the next chunk shows what it is."""
        raw = rnd.raw
        pending = rnd.held + chunk
        rnd.held = ""
        ends = [raw.find(s) for s in self.stops]
        if self.fence_stop:
            ends.append(_closing_fence(raw, bool(rnd.kept.strip())))
        ends = [i for i in ends if i >= 0]
        if ends:
            offset = max(min(ends) - (len(raw) - len(pending)), 0)
            rnd.stopped_text = pending[offset:]
            return pending[:offset], True
        markers = self.stops + (("\n```",) if self.fence_stop else ())
        hold = min(max((_partial_match(raw, m) for m in markers), default=0), len(pending))
        rnd.held = pending[len(pending) - hold :]
        return pending[: len(pending) - hold], False

    def _feed(self, rnd: _Round, chunk: str) -> bool:
        """Feed a chunk; True when it had an invalid byte (the rest becomes the evidence)."""
        if not chunk:
            return False
        started = time.perf_counter()
        n = self.checker.feed(chunk)
        self.stats.check_seconds += time.perf_counter() - started
        rnd.kept += chunk[:n]
        if n < len(chunk):
            rnd.evidence = chunk[n:]
            return True
        return False

    def _at_start(self, rnd: _Round) -> bool:
        return not self.checker.text.strip() and not rnd.kept.strip()

    def _leave_preamble(self, rnd: _Round, preamble: str) -> str | None:
        """Where the answer starts in prose the draft wrote first, or None if not yet seen."""
        starts = [0] + [i + 1 for i, ch in enumerate(preamble) if ch == "\n"]
        for start in starts:
            rest = preamble[start:]
            if not rest.strip() or rest.lstrip().startswith("```"):
                continue
            accepted = self.checker.copy().feed(rest)
            if accepted == len(rest) or accepted >= 12:
                if start:
                    self.emit(Cut(len(self.checker.text), preamble[:start], reason="preamble", call=rnd.index))
                    self._count_discarded(preamble[:start])
                return rest
        return None

    def _emit_span(self, rnd: _Round) -> None:
        if rnd.kept:
            self.emit(DraftSpan(rnd.start, rnd.kept, call=rnd.index))

    # -- repairs -----------------------------------------------------------------------------

    async def _handle_violation(self, rnd: _Round) -> str:
        checker = self.checker
        if self._cut_prose_after_answer(rnd, rnd.evidence or "", rnd.floor):
            return "done"
        dead = self._dead_end(rnd.floor)
        text = checker.text
        word = _trailing_word(text)
        ev = rnd.evidence or ""
        if dead is None and word and ev[:1] and not (ev[0].isalnum() or ev[0] == "_") and not checker.is_complete:
            # The word before the violation could not end there (``FROM`` read as the start of a
            # longer name): it belongs to the evidence.
            if len(text) - len(word) >= rnd.floor:
                dead = len(text) - len(word)
        if dead is not None:
            # The accepted text ends in a word that leads nowhere (a grammar's dead-end guard,
            # e.g. a misspelt keyword): it is part of the evidence, not of the text.
            rnd.evidence = checker.text[dead:] + (rnd.evidence or "")
            checker.rollback_chars(dead)
            rnd.kept = checker.text[rnd.start : max(dead, rnd.start)]
        evidence = rnd.evidence or ""
        self._count_discarded(evidence)
        edit = propose_edit(checker, evidence, final=rnd.ended, floor=rnd.floor)
        signature = (len(checker.text), evidence[:16])
        repeated = signature == self._last_violation
        self._last_violation = signature
        if edit is not None and not repeated:
            self.stats.corrections += 1
            rolled_back = checker.text[edit.start :]
            rnd.kept = checker.text[rnd.start : max(edit.start, rnd.start)]
            self._emit_span(rnd)
            self.emit(self._violation_event(edit.start, rolled_back + evidence, rnd.index))
            checker.rollback_chars(edit.start)
            if edit.text:
                checker.feed(edit.text)
            self.emit(Correction(edit.start, edit.text, source="repair", detail=edit.description))
            if edit.kept:
                offset = len(checker.text)
                checker.feed(edit.kept)
                rnd.start, rnd.kept = offset, edit.kept
                if self._cut_prose_after_answer(rnd, edit.unread, offset):
                    return "done"
                self.emit(DraftSpan(offset, edit.kept, call=rnd.index))
            if not rnd.ended:
                return "violation"
            # The draft's whole answer is known: go on through the rest of it.
            if not edit.unread:
                return "done" if checker.is_complete else "violation"
            if self.stats.corrections >= self.limits.max_corrections:
                return "violation"
            rnd.start, rnd.kept, rnd.evidence = len(checker.text), "", edit.unread
            self.stats.discarded_chars -= len(edit.unread)  # counted again as evidence
            self.stats.discarded_tokens -= self._count_tokens(edit.unread)
            return await self._handle_violation(rnd)

        if checker.is_complete and _looks_like_aside(checker.text, evidence, rnd.ended):
            # A complete text followed by something that cannot extend it: a closing fence,
            # an explanation. Cut it and stop.
            trailing = _trailing_space(checker, rnd.floor)
            if trailing:
                checker.rollback_chars(len(checker.text) - len(trailing))
                rnd.kept = rnd.kept[: len(rnd.kept) - len(trailing)] if rnd.kept.endswith(trailing) else rnd.kept
            self._emit_span(rnd)
            self.emit(Cut(len(checker.text), trailing + evidence, reason="after complete text", call=rnd.index))
            return "done"

        # Let the target choose at the start of the word the violation is in.
        start = len(checker.text)
        word = _trailing_word(checker.text)
        if word and evidence[:1].isalnum() and start - len(word) >= rnd.floor:
            start -= len(word)
        rnd.kept = checker.text[rnd.start : max(start, rnd.start)]
        self._emit_span(rnd)
        self.emit(self._violation_event(start, checker.text[start:] + evidence, rnd.index))
        checker.rollback_chars(start)
        self.stats.corrections += 1
        if self._append_forced("forced"):
            return "violation"
        if not await self._target_step("violation"):
            await self._finish("no repair found and no target model")
            return "done"
        return "violation"

    def _cut_prose_after_answer(self, rnd: _Round, evidence: str, floor: int) -> bool:
        """"…FROM road)\n\nThis query returns…": the first word of an explanation after the
        answer was read as an alias and the violation is in the explanation. Cut it at the end of
        the answer (emitting the draft's kept text up to there); False when that is not the case."""
        end = _answer_end_before_prose(self.checker, evidence, floor)
        if end is None:
            return False
        aside = self.checker.text[end:] + evidence
        self.checker.rollback_chars(end)
        rnd.kept = self.checker.text[rnd.start : max(end, rnd.start)]
        self._emit_span(rnd)
        self._count_discarded(aside)
        self.emit(Cut(end, aside, reason="after complete text", call=rnd.index))
        return True

    def _dead_end(self, floor: int) -> int | None:
        """Where the trailing dead-end word starts, if the accepted text can never be completed
        because every terminal that may follow matches nothing; ``None`` otherwise."""
        text = self.checker.text
        if not self.checker.copy_clear().is_dead_end():
            return None
        start = len(_trailing_word(text.rstrip()))
        start = len(text.rstrip()) - start
        return start if start >= floor and start < len(text) else None

    def _revive(self, call: int) -> None:
        """Before the target writes: step back out of a dead end, recording it as a cut."""
        dead = self._dead_end(self._floor)
        if dead is not None:
            taken = self.checker.text[dead:]
            self.checker.rollback_chars(dead)
            self.emit(Cut(dead, taken, reason="dead end", call=call))

    def _violation_event(self, offset: int, rejected: str, call: int) -> GrammarViolation:
        text = self.checker.text[:offset]
        expected = tuple(dict.fromkeys(t.display for t in expected_terminals(self.grammar, text)))
        line = text.count("\n") + 1
        column = offset - (text.rfind("\n") + 1) + 1
        return GrammarViolation(offset, rejected, expected, line, column, call)

    def _append_forced(self, reason: str) -> bool:
        forced = self.checker.forced_text()
        if not forced:
            return False
        offset = len(self.checker.text)
        accepted = self.checker.feed(forced)
        forced = forced[:accepted]
        if not forced:
            return False
        self.stats.forced_tokens += self._count_tokens(forced)
        self.emit(Correction(offset, forced, source="forced", reason=reason))
        return True

    async def _target_step(self, reason: str, *, finish: bool = False) -> bool:
        target = await self._get_target()
        if target is None:
            return False
        self._revive(self.stats.draft_calls)
        text = self.checker.text
        started = time.perf_counter()
        continuation: Continuation = await target.acontinue_text(
            self.prompt,
            text,
            self.grammar,
            max_new_tokens=self.limits.finish_tokens if finish else self.limits.repair_tokens,
            finish=finish,
        )
        self.stats.target_seconds += time.perf_counter() - started
        self.stats.target_tokens += continuation.sampled_tokens + continuation.healed_tokens
        self.stats.forced_tokens += continuation.forced_tokens
        self.stats.healed_tokens += continuation.healed_tokens
        if continuation.healed_text:
            self.emit(
                Correction(
                    len(text) - len(continuation.healed_text),
                    continuation.healed_text,
                    source="healed",
                    reason=reason,
                    tokens=continuation.healed_tokens,
                )
            )
        if not continuation.text:
            return False
        accepted = self.checker.feed(continuation.text)
        if accepted != len(continuation.text):
            raise RuntimeError(
                f"target continuation {continuation.text!r} left the grammar at {accepted}: {self.checker.violation}"
            )
        self.emit(
            Correction(
                len(text),
                continuation.text,
                source="target",
                reason=reason,
                alternatives=continuation.alternatives,
                tokens=continuation.tokens,
                seconds=continuation.seconds,
            )
        )
        return True

    async def _finish(self, reason: str) -> None:
        if self.checker.is_complete:
            return
        self._revive(self.stats.draft_calls)
        self._append_forced("finish")
        if self.checker.is_complete:
            return
        if await self._get_target() is not None:
            await self._target_step(f"finish: {reason}", finish=True)
            if not self.checker.is_complete:
                # Once more: the target may stop at its token limit mid-way.
                await self._target_step(f"finish: {reason}", finish=True)
        if not self.checker.is_complete:
            result = self._result(complete=False)
            raise GuideExhausted(
                f"could not complete the text ({reason}); the partial result holds the valid prefix",
                result,
            )

    async def _get_target(self) -> TargetModel | None:
        if self.target is False:
            return None
        if self.target is None:
            from ._target import TargetModel

            self.target = await asyncio.to_thread(TargetModel.load)
        return self.target

    # -- bookkeeping -------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        if isinstance(event, Correction):
            # Text someone other than the draft chose is never taken back.
            self._floor = event.offset + len(event.text)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _count_tokens(self, text: str) -> int:
        if not text:
            return 0
        target = self.target
        if target:
            return target.count_tokens(text)
        return math.ceil(len(text) / 4)

    def _count_discarded(self, text: str) -> None:
        self.stats.discarded_chars += len(text)
        self.stats.discarded_tokens += self._count_tokens(text)

    def _result(self, complete: bool = True) -> GuideResult:
        return GuideResult(
            text=self.checker.text,
            prompt=self.prompt,
            grammar_name=self.grammar.name,
            events=list(self.events),
            stats=self.stats,
            complete=complete and self.checker.is_complete,
        )


def _looks_like_aside(text: str, rejected: str, answer_ended: bool) -> bool:
    """Whether text after a complete answer is an aside (on a new line: an explanation, a fence)
    rather than more of the answer with a mistake in it."""
    gap = text[len(text.rstrip()) :] + rejected[: len(rejected) - len(rejected.lstrip())]
    head = rejected.lstrip()
    return not head or "\n" in gap or head.startswith("```") or (answer_ended and len(rejected) <= 2)


_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_SENTENCE = re.compile(r"[ \t\n]*[A-Z][a-z]+(?:[ \t]+[a-z][\w'’]*){2}")


def _answer_end_before_prose(checker: Checker, evidence: str, floor: int) -> int | None:
    """Where a complete answer ends before an explanation in sentences ("\n\nThis query returns")
    that the violation is in, or ``None``: after the last blank line, not before ``floor``."""
    text = checker.text
    blanks = list(_BLANK_LINE.finditer(text, floor))
    if not blanks:
        return None
    end = blanks[-1].start()
    if not _SENTENCE.match(text[blanks[-1].end() :] + evidence):
        return None
    trial = checker.copy_clear()
    trial.rollback_chars(end)
    return end if trial.is_complete else None


def _looks_like_prose(kept: str, rejected: str) -> bool:
    """Whether a draft that went wrong at once is writing words (or opening a code fence), not a
    broken answer."""
    if not re.fullmatch(r"\s*[A-Za-z]*", kept):
        return False
    return bool(re.match(r"[A-Za-z ,.!'’:-]", rejected)) or (not kept.strip() and rejected.startswith("```"))


_FENCE = re.compile(r"\n[ \t]*```(?![ \t]*[A-Za-z])")


def _closing_fence(raw: str, answer_started: bool) -> int:
    """Where a code fence that closes an answer starts in this call's ``raw`` text, or -1.

    A fence with a language tag opens; a bare fence at a line start closes when an earlier fence
    (anywhere in a line: "Sure! ```sql") opened and answer lines came between, or when no fence
    opened and the answer had already started."""
    for match in _FENCE.finditer(raw):
        lines = raw[: match.start()].split("\n")
        fence_lines = [i for i, line in enumerate(lines) if "```" in line]
        if fence_lines:
            if any(line.strip() for line in lines[fence_lines[-1] + 1 :]):
                return match.start()
        elif answer_started:
            return match.start()
    return -1


def _partial_match(text: str, marker: str) -> int:
    """Length of the longest tail of ``text`` that is a proper beginning of ``marker``."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:k]):
            return k
    return 0


def _trailing_space(checker: Checker, floor: int) -> str:
    """White space at the end of a complete text that it is still complete without."""
    text = checker.text
    stripped = text.rstrip()
    if stripped == text or len(stripped) < floor:
        return ""
    trial = checker.copy_clear()
    trial.rollback_chars(len(stripped))
    return text[len(stripped) :] if trial.is_complete else ""


def _trailing_word(text: str) -> str:
    n = len(text)
    i = n
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        i -= 1
    return text[i:]

