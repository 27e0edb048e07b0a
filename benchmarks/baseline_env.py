"""The reference project, grammar-guide 0.0.11 from PyPI, in a virtual environment of its own.

It cannot share ours: it needs guidance 0.1.16 and transformers 4.44 (we use transformers 5), and
its package name is ours too. ``ensure_venv()`` creates the venv once, in the user cache directory,
with the versions it needs pinned (``PINS``); ``run_worker()`` runs ``_gg0011_worker.py`` with the
venv's python, passing a JSON request and reading a JSON answer.

Both sides use the same model: the Hugging Face folder that ``grammar_guide.local`` converts from
the SmolLM2-135M-Instruct GGUF file. transformers 4.44 cannot read two things transformers 5 wrote
there (the tokenizer class ``TokenizersBackend``, ``rope_parameters`` instead of ``rope_theta``,
BPE merges as pairs), so ``compat_model_folder()`` makes a sibling folder with the configuration
and tokenizer files rewritten and the weights linked, not copied.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["PINS", "BaselineUnavailable", "compat_model_folder", "ensure_venv", "run_worker", "venv_dir"]

#: What grammar-guide 0.0.11 needs to run, pinned. torch is the CPU wheel found on this machine's
#: index (an unpinned torch would pull a multi-GB CUDA build).
PINS = [
    "grammar-guide==0.0.11",
    "guidance==0.1.16",
    "transformers==4.44.2",
    "torch==2.13.0",
    "lark",
]

WORKER = Path(__file__).with_name("_gg0011_worker.py")


class BaselineUnavailable(RuntimeError):
    """The reference project could not be installed or run; the message says exactly why."""


def _cache_root() -> Path:
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("grammar-guide"))
    except ImportError:  # pragma: no cover
        return Path.home() / ".cache" / "grammar-guide"


def venv_dir() -> Path:
    return Path(os.environ.get("GRAMMAR_GUIDE_BASELINE_VENV", _cache_root() / "bench-venv-gg0011"))


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv() -> Path:
    """The baseline venv's python, creating the venv first if needed (minutes, once)."""
    venv = venv_dir()
    python = _venv_python(venv)
    stamp = venv / ".gg0011-installed"
    if python.exists() and stamp.exists() and stamp.read_text() == "\n".join(PINS):
        return python
    commands = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINS],
    ]
    print(f"benchmarks: installing grammar-guide 0.0.11 into {venv} (once)", file=sys.stderr, flush=True)
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise BaselineUnavailable(
                f"`{' '.join(command)}` failed with exit status {done.returncode}:\n{_tail(done.stderr)}"
            )
    # -I and a neutral working directory: `import grammar_guide` must find theirs, not ours.
    probe = subprocess.run(
        [str(python), "-I", "-c", "import grammar_guide, guidance, transformers, torch"],
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    if probe.returncode != 0:
        raise BaselineUnavailable(f"grammar-guide 0.0.11 installed but does not import:\n{_tail(probe.stderr)}")
    stamp.write_text("\n".join(PINS))
    return python


def compat_model_folder() -> Path:
    """The default model's folder, readable by transformers 4.44 (made once beside the original)."""
    from grammar_guide.local import ensure_default_model

    source = ensure_default_model()
    target = source.with_name(source.name + "-transformers4")
    if (target / "config.json").is_file():
        return target
    tmp = Path(tempfile.mkdtemp(prefix=".compat-", dir=source.parent))
    try:
        config = json.loads((source / "config.json").read_text())
        rope = config.pop("rope_parameters", None) or {}
        if "rope_theta" in rope:
            config["rope_theta"] = rope["rope_theta"]
        if "dtype" in config:
            config["torch_dtype"] = config.pop("dtype")
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        tokenizer_config = json.loads((source / "tokenizer_config.json").read_text())
        tokenizer_config["tokenizer_class"] = "GPT2TokenizerFast"
        tokenizer_config.pop("backend", None)
        tokenizer_config["clean_up_tokenization_spaces"] = False  # as in the original SmolLM2 files
        template = source / "chat_template.jinja"
        if template.is_file():
            tokenizer_config["chat_template"] = template.read_text()
        (tmp / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))
        # Older tokenizers read BPE merges as "a b" strings, not ["a", "b"] pairs.
        tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
        model = tokenizer.get("model", {})
        if model.get("merges") and isinstance(model["merges"][0], list):
            model["merges"] = [" ".join(pair) for pair in model["merges"]]
        (tmp / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
        for name in ("model.safetensors", "generation_config.json"):
            if (source / name).exists():
                os.symlink(source / name, tmp / name)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def run_worker(request: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
    """Run ``_gg0011_worker.py`` in the baseline venv with ``request``; return its JSON answer.

    Raises ``BaselineUnavailable`` with the command and the end of its stderr when it fails.
    """
    python = ensure_venv()
    with tempfile.TemporaryDirectory(prefix="gg0011-") as tmp:
        request_file = Path(tmp) / "request.json"
        answer_file = Path(tmp) / "answer.json"
        request_file.write_text(json.dumps(request))
        _offline_gpt2_tokenizer(Path(tmp) / "gpt2")
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
        env.pop("PYTHONPATH", None)
        command = [str(python), "-I", str(WORKER), str(request_file), str(answer_file)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        except subprocess.TimeoutExpired as exc:
            raise BaselineUnavailable(
                f"`{' '.join(command)}` ran past {timeout} s:\n{_tail(exc.stderr or '')}"
            ) from exc
        if done.returncode != 0 or not answer_file.exists():
            raise BaselineUnavailable(
                f"`{' '.join(command)}` failed with exit status {done.returncode}:\n{_tail(done.stderr)}"
            )
        answer: dict[str, Any] = json.loads(answer_file.read_text())
        return answer


def _offline_gpt2_tokenizer(folder: Path) -> None:
    """A folder named ``gpt2`` in the worker's working directory, for guidance 0.1.16.

    guidance builds its byte table for SmolLM2 by falling back to
    ``AutoTokenizer.from_pretrained("gpt2", use_fast=False).byte_decoder`` (49 SmolLM2 tokens are
    partial UTF-8 and fail its round-trip check), which downloads GPT-2's tokenizer from the Hub.
    This machine has no Hub access; a local folder named ``gpt2`` is found first. Only the
    tokenizer's ``byte_decoder`` is used, the fixed byte-level BPE table shared by GPT-2 and
    SmolLM2, so the folder holds SmolLM2's own byte-level vocabulary and merges.
    """
    source = compat_model_folder() / "tokenizer.json"
    model = json.loads(source.read_text(encoding="utf-8"))["model"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2"}))


def _tail(text: str | bytes, lines: int = 25) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return "\n".join(text.strip().splitlines()[-lines:])
