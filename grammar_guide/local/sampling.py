"""Choosing the next token from logits: greedy, or temperature and top-p with a seed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["Sampler", "nucleus"]


class Sampler:
    """Picks the next token: greedy at temperature 0, else temperature and top-p with a seed."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None) -> None:
        if temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self._generator: torch.Generator | None = None

    def choose(self, scores: torch.Tensor) -> int:
        """A token id from ``scores`` (logits; disallowed tokens already at -inf)."""
        import torch

        if self.temperature == 0:
            return int(torch.argmax(scores))
        probs = torch.softmax(scores.float() / self.temperature, dim=-1).cpu()
        if self.top_p < 1:
            probs = nucleus(probs, self.top_p)
        if self._generator is None:
            self._generator = torch.Generator()
            if self.seed is not None:
                self._generator.manual_seed(self.seed)
            else:
                self._generator.seed()
        # Inverse-CDF sampling: one uniform draw against the cumulative distribution.
        cumulative = torch.cumsum(probs.double(), dim=-1)
        draw = torch.rand(1, generator=self._generator, dtype=torch.float64) * cumulative[-1]
        token = int(torch.searchsorted(cumulative, draw, right=True))
        while probs[min(token, len(probs) - 1)] == 0 and token > 0:
            token -= 1  # rounding at the top end; step back to a token that may be drawn
        return min(token, len(probs) - 1)


def nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """``probs`` with every token outside the top-p nucleus set to 0: in order of probability, a
    token is kept while the mass before it is below ``top_p``.

    Sorting all 49k probabilities took 4 ms on a CPU, a tenth of a model step; the nucleus is
    almost always among the few most likely tokens, so the top 64 are sorted first, then 4 times
    as many, until their mass reaches ``top_p`` (every token after them is then outside).
    """
    import torch

    n = probs.numel()
    k = min(64, n)
    while True:
        top, order = torch.topk(probs, k)
        cumulative = torch.cumsum(top, dim=-1)
        if k == n or float(cumulative[-1]) >= top_p:
            break
        k = min(4 * k, n)
    top[cumulative - top >= top_p] = 0
    return torch.zeros_like(probs).scatter_(0, order, top)
