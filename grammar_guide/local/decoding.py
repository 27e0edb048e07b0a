"""Decoding one continuation under the grammar's token mask, step by step.

A ``Decoding`` starts from the matcher at the start of the grammar and the given text's tokens
(the kept ones; the healed bytes are re-chosen). Each step of ``run``:

1. fast-forward: the tokens the grammar forces are appended without a choice, when they keep
   the tokenization canonical;
2. choose: the model's own choice if the grammar allows it, else a choice within the full mask
   (narrowed to the healed bytes while they are re-written); the first full-mask choice records
   the alternatives;
3. guard: a token that repeats a unit, runs a number or name on, or leads into a dead end is
   chosen again (``token_guards``);
4. stop checks: EOS, a token that would end the text in a loop (``_loops``), a complete text
   the model leaves, whole terminals written, nothing can follow, the token budget;
5. text streaming: the new whole characters go to ``on_text``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import TokenMatcherError
from .._loops import text_repeats
from .choosing import alternatives, choose, own_choice
from .healing import healing_mask
from .token_guards import DEAD_END_CANDIDATES, DeadEndProbe, TokenRuns, repeats
from .token_mask import MatcherCache, token_mask

if TYPE_CHECKING:
    import llguidance as llg
    import torch

    from .._events import Alternative
    from .._grammar import Grammar
    from .batching import ForwardBatcher
    from .loading import LoadedModel
    from .lookup import LookupCache
    from .sampling import Sampler

__all__ = ["Continuation", "Decoding", "StopRule", "TextStream", "whole_chars"]


@dataclass(frozen=True)
class Continuation:
    """What the target wrote after ``text``.

    ``text`` is the continuation itself (``text + continuation.text`` is a valid prefix, or a
    complete text when ``complete``). Tokens are counted three ways: ``sampled_tokens`` the model
    chose under the mask, ``forced_tokens`` the grammar forced (appended without sampling), and
    ``healed_tokens`` re-chosen at the boundary by token healing; ``healed_text`` is the tail of
    the given text that was taken back and re-chosen (the given text itself is unchanged).
    ``alternatives`` are the top choices, with their probabilities under the mask, at the first
    step where the model chose. ``stop_reason`` is ``"terminal"`` (whole terminals written),
    ``"complete"`` (nothing can follow), ``"eos"`` (the model ended a complete text: it chose EOS,
    or its own choice would leave the grammar, or, when finishing, only whitespace) or
    ``"max_new_tokens"``.
    """

    text: str
    sampled_tokens: int
    forced_tokens: int
    healed_tokens: int
    healed_text: str
    alternatives: tuple[Alternative, ...]
    complete: bool
    stop_reason: str
    seconds: float

    @property
    def tokens(self) -> int:
        """All tokens generated: sampled, forced and healed."""
        return self.sampled_tokens + self.forced_tokens + self.healed_tokens


@dataclass(frozen=True)
class StopRule:
    """When a continuation ends: after ``min_terminals`` whole terminals (unless ``finish``:
    then only once the text is complete), or at ``max_new_tokens``."""

    max_new_tokens: int
    finish: bool
    min_terminals: int


class Decoding:
    """One continuation of ``text`` (``kept``: its tokens kept; ``healed``: its bytes re-chosen).

    Building a ``Decoding`` takes a matcher for ``grammar`` from ``matchers`` and feeds it the
    text; it raises ``ValueError`` if the text is not a valid prefix. ``word_starts`` gives the
    tokens that go on with a number or a name. ``full_masks`` and ``choices`` count the steps
    that computed the full mask and that chose.
    """

    def __init__(
        self,
        lm: LoadedModel,
        matchers: MatcherCache,
        grammar: Grammar,
        text: str,
        kept: list[int],
        healed: bytes,
        rule: StopRule,
        word_starts: Callable[[], torch.Tensor],
    ) -> None:
        self.started = time.perf_counter()
        self.lm = lm
        matcher, self.captured = matchers.matcher(grammar)
        self.matcher = matcher
        self.grammar = grammar
        self.text = text
        self.kept = kept
        self.healed = healed
        self.rule = rule
        self.word_starts = word_starts
        if not matcher.consume_tokens(kept):
            raise ValueError(f"text is not a valid prefix of {grammar.name}: {text!r}")
        ll = lm.ll_tokenizer
        self.ignored = grammar.ignored_terminals
        self.baseline = _captures_after(matcher, ll, healed, self.ignored) if self.captured else 0
        if healed and matcher.validate_tokens(ll.tokenize_bytes(healed)) == 0:
            raise ValueError(f"text is not a valid prefix of {grammar.name}: {text!r}")
        data = text.encode("utf-8")
        self.given = data[: len(data) - len(healed)]  # the bytes kept as they are
        self.new: list[int] = []
        self.pending = healed  # healed bytes not yet re-written
        self.runs = TokenRuns.after(self.given)
        self.probe: DeadEndProbe | None = None
        self.stream: TextStream | None = None
        self.sampled = self.forced = self.healed_count = 0
        self.alternatives: tuple[Alternative, ...] = ()
        self.chosen_once = False  # a full-mask choice was made (and its alternatives recorded)
        self.stop_reason = "max_new_tokens"
        self.full_masks = self.choices = 0

    @property
    def token_ids(self) -> list[int]:
        """The answer's tokens: the kept tokens of the text, then the generated ones."""
        return self.kept + self.new

    def run(
        self,
        cache: LookupCache,
        context: list[int],
        sampler: Sampler,
        batcher: ForwardBatcher,
        on_text: Callable[[str], None] | None = None,
    ) -> Continuation:
        """Write the continuation: ``context`` (the prompt's and kept tokens) through ``cache``,
        choices by ``sampler``, token guesses unless ``batcher`` is crowded."""
        budget = self.rule.max_new_tokens

        def guesses() -> int:
            # Guessed tokens pay for one caller, not in a crowded batch on a CPU.
            return 0 if batcher.crowded else budget - len(self.new)

        logits = cache.advance(context, guesses())
        # Grammars with dead-end guards (a keyword glued to a word leads to a terminal that
        # matches nothing) look valid to the mask inside such a word: probe each chosen token
        # with the byte checker and choose again when it leads nowhere.
        if self.grammar.guard_terminals:
            self.probe = DeadEndProbe(self.grammar, self.given)
        if on_text is not None:
            self.stream = TextStream(self.lm.token_bytes, self.healed, on_text)
        # The model's own choice (argmax, or without top-p a draw from its whole distribution)
        # can be tried before the mask (``own_choice``); greedy choice ignores top-p.
        own_first = sampler.temperature == 0 or sampler.top_p == 1
        while len(self.new) < budget:
            forced = [] if self.pending else self._forced_tokens()
            if forced:
                reason = self._write_forced(forced)
            else:
                accepting = not self.pending and self.matcher.is_accepting()
                choice = self._choose(logits, accepting, sampler, own_first)
                if isinstance(choice, str):
                    self.stop_reason = choice
                    break
                token = self._guard(logits, choice, sampler)
                if self._ends_text(token, accepting):
                    self.stop_reason = "eos"
                    break
                if self._loops(token):
                    self.stop_reason = "repeats"
                    break
                reason = self._write(token)
            if reason:
                self.stop_reason = reason
                break
            if len(self.new) >= budget:
                break
            logits = cache.advance(context + self.new, guesses())
        return self._continuation()

    # -- the steps ----------------------------------------------------------------------------

    def _forced_tokens(self) -> list[int]:
        """Tokens the grammar forces next (within the budget), if appending them to the answer's
        tokens keeps the tokenization canonical."""
        ff = list(self.matcher.compute_ff_tokens())[: self.rule.max_new_tokens - len(self.new)]
        if not ff:
            return []
        ll = self.lm.ll_tokenizer
        token_bytes = self.lm.token_bytes
        ids = self.token_ids
        # Forced tokens are canonical on their own; check they also are after the last token.
        if len(ids) > 0:
            last = ids[-1]
            joined = token_bytes[last] + ll.decode_bytes(ff)
            if token_bytes[last] and ll.tokenize_bytes(joined) != [last, *ff]:
                return []
        return ff

    def _write_forced(self, ff: list[int]) -> str | None:
        """Append the forced tokens; the stop reason, if they end the continuation."""
        self.matcher.consume_tokens(ff)
        if self.probe is not None:
            self.probe.advance(b"".join(self.lm.token_bytes[t] for t in ff))
        self.new += ff
        if self.stream is not None:
            self.stream.push(ff)
        self.forced += len(ff)
        return self._stop()

    def _choose(self, logits: torch.Tensor, accepting: bool, sampler: Sampler, own_first: bool) -> int | str:
        """The chosen token, or the stop reason when nothing may be chosen."""
        pending = self.pending
        own = int(logits.argmax())
        token = -1
        if own_first and self.chosen_once and not pending:
            token = own_choice(logits, own, self.matcher, accepting, sampler)
        if token < 0:
            self.full_masks += 1
            allowed = token_mask(self.lm, self.matcher)
            if pending:
                allowed &= healing_mask(self.lm, pending, allowed)
            if not bool(allowed.any()):
                return "complete"  # nothing may follow (only possible once the text is complete)
            if accepting and not bool(allowed[own]):
                # The text is complete and the model's own choice leaves the grammar: it has
                # finished the text and goes on to something else (an explanation, a fence).
                return "eos"
            if not self.chosen_once:
                self.alternatives = alternatives(logits, allowed, self.lm.token_bytes, pending)
                self.chosen_once = True
            token = choose(logits, allowed, sampler)
        self.choices += 1
        return token

    def _guard(self, logits: torch.Tensor, token: int, sampler: Sampler) -> int:
        """``token``, or the one chosen instead when a guard refuses it (``token_guards``)."""
        if self.pending:
            return token
        token_bytes = self.lm.token_bytes
        eos = self.lm.eos_token_ids
        if token not in eos and repeats(self.new, token, token_bytes):
            # A small model caught in a loop (``BODY_BODY_BODY_``, ``1000000000``): its next
            # best allowed token instead.
            allowed = token_mask(self.lm, self.matcher)
            allowed[token] = False
            self.full_masks += 1
            if bool(allowed.any()):
                token = choose(logits, allowed, sampler)
        if token not in eos and self.runs.too_long(token_bytes[token]):
            # A number or a name that runs on (``500000001000000100…``): end it, where the
            # grammar allows anything else.
            allowed = token_mask(self.lm, self.matcher) & ~self.word_starts()
            self.full_masks += 1
            if bool(allowed.any()):
                token = choose(logits, allowed, sampler)
        if self.probe is not None and token not in eos and self.probe.leads_nowhere(token_bytes[token]):
            token = self._leading_somewhere(logits, self.probe, token)
        return token

    def _leading_somewhere(self, logits: torch.Tensor, probe: DeadEndProbe, token: int) -> int:
        """Of the best allowed tokens in the model's order, the first that leads somewhere (else
        ``token``)."""
        import torch

        allowed = token_mask(self.lm, self.matcher)
        scores = logits.masked_fill(~allowed, float("-inf"))
        ranked = torch.topk(scores, min(DEAD_END_CANDIDATES, int(allowed.sum()))).indices.tolist()
        for candidate in ranked:
            if candidate in self.lm.eos_token_ids or not probe.leads_nowhere(self.lm.token_bytes[candidate]):
                return int(candidate)
        return token

    def _ends_text(self, token: int, accepting: bool) -> bool:
        """Whether ``token`` ends the text: EOS, or, finishing a complete text, only white space."""
        if token in self.lm.eos_token_ids:
            return True
        return self.rule.finish and accepting and not self.lm.token_bytes[token].strip()

    def _loops(self, token: int) -> bool:
        """Whether writing ``token`` ends the text in a loop (``_loops.text_repeats``): the
        given text's end counts too, where the target wrote before in steps."""
        if self.pending:
            return False
        token_bytes = self.lm.token_bytes
        data = b"".join(token_bytes[t] for t in [*self.new[-64:], token])
        if len(self.new) <= 64:
            data = self.given[-256:] + data
        return text_repeats(data)

    def _write(self, token: int) -> str | None:
        """Append the chosen token; the stop reason, if it ends the continuation."""
        piece = self.lm.token_bytes[token]
        if not self.matcher.consume_token(token):
            raise TokenMatcherError(f"matcher refused an allowed token {token}: {self.matcher.get_error()}")
        self.new.append(token)
        self.runs = self.runs.then(piece)
        if self.stream is not None:
            self.stream.push([token])
        if self.probe is not None:
            self.probe.advance(piece)
        if self.pending:
            self.healed_count += 1
            self.pending = self.pending[len(piece) :] if self.pending.startswith(piece) else b""
        else:
            self.sampled += 1
        return self._stop()

    def _stop(self) -> str | None:
        """The stop rule after a write: ``"complete"`` when nothing can follow, ``"terminal"``
        once ``min_terminals`` whole terminals are written (not when finishing)."""
        if self.pending:
            return None
        if self.matcher.is_stopped():
            return "complete"
        written = self.captured and not self.rule.finish and self._terminals_written() >= self.rule.min_terminals
        return "terminal" if written else None

    def _terminals_written(self) -> int:
        return _terminal_count(self.matcher, self.ignored) - self.baseline

    def _continuation(self) -> Continuation:
        generated = b"".join(self.lm.token_bytes[t] for t in self.new)
        healed = self.healed
        tail = generated[len(healed) :] if generated.startswith(healed) and not self.pending else b""
        text, whole = whole_chars(tail)
        return Continuation(
            text=text,
            sampled_tokens=self.sampled,
            forced_tokens=self.forced,
            healed_tokens=self.healed_count,
            healed_text=_healed_text(self.text, healed),
            alternatives=self.alternatives,
            complete=whole and not self.pending and self.matcher.is_accepting(),
            stop_reason=self.stop_reason,
            seconds=time.perf_counter() - self.started,
        )


class TextStream:
    """Generated tokens as text for a progress callback: whole characters, the healed bytes
    (which re-write the given text) left out."""

    def __init__(self, token_bytes: list[bytes], healed: bytes, on_text: Callable[[str], None]) -> None:
        self._table = token_bytes
        self._skip = len(healed)
        self._raw = bytearray()
        self._sent = 0
        self._on_text = on_text

    def push(self, tokens: list[int]) -> None:
        for t in tokens:
            self._raw += self._table[t]
        fresh, _ = whole_chars(bytes(self._raw[self._skip + self._sent :]))
        if fresh:
            self._sent += len(fresh.encode("utf-8"))
            self._on_text(fresh)


def whole_chars(data: bytes) -> tuple[str, bool]:
    """Decode ``data``, dropping an incomplete UTF-8 character at its end; say if nothing was dropped."""
    for cut in range(0, min(4, len(data)) + 1):
        try:
            return data[: len(data) - cut].decode("utf-8"), cut == 0
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="ignore"), False


def _terminal_count(matcher: llg.LLMatcher, ignored: frozenset[str]) -> int:
    """How many terminals the matcher's text has completed, those the grammar ignores (white
    space) left out: in a grammar read at the character level a multi-byte token such as `` (``
    reports the white space before it complete, which is no terminal written (a step stopped
    after the ``(`` of ``(Monday)``)."""
    return sum(name not in ignored for name, _ in matcher.get_captures())


def _captures_after(matcher: llg.LLMatcher, ll: llg.LLTokenizer, healed: bytes, ignored: frozenset[str]) -> int:
    """How many terminals the whole text completes (the healed bytes consumed, then undone)."""
    if not healed:
        return _terminal_count(matcher, ignored)
    tokens = ll.tokenize_bytes(healed)
    n = matcher.try_consume_tokens(tokens)
    count = _terminal_count(matcher, ignored)
    if n:
        matcher.rollback(n)
    return count


def _healed_text(text: str, healed: bytes) -> str:
    """The tail of ``text`` holding the healed bytes (from the start of the character they begin in)."""
    if not healed:
        return ""
    data = text.encode("utf-8")
    kept_chars = len(data[: len(data) - len(healed)].decode("utf-8", errors="ignore"))
    return text[kept_chars:]
