"""Draft-model adapters for grammar-guide, importable as ``grammar_guide.providers``.

Each module wraps one kind of model behind ``grammar_guide.Draft``; heavy SDKs are imported only
by the module that needs them:

- ``grammar_guide.providers.openai``: ``OpenAIDraft`` (extra ``openai``);
- ``grammar_guide.providers.anthropic``: ``AnthropicDraft`` (extra ``anthropic``);
- ``grammar_guide.providers.http``: ``HTTPDraft``, OpenAI-compatible servers over plain httpx;
- ``grammar_guide.providers.transformers``: ``TransformersDraft``, a local model (extra ``local``).

``draft_from_spec("openai:gpt-4o-mini")`` builds one from a short string (what the command line's
``--draft`` takes). The core package never imports this one; the command line does, as the place
where the parts are put together.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from grammar_guide import Draft, FunctionDraft, MissingDependencyError

if TYPE_CHECKING:
    from grammar_guide.local import TargetModel

__all__ = ["SPEC_FORMS", "FunctionDraft", "draft_from_spec"]

#: The forms ``draft_from_spec`` accepts, as shown to a person.
SPEC_FORMS = (
    "local[:MODEL]",
    "openai:MODEL",
    "anthropic:MODEL",
    "an http(s) URL of an OpenAI-compatible server",
    "python:MODULE:FUNCTION",
)

_EXTRAS = {"torch": "local", "transformers": "local", "openai": "openai", "anthropic": "anthropic"}


def draft_from_spec(
    spec: str,
    *,
    model: str | None = None,
    endpoint: str = "chat",
    target: TargetModel | None = None,
    threads: int | None = None,
) -> Draft:
    """The draft a short string names.

    - ``local`` or ``local:MODEL``: a ``TransformersDraft`` (the default SmolLM2-135M-Instruct, or
      a Hugging Face id or folder). Given a ``target`` over the same model, the draft shares the
      target's loaded model and KV cache (``TransformersDraft.from_target``): one copy in memory.
      ``threads`` sets torch's CPU threads (see ``grammar_guide.local.load_model``).
    - ``openai:MODEL``, ``anthropic:MODEL``: the SDK providers (keys from the environment).
    - ``http://…`` or ``https://…``: ``HTTPDraft`` on an OpenAI-compatible server; ``model`` names
      the server's model, ``endpoint`` is ``"chat"`` or ``"completions"``; the key, if any, from
      ``GRAMMAR_GUIDE_API_KEY``.
    - ``python:MODULE:FUNCTION``: a ``Draft`` object or class, or any ``generate(prompt)``
      function (wrapped in ``FunctionDraft``); the current directory is importable.

    Raises ``ValueError`` for a spec it cannot read and ``MissingDependencyError`` (naming the
    extra to install) when the provider's SDK is missing.
    """
    try:
        return _draft_from_spec(spec, model=model, endpoint=endpoint, target=target, threads=threads)
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root in _EXTRAS:
            raise MissingDependencyError(
                f"draft {spec} needs {root}, which is not installed: pip install 'grammar-guide[{_EXTRAS[root]}]'"
            ) from None
        raise


def _draft_from_spec(
    spec: str, *, model: str | None, endpoint: str, target: TargetModel | None, threads: int | None
) -> Draft:
    if spec == "local" or spec.startswith("local:"):
        from .transformers import TransformersDraft

        name = spec.partition(":")[2] or None
        if target is not None and (name is None or name == target.name):
            return TransformersDraft.from_target(target)
        return TransformersDraft.load(name, threads=threads)
    if spec.startswith("openai:"):
        from .openai import OpenAIDraft

        return OpenAIDraft(_model_name(spec, "openai"))
    if spec.startswith("anthropic:"):
        from .anthropic import AnthropicDraft

        return AnthropicDraft(_model_name(spec, "anthropic"))
    if spec.startswith(("http://", "https://")):
        if not model:
            raise ValueError("a URL draft needs a model name (the one its server expects)")
        if endpoint not in ("chat", "completions"):
            raise ValueError(f"endpoint must be chat or completions, not {endpoint!r}")
        from .http import HTTPDraft

        api_key = os.environ.get("GRAMMAR_GUIDE_API_KEY") or None
        return HTTPDraft(spec, model=model, endpoint=endpoint, api_key=api_key)  # type: ignore[arg-type]
    if spec.startswith("python:"):
        obj = _import_object(spec[len("python:") :])
        if isinstance(obj, Draft):
            return obj
        if isinstance(obj, type) and issubclass(obj, Draft):
            return obj()
        if not callable(obj):
            raise ValueError(f"{spec} is not callable")
        try:
            return FunctionDraft(obj)
        except TypeError as exc:  # a function that cannot take the prompt
            raise ValueError(str(exc)) from None
    raise ValueError(f"unknown draft {spec!r}: use {', '.join(SPEC_FORMS[:-1])} or {SPEC_FORMS[-1]}")


def _model_name(spec: str, provider: str) -> str:
    name = spec.split(":", 1)[1]
    if not name:
        raise ValueError(f"draft {provider}: needs a model name, as in {provider}:MODEL")
    return name


def _import_object(target: str) -> Any:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a python draft must be python:MODULE:FUNCTION, not python:{target}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{module_name} has no attribute {attr}") from None
    return obj
