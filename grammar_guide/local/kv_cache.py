"""The KV cache of one user of a shared model: keeps the longest common prefix between calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from .loading import LoadedModel

__all__ = ["KVCache"]


class KVCache:
    """One user's KV cache over a shared model, and the token ids it holds.

    ``advance(ids)`` makes the cache hold ``ids`` and returns the logits that follow them: the
    longest common prefix with what the cache already holds is kept (the cache is cropped, not
    re-filled) and only the rest is fed to the model.
    """

    def __init__(self, lm: LoadedModel) -> None:
        self.lm = lm
        self.ids: list[int] = []
        self._cache: Any = None
        self._last_logits: torch.Tensor | None = None
        self._rows: Any = None  # the logits of the last ``verify``
        #: Tokens fed to the model so far, and in how many forward passes.
        self.prefilled_tokens = 0
        self.forward_passes = 0
        #: Changes whenever the cache changes (for users that remember what it held).
        self.generation = 0

    def reset(self) -> None:
        self.generation += 1
        self.ids = []
        self._cache = None
        self._last_logits = None

    def common_prefix(self, ids: list[int]) -> int:
        n = min(len(ids), len(self.ids))
        i = 0
        while i < n and ids[i] == self.ids[i]:
            i += 1
        return i

    def advance(self, ids: list[int]) -> torch.Tensor:
        """Logits (1-D, float32, on the model's device) for the token after ``ids``."""
        import torch

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
        with torch.inference_mode():
            out = self.lm.model(
                input_ids=torch.tensor([new], device=self.lm.device),
                past_key_values=self._cache,
                use_cache=True,
                logits_to_keep=1,
            )
        self._cache = out.past_key_values
        self.ids = list(ids)
        self.prefilled_tokens += len(new)
        self.forward_passes += 1
        self._last_logits = out.logits[0, -1].float()
        return self._last_logits

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
        with torch.inference_mode():
            out = self.lm.model(
                input_ids=torch.tensor([new], device=self.lm.device),
                past_key_values=self._cache,
                use_cache=True,
                logits_to_keep=len(guess) + (0 if reuse else 1),
            )
        rows: torch.Tensor = out.logits[0].float()
        if last is not None:
            rows = torch.cat([last[None], rows])
        self._cache = out.past_key_values
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
            del self.ids[n:]
            self._last_logits = self._rows[len(self._rows) - 1 - drop]
