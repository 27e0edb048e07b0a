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

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from grammar_guide import DraftCall, SyncDraft
from grammar_guide.local import KVCache, LoadedModel, LookupCache, Sampler, TokenLookup, healing_mask, load_model

# Guesses are not cut at a call's last token: the guide usually resumes the draft right there,
# and the next call then reads the guess's logits (measured on json_keys, n=10: 41 -> 35 forward
# passes). A guess at the very end of a run is wasted (about half a step).
GUESS_PAST_END = 1 << 30

if TYPE_CHECKING:
    from grammar_guide.local import TargetModel

__all__ = ["TransformersDraft"]


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
    ) -> None:
        if lookup < 0:
            raise ValueError("lookup must be >= 0")
        if kv_cache is not None and kv_cache.lm is not lm:
            raise ValueError("kv_cache belongs to another model")
        self.lm = lm
        self.name = f"transformers:{lm.name}"
        self._sampler = Sampler(temperature, top_p, seed)
        #: Guesses of the next tokens, checked in one forward pass (``None`` with ``lookup=0``).
        self.lookup = TokenLookup(lookup) if lookup else None
        # One for all calls: a guess made at the end of a call still serves the next one when
        # nothing touched the cache in between (no repair, or a repair that kept to the guess).
        # ``kv_cache`` may be shared with a target over the same model (``from_target``).
        self._cache = LookupCache(kv_cache if kv_cache is not None else KVCache(lm), self.lookup)
        # The prompt's ids and the answer's ids as this draft last knew them (the model's own
        # tokens, plus the accepted text's); the KV cache holds a prefix of prompt + answer.
        self._prompt_ids: list[int] = []
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
        return cls(target.lm, temperature=temperature, top_p=top_p, seed=seed, lookup=lookup, kv_cache=target.kv_cache)

    @property
    def kv_cache(self) -> KVCache:
        """The KV cache this draft decodes with (the target's, for a draft made ``from_target``)."""
        return self._cache.kv

    @property
    def answer_ids(self) -> tuple[int, ...]:
        """The answer's token ids as this draft last knew them: the accepted text's, then its own."""
        return tuple(self._answer_ids)

    def __repr__(self) -> str:
        return f"<TransformersDraft {self.lm.name} on {self.lm.device}>"

    # -- streaming ------------------------------------------------------------------------------

    def _context(self, prompt: str, accepted: bytes) -> tuple[list[int], bytes]:
        """The token ids to run (prompt + answer so far) and the healed bytes still to re-write."""
        lm = self.lm
        prompt_ids = lm.prompt_ids(prompt)
        if prompt_ids != self._prompt_ids:
            self._prompt_ids, self._answer_ids = prompt_ids, []
        # The last token boundary inside the accepted text.
        table = lm.token_bytes
        kept = 0
        offset = 0
        for token in self._answer_ids:
            piece = table[token]
            if not piece or not accepted.startswith(piece, offset):
                break
            offset += len(piece)
            kept += 1
        if offset < len(accepted) and kept:
            # Step back one token so the new bytes can merge with it as canonical tokens would.
            kept -= 1
            offset -= len(table[self._answer_ids[kept]])
        rest = accepted[offset:]
        new_ids, healed = lm.partial_ids(rest)
        self._answer_ids = self._answer_ids[:kept] + list(new_ids)
        return prompt_ids + self._answer_ids, healed

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
        with self.kv_cache.lock, lm.lock:
            ids, pending = self._context(request.prompt, request.accepted_text.encode("utf-8"))
            saved = min(self.kv_cache.common_prefix(ids), len(ids) - 1)
            call.tokens_in = len(ids) - saved
            call.prefill_tokens_saved = saved
            call.tokens_out = 0
        raw = bytearray()  # bytes generated after the accepted text
        decoded = 0  # how many of ``raw`` are decoded into ``text``
        text = ""
        sent = 0  # characters of ``text`` yielded
        finish = "length"
        at_stop_string = False
        cache = self._cache
        try:
            for _ in range(request.max_new_tokens, 0, -1):
                # The cache's lock, not the model's: the model's is taken around the forward pass
                # (a target's batcher may run it, with other users' steps).
                with self.kv_cache.lock:
                    logits = cache.advance(ids, 0 if pending else GUESS_PAST_END)
                    if pending:
                        logits = logits.masked_fill(~healing_mask(lm, pending), float("-inf"))
                    token = self._sampler.choose(logits)
                if token in eos or not table[token]:
                    finish = "stop"
                    break
                ids.append(token)
                self._answer_ids.append(token)
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
