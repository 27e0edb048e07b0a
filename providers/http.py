"""``HTTPDraft``: any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, SGLang, OpenAI
itself) over plain ``httpx``, without installing an SDK.

It speaks the same requests as ``OpenAIDraft`` (see ``providers._openai_format``) and reads the
server-sent events itself. With ``grammar_style`` (``"vllm"``, ``"sglang"``, ``"llama.cpp"``) the
first call sends the grammar in that server's request field (see ``providers._native``); a 400
for it makes the call draft freely, and a server that ignores it is repaired as usual.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal

import httpx

from grammar_guide import Draft, DraftCall

from ._native import NativeGrammar, NativeGrammarPolicy
from ._openai_format import CONTINUE_INSTRUCTION, PREFILL_MODES, Endpoint, Prefill, draft_request, read_chunk
from ._retry import (
    OwnedClient,
    RetryPolicy,
    connection_error,
    error_for_status,
    message_from_body,
    parse_retry_after,
    response_error,
    stream_with_retries,
    unfinished_stream,
)
from ._sse import aiter_sse

__all__ = ["HTTPDraft"]

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


class HTTPDraft(Draft):
    """A draft served by an OpenAI-compatible HTTP server.

    Args:
        base_url: the API root, e.g. ``"http://localhost:8000/v1"``; requests go to
            ``{base_url}/chat/completions`` or ``{base_url}/completions``.
        model: the model name the server expects.
        api_key: sent as ``Authorization: Bearer ...`` when given; never logged or shown.
        endpoint: ``"chat"`` (Chat Completions) or ``"completions"`` (legacy Completions, a true
            continuation of ``prompt + accepted_text``).
        prefill: ``"continue_final_message"`` for servers that continue a final assistant
            message (vLLM, SGLang); then chat continues the accepted text truly.
        include_usage: ask for token usage (``stream_options.include_usage``); turn off for
            servers that reject the option.
        headers: extra HTTP headers for every request.
        timeout: seconds, or an ``httpx.Timeout``; a read timeout counts as a dropped connection.
        retry: the ``RetryPolicy``.
        client: an ``httpx.AsyncClient`` to use (its own timeout applies); by default one is made
            and closed by ``aclose``.
        instruction: the user message that asks a chat model to continue without prefill.
        grammar_style: ``"vllm"`` (``structured_outputs.grammar``), ``"sglang"`` (``ebnf``) or
            ``"llama.cpp"`` (``grammar``): send the grammar, as GBNF, in that field; ``None``
            (default) never sends it.
        native_grammar: with a ``grammar_style``: ``"auto"``/``True`` send it, ``False`` not.
        **request_options: more fields for the request body (``temperature``, ``seed``, ...).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        endpoint: Endpoint = "chat",
        prefill: Prefill | None = None,
        include_usage: bool = True,
        headers: dict[str, str] | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        instruction: str = CONTINUE_INSTRUCTION,
        grammar_style: Literal["vllm", "sglang", "llama.cpp"] | None = None,
        native_grammar: NativeGrammar = "auto",
        **request_options: Any,
    ) -> None:
        if endpoint not in ("chat", "completions"):
            raise ValueError(f"endpoint must be 'chat' or 'completions', not {endpoint!r}")
        if prefill is not None and prefill not in PREFILL_MODES:
            raise ValueError(f"prefill must be one of {PREFILL_MODES} or None, not {prefill!r}")
        self.name = "http"
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.endpoint: Endpoint = endpoint
        self.prefill = prefill
        self.include_usage = include_usage
        self.retry = retry or RetryPolicy()
        self.instruction = instruction
        self.request_options = request_options
        self.native_grammar = NativeGrammarPolicy(
            native_grammar if grammar_style is not None else False, grammar_style or "vllm", model
        )
        self.continues_prefix = endpoint == "completions" or prefill is not None
        self._api_key = api_key
        self._headers = {"Accept": "text/event-stream", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._url = f"{self.base_url}/{'completions' if endpoint == 'completions' else 'chat/completions'}"
        timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
        self._user_client = client
        self._owned = OwnedClient(lambda: httpx.AsyncClient(timeout=timeout), lambda c: c.aclose())

    def __repr__(self) -> str:
        return f"HTTPDraft(base_url={self.base_url!r}, model={self.model!r}, endpoint={self.endpoint!r})"

    def stream(self, call: DraftCall) -> AsyncIterator[str]:
        call.continued_prefix = self.continues_prefix
        definition = self.native_grammar.definition_for(call)
        if definition is None:
            return self._retried(call, None)
        return self.native_grammar.stream(
            call, definition, self._retried(call, definition), lambda: self._retried(call, None)
        )

    def _retried(self, call: DraftCall, definition: str | None) -> AsyncIterator[str]:
        return stream_with_retries(call, lambda: self._attempt(call, definition), provider=self.name, policy=self.retry)

    async def aclose(self) -> None:
        await self._owned.aclose()

    def _error_from_event(self, data: dict[str, Any]) -> Exception:
        error = data.get("error")
        status = error.get("code") if isinstance(error, dict) else None
        if not isinstance(status, int):
            status = 500
        return error_for_status(self.name, status, message_from_body(data), secrets=(self._api_key,))

    async def _attempt(self, call: DraftCall, definition: str | None) -> AsyncGenerator[str, None]:
        client = self._user_client or await self._owned.get()
        standard, extra = draft_request(self, call.request, definition)
        received = ""
        call.finish_reason = None  # this attempt's own, read from the stream
        try:
            async with client.stream("POST", self._url, json={**standard, **extra}, headers=self._headers) as response:
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise error_for_status(
                        self.name,
                        response.status_code,
                        message_from_body(raw),
                        retry_after=parse_retry_after(response.headers),
                        secrets=(self._api_key,),
                    )
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    # A server that ignored stream=True: one JSON completion.
                    text = await self._read_whole(response, call)
                    if text:
                        yield text
                    return
                async for event in aiter_sse(response.aiter_lines()):
                    if event.data.strip() == "[DONE]":
                        return
                    data = self._decode(event.data)
                    if "error" in data:
                        raise self._error_from_event(data)
                    text = read_chunk(data, call, self.endpoint)
                    if text:
                        received += text
                        yield text
                if call.finish_reason is None:
                    # Neither "[DONE]" nor a finish reason: the server or a proxy closed early.
                    raise unfinished_stream(self.name, "[DONE] or a finish_reason", received=received)
        except httpx.TransportError as exc:
            raise connection_error(self.name, exc, received=received) from exc

    def _decode(self, payload: str) -> dict[str, Any]:
        try:
            data = json.loads(payload)
        except ValueError:
            raise response_error(self.name, f"malformed JSON in the event stream: {payload[:200]!r}") from None
        if not isinstance(data, dict):
            raise response_error(self.name, f"an event that is not a JSON object: {payload[:200]!r}")
        return data

    async def _read_whole(self, response: httpx.Response, call: DraftCall) -> str:
        raw = (await response.aread()).decode("utf-8", "replace")
        data = self._decode(raw)
        if "error" in data:
            raise self._error_from_event(data)
        usage = data.get("usage")
        text = ""
        for choice in data.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                message = choice.get("message")
                piece = message.get("content") if isinstance(message, dict) else choice.get("text")
                text += piece if isinstance(piece, str) else ""
                if choice.get("finish_reason"):
                    call.finish_reason = str(choice["finish_reason"])
        if isinstance(usage, dict):
            read_chunk({"usage": usage}, call, self.endpoint)
        return text
