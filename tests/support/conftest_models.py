"""Helpers for the local-model tests: the real SmolLM2 (loaded once per process, by
``load_model``'s own cache) and a tiny randomly initialised Llama over SmolLM2's real tokenizer,
for fast unit tests of the decoding machinery."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

from grammar_guide.local import KVCache, LoadedModel, default_model_path, ensure_default_model, load_model


@functools.lru_cache(maxsize=1)
def smollm2() -> LoadedModel:
    """The real default model (converted into the user cache on first use)."""
    return load_model()


@functools.lru_cache(maxsize=1)
def tiny_model() -> LoadedModel:
    """A 2-layer, 32-wide Llama with random weights and SmolLM2's tokenizer (49,152 tokens)."""
    import torch
    import transformers

    ensure_default_model()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(default_model_path()))
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    # Random weights at init scale give nearly uniform logits: sampling explores the whole
    # vocabulary (the hardest case for the mask), and greedy choices are still deterministic.
    return LoadedModel(model, tokenizer, name="tiny-random-llama", device="cpu")


def greedy_unconstrained(lm: LoadedModel, ids: list[int], n: int) -> list[int]:
    """The model's own greedy tokens after ``ids``, no mask, EOS included if chosen (then stop)."""
    import torch

    kv = KVCache(lm)
    out: list[int] = []
    for _ in range(n):
        token = int(torch.argmax(kv.advance(ids + out)))
        out.append(token)
        if token in lm.eos_token_ids:
            break
    return out


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run torch on one CPU thread: the tests' tensors are small (a 135M model, one token at a
    time), and on a shared 2-core machine a second thread mostly waits for the first."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
