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
several threads) each decode with a KV cache of their own (a ``Slot``), up to ``batch`` at a
time; their forward passes run together, one pass for all their steps (``ForwardBatcher``). What
each writes is what it would write alone (greedy; sampling with a seed is reproducible for calls
one at a time).

``TargetModel`` wires the parts: ``loading`` (the model), ``slots`` (the calls' caches),
``batching`` (the shared passes), ``token_mask`` (the matchers) and ``decoding`` (the steps of
one continuation).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .batching import ForwardBatcher
from .decoding import Continuation, Decoding, StopRule
from .kv_cache import KVCache
from .loading import LoadedModel, load_model
from .lookup import LookupCache, TokenLookup
from .sampling import Sampler
from .slots import Slot, SlotPool
from .token_guards import word_start_mask
from .token_mask import MatcherCache

if TYPE_CHECKING:
    from .._grammar import Grammar

__all__ = ["TargetModel"]


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
        self.lm = lm
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.batch = batch
        #: Runs the forward passes of this target's calls, batched across concurrent calls.
        self.batcher = ForwardBatcher(lm, batch)
        #: The KV cache of this target's calls. A local draft over the same model may share it
        #: (``TransformersDraft.from_target``): each then reuses what the other computed.
        self.kv_cache = KVCache(lm, self.batcher.run, self.batcher.score)
        #: Guesses of the next tokens, run through the model in one forward pass (``None`` with
        #: ``lookup=0``); what the target writes does not depend on them.
        self.lookup = TokenLookup(lookup) if lookup else None
        #: What each call decodes with; the first slot holds the cache and lookup above,
        #: concurrent calls get more (up to ``batch``).
        self.slots = SlotPool(
            Slot(self.kv_cache, self.lookup, Sampler(temperature, top_p, seed)), batch, self._new_slot
        )
        #: The grammars' token matchers, built once per grammar.
        self.matchers = MatcherCache(lm)
        self._word_starts = functools.cache(functools.partial(word_start_mask, lm))
        self._state = threading.Lock()  # the counters
        self._worker = concurrent.futures.ThreadPoolExecutor(batch, thread_name_prefix="grammar-guide-target")
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
        rule = StopRule(max_new_tokens, finish, min_terminals)
        with self.slots.hold(context) as slot, self.batcher.member():
            decoding = Decoding(lm, self.matchers, grammar, text, kept, healed, rule, self._word_starts)
            saved = min(slot.kv.common_prefix(context), len(context) - 1)
            with self._state:
                self.prefill_tokens_saved += saved
                self.prefill_tokens += len(context) - saved
            continuation = decoding.run(LookupCache(slot.kv, slot.lookup), context, slot.sampler, self.batcher, on_text)
            with self._state:
                self.full_masks += decoding.full_masks
                self.choices += decoding.choices
                self.last_token_ids = tuple(decoding.token_ids)
            return continuation

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
        part would add the same to each). The tails are rows of the batcher's passes, shared
        with concurrent calls' steps. No grammar is involved; the texts are taken as they are."""
        with self.lm.lock:  # the tokenizers
            ids = [self.lm.text_ids(t) for t in texts]
            shared = 0
            while ids and all(len(i) > shared for i in ids) and len({i[shared] for i in ids}) == 1:
                shared += 1
            context = self.lm.prompt_ids(prompt) + (ids[0][:shared] if ids else [])
        with self.slots.hold(context) as slot, self.batcher.member():
            return slot.kv.tail_log_probs(context, [i[shared:] for i in ids])

    async def alog_likelihoods(self, prompt: str, texts: list[str]) -> list[float]:
        """``log_likelihoods`` in this target's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(self.log_likelihoods, prompt, texts))

    def _new_slot(self, index: int) -> Slot:
        """The slot of the ``index``-th concurrent call: a KV cache, guesses and a sampler of its
        own (seeded ``seed + index``)."""
        seed = None if self.seed is None else self.seed + index
        lookup = TokenLookup(self.lookup.size) if self.lookup is not None else None
        kv = KVCache(self.lm, self.batcher.run, self.batcher.score)
        return Slot(kv, lookup, Sampler(self.temperature, self.top_p, seed))
