"""The OpenAI wire format, shared by ``OpenAIDraft`` (the SDK) and ``HTTPDraft`` (plain httpx).

Chat Completions has no assistant prefill in OpenAI's own API, so by default the accepted text
is shown to the model as its own unfinished answer and it is asked, in a last user message, to
continue it; the guide loop aligns an answer that restates the text, and the call's token
budget grows by ``restatement_allowance`` so that a restatement does not use it all up.
Servers that do offer prefill are used through ``prefill``:

- ``"continue_final_message"``: vLLM's and SGLang's extra parameters
  (``continue_final_message=True, add_generation_prompt=False``) with the accepted text as the
  final assistant message: a true continuation.

The legacy Completions endpoint is a true continuation: the prompt is ``prompt + accepted_text``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from grammar_guide import DraftCall, DraftRequest

from ._native import NATIVE_MAX_TOKENS, grammar_fields, whole_answer_request

if TYPE_CHECKING:
    from ._native import NativeGrammarPolicy

__all__ = [
    "CONTINUE_INSTRUCTION",
    "Endpoint",
    "OpenAIWireDraft",
    "Prefill",
    "build_request",
    "draft_request",
    "read_chunk",
    "restatement_allowance",
]

Endpoint = Literal["chat", "completions"]
Prefill = Literal["continue_final_message"]
PREFILL_MODES: tuple[str, ...] = ("continue_final_message",)

# OpenAI accepts at most four stop sequences.
MAX_STOP = 4

CONTINUE_INSTRUCTION = (
    "Your answer above is unfinished. Continue it from exactly where it stops: write only the "
    "rest, without repeating any of it and without any comment."
)


def restatement_allowance(accepted_text: str) -> int:
    """Tokens to add to a call's budget when the model may restate ``accepted_text`` first.

    Without prefill a chat model often writes its answer again from the start; a budget of only
    the lookahead would then end each call where the previous one did. About three characters a
    token, rounded up, covers the restatement.
    """
    return (len(accepted_text) + 2) // 3


def chat_messages(request: DraftRequest, *, prefill: bool, instruction: str) -> list[dict[str, str]]:
    """The messages for a chat request: the prompt, and the accepted text when there is some."""
    messages = [{"role": "user", "content": request.prompt}]
    if request.accepted_text:
        messages.append({"role": "assistant", "content": request.accepted_text})
        if not prefill:
            messages.append({"role": "user", "content": instruction})
    return messages


def build_request(
    request: DraftRequest,
    *,
    model: str,
    endpoint: Endpoint,
    prefill: Prefill | None,
    include_usage: bool,
    instruction: str = CONTINUE_INSTRUCTION,
    options: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request body as (standard fields, extra fields a server may not know).

    ``options`` (temperature, seed, ...) are merged into the standard fields; an ``extra_body``
    among them is merged into the extra fields.
    """
    options = dict(options or {})
    extra: dict[str, Any] = dict(options.pop("extra_body", None) or {})
    body: dict[str, Any] = {"model": model, "stream": True, "max_tokens": request.max_new_tokens}
    if endpoint == "completions":
        body["prompt"] = request.prompt + request.accepted_text
    else:
        use_prefill = prefill is not None and bool(request.accepted_text)
        body["messages"] = chat_messages(request, prefill=use_prefill, instruction=instruction)
        if use_prefill:
            extra.update(continue_final_message=True, add_generation_prompt=False)
        else:
            body["max_tokens"] += restatement_allowance(request.accepted_text)
    if request.stop:
        body["stop"] = list(request.stop[:MAX_STOP])
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    body.update(options)
    return body, extra


class OpenAIWireDraft(Protocol):
    """What ``draft_request`` reads of a draft that speaks this format (OpenAIDraft, HTTPDraft)."""

    model: str
    endpoint: Endpoint
    prefill: Prefill | None
    include_usage: bool
    instruction: str
    request_options: dict[str, Any]
    native_grammar: NativeGrammarPolicy


def draft_request(
    draft: OpenAIWireDraft, request: DraftRequest, definition: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``build_request`` with the draft's settings; with a grammar ``definition``, the grammar goes
    in the serving engine's fields and the call asks for the whole answer (at least
    ``NATIVE_MAX_TOKENS``)."""
    standard, extra = build_request(
        request if definition is None else whole_answer_request(request),
        model=draft.model,
        endpoint=draft.endpoint,
        prefill=draft.prefill,
        include_usage=draft.include_usage,
        instruction=draft.instruction,
        options=draft.request_options,
    )
    if definition is not None:
        extra.update(grammar_fields(draft.native_grammar.style, definition))
        standard["max_tokens"] = max(standard["max_tokens"], NATIVE_MAX_TOKENS)
    return standard, extra


def read_chunk(chunk: dict[str, Any], call: DraftCall, endpoint: Endpoint) -> str:
    """The text in one streamed chunk (a ``chat.completion.chunk`` or ``text_completion``);
    records usage and the finish reason on ``call``."""
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        if usage.get("prompt_tokens") is not None:
            call.tokens_in = int(usage["prompt_tokens"])
        if usage.get("completion_tokens") is not None:
            call.tokens_out = int(usage["completion_tokens"])
    text = ""
    for choice in chunk.get("choices") or ():
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        if endpoint == "chat":
            delta = choice.get("delta") or {}
            piece = delta.get("content") if isinstance(delta, dict) else None
        else:
            piece = choice.get("text")
        if isinstance(piece, str):
            text += piece
        if choice.get("finish_reason"):
            call.finish_reason = str(choice["finish_reason"])
    return text
