"""One call of a causal LM with a KV cache, in the words of the installed transformers.

transformers 5.x renamed the cache argument and output field of every model's ``forward`` from
``past_key_values`` to ``cache``; the old name still works until its removal (5.40.0 for
``LlamaForCausalLM``), with a ``FutureWarning`` and a log line on every call. Older releases (down
to our declared floor) know only ``past_key_values``. ``call_model`` is the one place that knows
both: it reads the model's ``forward`` signature once per model class and passes the cache under
the name that signature declares, and takes the cache back from the output the same way.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["cache_argument", "call_model"]


@functools.cache
def _cache_argument_of(forward_owner: Any) -> str:  # a model class
    parameters = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def cache_argument(model: Any) -> str:
    """The name ``model.forward`` takes its KV cache under: ``cache`` (transformers 5.x, once the
    rename reached the model's class) or ``past_key_values`` (before)."""
    owner: Any = type(model)
    return _cache_argument_of(owner)


def call_model(model: Any, input_ids: torch.Tensor, cache: Any, **inputs: Any) -> tuple[torch.Tensor, Any]:
    """``model`` on ``input_ids`` after ``cache`` (``None``: none yet), with ``use_cache``: the
    logits and the cache that then holds the new tokens too. ``inputs`` go to ``forward`` as they
    are (``attention_mask``, ``position_ids``, ``logits_to_keep``)."""
    name = cache_argument(model)
    out = model(input_ids=input_ids, use_cache=True, **{name: cache}, **inputs)
    logits: torch.Tensor = out.logits
    # The output's own field, by key: on transformers 5.x the attribute ``past_key_values`` is a
    # deprecated alias that warns.
    return logits, out[name]
