"""The target model: a local LM that continues a valid prefix under a full token mask.

``TargetModel.continue_text(prompt, text, grammar)`` returns a ``Continuation`` such that
``text + continuation.text`` is still a valid prefix of the grammar (or complete). On the way:

- token healing: ``text`` is tokenized canonically and its last token(s) that a vocabulary token
  could extend are taken back; the first generated token(s) must start with those bytes, so the
  model writes ``orderId`` as the one token it knows rather than ``order`` + ``Id``;
- the mask: llguidance computes which tokens keep the text a valid prefix (EOS only where the
  grammar accepts) and the model picks among them (greedy, or temperature/top-p with a seed);
- fast-forward: bytes the grammar forces are appended as canonical tokens without sampling;
- the stop rule: after ``min_terminals`` whole grammar terminals, at ``max_new_tokens``, when the
  model picks EOS, or when nothing can follow; ``finish=True`` writes until the text is complete.

The KV cache is kept across calls, so a later call only feeds the tokens that differ.

Concurrent calls (``acontinue_text`` from several ``aguide`` runs, or ``continue_text`` from
several threads) each decode with a KV cache of their own, up to ``batch`` at a time; their
forward passes run together, one pass for all their steps (``ForwardBatcher``). What each writes
is what it would write alone (greedy; sampling with a seed is reproducible for calls one at a
time).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import GrammarError
from .._events import Alternative
from .batching import ForwardBatcher
from .healing import healing_mask
from .kv_cache import KVCache
from .loading import LoadedModel, load_model
from .lookup import LookupCache, TokenLookup
from .sampling import Sampler

if TYPE_CHECKING:
    import llguidance as llg
    import torch

    from .._grammar import Grammar

__all__ = ["STEP_MAX_ITEMS", "Continuation", "TargetModel", "bitmask_to_bool"]

#: Earley items llguidance may build for one token mask. Its default (50,000) is too few for a
#: grammar read at the character level (issue 19) at a 49k-token vocabulary: the mask after
#: ``print`` in a small statement grammar needed more, and the matcher then stopped with an error
#: and allowed only EOS. 500,000 items is about 25 ms at llguidance's ~20k items/ms; such masks
#: measured 3-15 ms (SmolLM2, one CPU core).
STEP_MAX_ITEMS = 500_000

_TOP_ALTERNATIVES = 5


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


class TargetModel:
    """A local causal LM that continues text under a grammar's token mask.

    Build one with ``TargetModel.load()`` (the default SmolLM2-135M-Instruct, or any Hugging Face
    causal LM by id or folder). The KV cache is reused between calls. Up to ``batch`` calls run
    at once, each with its own KV cache, and their steps share forward passes (``batch=1``: one
    call at a time); more wait for a free one. Up to ``lookup`` tokens guessed from the text so
    far (``TokenLookup``) are run through the model with each step, so a guessed token the
    target then writes needs no forward pass of its own; ``lookup=0`` turns this off. What the
    target writes is the same either way.
    """

    def __init__(
        self,
        lm: LoadedModel,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        lookup: int = 5,
        batch: int = 8,
    ) -> None:
        if lookup < 0:
            raise ValueError("lookup must be >= 0")
        if batch < 1:
            raise ValueError("batch must be >= 1")
        self._sampler = Sampler(temperature, top_p, seed)
        self.lm = lm
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.batch = batch
        #: Runs the forward passes of this target's calls, batched across concurrent calls.
        self.batcher = ForwardBatcher(lm, batch)
        #: The KV cache of this target's calls. A local draft over the same model may share it
        #: (``TransformersDraft.from_target``): each then reuses what the other computed.
        self.kv_cache = KVCache(lm, self.batcher.run)
        #: Guesses of the next tokens, run through the model in one forward pass (``None`` with
        #: ``lookup=0``); what the target writes does not depend on them.
        self.lookup = TokenLookup(lookup) if lookup else None
        # What one call decodes with; the first is the cache and lookup above, concurrent calls
        # get more (up to ``batch``).
        self._slots = [_Slot(self.kv_cache, self.lookup, self._sampler)]
        self._free = threading.Condition()
        self._state = threading.Lock()  # the matchers and the counters
        self._worker = concurrent.futures.ThreadPoolExecutor(batch, thread_name_prefix="grammar-guide-target")
        self._matchers: dict[str, llg.LLMatcher] = {}
        #: Prompt-and-text tokens that calls took from the KV cache instead of feeding again.
        self.prefill_tokens_saved = 0
        #: Prompt-and-text tokens that calls fed to the model before generating.
        self.prefill_tokens = 0
        #: Steps that computed the full token mask (the others took the model's own choice).
        self.full_masks = 0
        #: Steps that chose a token (sampled or healed; forced tokens need no choice).
        self.choices = 0
        #: The answer's token ids after the last call: the kept tokens of the text, then the
        #: generated ones (for inspection; the prompt's tokens are not included).
        self.last_token_ids: tuple[int, ...] = ()

    @classmethod
    def load(
        cls,
        model: str | None = None,
        *,
        device: str | None = None,
        dtype: Any = None,
        threads: int | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        lookup: int = 5,
        batch: int = 8,
    ) -> TargetModel:
        """Load ``model`` (the default SmolLM2-135M-Instruct when ``None``); see ``load_model``
        (``threads``: torch's CPU threads for the process)."""
        lm = load_model(model, device=device, dtype=dtype, threads=threads)
        return cls(lm, temperature=temperature, top_p=top_p, seed=seed, lookup=lookup, batch=batch)

    def __repr__(self) -> str:
        return f"<TargetModel {self.lm.name} on {self.lm.device}>"

    @property
    def name(self) -> str:
        return self.lm.name

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` takes in this model's tokenizer."""
        return self.lm.count_tokens(text)

    # -- the contract -------------------------------------------------------------------------

    def continue_text(
        self,
        prompt: str,
        text: str,
        grammar: Grammar,
        *,
        max_new_tokens: int = 32,
        finish: bool = False,
        min_terminals: int = 1,
        on_text: Callable[[str], None] | None = None,
    ) -> Continuation:
        """Continue ``text`` (a valid prefix of ``grammar``) as an answer to ``prompt``.

        Stops after ``min_terminals`` whole terminals have been written (grammars loaded from
        Lark), when the model picks EOS where the grammar accepts, when nothing can follow, or at
        ``max_new_tokens``. With ``finish=True`` it writes until the text is complete (EOS, or
        nothing can follow) within ``max_new_tokens``. ``on_text`` is called with the new text
        (whole characters) as each token is written, for progress; the continuation's ``text``
        is what they add up to. Raises ``ValueError`` if ``text`` is not a valid prefix.
        """
        data = text.encode("utf-8")
        lm = self.lm
        with lm.lock:  # the tokenizers
            # Token healing: keep the tokens no vocabulary token could extend; re-choose the rest.
            kept, healed = lm.partial_ids(data)
            context = lm.prompt_ids(prompt) + kept
            lm.healing  # noqa: B018 (built once, before calls share it)
        with self._slot(context) as slot, self.batcher.member():
            return self._continue(
                slot, prompt, text, grammar, context, kept, healed, max_new_tokens, finish, min_terminals, on_text
            )

    async def acontinue_text(
        self,
        prompt: str,
        text: str,
        grammar: Grammar,
        *,
        max_new_tokens: int = 32,
        finish: bool = False,
        min_terminals: int = 1,
        on_text: Callable[[str], None] | None = None,
    ) -> Continuation:
        """``continue_text`` in one of this target's worker threads (up to ``batch`` at once; the
        forward passes all run on the batcher's one thread: torch's CPU thread pool is per
        calling thread). ``on_text`` is called on the event loop's thread."""
        loop = asyncio.get_running_loop()
        relay: Callable[[str], None] | None = None
        if on_text is not None:
            deliver = on_text

            def relay_text(piece: str) -> None:
                loop.call_soon_threadsafe(deliver, piece)

            relay = relay_text
        run = functools.partial(
            self.continue_text,
            prompt,
            text,
            grammar,
            max_new_tokens=max_new_tokens,
            finish=finish,
            min_terminals=min_terminals,
            on_text=relay,
        )
        return await loop.run_in_executor(self._worker, run)

    def log_likelihoods(self, prompt: str, texts: list[str]) -> list[float]:
        """How likely this model finds each of ``texts`` as the answer to ``prompt``: the summed
        log-probability of each text's tokens after the tokens all of them share (the shared
        part would add the same to each), from one batched forward pass over those tails.
        No grammar is involved; the texts are taken as they are."""
        with self.lm.lock:  # the tokenizers
            ids = [self.lm.text_ids(t) for t in texts]
            shared = 0
            while ids and all(len(i) > shared for i in ids) and len({i[shared] for i in ids}) == 1:
                shared += 1
            context = self.lm.prompt_ids(prompt) + (ids[0][:shared] if ids else [])
        with self._slot(context) as slot:
            return slot.kv.tail_log_probs(context, [i[shared:] for i in ids])

    async def alog_likelihoods(self, prompt: str, texts: list[str]) -> list[float]:
        """``log_likelihoods`` in this target's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(self.log_likelihoods, prompt, texts))

    # -- machinery ----------------------------------------------------------------------------

    @contextmanager
    def _slot(self, context: list[int]) -> Iterator[_Slot]:
        """A free slot for one call (the one whose cache holds most of ``context``), held until
        the call ends; a new one while fewer than ``batch`` exist, else wait for one."""
        with self._free:
            self._free.wait_for(lambda: len(self._slots) < self.batch or any(not s.busy for s in self._slots))
            free = [s for s in self._slots if not s.busy]
            if free:
                slot = max(free, key=lambda s: s.kv.common_prefix(context))
            else:
                seed = None if self.seed is None else self.seed + len(self._slots)
                sampler = Sampler(self.temperature, self.top_p, seed)
                lookup = TokenLookup(self.lookup.size) if self.lookup is not None else None
                slot = _Slot(KVCache(self.lm, self.batcher.run), lookup, sampler)
                self._slots.append(slot)
            slot.busy = True
        try:
            with slot.kv.lock:  # a draft sharing the cache waits for the call to end
                yield slot
        finally:
            with self._free:
                slot.busy = False
                self._free.notify()

    def _matcher(self, grammar: Grammar) -> tuple[llg.LLMatcher, bool]:
        import llguidance as llg

        source = grammar.captured_grammar or grammar.llguidance_grammar
        with self._state:
            proto = self._matchers.get(source)
            if proto is None:
                limits = llg.LLParserLimits(step_max_items=STEP_MAX_ITEMS)
                proto = llg.LLMatcher(self.lm.ll_tokenizer, source, log_level=0, limits=limits)
                if proto.is_error():
                    raise GrammarError(f"the matcher rejected grammar {grammar.name}: {proto.get_error()}")
                if len(self._matchers) > 16:
                    self._matchers.clear()
                self._matchers[source] = proto
            return proto.deep_copy(), grammar.captured_grammar is not None

    def _continue(
        self,
        slot: _Slot,
        prompt: str,
        text: str,
        grammar: Grammar,
        context: list[int],
        kept: list[int],
        healed: bytes,
        max_new_tokens: int,
        finish: bool,
        min_terminals: int,
        on_text: Callable[[str], None] | None = None,
    ) -> Continuation:
        started = time.perf_counter()
        lm = self.lm
        ll = lm.ll_tokenizer
        token_bytes = lm.token_bytes
        eos = lm.eos_token_ids
        data = text.encode("utf-8")
        matcher, captured = self._matcher(grammar)
        if not matcher.consume_tokens(kept):
            raise ValueError(f"text is not a valid prefix of {grammar.name}: {text!r}")
        ignored = grammar.ignored_terminals
        baseline = _captures_after(matcher, ll, healed, ignored) if captured else 0
        if healed and matcher.validate_tokens(ll.tokenize_bytes(healed)) == 0:
            raise ValueError(f"text is not a valid prefix of {grammar.name}: {text!r}")

        saved = min(slot.kv.common_prefix(context), len(context) - 1)
        with self._state:
            self.prefill_tokens_saved += saved
            self.prefill_tokens += len(context) - saved
        cache = LookupCache(slot.kv, slot.lookup)
        sampler = slot.sampler
        batcher = self.batcher

        def guesses(limit: int) -> int:
            # Guessed tokens pay for one caller, not in a crowded batch on a CPU.
            return 0 if batcher.crowded else limit

        logits = cache.advance(context, guesses(max_new_tokens))

        # Grammars with dead-end guards (a keyword glued to a word leads to a terminal that
        # matches nothing) look valid to the mask inside such a word: probe each chosen token
        # with the byte checker and choose again when it leads nowhere.
        probe = _DeadEndProbe(grammar, data[: len(data) - len(healed)]) if grammar.guard_terminals else None

        new: list[int] = []
        runs = _Runs.after(data[: len(data) - len(healed)])
        stream = None if on_text is None else _TextStream(token_bytes, healed, on_text)
        pending = healed
        sampled = forced = healed_count = 0
        alternatives: tuple[Alternative, ...] = ()
        stop_reason = "max_new_tokens"
        greedy = sampler.temperature == 0
        # The model's own choice (argmax, or without top-p a draw from its whole distribution)
        # can be tried before the mask (`_own_choice`); greedy choice ignores top-p.
        own_first = greedy or sampler.top_p == 1
        full_masks = choices = 0
        chosen_once = False
        while len(new) < max_new_tokens:
            if not pending:
                ff = self._fast_forward(matcher, kept + new, max_new_tokens - len(new))
                if ff:
                    matcher.consume_tokens(ff)
                    if probe is not None:
                        probe.advance(b"".join(token_bytes[t] for t in ff))
                    new += ff
                    if stream is not None:
                        stream.push(ff)
                    forced += len(ff)
                    reason = self._stop(matcher, captured, baseline, finish, min_terminals, ignored=ignored)
                    if reason:
                        stop_reason = reason
                        break
                    if len(new) >= max_new_tokens:
                        break
                    logits = cache.advance(context + new, guesses(max_new_tokens - len(new)))
                    continue
            accepting = not pending and matcher.is_accepting()
            own = int(logits.argmax())
            token = -1
            if own_first and chosen_once and not pending:
                token = self._own_choice(logits, own, matcher, accepting, sampler)
            if token < 0:
                full_masks += 1
                allowed = self._mask(matcher)
                if pending:
                    allowed &= healing_mask(lm, pending, allowed)
                if not bool(allowed.any()):
                    # Nothing may follow (only possible once the text is complete).
                    stop_reason = "complete"
                    break
                if accepting and not bool(allowed[own]):
                    # The text is complete and the model's own choice leaves the grammar: it has
                    # finished the text and goes on to something else (an explanation, a fence).
                    stop_reason = "eos"
                    break
                token, alts = self._choose(logits, allowed, pending, want_alternatives=not chosen_once, sampler=sampler)
                if not chosen_once:
                    alternatives = alts
                    chosen_once = True
            choices += 1
            if not pending and token not in eos and _repeats(new, token, token_bytes):
                # A small model caught in a loop (``BODY_BODY_BODY_``, ``1000000000``): its next
                # best allowed token instead.
                allowed = self._mask(matcher)
                allowed[token] = False
                full_masks += 1
                if bool(allowed.any()):
                    token, _ = self._choose(logits, allowed, b"", want_alternatives=False, sampler=sampler)
            if not pending and token not in eos and runs.too_long(token_bytes[token]):
                # A number or a name that runs on (``500000001000000100…``): end it, where the
                # grammar allows anything else.
                allowed = self._mask(matcher) & ~self._word_starts
                full_masks += 1
                if bool(allowed.any()):
                    token, _ = self._choose(logits, allowed, b"", want_alternatives=False, sampler=sampler)
            if probe is not None and not pending and token not in eos and probe.leads_nowhere(token_bytes[token]):
                # The best allowed tokens in the model's order, the first that leads somewhere.
                import torch

                allowed = self._mask(matcher)
                scores = logits.masked_fill(~allowed, float("-inf"))
                ranked = torch.topk(scores, min(_DEAD_END_CANDIDATES, int(allowed.sum()))).indices.tolist()
                for candidate in ranked:
                    if candidate in eos or not probe.leads_nowhere(token_bytes[candidate]):
                        token = candidate
                        break
            if token in eos:
                stop_reason = "eos"
                break
            if finish and accepting and not token_bytes[token].strip():
                # Finishing: after a complete text, only trailing whitespace could follow.
                stop_reason = "eos"
                break
            if not matcher.consume_token(token):
                raise RuntimeError(f"matcher refused an allowed token {token}: {matcher.get_error()}")
            new.append(token)
            runs = runs.then(token_bytes[token])
            if stream is not None:
                stream.push([token])
            if probe is not None:
                probe.advance(token_bytes[token])
            if pending:
                healed_count += 1
                piece = token_bytes[token]
                pending = pending[len(piece) :] if pending.startswith(piece) else b""
            else:
                sampled += 1
            reason = self._stop(matcher, captured, baseline, finish, min_terminals, pending, ignored)
            if reason:
                stop_reason = reason
                break
            if len(new) >= max_new_tokens:
                break
            logits = cache.advance(context + new, guesses(max_new_tokens - len(new)))

        with self._state:
            self.full_masks += full_masks
            self.choices += choices
            self.last_token_ids = tuple(kept + new)
        generated = b"".join(token_bytes[t] for t in new)
        tail = generated[len(healed) :] if generated.startswith(healed) and not pending else b""
        continuation, whole = _whole_chars(tail)
        complete = whole and not pending and matcher.is_accepting()
        return Continuation(
            text=continuation,
            sampled_tokens=sampled,
            forced_tokens=forced,
            healed_tokens=healed_count,
            healed_text=_healed_text(text, data, healed),
            alternatives=alternatives,
            complete=complete,
            stop_reason=stop_reason,
            seconds=time.perf_counter() - started,
        )

    def _stop(
        self,
        matcher: llg.LLMatcher,
        captured: bool,
        baseline: int,
        finish: bool,
        min_terminals: int,
        pending: bytes = b"",
        ignored: frozenset[str] = frozenset(),
    ) -> str | None:
        if pending:
            return None
        if matcher.is_stopped():
            return "complete"
        if not finish and captured and _terminal_count(matcher, ignored) - baseline >= min_terminals:
            return "terminal"
        return None

    def _fast_forward(self, matcher: llg.LLMatcher, ids: list[int], budget: int) -> list[int]:
        """Tokens the grammar forces next, if appending them to the answer's tokens ``ids`` keeps
        the tokenization canonical."""
        ff = list(matcher.compute_ff_tokens())[:budget]
        if not ff:
            return []
        ll = self.lm.ll_tokenizer
        # Forced tokens are canonical on their own; check they also are after the last token.
        if len(ids) > 0:
            last = ids[-1]
            joined = self.lm.token_bytes[last] + ll.decode_bytes(ff)
            if self.lm.token_bytes[last] and ll.tokenize_bytes(joined) != [last, *ff]:
                return []
        return ff

    def _own_choice(
        self, logits: torch.Tensor, own: int, matcher: llg.LLMatcher, accepting: bool, sampler: Sampler | None = None
    ) -> int:
        """The model's own choice if the grammar allows it, else -1 (then the full mask is needed).

        Opportunistic masking: greedy, the own choice is the argmax ``own``. Sampling (without
        top-p), it is a draw from the whole distribution; keeping an allowed draw and otherwise
        drawing within the mask gives the distribution of a draw within the mask (rejection
        sampling: p(x) + (1 - p(A)) p(x) / p(A) = p(x) / p(A)). When the text is complete and
        ``own`` leaves the grammar, -1 too: the full-mask step then ends the text.
        """
        sampler = sampler or self._sampler
        candidate = own if sampler.temperature == 0 else sampler.choose(logits)
        if matcher.validate_tokens([candidate]) != 1:
            return -1
        if candidate != own and accepting and matcher.validate_tokens([own]) != 1:
            return -1
        return candidate

    @functools.cached_property
    def _word_starts(self) -> torch.Tensor:
        """The tokens that begin with a word character (go on with a number or a name)."""
        import torch

        starts = [_Runs.starts_word(piece) for piece in self.lm.token_bytes]
        return torch.tensor(starts, dtype=torch.bool, device=self.lm.device)

    def _mask(self, matcher: llg.LLMatcher) -> torch.Tensor:
        bits = matcher.compute_bitmask()
        if matcher.is_error():
            # Its mask would allow only EOS: an incomplete text would look finished.
            raise RuntimeError(f"the token matcher failed: {matcher.get_error().splitlines()[0]}")
        return bitmask_to_bool(bits, self.lm.n_vocab, self.lm.device)

    def _choose(
        self,
        logits: torch.Tensor,
        allowed: torch.Tensor,
        pending: bytes,
        *,
        want_alternatives: bool,
        sampler: Sampler | None = None,
    ) -> tuple[int, tuple[Alternative, ...]]:
        import torch

        sampler = sampler or self._sampler
        scores = logits.masked_fill(~allowed, float("-inf"))
        alternatives: tuple[Alternative, ...] = ()
        if want_alternatives:
            probs = torch.softmax(scores, dim=-1)
            k = min(_TOP_ALTERNATIVES, int(allowed.sum()))
            top = torch.topk(probs, k)
            alts = []
            for p, t in zip(top.values.tolist(), top.indices.tolist(), strict=True):
                piece = self.lm.token_bytes[t]
                if not piece:
                    alts.append(Alternative("", float(p)))  # EOS: end the text here
                    continue
                piece = piece[len(pending) :] if piece.startswith(pending) else b""
                alts.append(Alternative(piece.decode("utf-8", errors="replace"), float(p)))
            alternatives = tuple(alts)
        return sampler.choose(scores), alternatives


_DEAD_END_CANDIDATES = 256
# A unit of 1, 2 or 3 tokens (not white space) is written at most this many times in a row.
_MAX_REPEATS = {1: 6, 2: 4, 3: 4}
# A longer unit of text, white space aside, is written at most this many times in a row: a call
# nested in itself (`` (Date.dayOfWeek`` over and over, its spacing varied: issue 28).
_TEXT_UNIT = (6, 48)
_TEXT_COPIES = 3
_SPACE = re.compile(rb"\s+")


def _repeats(new: list[int], token: int, token_bytes: list[bytes]) -> bool:
    """Whether writing ``token`` after ``new`` repeats a unit of the target's own tokens once more
    than ``_MAX_REPEATS`` allows (white space, such as indentation, may repeat)."""
    seq = [*new[-16:], token]
    for period, most in _MAX_REPEATS.items():
        tail = seq[-period * (most + 1) :]
        if (
            len(tail) == period * (most + 1)
            and all(tail[i] == tail[i - period] for i in range(period, len(tail)))
            and b"".join(token_bytes[t] for t in tail[-period:]).strip()
        ):
            return True
    return _text_repeats(b"".join(token_bytes[t] for t in [*new[-64:], token]))


def _text_repeats(data: bytes) -> bool:
    """Whether ``data``, white space aside, ends in a unit of ``_TEXT_UNIT`` bytes written once
    more than ``_TEXT_COPIES`` allows."""
    text = _SPACE.sub(b"", data)
    copies = _TEXT_COPIES + 1
    shortest, longest = _TEXT_UNIT
    for unit in range(shortest, min(longest, len(text) // copies) + 1):
        tail = text[-unit * copies :]
        if tail == tail[:unit] * copies:
            return True
    return False


#: The longest run of digits, and of word characters, that the target writes before it must end it.
_MAX_DIGITS = 20
_MAX_WORD = 48
#: Bytes of a word: ``_``, letters and digits, and every byte of a non-ASCII character.
_WORD_BYTES = frozenset(b for b in range(256) if b == 0x5F or b >= 0x80 or chr(b).isalnum())


@dataclass(frozen=True)
class _Runs:
    """The digits and word characters the text ends with (bytes), as the target writes on."""

    digits: int = 0
    word: int = 0

    @staticmethod
    def starts_word(piece: bytes) -> bool:
        """Whether ``piece`` begins with a word character (goes on with a number or a name)."""
        return bool(piece) and piece[0] in _WORD_BYTES

    @classmethod
    def after(cls, data: bytes) -> _Runs:
        return cls().then(data[-_MAX_WORD - 1 :])

    def then(self, piece: bytes) -> _Runs:
        digits, word = self.digits, self.word
        for b in piece:
            word = word + 1 if b in _WORD_BYTES else 0
            digits = digits + 1 if 0x30 <= b <= 0x39 and word else 0
        return _Runs(digits, word)

    def too_long(self, piece: bytes) -> bool:
        """Whether writing ``piece`` makes a run longer than the target may write."""
        after = self.then(piece)
        return self.starts_word(piece) and (after.digits > _MAX_DIGITS or after.word > _MAX_WORD)


@dataclass(eq=False)
class _Slot:
    """What one call decodes with: a KV cache, token guesses and a sampler."""

    kv: KVCache
    lookup: TokenLookup | None
    sampler: Sampler
    busy: bool = False


class _TextStream:
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
        fresh, _ = _whole_chars(bytes(self._raw[self._skip + self._sent :]))
        if fresh:
            self._sent += len(fresh.encode("utf-8"))
            self._on_text(fresh)


class _DeadEndProbe:
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


def bitmask_to_bool(bitmask: bytes, n_vocab: int, device: str = "cpu") -> torch.Tensor:
    """llguidance's packed bitmask (one bit per token, little-endian words) as a bool tensor."""
    import numpy as np
    import torch

    bits = np.unpackbits(np.frombuffer(bitmask, dtype=np.uint8), bitorder="little")[:n_vocab]
    mask = torch.from_numpy(bits.view(np.bool_))
    return mask if device == "cpu" else mask.to(device)


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


def _healed_text(text: str, data: bytes, healed: bytes) -> str:
    """The tail of ``text`` holding the healed bytes (from the start of the character they begin in)."""
    if not healed:
        return ""
    kept_chars = len(data[: len(data) - len(healed)].decode("utf-8", errors="ignore"))
    return text[kept_chars:]


def _whole_chars(data: bytes) -> tuple[str, bool]:
    """Decode ``data``, dropping an incomplete UTF-8 character at its end; say if nothing was dropped."""
    for cut in range(0, min(4, len(data)) + 1):
        try:
            return data[: len(data) - cut].decode("utf-8"), cut == 0
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", errors="ignore"), False
