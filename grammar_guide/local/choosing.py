"""Choosing one token under the grammar's mask: the model's own choice first, else within the mask."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._events import Alternative

if TYPE_CHECKING:
    import llguidance as llg
    import torch

    from .sampling import Sampler

__all__ = ["TOP_ALTERNATIVES", "alternatives", "choose", "own_choice"]

#: How many of the best tokens a first choice reports as alternatives.
TOP_ALTERNATIVES = 5


def own_choice(logits: torch.Tensor, own: int, matcher: llg.LLMatcher, accepting: bool, sampler: Sampler) -> int:
    """The model's own choice if the grammar allows it, else -1 (then the full mask is needed).

    Opportunistic masking: greedy, the own choice is the argmax ``own``. Sampling (without
    top-p), it is a draw from the whole distribution; keeping an allowed draw and otherwise
    drawing within the mask gives the distribution of a draw within the mask (rejection
    sampling: p(x) + (1 - p(A)) p(x) / p(A) = p(x) / p(A)). When the text is complete and
    ``own`` leaves the grammar, -1 too: the full-mask step then ends the text.
    """
    candidate = own if sampler.temperature == 0 else sampler.choose(logits)
    if matcher.validate_tokens([candidate]) != 1:
        return -1
    if candidate != own and accepting and matcher.validate_tokens([own]) != 1:
        return -1
    return candidate


def choose(logits: torch.Tensor, allowed: torch.Tensor, sampler: Sampler) -> int:
    """A token among ``allowed`` (bool, over the logits), by ``sampler``."""
    return sampler.choose(logits.masked_fill(~allowed, float("-inf")))


def alternatives(
    logits: torch.Tensor, allowed: torch.Tensor, token_bytes: list[bytes], pending: bytes
) -> tuple[Alternative, ...]:
    """The ``TOP_ALTERNATIVES`` best tokens among ``allowed``, with their probabilities under the
    mask; their text leaves out ``pending``, the healed bytes they re-write ("" for EOS)."""
    import torch

    probs = torch.softmax(logits.masked_fill(~allowed, float("-inf")), dim=-1)
    top = torch.topk(probs, min(TOP_ALTERNATIVES, int(allowed.sum())))
    found = []
    for p, t in zip(top.values.tolist(), top.indices.tolist(), strict=True):
        piece = token_bytes[t]
        if not piece:
            found.append(Alternative("", float(p)))  # EOS: end the text here
            continue
        piece = piece[len(pending) :] if piece.startswith(pending) else b""
        found.append(Alternative(piece.decode("utf-8", errors="replace"), float(p)))
    return tuple(found)
