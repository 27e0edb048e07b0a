"""Token healing: which tokens may re-write the bytes taken back at the end of a text.

The text's last token(s) that a vocabulary token could extend are taken back (see
``LoadedModel.partial_ids``); the next token must then start with those bytes, so the model can
write ``orderId`` as the one token it knows rather than ``order`` + ``Id``.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from .loading import LoadedModel

__all__ = ["TokenHealing", "healing_mask"]


class TokenHealing:
    """Token ids by their bytes, to find the tokens that re-write healed bytes.

    Built once per model (``LoadedModel.healing``); the sets for each healed tail are cached.
    """

    _CACHE_SIZE = 4096

    def __init__(self, token_bytes: list[bytes], n_vocab: int, device: str = "cpu") -> None:
        import numpy as np

        self.n_vocab = n_vocab
        self.device = device
        order = sorted((b, i) for i, b in enumerate(token_bytes) if b)
        self._sorted_bytes = [b for b, _ in order]
        self._sorted_ids = np.array([i for _, i in order], dtype=np.int64)
        self._exact: dict[bytes, list[int]] = {}
        for b, i in order:
            self._exact.setdefault(b, []).append(i)
        self._sets: dict[bytes, tuple[Any, Any]] = {}

    def starting_with(self, prefix: bytes) -> Any:
        """The ids (a numpy array) of the tokens whose bytes start with ``prefix``."""
        # Tokens starting with ``prefix`` sort contiguously from ``prefix`` up to the next byte
        # string that does not start with it.
        lo = bisect.bisect_left(self._sorted_bytes, prefix)
        stripped = prefix.rstrip(b"\xff")
        if stripped:
            hi = bisect.bisect_left(self._sorted_bytes, stripped[:-1] + bytes([stripped[-1] + 1]))
        else:
            hi = len(self._sorted_bytes)
        return self._sorted_ids[lo:hi]

    def proper_prefixes_of(self, data: bytes) -> Any:
        """The ids (a numpy array) of the tokens whose bytes are a proper prefix of ``data``."""
        import numpy as np

        ids = [i for k in range(1, len(data)) for i in self._exact.get(data[:k], ())]
        return np.array(ids, dtype=np.int64)

    def mask(self, pending: bytes, allowed: torch.Tensor | None = None) -> torch.Tensor:
        """Tokens that may re-write the healed bytes ``pending`` (a bool tensor on ``device``).

        Tokens that start with ``pending`` (among them the canonical re-choice); only when none
        of those is ``allowed`` (by a grammar), tokens that are a proper prefix of ``pending``.
        """
        import torch

        found = self._sets.get(pending)
        if found is None:
            found = (self.starting_with(pending), self.proper_prefixes_of(pending))
            if len(self._sets) > self._CACHE_SIZE:
                self._sets.clear()
            self._sets[pending] = found
        covering, prefixes = found
        mask = torch.zeros(self.n_vocab, dtype=torch.bool)
        if covering.size:
            mask[torch.from_numpy(covering)] = True
            if allowed is None or bool((mask.to(allowed.device) & allowed).any()):
                return mask.to(self.device)
        if prefixes.size:
            mask[torch.from_numpy(prefixes)] = True
        return mask.to(self.device)


def healing_mask(lm: LoadedModel, pending: bytes, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """``lm.healing.mask(pending, allowed)``: the tokens that may re-write ``pending``."""
    return lm.healing.mask(pending, allowed)
