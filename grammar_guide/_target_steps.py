"""The steps where someone other than the draft writes: text the grammar forces, the target
model's continuation (after a violation, when the draft stalls, to finish), and the grammar's
shortest completion that closes the text. A base of ``GuideLoop``; events go through its ``emit``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from . import _repair as repair
from ._checker import Checker
from ._complete import closing_brackets, open_brackets, shortest_close, shortest_completion
from ._errors import ExhaustedReason, GuideExhausted, TokenMatcherError
from ._events import Correction, CorrectionReason, Cut, DraftSpan, Event, GrammarViolation, GuideStats
from ._grammar import Grammar
from ._limits import GuideLimits
from ._loops import text_repeats
from ._text import QUOTES, is_word_char
from ._trace import GuideResult

if TYPE_CHECKING:
    from .local.decoding import Continuation
    from .local.target import TargetModel

__all__ = ["TargetSteps"]

_SEPARATORS = frozenset(",;")
_OPENERS = frozenset("([{")
_LEXEME = re.compile(r"\w+|[^\w\s]")
#: A name with its qualifiers (``b.pages``), a word, or a run of marks.
_TAKE_BACK_LEXEME = re.compile(r"\w+(?:\.\w+)*|[^\w\s]+")
_OPERATOR_MARKS = frozenset("=<>!+-*/%|&^~")
_TAKE_BACK_LEXEMES = 6  # how many of the draft's last lexemes the finish may take back to close
_UNAIDED_TAKE_BACK_LEXEMES = 64  # how many without a target, where the other way is no result
_CUT_BACK_LEXEMES = 64  # how far the last resort of the finish takes the text back
_MAX_STEP_TERMINALS = 3  # a finishing step that adds nothing is tried again for up to this many terminals
_MAX_BREAKS = 8  # line comments that swallowed code, ended at the finish
_TIE_CONTEXT = 40  # characters of the draft's text after an edit that its likelihood is read over
#: How far the check before a ``needs invention`` refusal searches for a close of marks alone.
_WIDE_CLOSE = {"max_length": 64, "max_nodes": 4_000}
#: What a refusal's message adds to its reason.
_EXPLAINED: dict[ExhaustedReason, str] = {
    "target unfinished": "",
    "needs invention": ": needs invention (without a target only invented text could finish it:"
    " no close of marks alone ends it)",
    "no answer": ": no answer (the draft held nothing the grammar can read; without a target nothing is written)",
    "budget reached": ": budget reached (the text was cut there, and without a target only"
    " invented text could finish it)",
}


class TargetSteps:
    """Forced text, target steps and the finish, for the loop that holds this state."""

    checker: Checker
    grammar: Grammar
    prompt: str
    target: TargetModel | Literal[False] | None
    limits: GuideLimits
    stats: GuideStats
    floor: int
    take_back_floor: int
    events: list[Event]
    budget_reached: str | None
    on_target_text: Callable[[str], None] | None

    def emit(self, event: Event) -> None:
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        raise NotImplementedError

    def _violation_event(self, offset: int, rejected: str, call: int) -> GrammarViolation:
        raise NotImplementedError

    def result(self, complete: bool = True) -> GuideResult:
        raise NotImplementedError

    def _append_forced(self, reason: CorrectionReason, detail: str = "", *, finish_word: bool = True) -> bool:
        """Write the text the grammar forces; without ``finish_word``, not where it would finish
        the draft's last word (``fals`` + ``e``): the draft may end that word itself, and a draft
        that stops there has written no literal (the finish reads it, ``"fals"``)."""
        forced = self.checker.forced_text()
        if not forced:
            return False
        if not finish_word and is_word_char(self.checker.text[-1:]) and is_word_char(forced[:1]):
            return False
        return self._write_forced(forced, reason, detail)

    def _write_forced(self, forced: str, reason: CorrectionReason, detail: str) -> bool:
        """Write as much of ``forced`` as the grammar reads, as forced text; whether any."""
        offset = len(self.checker.text)
        forced = forced[: self.checker.feed(forced)]
        if not forced:
            return False
        self.stats.forced_tokens += self.count_tokens(forced)
        self.emit(Correction(offset, forced, source="forced", reason=reason, detail=detail))
        return True

    async def _target_step(self, reason: CorrectionReason, *, finish: bool = False, detail: str = "") -> bool:
        """The target writes (a terminal or so; with ``finish`` until the text is complete); whether
        it wrote anything but white space (white space alone is taken back: no progress)."""
        if await self._get_target() is None:
            return False
        self._revive()
        start = len(self.checker.text)
        budget = self.limits.finish_tokens if finish else self.limits.repair_tokens
        continuation = await self._target_writes(max_new_tokens=budget, finish=finish)
        if continuation is None:
            return False
        if not continuation.text.strip():
            self.checker.rollback_chars(start)
            return False
        self._emit_target(start, continuation, continuation.text, reason, detail)
        if not finish and is_word_char(continuation.text[-1:]):
            self._end_word(reason, detail)
        return True

    def _end_word(self, reason: CorrectionReason, detail: str) -> None:
        """Where the target stopped inside a word that only one word may end (`` TH`` of ``THEN``:
        the string before it ended on its first byte, and counted as the terminal it was to
        write), the letters the grammar forces, in the word's case, as forced text."""
        self._write_forced(forced_letters(self.checker), reason, detail)

    async def _target_writes(self, *, max_new_tokens: int, finish: bool, min_terminals: int = 1) -> Continuation | None:
        """The target's continuation of the text, fed to the checker; ``None`` without a target."""
        target = await self._get_target()
        if target is None:
            return None
        text = self.checker.text
        started = time.perf_counter()
        try:
            continuation = await target.acontinue_text(
                self.prompt,
                text,
                self.grammar,
                max_new_tokens=max_new_tokens,
                finish=finish,
                min_terminals=min_terminals,
                on_text=self.on_target_text,
            )
        except TokenMatcherError:
            # Its matcher failed here (``Too many items``): the target writes nothing, as where it
            # could not; the guide goes on as it would without one (a close, a cut, a refusal).
            self.stats.target_seconds += time.perf_counter() - started
            return None
        stats = self.stats
        stats.target_seconds += time.perf_counter() - started
        stats.target_tokens += continuation.sampled_tokens + continuation.healed_tokens
        stats.forced_tokens += continuation.forced_tokens
        stats.healed_tokens += continuation.healed_tokens
        accepted = self.checker.feed(continuation.text)
        if accepted != len(continuation.text):
            raise RuntimeError(
                f"target text {continuation.text!r} left the grammar at {accepted}: {self.checker.violation}"
            )
        return continuation

    def _emit_target(
        self, start: int, first: Continuation, text: str, reason: CorrectionReason, detail: str, tokens: int = 0
    ) -> None:
        """The target's text from ``start`` (its first continuation ``first``), as events."""
        if first.healed_text:  # tokens at the end of the text re-chosen by token healing
            healed_at = start - len(first.healed_text)
            self.emit(
                Correction(healed_at, first.healed_text, "healed", reason, tokens=first.healed_tokens, detail=detail)
            )
        c = first
        self.emit(Correction(start, text, "target", reason, c.alternatives, tokens or c.tokens, c.seconds, detail))

    async def _finish(self, why: str) -> None:
        """Complete the text with as little invented as it needs: a few marks when they close it
        (``"}``, ``))``: no words), else the target writes on until they do (``_write_to_close``;
        an empty text it writes whole), then the grammar's shortest completion for what the
        target left open (its budget spent). Without a target a text that needs more than such a
        close is not completed: ``GuideExhausted``."""
        if self.checker.is_complete:
            return
        self._break_swallowing_comments()
        self._close_swallowed_at_end()
        if self.checker.is_complete:
            return
        self._rewrite_at_end()
        if self.checker.is_complete:
            return
        self._revive()
        self._append_forced("finish", detail=why)
        if self.checker.is_complete:
            return
        closing = shortest_close(self.checker) if self.checker.text.strip() else None
        if closing is None:
            closing = self._take_back_unfinished()
        if closing is None:
            closing = self._schema_least_values(why)
        has_target = await self._get_target() is not None
        if closing is None and not has_target and not self._draft_left_out():
            closing = self._take_back_unfinished(reach=_UNAIDED_TAKE_BACK_LEXEMES)
        if closing is None and has_target:
            start = len(self.checker.text)
            looped = False
            if self.checker.text.strip() and self.grammar.captured_grammar is not None:
                closing, looped = await self._write_to_close(why)
            if closing is None and not looped:
                # An empty text, or steps that did not reach a close: the target writes to the end.
                await self._target_step("finish", finish=True, detail=why)
            if closing is None:
                closing = self._completion_or_cut(start)
        if closing:
            self._write_close(closing, why)
        if not self.checker.is_complete and not has_target:
            self._close_checked(why)
        if not self.checker.is_complete:
            reason = "target unfinished" if has_target else self._unaided_reason()
            raise GuideExhausted(
                f"could not complete the text ({why}){_EXPLAINED[reason]}; the partial result holds the valid prefix",
                self.result(complete=False),
                reason,
            )

    def _close_checked(self, why: str) -> None:
        """Before a refusal says that only invention could finish the text: a close of marks
        and forced text alone, searched far wider than the finish's own (``_WIDE_CLOSE``),
        written if one exists (the finish's search missed it), so that ``needs invention``
        is checked, not assumed."""
        if not self.checker.text.strip():
            return
        closing = shortest_close(self.checker, **_WIDE_CLOSE)
        if closing:
            self._write_close(closing, why)

    def _write_close(self, closing: str, why: str) -> None:
        """``closing`` written at the text's end, recorded as the finish's completion."""
        offset = len(self.checker.text)
        self.checker.feed(closing)
        self.emit(Correction(offset, closing, "completion", "finish", detail=why))

    def _unaided_reason(self) -> ExhaustedReason:
        """Why, without a target, the text was not completed (``ExhaustedReason``)."""
        if self.budget_reached is not None:
            return "budget reached"
        return "no answer" if self._ignored_only(self.checker.text) else "needs invention"

    def _ignored_only(self, text: str) -> bool:
        """Whether ``text`` is all text the grammar ignores: white space, comments (``-- I cannot
        answer that``, where a line's end would close it)."""
        ignored = self.grammar.ignored_text
        return not text.strip() or any(ignored.fullmatch(t) for t in (text, text + "\n"))

    def _break_swallowing_comments(self) -> None:
        """A line comment the draft's text ends in that swallowed its code, the draft's line
        breaks lost, ends where its code begins (``repair.break_swallowing_comment``), and so does
        each such comment in the code read again (``-- Step 2: … INTERSECT SELECT …``): each
        recorded as a violation there, the line break, and the draft's text."""
        floor = self.floor
        for _ in range(_MAX_BREAKS):
            edit = repair.break_swallowing_comment(self.checker, floor)
            if edit is None:
                return
            self._reread(edit)
            floor = edit.start + 1

    def _close_swallowed_at_end(self) -> None:
        """A quoted literal the draft left open at its end that swallowed code is closed where
        its text ends, the draft's text after it read again (``repair.close_swallowed_at_end``):
        recorded as a violation there, the closing quote, and the draft's text."""
        edit = repair.close_swallowed_at_end(self.checker, self.floor)
        if edit is not None:
            self._reread(edit)

    def _reread(self, edit: repair.Edit) -> None:
        """``edit`` at the end of a finished draft, the draft's text after it read again: recorded
        as a violation there, the edit, and the draft's text."""
        call = self.stats.draft_calls
        self.emit(self._violation_event(edit.start, edit.kept, call))
        self._apply(edit, "violation")
        offset = len(self.checker.text)
        self.checker.feed(edit.kept)
        self.emit(DraftSpan(offset, edit.kept, call=call))

    def _rewrite_at_end(self) -> None:
        """A known slip that the text ends in (``... LIMIT ALL``) is rewritten, as at a violation.
        Where no closing marks end the text, it may take back the loop's own repairs of the
        draft's text with that text (a dangling key whose quote was swapped: ``{'a': 'x', 'b``),
        never text another source chose."""
        edit = repair.rewrite_at_end(self.checker, self.floor)
        chosen = self._chosen_floor()
        if edit is None and chosen < self.floor and shortest_close(self.checker) is None:
            edit = repair.rewrite_at_end(self.checker, chosen)
        if edit is None:
            return
        self._apply(edit, "finish")

    def _apply(self, edit: repair.Edit, reason: CorrectionReason) -> None:
        """Write ``edit`` in place of the text from its start, recorded as a repair."""
        self.checker.rollback_chars(edit.start)
        self.checker.feed(edit.text)
        self.stats.corrections += 1
        detail, rule, removed = edit.description, edit.rule, edit.removed
        self.emit(Correction(edit.start, edit.text, "repair", reason, detail=detail, rule=rule, removed=removed))

    def _schema_least_values(self, why: str) -> str | None:
        """Under a JSON Schema, what closing marks cannot end (a required member the answer
        lacks, an item ``minItems`` asks for) is written with the least values the schema allows
        (the grammar's shortest completion: ``"b":""``, ``0``), not by the target, and recorded as
        invented (a ``completion`` beyond closing marks); ``""`` once written. ``None`` for other
        grammars, or where no completion is found."""
        if self.grammar.json_schema is None or not self.checker.text.strip():
            return None
        completion = shortest_completion(self.checker)
        if not completion:
            return None
        offset = len(self.checker.text)
        self.checker.feed(completion)
        detail = f"{why}; the least values the JSON Schema requires, invented"
        self.emit(Correction(offset, completion, "completion", "finish", detail=detail))
        return ""

    def keep_within_engine_limits(self) -> None:
        """A complete text that the language's own engine rejects for one of its limits
        (``Grammar.engine_limit``: SQLite's parser stack, which a dozen nested subqueries of a
        model looping until its budget ran out overflow) is taken back to the latest point
        where closing brackets alone end it and the engine takes it; the text taken back is a
        ``limit`` cut that names the engine's message. Left as it is where no such point is
        found (the result is then what the grammar accepts)."""
        check = self.grammar.engine_limit
        if check is None or not self.checker.is_complete:
            return
        message = check(self.checker.text)
        if message is None:
            return
        point = self._within_limit(check)
        if point is None and self.target is not False:
            point = self._completed_within_limit(check)
        if point is None:
            return
        end, closing = point
        detail = f"{message}: taken back to where the engine takes the text"
        self.emit(Cut(end, self.checker.text[end:], "limit", self.stats.draft_calls, detail=detail))
        self.checker.rollback_chars(end)
        if closing:
            self.checker.feed(closing)
            self.emit(Correction(end, closing, "completion", "finish", detail=detail))

    def _within_limit(self, check: Callable[[str], str | None]) -> tuple[int, str] | None:
        """The latest point of the text, a lexeme at a time back to the target's text, where
        closing brackets alone end it and ``check`` takes it: (that point, the close). A point
        is tried only where fewer brackets are open than at the last one the engine rejected."""
        text = self.checker.text
        floor = self._target_floor()
        too_deep = len(text)
        for start in reversed([m.start() for m in _TAKE_BACK_LEXEME.finditer(text, floor)]):
            end = len(text[:start].rstrip())
            if end <= floor or not text[floor:end].strip():
                return None
            if text[start] in _OPERATOR_MARKS or text[end - 1] in _OPENERS:
                continue  # (no ``x`` left of ``x =``, no ``IN ()`` nobody wrote)
            depth = open_brackets(text[:end])
            if depth >= too_deep:
                continue
            with self.checker.trial() as trial:
                trial.rollback_chars(end)
                closing = closing_brackets(trial)
                if trial.feed(closing) != len(closing) or not trial.is_complete:
                    continue
            if check(text[:end] + closing) is None:
                return end, closing
            too_deep = depth
        return None

    def _completed_within_limit(self, check: Callable[[str], str | None]) -> tuple[int, str] | None:
        """Where no point is closed by brackets alone (a loop of ``(SELECT (SELECT …``, whose every
        point wants a value) and a target may write, so that the text may hold invented text: the
        latest point, of the deepest nesting the engine takes, where the grammar's shortest
        completion ends the text (its value invented, and counted so). The depths are halved
        (the engine takes the shallower of two texts where it takes the deeper): a loop of 256
        brackets costs a few completions, not hundreds."""
        text = self.checker.text
        floor = self._target_floor()
        latest: dict[int, int] = {}  # the latest point at each depth of nesting
        for lexeme in _TAKE_BACK_LEXEME.finditer(text, floor):
            end = len(text[: lexeme.start()].rstrip())
            if end > floor and text[floor:end].strip() and text[lexeme.start()] not in _OPERATOR_MARKS:
                latest[open_brackets(text[:end])] = end
        depths = sorted(latest)
        found: tuple[int, str] | None = None
        low, high = 0, len(depths) - 1
        while low <= high:
            middle = (low + high) // 2
            point = self._completed_at(latest[depths[middle]], check)
            if point is None:
                high = middle - 1
            else:
                found, low = point, middle + 1
        return found

    def _completed_at(self, end: int, check: Callable[[str], str | None]) -> tuple[int, str] | None:
        """(``end``, the grammar's shortest completion there) where that ends the text and ``check``
        takes it; else ``None``. A completion that would be glued to the word before it is
        written after a space (``SELECT 0``, not the name ``SELECT0``)."""
        text = self.checker.text
        with self.checker.trial() as trial:
            trial.rollback_chars(end)
            completion = shortest_completion(trial, max_nodes=500)
            if completion and is_word_char(text[end - 1 : end]) and is_word_char(completion[0]):
                completion = " " + completion
                if trial.feed(completion) != len(completion) or not trial.is_complete:
                    return None
        if completion is None:
            return None
        return (end, completion) if check(text[:end] + completion) is None else None

    def _chosen_floor(self) -> int:
        """Where the text that no repair of the draft's own text wrote ends: the target's,
        forced text, a completion (0 where there is none)."""
        chosen = [e for e in self.events if isinstance(e, Correction) and e.source != "repair" and e.text]
        return max((e.offset + len(e.text) for e in chosen), default=0)

    def _target_floor(self) -> int:
        """Where the target's text ends (0 where it wrote none): what an engine rejects may be
        taken back with the edits, forced text and closing marks in it, never the model's text."""
        written = [e for e in self.events if isinstance(e, Correction) and e.source in ("target", "healed")]
        return max((e.offset + len(e.text) for e in written), default=0)

    def _take_back_unfinished(self, reach: int = _TAKE_BACK_LEXEMES) -> str | None:
        """The draft's last words, which only invented text could finish (``WHERE id = ``, a
        dangling JSON key), taken back a lexeme at a time (``reach`` at most, never before
        ``take_back_floor``, though all the text after it may go, nor to an empty text) to where
        closing marks alone end the text.
        An operator is taken back with its left operand (``AND b.pages >`` whole, not ``>``
        alone: ``b.pages`` would stand as a condition the draft never wrote), a call with its
        name (``HAVING COUNT(*) >`` whole, not ``(*) >``: ``COUNT`` would stand as a column), and
        a name's qualifier with the name it was to qualify (``OR T2.`` whole: ``OR T2`` would
        make the table a column; where no close is found that far back, the ``.`` or the
        brackets alone). That close, with the words taken back recorded as an ``unfinished``
        cut, or ``None``."""
        text = self.checker.text
        floor = self.take_back_floor
        starts = [m.start() for m in _TAKE_BACK_LEXEME.finditer(text, max(floor, len(text) - 1024))]
        comment = self._trailing_comment(text, starts)
        starts = [start for start in starts if start < comment][-reach:]
        operators = self._operators(text, starts)
        end = self._close_point(text, starts, floor, operators, whole_names=True)
        end = self._close_point(text, starts, floor, operators, whole_names=False) if end is None else end
        if end is None:
            return None
        with self.checker.trial() as trial:
            trial.rollback_chars(end)
            closing = shortest_close(trial)
        self.emit(Cut(end, text[end:], "unfinished", self.stats.draft_calls, detail="taken back to a close"))
        self.checker.rollback_chars(end)
        return closing

    def _draft_left_out(self) -> bool:
        """Whether text the draft wrote was left out as unrepaired: then the text's end is no
        end the draft wrote, and taking it back further would leave a stub of its answer."""
        return any(isinstance(e, Cut) and e.reason == "unrepaired" for e in self.events)

    def _trailing_comment(self, text: str, starts: list[int]) -> int:
        """Where a comment the text ends in begins (``AND -- only finished races``), or
        ``len(text)``: the earliest of ``starts`` from which the rest is text the grammar
        ignores, and which the checker reads as such (after that text and a line's end it
        expects what it expected before it; inside ``'x -- y'`` it does not). The words of a
        comment are one lexeme for the take-back, never each a point to take back to."""
        ignored = self.grammar.ignored_text
        for start in starts:
            rest = text[start:]
            if is_word_char(rest[:1]) or not rest.strip() or not ignored.fullmatch(rest + "\n"):
                continue
            with self.checker.trial() as trial:
                trial.rollback_chars(start)
                before = trial.allowed_bytes()
                if trial.feed(rest + "\n") == len(rest) + 1 and trial.allowed_bytes() == before:
                    return start
        return len(text)

    def _operators(self, text: str, starts: list[int]) -> set[int]:
        """The ``starts`` of lexemes of operator marks, less those the grammar forced text into
        (``/`` + forced ``*``: a comment's opening, no operator with a left operand)."""
        forced = [e.offset for e in self.events if isinstance(e, Correction) and e.source == "forced"]
        ends = [*starts[1:], len(text)]
        return {
            start
            for start, end in zip(starts, ends, strict=False)
            if text[start] in _OPERATOR_MARKS and not any(start < at < end for at in forced)
        }

    def _close_point(
        self, text: str, starts: list[int], floor: int, operators: set[int], *, whole_names: bool
    ) -> int | None:
        """Where closing marks alone end ``text`` taken back to one of the last lexemes'
        ``starts`` (see ``_take_back_unfinished``), or ``None``."""
        for start in reversed(starts):
            end = len(text[:start].rstrip())
            if end < floor or not text[:end].strip():
                return None
            if start in operators or (whole_names and _splits_name(text, start)):
                continue
            with self.checker.trial() as trial:
                trial.rollback_chars(end)
                closing = shortest_close(trial)
            if closing is not None and not (is_word_char(text[end - 1 : end]) and is_word_char(closing[:1])):
                return end
        return None

    async def _write_to_close(self, why: str) -> tuple[str | None, bool]:
        """The target writes on a terminal at a time, within ``finish_tokens``, until a few marks
        close the text (``shortest_close``) at the earliest point of what it wrote; that close
        (the text taken back to that point), or ``None`` when its budget ran out first. A step
        that ends inside a terminal at its token limit (a model repeating itself in one name)
        is taken back, and the target stops, as is one that ends the text in a loop
        (``_loops``: a unit written a fourth time in a row; then ``True`` is returned with the
        close, and the target writes no more); one that adds only white space is followed by a
        longer one."""
        start = len(self.checker.text)
        closing = shortest_close(self.checker)
        budget = self.limits.finish_tokens
        first: Continuation | None = None
        tokens = 0
        terminals = 1
        looped = False
        while closing is None and budget > 0 and terminals <= _MAX_STEP_TERMINALS:
            step_start = len(self.checker.text)
            step = await self._target_writes(
                max_new_tokens=min(budget, self.limits.repair_tokens), finish=False, min_terminals=terminals
            )
            if step is None:
                break
            budget -= max(step.tokens, 1)
            looped = step.stop_reason == "repeats" or self._loops(step)
            if looped or step.stop_reason == "max_new_tokens":
                self.checker.rollback_chars(step_start)
                break
            first = first or step
            tokens += step.tokens
            terminals = 1 if step.text.strip() else terminals + 1
            closing = self._earliest_close(step_start)
        if first is not None and len(self.checker.text) > start:
            self._emit_target(start, first, self.checker.text[start:], "finish", why, tokens)
        return closing, looped

    def _loops(self, step: Continuation) -> bool:
        """Whether the target's step ends the text in a loop (``_loops.text_repeats``): across
        steps, each a terminal or two, as within one."""
        return bool(step.text.strip()) and text_repeats(self.checker.text[-256:].encode("utf-8"))

    def _earliest_close(self, start: int) -> str | None:
        """Whether a few marks close the text where the target's step ended: at its end (not after
        a word it may not have finished, ``AV`` of ``AVG``, nor a bracket it opened), or before a
        separator it began the next element with (a step ends inside the next terminal: ``"x",``
        could have closed after ``"x"``). The text is taken back to that point and the close returned;
        ``None`` if there is none. A close may end a string the draft opened, not one the target
        opened (``""``)."""
        text = self.checker.text
        ends = []
        if not is_word_char(text[-1:]) and text.rstrip()[-1:] not in _OPENERS:  # not ``AVG()``
            ends.append(len(text))
        before = len(text.rstrip()) - 1
        if before > start and text[before] in _SEPARATORS:
            ends.append(len(text[:before].rstrip()))
        for end in sorted(ends):
            with self.checker.trial() as trial:
                trial.rollback_chars(end)
                closing = shortest_close(trial)
            if closing is None or (QUOTES & set(closing) and QUOTES & set(text[start:end])):
                continue
            self.checker.rollback_chars(end)
            return closing
        return None

    def _completion_or_cut(self, start: int) -> str | None:
        """The grammar's shortest completion of the text; when there is none, what the target
        wrote from ``start`` on is taken back (it leads nowhere the search can see) and the
        completion is looked for from there, then, as the last resort, further back."""
        closing = shortest_completion(self.checker)
        if closing is None and len(self.checker.text) > start:
            self._cut(start, "the target's text could not be completed")
            closing = shortest_completion(self.checker)
        return closing if closing is not None else self._completable_before()

    def _completable_before(self) -> str | None:
        """The text taken back a lexeme at a time (``_CUT_BACK_LEXEMES`` at most) to where the
        grammar's completion is found, recorded as an unrepaired cut: a result that says what it
        left out rather than none. That completion, or ``None``."""
        text = self.checker.text
        window = max(0, len(text) - 4096)
        starts = [m.start() for m in _LEXEME.finditer(text, window)][-_CUT_BACK_LEXEMES:]
        for end in reversed(starts):
            end = len(text[:end].rstrip())
            with self.checker.trial() as trial:
                trial.rollback_chars(end)
                closing = shortest_completion(trial, max_nodes=500)
            if closing is not None and not (is_word_char(text[end - 1 : end]) and is_word_char(closing[:1])):
                # (not glued to the word before it: ``CASE`` + ``0`` would be the name ``CASE0``)
                self._cut(end, "the text could not be completed: taken back to where it can")
                return closing
        return None

    def _cut(self, start: int, detail: str) -> None:
        self.emit(Cut(start, self.checker.text[start:], "unrepaired", self.stats.draft_calls, detail=detail))
        self.checker.rollback_chars(start)

    async def _likeliest(self, edit: repair.Edit) -> repair.Edit:
        """Of an edit and its ties (equally supported by the draft's text), the one the target
        finds likeliest, scored in one batched forward pass; without a target, ``edit``. A tie
        that drops more of the draft's text than ``edit`` is not scored: a shorter text is
        likelier, so the target would prefer dropping (`` carrot"}`` over escaping a quote)."""
        if not edit.ties:
            return edit
        target = await self._get_target()
        if target is None:
            return replace(edit, ties=())
        candidates = _dropping_no_more(edit, edit.ties)
        if len(candidates) == 1:
            return replace(candidates[0], ties=())
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


_MAX_FORCED_LETTERS = 32


def forced_letters(checker: Checker) -> str:
    """The letters that must follow ``checker``'s text, which ends in a word: each the one letter
    the grammar allows next, in either case (a keyword read without case), written in the case of
    the word's last letter; empty where none is forced. The checker is not modified."""
    text = checker.text
    upper = text[-1:].isupper()
    letters = ""
    with checker.trial() as trial:
        while len(letters) < _MAX_FORCED_LETTERS:
            allowed = {chr(b).lower() for b in trial.allowed_bytes()}
            letter = next(iter(allowed)) if len(allowed) == 1 else ""
            if not (letter.isascii() and letter.isalpha()):
                break
            letter = letter.upper() if upper else letter
            if trial.feed(letter) != 1:
                break
            letters += letter
    return letters


def _dropping_no_more(edit: repair.Edit, ties: tuple[repair.Edit, ...]) -> tuple[repair.Edit, ...]:
    """``edit`` and those of its ties that drop no more of the draft's text than it does (what an
    edit removes beyond what it writes)."""

    def dropped(e: repair.Edit) -> int:
        return max(len(e.removed) - len(e.text), 0)

    return (edit, *(e for e in ties if dropped(e) <= dropped(edit)))


def _splits_name(text: str, start: int) -> bool:
    """Whether taking ``text`` back to ``start`` leaves a name that was not all the draft wrote
    of it: a qualifier without its name (``_dangling_qualifier``), or a call's name without the
    brackets written right after it (``COUNT`` of ``COUNT(*)``)."""
    called = text[start : start + 1] == "(" and start > 0 and is_word_char(text[start - 1])
    return called or _dangling_qualifier(text, start)


def _dangling_qualifier(text: str, start: int) -> bool:
    """Whether ``text`` ends at ``start`` with a name and a ``.`` after it, nothing after that
    (``T2.``: the first part of a qualified name the draft did not finish)."""
    return (
        text[start:].strip() == "."
        and start > 0
        and is_word_char(text[start - 1])
        and bool(re.search(r"(?<![\w.])[A-Za-z_]\w*$", text[:start]))
    )
