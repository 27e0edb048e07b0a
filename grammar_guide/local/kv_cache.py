"""The KV cache of one user of a shared model: keeps the longest common prefix between calls."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .batching import model_forward, model_score

if TYPE_CHECKING:
    import torch

    from .batching import Forward, Score
    from .loading import LoadedModel

__all__ = ["KVCache"]


class KVCache:
    """One user's KV cache over a shared model, and the token ids it holds.

    ``advance(ids)`` makes the cache hold ``ids`` and returns the logits that follow them: the
    longest common prefix with what the cache already holds is kept (the cache is cropped, not
    re-filled) and only the rest is fed to the model.

    ``forward`` runs the model (by default ``model_forward``, in the calling thread; a
    ``TargetModel`` passes its ``ForwardBatcher.run`` to batch its generations' steps), and
    ``score`` the tails of ``tail_log_probs`` (by default ``model_score``; a ``TargetModel`` passes
    ``ForwardBatcher.score``, so that scoring shares those passes).
    ``lock`` is held by whoever decodes with this cache, for as long as it relies on what the
    cache holds (several users may share a cache, one at a time).
    """

    def __init__(self, lm: LoadedModel, forward: Forward | None = None, score: Score | None = None) -> None:
        self.lm = lm
        self.forward: Forward = forward if forward is not None else self._own_forward
        self.score: Score = score if score is not None else self._own_score
        self.lock = threading.RLock()
        self.ids: list[int] = []
        self._cache: Any = None
        self._last_logits: torch.Tensor | None = None
        self._rows: Any = None  # the logits of the last ``verify``
        #: Tokens fed to the model so far, and in how many forward passes.
        self.prefilled_tokens = 0
        self.forward_passes = 0
        #: Changes whenever the cache changes (for users that remember what it held).
        self.generation = 0

    def _own_forward(self, cache: Any, past: int, new: list[int], keep: int) -> tuple[torch.Tensor, Any]:
        return model_forward(self.lm, cache, past, new, keep)

    def _own_score(self, cache: Any, past: int, news: list[list[int]]) -> list[torch.Tensor]:
        return model_score(self.lm, cache, past, news)

    def reset(self) -> None:
        self.generation += 1
        self.ids = []
        self._cache = None
        self._last_logits = None

    def common_prefix(self, ids: list[int]) -> int:
        held = self.ids  # replaced, never changed in place: another thread may read it
        n = min(len(ids), len(held))
        i = 0
        while i < n and ids[i] == held[i]:
            i += 1
        return i

    def advance(self, ids: list[int]) -> torch.Tensor:
        """Logits (1-D, float32, on the model's device) for the token after ``ids``."""
        if not ids:
            raise ValueError("cannot run a model on an empty sequence")
        keep = self.common_prefix(ids)
        if keep == len(ids) == len(self.ids) and self._last_logits is not None:
            return self._last_logits
        keep = min(keep, len(ids) - 1)
        self.generation += 1
        if self._cache is not None and keep < len(self.ids):
            # A negative count removes that many tokens (in every transformers version).
            self._cache.crop(keep - len(self.ids))
        if keep == 0:
            self._cache = None
        new = ids[keep:]
        rows, self._cache = self.forward(self._cache, keep, new, 1)
        self.ids = list(ids)
        self.prefilled_tokens += len(new)
        self.forward_passes += 1
        self._last_logits = rows[-1]
        return rows[-1]

    def verify(self, ids: list[int], guess: list[int]) -> torch.Tensor:
        """Logits after ``ids`` and after each prefix of ``ids + guess``, from one forward pass.

        Row ``i`` (``0 <= i <= len(guess)``) holds the logits for the token after
        ``ids + guess[:i]``. The cache is left holding ``ids + guess``; ``keep`` then drops the
        guessed tokens that were wrong.
        """
        import torch

        if not ids or not guess:
            raise ValueError("verify needs a context and a guess")
        keep = self.common_prefix(ids)
        last = self._last_logits if keep == len(ids) == len(self.ids) else None
        reuse = last is not None
        self.generation += 1
        if not reuse:
            keep = min(keep, len(ids) - 1)
            if self._cache is not None and keep < len(self.ids):
                self._cache.crop(keep - len(self.ids))
            if keep == 0:
                self._cache = None
        new = ids[keep:] + guess
        rows, self._cache = self.forward(self._cache, keep, new, len(guess) + (0 if reuse else 1))
        if last is not None:
            rows = torch.cat([last[None], rows])
        self.ids = list(ids) + list(guess)
        self.prefilled_tokens += len(new)
        self.forward_passes += 1
        self._last_logits = rows[-1]
        self._rows = rows
        return rows

    def keep(self, n: int) -> None:
        """Drop all but the first ``n`` tokens of the last ``verify`` (its context included)."""
        drop = len(self.ids) - n
        if drop < 0 or drop > len(self._rows) - 1:
            raise ValueError(f"keep({n}) outside the last verify")
        if drop:
            self.generation += 1
            self._cache.crop(-drop)
            self.ids = self.ids[:n]
            self._last_logits = self._rows[len(self._rows) - 1 - drop]

    def tail_log_probs(self, ids: list[int], tails: list[list[int]]) -> list[float]:
        """The log-probability of each of ``tails`` after ``ids``: the cache is left holding
        ``ids``, and the tails are scored after it (``score``: one batched pass of its own, or
        rows of the batcher's passes)."""
        import torch

        first = torch.log_softmax(self.advance(ids), dim=-1)
        totals = [float(first[t[0]]) if t else 0.0 for t in tails]
        longer = [i for i, t in enumerate(tails) if len(t) > 1]
        if not longer:
            return totals
        # Each tail's tokens but the last: the logits at each position give the next token's.
        rows = self.score(self._cache, len(ids), [tails[i][:-1] for i in longer])
        self.forward_passes += 1
        self.prefilled_tokens += sum(len(tails[i]) - 1 for i in longer)
        for i, logits in zip(longer, rows, strict=True):
            log_probs = torch.log_softmax(logits, dim=-1)
            index = torch.tensor(tails[i][1:], device=log_probs.device)
            totals[i] += float(log_probs.gather(1, index[:, None]).sum())
        return totals
