"""The grammar's token mask: one llguidance matcher per grammar, and its bitmask as a bool tensor."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .._errors import GrammarError, TokenMatcherError

if TYPE_CHECKING:
    import llguidance as llg
    import torch

    from .._grammar import Grammar
    from .loading import LoadedModel

__all__ = ["STEP_MAX_ITEMS", "MatcherCache", "bitmask_to_bool", "token_mask"]

#: Earley items llguidance may build for one token mask. Its default (50,000) is too few for a
#: grammar read at the character level (issue 19) at a 49k-token vocabulary: the mask after
#: ``print`` in a small statement grammar needed more, and the matcher then stopped with an error
#: and allowed only EOS. 500,000 items is about 25 ms at llguidance's ~20k items/ms; such masks
#: measured 3-15 ms (SmolLM2, one CPU core).
STEP_MAX_ITEMS = 500_000


class MatcherCache:
    """Token matchers of a model's tokenizer, built once per grammar and copied for each call."""

    #: Grammars kept; past this many, the cache starts again.
    SIZE = 16

    def __init__(self, lm: LoadedModel) -> None:
        self.lm = lm
        self._lock = threading.Lock()
        self._built: dict[str, llg.LLMatcher] = {}

    def matcher(self, grammar: Grammar) -> tuple[llg.LLMatcher, bool]:
        """A fresh matcher at the start of ``grammar``, and whether it captures terminals
        (grammars loaded from Lark: the stop rule counts whole terminals by its captures)."""
        import llguidance as llg

        source = grammar.captured_grammar or grammar.llguidance_grammar
        with self._lock:
            proto = self._built.get(source)
            if proto is None:
                limits = llg.LLParserLimits(step_max_items=STEP_MAX_ITEMS)
                proto = llg.LLMatcher(self.lm.ll_tokenizer, source, log_level=0, limits=limits)
                if proto.is_error():
                    raise GrammarError(f"the matcher rejected grammar {grammar.name}: {proto.get_error()}")
                if len(self._built) > self.SIZE:
                    self._built.clear()
                self._built[source] = proto
            return proto.deep_copy(), grammar.captured_grammar is not None


def token_mask(lm: LoadedModel, matcher: llg.LLMatcher) -> torch.Tensor:
    """The tokens ``matcher`` allows next, as a bool tensor over ``lm``'s logits (on its device)."""
    bits = matcher.compute_bitmask()
    if matcher.is_error():
        # Its mask would allow only EOS: an incomplete text would look finished.
        raise TokenMatcherError(f"the token matcher failed: {matcher.get_error().splitlines()[0]}")
    return bitmask_to_bool(bits, lm.n_vocab, lm.device)


def bitmask_to_bool(bitmask: bytes, n_vocab: int, device: str = "cpu") -> torch.Tensor:
    """llguidance's packed bitmask (one bit per token, little-endian words) as a bool tensor."""
    import numpy as np
    import torch

    bits = np.unpackbits(np.frombuffer(bitmask, dtype=np.uint8), bitorder="little")[:n_vocab]
    mask = torch.from_numpy(bits.view(np.bool_))
    return mask if device == "cpu" else mask.to(device)
