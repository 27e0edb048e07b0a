"""One forward pass for the decoding steps of concurrent generations over a shared model.

Each generation keeps its own KV cache (its own past length). A step is "feed these ``new``
tokens after a cache holding ``past`` tokens, return the logits of the last ``keep`` positions".
``ForwardBatcher.run`` is that step for one caller; it waits until every generation taking part
(``member()``) has a step ready (and, a moment, for recent callers that are not members, such as
a local draft), then runs them together, so 8 generations cost one pass of 8 rows instead of 8
passes: on 2 CPU cores, SmolLM2-135M, 8 one-token steps took 180-220 ms batched against 700-750 ms
one by one; on a GPU a pass of 8 rows costs about what one row does.

The caches are stacked along the batch: each is padded on the left to the longest past, the new
tokens are right-aligned (a short step is padded on the left of its new tokens), an attention
mask hides the padding and each row gets its own positions. Afterwards each row's cache is cut
back out of the stacked one (a view when it needs no gap removed). Padded keys get no attention
weight, so a row's logits match those of its own pass to float rounding (greedy choices agree).
Rows are padded to the longest step of their pass, so which steps share a pass is chosen by a
cost model: a pass costs ``pass_cost`` tokens' worth of time plus one for each row and column. On
a CPU the tokens cost much (``pass_cost`` 8: a 6-token guess among 8 one-token steps runs in a
pass of its own); on a GPU the pass does (``pass_cost`` 256: everything in one pass). A cold
prefill (no cache yet) runs on its own.

Likelihood scoring joins the same passes (``ForwardBatcher.score``): each text scored is a row
that feeds its tokens after the shared cache and keeps the logits of every position, and neither
changes that cache nor gets one back.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .model_call import call_model

if TYPE_CHECKING:
    import torch

    from .loading import LoadedModel

__all__ = [
    "CPU_PASS_COST",
    "GPU_PASS_COST",
    "MAX_GRACE",
    "Forward",
    "ForwardBatcher",
    "Score",
    "Step",
    "batched_forward",
    "model_forward",
    "model_score",
    "passes_for",
]

#: What a forward pass costs beyond its tokens, in tokens: on a CPU about 8 (SmolLM2-135M, 2
#: busy cores: one token 80-90 ms, 8 rows of one token 165 ms, 8 rows of 6 tokens 425 ms); on a
#: GPU a pass of a few hundred tokens costs about what one token does.
CPU_PASS_COST = 8
GPU_PASS_COST = 256

#: The longest a pass waits for a recent caller that is not a member (seconds).
MAX_GRACE = 0.05

#: A forward step: ``(cache, past, new, keep) -> (rows, cache)``: feed ``new`` after ``cache``
#: (holding ``past`` tokens, ``None`` when 0) and return the float32 logits of the last ``keep``
#: positions (``keep`` rows) and the cache that then holds ``past + len(new)`` tokens.
Forward = Callable[[Any, int, list[int], int], "tuple[torch.Tensor, Any]"]

#: Scoring: ``(cache, past, news) -> rows``: for each of ``news`` (token lists, none empty) fed
#: after ``cache`` (holding ``past >= 1`` tokens), the float32 logits of each of its positions
#: (``len(new)`` rows); ``cache`` is left as it was.
Score = Callable[[Any, int, list[list[int]]], "list[torch.Tensor]"]


def model_forward(lm: LoadedModel, cache: Any, past: int, new: list[int], keep: int) -> tuple[torch.Tensor, Any]:
    """One step of one sequence: the model on ``new`` after ``cache``, as a ``Forward`` (holding
    the model's lock)."""
    import torch

    with lm.lock, torch.inference_mode():
        logits, out_cache = call_model(lm.model, torch.tensor([new], device=lm.device), cache, logits_to_keep=keep)
    rows: torch.Tensor = logits[0].float()
    return rows, out_cache


def model_score(lm: LoadedModel, cache: Any, past: int, news: list[list[int]]) -> list[torch.Tensor]:
    """A ``Score`` in one pass of its own (holding the model's lock): ``news`` right-padded, one
    row each, over copies of ``cache`` (a causal model's rows never attend to the padding after
    their tokens)."""
    import torch

    if not news:
        return []
    width = max(len(n) for n in news)
    shared = copy.deepcopy(cache)
    shared.batch_repeat_interleave(len(news))
    rows = [n + [0] * (width - len(n)) for n in news]
    with lm.lock, torch.inference_mode():
        logits, _ = call_model(lm.model, torch.tensor(rows, device=lm.device), shared)
    return [logits[i, : len(n)].float() for i, n in enumerate(news)]


@dataclass(eq=False)
class Step:
    """One caller's forward step (the arguments of a ``Forward``) and, once run, its result."""

    cache: Any
    past: int
    new: list[int]
    keep: int
    #: Run in a pass of its own: a cache that cannot be stacked (layers other than plain
    #: ``DynamicLayer``, such as sliding windows).
    alone: bool = False
    #: Leave ``cache`` as it is and give no cache back (a row of likelihood scoring).
    read_only: bool = False
    #: The thread that asked for it (steps of one stream come from one thread).
    caller: int = field(default_factory=threading.get_ident)
    rows: Any = None
    out_cache: Any = None
    error: BaseException | None = None
    done: bool = field(default=False)


class ForwardBatcher:
    """Runs the forward steps of concurrent generations over one model, batched.

    A generation enters with ``member()`` for as long as it decodes; its steps go through
    ``run`` (a ``Forward``), which blocks until the step has run. Steps run on this batcher's own
    thread, holding the model's lock, as soon as every member has one waiting. A caller that is
    not a member (a local draft, which holds nothing between its steps) is waited for only
    briefly: while the threads that stepped in the last two passes are not all waiting, a pass
    waits up to a quarter of the last pass's time (at most ``MAX_GRACE`` seconds) for them, so
    steps a moment apart share a pass; it never waits for a lone caller. With one caller each
    step runs alone, exactly as ``model_forward`` runs it. ``score`` (a ``Score``) puts the texts
    of a likelihood scoring in the same passes, a row each. ``max_batch`` bounds the callers of
    one batch (a scoring's rows are one caller's); ``pass_cost`` is the cost model's
    (``passes_for``; by default by the model's device).
    """

    def __init__(self, lm: LoadedModel, max_batch: int = 8, pass_cost: float | None = None) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.lm = lm
        self.max_batch = max_batch
        if pass_cost is None:
            pass_cost = CPU_PASS_COST if str(lm.device).startswith("cpu") else GPU_PASS_COST
        self.pass_cost = pass_cost
        self._cond = threading.Condition()
        self._pending: list[Step] = []
        self._members = 0
        self._draining = False
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="grammar-guide-forward")
        #: Forward passes run, and the steps they ran (their ratio is the mean batch size).
        self.passes = 0
        self.steps = 0
        #: The callers of the last two batches, and how long the last one ran (seconds).
        self._recent: tuple[set[int], set[int]] = (set(), set())
        self._last_seconds = 0.0

    @property
    def crowded(self) -> bool:
        """Whether guessed tokens cost more than the passes they save: more than one member, and
        tokens cost much in a pass (a CPU). One caller's 6-token guess is about 1.6 one-token
        passes; among 8 one-token rows it is 5 more rows' work, and saves no pass for the others."""
        return self._members > 1 and self.pass_cost < GPU_PASS_COST

    @contextlib.contextmanager
    def member(self) -> Iterator[None]:
        """Take part while decoding: until it leaves, a batch waits for this caller's step."""
        with self._cond:
            self._members += 1
        try:
            yield
        finally:
            me = threading.get_ident()
            with self._cond:
                self._members -= 1
                # A caller that has left steps no more for now: no pass waits for it.
                self._recent = (self._recent[0] - {me}, self._recent[1] - {me})
                self._cond.notify_all()

    def run(self, cache: Any, past: int, new: list[int], keep: int) -> tuple[torch.Tensor, Any]:
        """A ``Forward``: the step, run in the next batch."""
        step = Step(cache, past, list(new), keep, alone=past > 0 and not _stackable(cache))
        self._submit([step])
        return step.rows, step.out_cache

    def score(self, cache: Any, past: int, news: list[list[int]]) -> list[torch.Tensor]:
        """A ``Score``: each of ``news`` a read-only row of the next batch."""
        alone = not _stackable(cache)
        steps = [Step(cache, past, list(n), len(n), alone=alone, read_only=True) for n in news]
        self._submit(steps)
        return [s.rows for s in steps]

    def _submit(self, steps: list[Step]) -> None:
        """Put ``steps`` in the next batch and wait until they have run; raise a step's error."""
        if not steps:
            return
        with self._cond:
            self._pending.extend(steps)
            if not self._draining:
                self._draining = True
                self._worker.submit(self._drain)
            self._cond.notify_all()
            self._cond.wait_for(lambda: all(s.done for s in steps))
        for step in steps:
            if step.error is not None:
                raise step.error

    def _drain(self) -> None:
        """Run batches while steps come (on the batcher's thread)."""
        cond = self._cond
        with cond:
            try:
                while True:
                    cond.wait_for(lambda: self._callers_waiting() >= max(self._members, 1) or not self._members)
                    if not self._pending:
                        return
                    cond.wait_for(self._all_recent_waiting, timeout=min(self._last_seconds / 4, MAX_GRACE))
                    batch = self._next_batch()
                    self._recent = (self._recent[1], {s.caller for s in batch})
                    cond.release()
                    started = time.perf_counter()
                    try:
                        self._run(batch)
                    except BaseException as error:  # every caller must wake, with the error
                        for step in batch:
                            if step.rows is None and step.error is None:
                                step.error = error
                    finally:
                        cond.acquire()
                    self._last_seconds = time.perf_counter() - started
                    for step in batch:
                        step.done = True
                    cond.notify_all()
            finally:
                self._draining = False

    def _callers_waiting(self) -> int:
        return len({s.caller for s in self._pending})

    def _next_batch(self) -> list[Step]:
        """The waiting steps of the first ``max_batch`` callers, taken out of the queue (a
        scoring's rows stay together)."""
        callers: set[int] = set()
        batch, rest = [], []
        for s in self._pending:
            if s.caller in callers or len(callers) < self.max_batch:
                callers.add(s.caller)
                batch.append(s)
            else:
                rest.append(s)
        self._pending = rest
        return batch

    def _all_recent_waiting(self) -> bool:
        """Whether every thread that stepped in the last two batches has a step waiting (or the
        batch is full)."""
        waiting = {s.caller for s in self._pending}
        recent = self._recent[0] | self._recent[1]
        return len(waiting) >= self.max_batch or recent <= waiting

    def _run(self, batch: list[Step]) -> None:
        for group in passes_for(batch, self.pass_cost):
            try:
                with self.lm.lock:
                    if len(group) == 1:
                        _run_alone(self.lm, group[0])
                    else:
                        batched_forward(self.lm, group)
            except BaseException as error:  # the callers raise it
                for s in group:
                    s.error = error
            self.passes += 1
            self.steps += len(group)


def _run_alone(lm: LoadedModel, s: Step) -> None:
    """``s`` in a pass of its own, as ``model_forward`` runs it (a read-only step over a copy of
    its cache: the model adds the new tokens to the cache it is given)."""
    cache = copy.deepcopy(s.cache) if s.read_only else s.cache
    s.rows, out_cache = model_forward(lm, cache, s.past, s.new, s.keep)
    if not s.read_only:
        s.out_cache = out_cache


def passes_for(steps: list[Step], pass_cost: float) -> list[list[Step]]:
    """``steps`` split into passes at the least cost: a pass costs ``pass_cost`` plus its rows
    times its longest step's new tokens. Cold prefills (no cache) run on their own, and so do
    steps marked ``alone``."""
    cold = [[s] for s in steps if not s.past or s.alone]
    warm = sorted((s for s in steps if s.past and not s.alone), key=lambda s: len(s.new))
    # best[j]: the least cost of the first j steps (by length), and where its last pass starts.
    best: list[tuple[float, int]] = [(0.0, 0)]
    for j in range(1, len(warm) + 1):
        longest = len(warm[j - 1].new)
        best.append(min((best[i][0] + pass_cost + (j - i) * longest, i) for i in range(j)))
    groups = []
    j = len(warm)
    while j:
        i = best[j][1]
        groups.append(warm[i:j])
        j = i
    return groups[::-1] + cold


def batched_forward(lm: LoadedModel, steps: list[Step]) -> None:
    """Run ``steps`` (each with a cache, ``past >= 1``) in one pass; fill their rows and caches."""
    import torch

    rows_n = len(steps)
    most_past = max(s.past for s in steps)
    most_new = max(len(s.new) for s in steps)
    most_keep = max(s.keep for s in steps)
    device = lm.device
    layers = len(steps[0].cache.layers)
    stacked = []
    for layer in range(layers):
        k0 = steps[0].cache.layers[layer].keys
        keys = k0.new_zeros((rows_n, k0.shape[1], most_past, k0.shape[3]))
        values = torch.zeros_like(keys)
        for i, s in enumerate(steps):
            if s.past:
                keys[i, :, most_past - s.past :] = s.cache.layers[layer].keys[0]
                values[i, :, most_past - s.past :] = s.cache.layers[layer].values[0]
        stacked.append((keys, values))
    cache = _cache_of(stacked)
    input_ids = torch.zeros((rows_n, most_new), dtype=torch.long)
    mask = torch.zeros((rows_n, most_past + most_new), dtype=torch.long)
    positions = torch.zeros((rows_n, most_new), dtype=torch.long)
    for i, s in enumerate(steps):
        n = len(s.new)
        input_ids[i, most_new - n :] = torch.tensor(s.new)
        mask[i, most_past - s.past : most_past] = 1
        mask[i, most_past + most_new - n :] = 1
        # Padding before the new tokens sits at the row's first new position (it is masked).
        positions[i] = torch.arange(s.past - most_new + n, s.past + n).clamp(min=s.past)
    with torch.inference_mode():
        out_logits, done = call_model(
            lm.model,
            input_ids.to(device),
            cache,
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            logits_to_keep=most_keep,
        )
    logits = out_logits.float()
    for i, s in enumerate(steps):
        s.rows = logits[i, most_keep - s.keep :]
        if s.read_only:
            continue
        gap = most_new - len(s.new)
        kept = []
        for layer in done.layers:
            k, v = layer.keys[i : i + 1], layer.values[i : i + 1]
            if gap:
                k = torch.cat([k[:, :, most_past - s.past : most_past], k[:, :, most_past + gap :]], dim=-2)
                v = torch.cat([v[:, :, most_past - s.past : most_past], v[:, :, most_past + gap :]], dim=-2)
            else:
                k, v = k[:, :, most_past - s.past :], v[:, :, most_past - s.past :]
            kept.append((k, v))
        s.out_cache = _cache_of(kept)


def _stackable(cache: Any) -> bool:
    from transformers.cache_utils import DynamicLayer

    layers: list[Any] = getattr(cache, "layers", [])
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _cache_of(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    """A ``DynamicCache`` holding these tensors as they are (the constructor would copy them)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache()
    built: list[Any] = []
    for k, v in layers:
        layer = DynamicLayer()
        layer.lazy_initialization(k, v)
        layer.keys, layer.values = k, v
        built.append(layer)
    cache.layers = built
    return cache
