"""``TransformersDraft``: a local Hugging Face causal LM as the draft, with KV-cache backtracking.

Install with ``pip install 'grammar-guide[local]'``. The draft writes freely (no mask) and keeps its
KV cache between calls: when the guide loop cuts the text at an invalid byte and corrects it, the
next call keeps the cached tokens that still lie inside the new accepted text, re-tokenizes only
the bytes after that boundary (canonically, healing the last token so the model can re-choose
it), and continues. ``call.prefill_tokens_saved`` says how many tokens were reused.

The loading code and the prompt format are those of ``grammar_guide.local``; a draft and a
target can share one loaded model and its KV cache (``TransformersDraft.from_target(target)``).
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grammar_guide import DraftCall, SyncDraft
from grammar_guide.local import (
    ForwardBatcher,
    KVCache,
    LoadedModel,
    LookupCache,
    Sampler,
    Slot,
    SlotPool,
    TokenLookup,
    healing_mask,
    load_model,
)

# Guesses are not cut at a call's last token: the guide usually resumes the draft right there,
# and the next call then reads the guess's logits (measured on json_keys, n=10: 41 -> 35 forward
# passes). A guess at the very end of a run is wasted (about half a step).
GUESS_PAST_END = 1 << 30

if TYPE_CHECKING:
    from grammar_guide.local import TargetModel

__all__ = ["TransformersDraft"]

#: Prompts whose answer ids a draft remembers (the rows of a batch job in flight, and some).
_KNOWN_ANSWERS = 256


@dataclass(eq=False)
class _Decoder:
    """A draft's guesses and sampler on one KV cache."""

    cache: LookupCache
    sampler: Sampler


def _new_slot(like: KVCache, index: int) -> Slot:
    """Another cache over ``like``'s model and forward passes, for the ``index``-th concurrent call."""
    return Slot(KVCache(like.lm, like.forward, like.score), None, Sampler())


class TransformersDraft(SyncDraft):
    """A local causal LM that drafts text, streaming it token by token.

    Build one with ``TransformersDraft.load()`` (the default SmolLM2-135M-Instruct, or any Hugging
    Face causal LM by id or folder) or ``TransformersDraft.from_target(target)`` to share the
    target's loaded model. Greedy by default; ``temperature``/``top_p`` with a ``seed`` sample.

    The draft guesses up to ``lookup`` next tokens from the tokens so far and runs them through
    the model in one forward pass (``TokenLookup``); the logits of the guessed tokens it then
    writes are already there. It writes the same tokens as one-at-a-time decoding, in fewer
    passes on repetitive text. ``lookup=0`` turns guessing off.
    """

    continues_prefix = True
    rereads_prompt = False  # the prompt and accepted text stay in the KV cache between calls

    def __init__(
        self,
        lm: LoadedModel,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        lookup: int = 5,
        kv_cache: KVCache | None = None,
        batch: int = 8,
        slots: SlotPool | None = None,
    ) -> None:
        if lookup < 0:
            raise ValueError("lookup must be >= 0")
        if batch < 1:
            raise ValueError("batch must be >= 1")
        if kv_cache is not None and kv_cache.lm is not lm:
            raise ValueError("kv_cache belongs to another model")
        self.lm = lm
        self.name = f"transformers:{lm.name}"
        self._temperature, self._top_p, self._seed, self._lookup_size = temperature, top_p, seed, lookup
        if slots is None:
            if kv_cache is None:
                batcher = ForwardBatcher(lm, batch)
                kv_cache = KVCache(lm, batcher.run, batcher.score)
                slots = SlotPool(Slot(kv_cache, None, Sampler()), batch, functools.partial(_new_slot, kv_cache))
            else:  # one cache shared with its owner: one call at a time
                slots = SlotPool(Slot(kv_cache, None, Sampler()), 1, functools.partial(_new_slot, kv_cache))
        # Concurrent calls (rows of a batch job) each decode with a KV cache of their own, taken
        # step by step from ``slots`` (the one holding most of the call's text), so that they do
        # not crop one another's caches, and their steps share forward passes (the batcher).
        self._slots = slots
        self._kv = kv_cache if kv_cache is not None else slots.first.kv
        # Per cache: the guesses (one for all calls on it: a guess made at the end of a call
        # still serves the next one when nothing touched the cache in between) and a sampler.
        self._decoders: dict[Slot, _Decoder] = {}
        self._decoders_lock = threading.Lock()
        #: Guesses of the next tokens on the first cache, checked in one forward pass (``None``
        #: with ``lookup=0``).
        self.lookup = self._decoder(slots.first).cache.lookup
        # The answer's ids per prompt as this draft last knew them (the model's own tokens, plus
        # the accepted text's); a cache holds a prefix of prompt + answer.
        self._answers: collections.OrderedDict[str, list[int]] = collections.OrderedDict()
        self._answer_ids: list[int] = []

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
    ) -> TransformersDraft:
        """Load ``model`` (the default SmolLM2-135M-Instruct when ``None``); see
        ``grammar_guide.local.load_model`` (``threads``: torch's CPU threads for the process)."""
        lm = load_model(model, device=device, dtype=dtype, threads=threads)
        return cls(lm, temperature=temperature, top_p=top_p, seed=seed, lookup=lookup)

    @classmethod
    def from_target(
        cls,
        target: TargetModel,
        *,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        lookup: int = 5,
    ) -> TransformersDraft:
        """A draft over the target's loaded model: no second copy in memory, and one KV cache.

        Draft and target then read the same text with the same model, so each reuses what the
        other computed: a repair does not prefill the whole text again, and neither does the
        draft when it resumes after one (the cache keeps the longest common prefix)."""
        return cls(
            target.lm,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            lookup=lookup,
            kv_cache=target.kv_cache,
            slots=target.slots,
        )

    @property
    def kv_cache(self) -> KVCache:
        """The KV cache this draft decodes with one call at a time (the target's, for a draft made
        ``from_target``); concurrent calls take more."""
        return self._kv

    @property
    def answer_ids(self) -> tuple[int, ...]:
        """The last call's answer token ids as this draft knew them: the accepted text's, then its own."""
        return tuple(self._answer_ids)

    def __repr__(self) -> str:
        return f"<TransformersDraft {self.lm.name} on {self.lm.device}>"

    # -- streaming ------------------------------------------------------------------------------

    def _decoder(self, slot: Slot) -> _Decoder:
        """This draft's guesses and sampler on ``slot``'s cache (made on first use)."""
        with self._decoders_lock:
            decoder = self._decoders.get(slot)
            if decoder is None:
                index = len(self._decoders)
                seed = None if self._seed is None else self._seed + index
                lookup = TokenLookup(self._lookup_size) if self._lookup_size else None
                decoder = _Decoder(LookupCache(slot.kv, lookup), Sampler(self._temperature, self._top_p, seed))
                self._decoders[slot] = decoder
            return decoder

    def _context(self, prompt: str, accepted: bytes) -> tuple[list[int], list[int], bytes]:
        """The prompt's ids, the answer's ids so far (a new list, this call's) and the healed
        bytes still to re-write."""
        lm = self.lm
        prompt_ids = lm.prompt_ids(prompt)
        known = self._answers.pop(prompt, [])
        # The last token boundary inside the accepted text.
        table = lm.token_bytes
        kept = 0
        offset = 0
        for token in known:
            piece = table[token]
            if not piece or not accepted.startswith(piece, offset):
                break
            offset += len(piece)
            kept += 1
        if offset < len(accepted) and kept:
            # Step back one token so the new bytes can merge with it as canonical tokens would.
            kept -= 1
            offset -= len(table[known[kept]])
        rest = accepted[offset:]
        new_ids, healed = lm.partial_ids(rest)
        answer = known[:kept] + list(new_ids)
        self._answers[prompt] = answer
        while len(self._answers) > _KNOWN_ANSWERS:
            self._answers.popitem(last=False)
        return prompt_ids, answer, healed

    def _step(self, prompt: str, ids: list[int], pending: bytes, call: DraftCall | None) -> int:
        """The next token after ``ids``, on the cache ``prompt``'s calls decode with (filling
        ``call``'s prefill counts, for a call's first step)."""
        lm = self.lm
        with self._slots.hold(ids, owner=prompt) as slot:
            decoder = self._decoder(slot)
            if call is not None:
                saved = min(slot.kv.common_prefix(ids), len(ids) - 1)
                call.tokens_in = len(ids) - saved
                call.prefill_tokens_saved = saved
            logits = decoder.cache.advance(ids, 0 if pending else GUESS_PAST_END)
            if pending:
                logits = logits.masked_fill(~healing_mask(lm, pending), float("-inf"))
            return decoder.sampler.choose(logits)

    def stream_sync(self, call: DraftCall) -> Iterator[str]:
        """Generate up to ``call.request.max_new_tokens`` tokens after the accepted text.

        Yields text as whole characters; stops at EOS, a stop string (which is not yielded), the
        token budget, or when the generator is closed. Fills ``call.tokens_in`` (tokens fed
        before generating), ``call.tokens_out``, ``call.finish_reason`` and
        ``call.prefill_tokens_saved``.
        """
        request = call.request
        lm = self.lm
        table = lm.token_bytes
        eos = lm.eos_token_ids
        stops = tuple(s for s in request.stop if s)
        with lm.lock:  # the tokenizers
            prompt_ids, answer, pending = self._context(request.prompt, request.accepted_text.encode("utf-8"))
        self._answer_ids = answer
        ids = prompt_ids + answer
        call.tokens_out = 0
        raw = bytearray()  # bytes generated after the accepted text
        decoded = 0  # how many of ``raw`` are decoded into ``text``
        text = ""
        sent = 0  # characters of ``text`` yielded
        finish = "length"
        at_stop_string = False
        first: DraftCall | None = call
        try:
            for _ in range(request.max_new_tokens, 0, -1):
                token = self._step(request.prompt, ids, pending, first)
                first = None
                if token in eos or not table[token]:
                    finish = "stop"
                    break
                ids.append(token)
                answer.append(token)
                call.tokens_out += 1
                piece = table[token]
                if pending:
                    if pending.startswith(piece):
                        pending = pending[len(piece) :]
                        continue
                    piece = piece[len(pending) :]
                    pending = b""
                raw += piece
                fresh, decoded = _decode_whole(raw, decoded)
                if not fresh:
                    continue
                text += fresh
                cut = _find_stop(text, stops, sent)
                if cut is not None:
                    if cut > sent:
                        yield text[sent:cut]
                    sent = cut
                    finish = "stop"
                    at_stop_string = True
                    break
                upto = len(text) - _held_back(text, stops)
                if upto > sent:
                    yield text[sent:upto]
                    sent = upto
            if not at_stop_string and sent < len(text):
                yield text[sent:]
            call.finish_reason = finish
        except GeneratorExit:
            call.finish_reason = "closed"
            raise


def _decode_whole(raw: bytearray, start: int) -> tuple[str, int]:
    """Decode the whole UTF-8 characters of ``raw[start:]``; return them and the new offset."""
    end = len(raw)
    while end > start:
        try:
            return raw[start:end].decode("utf-8"), end
        except UnicodeDecodeError:
            end -= 1
            if len(raw) - end > 3:
                # Not a truncated character: an invalid byte; let it through as U+FFFD.
                return raw[start:].decode("utf-8", errors="replace"), len(raw)
    return "", start


def _find_stop(text: str, stops: tuple[str, ...], sent: int) -> int | None:
    """Where the first stop string starts in ``text`` (looking only where it may be new)."""
    best = None
    for stop in stops:
        at = text.find(stop, sent)
        if at != -1 and (best is None or at < best):
            best = at
    return best


def _held_back(text: str, stops: tuple[str, ...]) -> int:
    """How many characters at the end of ``text`` might be the start of a stop string."""
    held = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), held, -1):
            if text.endswith(stop[:n]):
                held = n
                break
    return held
