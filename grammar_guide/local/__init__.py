"""Local models: a Hugging Face causal LM as the target (and, in ``grammar_guide.providers``, as a draft).

One module per concern:

- ``loading``: ``load_model`` → ``LoadedModel`` (the model, its tokenizers, the prompt format),
  the default SmolLM2-135M-Instruct, devices, dtypes and CPU threads;
- ``kv_cache``: ``KVCache``, one user's cache over a shared model, keeping the longest common
  prefix between calls;
- ``batching``: ``ForwardBatcher``, the forward steps of concurrent generations in one pass;
- ``lookup``: ``TokenLookup`` and ``LookupCache``, guessed tokens checked in one forward pass;
- ``sampling``: ``Sampler``, greedy or temperature/top-p with a seed;
- ``healing``: ``TokenHealing``, the tokens that may re-write bytes taken back at a boundary;
- ``token_mask``: ``MatcherCache``, a grammar's llguidance matcher, and ``token_mask``, what it allows;
- ``choosing``: one token under the mask, the model's own choice first;
- ``token_guards``: ``repeats``, ``TokenRuns`` and ``DeadEndProbe``, which make the target choose
  again rather than loop, run a number or name on, or write into a dead end;
- ``decoding``: ``Decoding``, one continuation step by step (fast-forward, choose, guard, stop,
  stream), and its result, ``Continuation``;
- ``slots``: ``SlotPool``, the KV caches, guesses and samplers of a target's concurrent calls;
- ``target``: ``TargetModel``, which continues a valid prefix under the grammar's token mask.

A ``TargetModel`` and a ``TransformersDraft`` share one ``LoadedModel`` and, with
``TransformersDraft.from_target(target)``, the target's ``kv_cache``.

Importing this package imports neither torch nor transformers (the extra
``grammar-guide[local]``); loading a model does, and says what to install when they are missing.
"""

from __future__ import annotations

from .batching import ForwardBatcher
from .decoding import Continuation
from .healing import TokenHealing, healing_mask
from .kv_cache import KVCache
from .loading import (
    DEFAULT_MODEL,
    LoadedModel,
    default_model_path,
    default_threads,
    ensure_default_model,
    format_prompt,
    load_model,
    set_threads,
)
from .lookup import LookupCache, TokenLookup
from .sampling import Sampler
from .slots import Slot, SlotPool
from .target import TargetModel

__all__ = [
    "DEFAULT_MODEL",
    "Continuation",
    "ForwardBatcher",
    "KVCache",
    "LoadedModel",
    "LookupCache",
    "Sampler",
    "Slot",
    "SlotPool",
    "TargetModel",
    "TokenHealing",
    "TokenLookup",
    "default_model_path",
    "default_threads",
    "ensure_default_model",
    "format_prompt",
    "healing_mask",
    "load_model",
    "set_threads",
]
