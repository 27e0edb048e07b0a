"""One draft call, read into the checker: the "draft" and "check" steps of the guide loop.

The draft's stream goes through an ``AnswerReader`` (stop strings, closing fences, restatement
alignment), past prose before the answer, and into the checker until the first invalid byte.
After a violation a few more chunks are read as evidence for the repair. What the call produced
is a ``Round``; the loop decides what to do with it. The stream stays open while an edit may let
the draft's own text go on (``read_on``); ``close`` ends the call.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from ._align import Aligner
from ._checker import Checker
from ._draft import Draft, DraftCall, DraftRequest
from ._errors import ProviderError
from ._events import Cut, DraftSpan, Event, GrammarRefused, GuideStats
from ._grammar import Grammar
from ._reader import (
    PREAMBLE_LIMIT,
    AnswerReader,
    answer_closer,
    answer_start,
    looks_like_aside,
    looks_like_prose,
    sentence_start,
)
from ._text import is_word_char, run_start

__all__ = ["Drafting", "Round"]

# After a violation the draft is read on for up to this many chunks, until the rejected text
# holds this many words or punctuation marks (see ``Drafting._read_evidence``).
_EVIDENCE_CHUNKS = 8
_EVIDENCE_LEXEMES = 6
_LEXEME = re.compile(r"\w+|[^\w\s]")
# Where a rewrite needs the whole statement: how far back its head may begin, how much is read.
_HEAD_REACH = 200
_STATEMENT_LIMIT = 4096
# Streams in a row that may break after some text and be resumed before the error ends the run.
MAX_BROKEN_IN_A_ROW = 2


class DraftTimeout(Exception):
    """The run's timeout passed while waiting for the draft."""


@dataclass
class Round:
    """What one draft call produced.

    ``kept`` is the draft's text accepted from ``start`` on; ``evidence`` the rejected text after
    a violation (``None``: no violation); ``ended``: the draft wrote nothing more; ``retry``: the
    draft was still writing prose when its lookahead ran out (ask again with more room);
    ``floor``: repairs do not take back text before it (the end of the last correction);
    ``broken``: the provider error that cut the stream short after some text (the loop resumes);
    ``tokens_left``: how many more tokens of text this call may add (``max_new_tokens``), and
    ``over_budget``: it wrote more, and was cut and closed there (``beyond_budget``: the text of
    its last chunk past the cut). ``repeated``: a draft that restates its answer gave one it gave
    before, word for word (it has nothing to add). ``stream`` stays open after a violation, so
    that once an edit lets the draft's own text go on, the loop reads on in the same call
    (``Drafting.read_on``) instead of asking again; ``Drafting.close`` ends the call.
    """

    call: DraftCall
    index: int
    start: int
    floor: int
    reader: AnswerReader
    kept: str = ""
    evidence: str | None = None
    ended: bool = False
    retry: bool = False
    timed_out: bool = False
    broken: ProviderError | None = None
    tokens_left: int | None = None
    over_budget: bool = False
    beyond_budget: str = ""
    repeated: bool = False
    stream: AsyncIterator[str] | None = None  # open while the call may be read on
    resume: str | None = None  # set by the loop: read on, this draft text first
    formatting: tuple[int, int] = (0, 0)  # Markdown escapes and backticks already recorded


@dataclass
class Drafting:
    """The drafting state of one run: what the draft answered before, and its retries."""

    draft: Draft
    checker: Checker
    prompt: str
    stops: tuple[str, ...]
    fences: bool
    stats: GuideStats
    emit: Callable[[Event], None]
    count_discarded: Callable[[str], None]
    on_draft_text: Callable[[str], None] | None = None
    deadline: float | None = None
    count_tokens: Callable[[str], int] = lambda text: -(-len(text) // 4)
    earlier_answers: list[str] = field(default_factory=list)
    prose_retry: int = 0  # 1: the next call gets a longer lookahead for prose, 2: done
    broken_in_a_row: int = 0  # calls in a row whose stream broke after some text

    async def read(self, lookahead: int, floor: int, tokens_left: int | None = None) -> Round:
        """Call the draft once and read its answer into the checker, ``tokens_left`` at most."""
        text = self.checker.text
        grammar = self.checker.grammar  # a checker reads a Grammar through its CheckedGrammar face
        request = DraftRequest(
            prompt=self.prompt,
            accepted_text=text,
            max_new_tokens=lookahead * (4 if self.prose_retry == 1 else 1),
            stop=self.stops,
            grammar=grammar if isinstance(grammar, Grammar) else None,
        )
        self.stats.draft_calls += 1
        call = DraftCall(request)
        rnd = Round(call, self.stats.draft_calls, len(text), floor, AnswerReader(self.stops, self.fences))
        rnd.tokens_left = tokens_left
        if self.prose_retry == 1:
            self.prose_retry = 2
        rnd.stream = self.draft.stream(call)
        await self._reading(rnd, self._read_stream(rnd, rnd.stream))
        if call.fallback_reason is not None:
            self.emit(GrammarRefused(rnd.start, call.fallback_reason, call=rnd.index))
        if rnd.reader.raw.strip():
            rnd.repeated = rnd.reader.aligner is not None and rnd.reader.raw in self.earlier_answers
            self.earlier_answers = ([*self.earlier_answers, rnd.reader.raw])[-3:]
        self._record_formatting(rnd)
        aligner = rnd.reader.aligner
        if aligner is not None and aligner.dropped:
            self.emit(Cut(rnd.start, "".join(aligner.dropped), reason="restated", call=rnd.index))
        return rnd

    def may_read_on(self, rnd: Round) -> bool:
        """Whether the call's stream is open and its text can follow an edit as it comes (a
        restatement, if any, aligned away; no budget or time run out)."""
        return (
            rnd.stream is not None
            and not (rnd.ended or rnd.timed_out or rnd.over_budget or rnd.retry)
            and rnd.broken is None
            and (rnd.reader.aligner is None or rnd.reader.aligner.decided)
        )

    async def read_on(self, rnd: Round, pending: str) -> None:
        """Go on reading the call's stream after an edit: ``pending`` (the draft's text the edit
        left unread) first, then the stream, into the checker until the next violation (and its
        evidence) or the end, as ``read`` does."""
        assert rnd.stream is not None
        rnd.start, rnd.kept, rnd.evidence = len(self.checker.text), "", None
        if pending and self._feed(rnd, pending):
            if not rnd.over_budget:
                await self._reading(rnd, self._after_stream(rnd, rnd.stream, None))
        elif not rnd.over_budget:
            await self._reading(rnd, self._read_stream(rnd, rnd.stream))
        self._record_formatting(rnd)

    async def close(self, rnd: Round) -> None:
        """End the call: close its stream (a provider stops writing, and bills what it wrote) and
        count its usage. Once per call."""
        stream, rnd.stream = rnd.stream, None
        if stream is None:
            return
        closing = getattr(stream, "aclose", None)
        if closing is not None:
            await closing()
        call = rnd.call
        self.stats.add_draft_usage(call.tokens_in, call.tokens_out)
        self.stats.prefill_tokens_saved += call.prefill_tokens_saved
        self.stats.add_draft_path(call.path)

    def _release_held(self, rnd: Round) -> None:
        """A stream that broke or timed out: what the reader held back (a word that may begin a
        repeated prompt word, the start of a stop string) is the draft's text after all."""
        held = rnd.reader.release()
        if held and rnd.evidence is None:
            self._feed(rnd, held)
        elif held:
            rnd.evidence = (rnd.evidence or "") + held

    async def _reading(self, rnd: Round, reading: Awaitable[None]) -> None:
        """Run one reading of the call's stream, turning a timeout and a broken stream into the
        round's state; a stream that ended or failed is closed."""
        started = time.perf_counter()
        try:
            await reading
        except DraftTimeout:
            rnd.timed_out = True
            self._release_held(rnd)
        except ProviderError as exc:
            # Before any text the provider's own retries are spent (or the error is not one to
            # retry): it ends the run at once. A stream that broke after some text keeps the text
            # read and is resumed by the next call, up to MAX_BROKEN_IN_A_ROW times in a row.
            self._release_held(rnd)
            self.broken_in_a_row += 1
            if not rnd.reader.raw or not exc.retryable or self.broken_in_a_row > MAX_BROKEN_IN_A_ROW:
                if rnd.kept:
                    self.emit(DraftSpan(rnd.start, rnd.kept, call=rnd.index))
                await self.close(rnd)
                raise
            rnd.broken = exc
            rnd.call.finish_reason = "error"
        except BaseException:
            await self.close(rnd)
            raise
        else:
            self.broken_in_a_row = 0
        finally:
            self.stats.draft_seconds += time.perf_counter() - started
        if not self.may_read_on(rnd) or rnd.evidence is None:
            await self.close(rnd)

    def _record_formatting(self, rnd: Round) -> None:
        """A ``formatting`` cut for the Markdown escapes and backticks the reader undid since the
        last one (not in a restatement aligned away)."""
        reader = rnd.reader
        if reader.echoed:
            detail = "a word before the answer's inline code that the code repeats"
            self.emit(Cut(rnd.start, reader.echoed, reason="preamble", call=rnd.index, detail=detail))
            self.count_discarded(reader.echoed)
            reader.echoed = ""
        n, ticks = reader.unescaped - rnd.formatting[0], reader.ticks - rnd.formatting[1]
        if not (n or ticks) or not (rnd.kept or rnd.evidence):
            return
        rnd.formatting = (reader.unescaped, reader.ticks)
        undone = [f"undid {n} Markdown escape{'s' if n > 1 else ''} (\\_ or \\* read as _ or *)"] if n else []
        if ticks:
            undone.append("dropped the backtick pair around the answer" if ticks > 1 else "dropped a stray backtick")
        text = "\\" * n + "`" * ticks
        self.emit(Cut(rnd.start, text, reason="formatting", call=rnd.index, detail="; ".join(undone)))

    async def _read_stream(self, rnd: Round, stream: AsyncIterator[str]) -> None:
        """Read chunks until the first invalid byte (then some evidence), a stop, or the end."""
        reader = rnd.reader
        # Prose before the answer ("Sure! Here is the query:") is read past, once, while nothing
        # has been accepted yet: the draft's answer follows it.
        preamble: str | None = None
        preamble_allowed = not self.checker.text.strip()
        first = True
        while True:
            chunk = await self._next_chunk(stream)
            if chunk is None:
                rnd.ended = True
                if not reader.holding:
                    break
                # The stream ended on what might have begun a stop string: it is text.
                chunk, stopped = reader.release(), True
            else:
                if self.on_draft_text is not None:
                    self.on_draft_text(chunk)
                if first:
                    first = False
                    self._choose_alignment(rnd)
                chunk, stopped = reader.push(chunk, self._answer_started(rnd, chunk))
            if preamble is not None:
                preamble += chunk
                answer = self._leave_preamble(rnd, preamble)
                if answer is None:
                    if stopped or len(preamble) > PREAMBLE_LIMIT:
                        break
                    continue
                preamble, chunk = None, answer
                stopped = stopped or bool(reader.stopped_text)
            if self._feed(rnd, chunk):
                if rnd.call.whole_answer:
                    rnd.ended = True
                if not (preamble_allowed and looks_like_prose(rnd.kept, rnd.evidence or "")):
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
                stopped = stopped or bool(reader.stopped_text)
                if self._feed(rnd, answer):
                    break
            if rnd.over_budget:
                break
            if stopped:
                rnd.ended = True
                break
        await self._after_stream(rnd, stream, preamble)

    def _complete_before_aside(self, evidence: str) -> bool:
        """Whether the text is complete and ``evidence`` is an aside after it (an explanation)."""
        checker = self.checker
        return checker.is_complete and looks_like_aside(checker.text, evidence, False, checker.grammar.keywords)

    async def _after_stream(self, rnd: Round, stream: AsyncIterator[str], preamble: str | None) -> None:
        if (
            rnd.evidence is not None
            and not rnd.ended
            and preamble is None
            and not self._complete_before_aside(rnd.evidence)
        ):
            await self._read_evidence(rnd, stream)
        if preamble is not None and rnd.ended and rnd.call.finish_reason == "length" and not self.prose_retry:
            # The draft was still talking when its lookahead ran out: ask once more with room for
            # the prose and the answer after it.
            self.prose_retry = 1
            rnd.retry = True
            self.emit(Cut(len(self.checker.text), preamble, reason="preamble", call=rnd.index))
            self.count_discarded(preamble)
        elif preamble is not None:
            # No answer found after the prose: the violation is where it first was.
            self._feed(rnd, preamble)
        elif rnd.ended and rnd.reader.aligner is not None and rnd.evidence is None:
            self._feed(rnd, rnd.reader.aligner.finish())

    def _answer_started(self, rnd: Round, chunk: str) -> bool:
        """Whether the answer has begun by the fence in ``chunk``, if it has one: text of it was
        accepted, or the chunk begins with it: then a bare fence in the same chunk closes the
        answer (a whole answer that ends in a fence) rather than opening one after prose."""
        if rnd.kept.strip():
            return True
        fence = chunk.find("```")
        if fence < 0 or not chunk[:fence].strip():
            return False
        return answer_start(chunk[:fence], self.checker.accepts, self.checker.grammar.keywords) == 0

    def _choose_alignment(self, rnd: Round) -> None:
        """A provider may fall back to another mode for this call (a model that rejects
        prefill): it says which in ``call.continued_prefix`` before its first chunk."""
        continued = rnd.call.continued_prefix
        if not (self.draft.continues_prefix if continued is None else continued):
            checker = self.checker
            rnd.reader.aligner = Aligner(checker.text, tuple(self.earlier_answers), checker.accepts)

    async def _next_chunk(self, stream: AsyncIterator[str]) -> str | None:
        try:
            if self.deadline is None:
                return await anext(stream)
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise DraftTimeout
            return await asyncio.wait_for(anext(stream), remaining)
        except StopAsyncIteration:
            return None
        except asyncio.TimeoutError:
            raise DraftTimeout from None

    async def _read_evidence(self, rnd: Round, stream: AsyncIterator[str]) -> None:
        """After a violation, read a few more chunks of the draft until the evidence holds
        ``_EVIDENCE_LEXEMES`` words or punctuation marks: enough for an edit to be judged on what
        the draft meant (``SELET STDDEV_POP(`` shows ``SELECT``), which costs far fewer tokens
        than a target repair followed by a new draft call. Where a rewrite that needs the whole
        statement begins (``Rewrite.head``), read on to the statement's end."""
        for _ in range(_EVIDENCE_CHUNKS):
            if len(_LEXEME.findall(rnd.evidence or "")) >= _EVIDENCE_LEXEMES:
                break
            if not await self._more_evidence(rnd, stream):
                return
        while self._statement_needed(rnd) and len(rnd.evidence or "") < _STATEMENT_LIMIT:
            if not await self._more_evidence(rnd, stream):
                return
        # Asking again bills the prompt and the accepted text once more (and waits for a first
        # token). Reading on costs no more than that: a short answer's rest is read whole, and
        # the repair goes on through it with the draft's own text instead of a new call. A long
        # one costs at most twice what stopping at once did. (A local model asked again reads
        # nothing again: its cache holds them.)
        reask = (
            self.count_tokens(self.prompt) + self.count_tokens(self.checker.text) if self.draft.rereads_prompt else 0
        )
        while self.count_tokens(rnd.evidence or "") < reask:
            if not await self._more_evidence(rnd, stream):
                return

    async def _more_evidence(self, rnd: Round, stream: AsyncIterator[str]) -> bool:
        """One more chunk of the draft's answer into the evidence; False when the answer ended."""
        chunk = await self._next_chunk(stream)
        if chunk is None:
            rnd.ended = True
            rnd.evidence = (rnd.evidence or "") + rnd.reader.release()
            return False
        if self.on_draft_text is not None:
            self.on_draft_text(chunk)
        chunk, stopped = rnd.reader.push(chunk, bool(rnd.kept.strip()))
        rnd.evidence = (rnd.evidence or "") + chunk
        if stopped:
            rnd.ended = True
            return False
        return True

    def _statement_needed(self, rnd: Round) -> bool:
        """Whether a rewrite's ``head`` spans the violation and the statement's end (``;``, or a
        sentence of prose after it) is not yet in the evidence. The violation may be at the start
        of the text's last word (``- SELECT``: a keyword is accepted as the start of a longer name)."""
        evidence = rnd.evidence or ""
        if ";" in evidence:
            return False
        tail = self.checker.text[-_HEAD_REACH:]
        window = tail + evidence
        points = {len(tail), run_start(tail, len(tail), is_word_char)}
        for rewrite in self.checker.grammar.rewrites:
            head = rewrite.head_regex
            if head is not None and any(m.start() <= p < m.end() for m in head.finditer(window) for p in points):
                return sentence_start(evidence, self.checker.grammar.keywords) is None
        return False

    def _feed(self, rnd: Round, chunk: str) -> bool:
        """Feed a chunk (as much of it as the budget allows); True when it had an invalid byte
        (the rest becomes the evidence)."""
        if rnd.tokens_left is not None:
            chunk = self._within_budget(rnd, chunk)
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

    def _within_budget(self, rnd: Round, chunk: str) -> str:
        """The beginning of ``chunk`` that fits in the round's token budget; a chunk that does not
        fit whole is cut (at the longest beginning that does) and the round marked over budget.

        Per chunk, so that a 1 MB answer in one string costs no more than its budget: only the
        first ``8 * tokens_left`` characters are ever tokenized (a longer token is rare; then the
        cut comes a little early)."""
        left = rnd.tokens_left
        if left is None or not chunk:
            return chunk
        rnd.beyond_budget = ""
        head = chunk[: 8 * left + 8]
        used = self.count_tokens(head)
        if used <= left and len(head) == len(chunk):
            rnd.tokens_left = left - used
            return chunk
        if used > left:
            low, high = 0, len(head)  # the longest beginning of ``head`` within the budget
            while low < high:
                middle = (low + high + 1) // 2
                if self.count_tokens(head[:middle]) <= left:
                    low = middle
                else:
                    high = middle - 1
            head = head[:low]
        rnd.tokens_left = 0
        rnd.over_budget = True
        rnd.beyond_budget = chunk[len(head) :]
        return head

    def _leave_preamble(self, rnd: Round, preamble: str) -> str | None:
        """Where the answer starts in prose the draft wrote first, or None if not yet seen."""
        start = answer_start(preamble, self.checker.accepts, self.checker.grammar.keywords)
        if start is None:
            return None
        if start:
            self.emit(Cut(len(self.checker.text), preamble[:start], reason="preamble", call=rnd.index))
            self.count_discarded(preamble[:start])
        answer = preamble[start:]
        closer = answer_closer(preamble, start)
        if closer is not None:
            close = answer.find(closer)
            if close < 0:
                rnd.reader.close_with(closer)
            else:
                answer = rnd.reader.stop_in(answer, close)
        return answer
