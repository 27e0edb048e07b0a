"""``OpenAIDraft``: OpenAI's API, or any OpenAI-compatible server, through the ``openai`` SDK.

Install with ``pip install 'grammar-guide[openai]'``. Two endpoints:

- ``endpoint="chat"`` (default): streaming Chat Completions. OpenAI offers no assistant prefill,
  so after the first call the accepted text is shown as the model's unfinished answer and a
  last user message asks it to continue; ``continues_prefix`` is False and the guide loop aligns
  answers that restate the text. On servers with a prefill option (vLLM, SGLang), pass
  ``prefill="continue_final_message"``: the accepted text is then truly continued.
- ``endpoint="completions"``: the legacy Completions endpoint, a true continuation of
  ``prompt + accepted_text`` (``gpt-3.5-turbo-instruct``, ``davinci-002``, and most local servers).

Usage comes from ``stream_options={"include_usage": True}``. The SDK's own retries are turned
off (``max_retries=0``): the provider's ``RetryPolicy`` is the one retry policy.

Native grammars (``native_grammar``, see ``providers._native``): with a GPT-5 family model the
first call sends the grammar on the Responses API as a forced custom tool whose input format is
the grammar in Lark, and streams the tool's input (``response.custom_tool_call_input.delta``
events): OpenAI's engine writes a valid answer, the checker still reads every byte. A 400 for the
grammar ("grammar too complex") makes the call draft freely instead, recorded on the call
(``path="fallback"``, the server's message in ``fallback_reason``). ``grammar_style`` sends it to
vLLM, SGLang or llama.cpp servers in their own request fields instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from grammar_guide import AuthenticationError, Draft, DraftCall, MissingDependencyError

from ._native import (
    GrammarStyle,
    NativeGrammar,
    NativeGrammarPolicy,
)
from ._openai_format import CONTINUE_INSTRUCTION, PREFILL_MODES, Endpoint, Prefill, draft_request, read_chunk
from ._retry import OwnedClient, RetryPolicy, response_error, sdk_error, stream_with_retries, unfinished_stream

try:
    import openai
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "grammar_guide.providers.openai needs the openai SDK: pip install 'grammar-guide[openai]'"
    ) from exc

__all__ = ["OpenAIDraft"]

DEFAULT_TIMEOUT = 60.0

#: The custom tool that carries the grammar on the Responses API.
GRAMMAR_TOOL_NAME = "answer"
GRAMMAR_TOOL_DESCRIPTION = "Write the complete answer to the user's request."
# Request options the Responses API shares with Chat Completions.
_RESPONSES_OPTIONS = ("temperature", "top_p", "max_output_tokens", "reasoning", "extra_headers", "extra_query")


class OpenAIDraft(Draft):
    """A draft served by OpenAI's API or an OpenAI-compatible server.

    Args:
        model: the model name (``"gpt-4o-mini"``, ``"gpt-3.5-turbo-instruct"``, a vLLM model id).
        client: an ``openai.AsyncOpenAI`` you built; used with ``max_retries=0``.
            When omitted, one is made from ``base_url``/``api_key`` or the ``OPENAI_BASE_URL``
            and ``OPENAI_API_KEY`` environment variables, and closed by ``aclose``.
        base_url: the API root of an OpenAI-compatible server, e.g. ``"http://localhost:8000/v1"``.
        api_key: the API key; never logged or shown in errors.
        endpoint: ``"chat"`` or ``"completions"`` (see the module docstring).
        prefill: ``"continue_final_message"`` on servers that continue a final assistant message.
        include_usage: ask for usage in the stream; turn off for servers that reject it.
        timeout: seconds for a request of the client made here.
        retry: the ``RetryPolicy``.
        instruction: the user message that asks the chat model to continue without prefill.
        native_grammar: ``"auto"`` (default: send the grammar where the model is known to
            take it, GPT-5 family names for ``grammar_style="openai"``), ``True`` or ``False``.
        grammar_style: how the grammar is sent: ``"openai"`` (a forced custom grammar tool on the
            Responses API), or ``"vllm"``, ``"sglang"``, ``"llama.cpp"`` (their request fields).
        **request_options: more arguments for ``create`` (``temperature``, ``seed``,
            ``extra_body``, ``extra_headers``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        client: Any | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        endpoint: Endpoint = "chat",
        prefill: Prefill | None = None,
        include_usage: bool = True,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        instruction: str = CONTINUE_INSTRUCTION,
        native_grammar: NativeGrammar = "auto",
        grammar_style: GrammarStyle = "openai",
        **request_options: Any,
    ) -> None:
        if endpoint not in ("chat", "completions"):
            raise ValueError(f"endpoint must be 'chat' or 'completions', not {endpoint!r}")
        if prefill is not None and prefill not in PREFILL_MODES:
            raise ValueError(f"prefill must be one of {PREFILL_MODES} or None, not {prefill!r}")
        if client is not None and not isinstance(client, openai.AsyncOpenAI):
            raise TypeError(
                f"client must be an openai.AsyncOpenAI (drafts stream asynchronously), not {type(client).__name__}"
            )
        self.name = "openai"
        self.model = model
        self.endpoint: Endpoint = endpoint
        self.prefill = prefill
        self.include_usage = include_usage
        self.retry = retry or RetryPolicy()
        self.instruction = instruction
        self.request_options = request_options
        self.native_grammar = NativeGrammarPolicy(native_grammar, grammar_style, model)
        self.continues_prefix = endpoint == "completions" or prefill is not None
        self._user_client: openai.AsyncOpenAI | None
        self._api_key: str | None
        if client is not None:
            self._user_client = client.with_options(max_retries=0)
            self._api_key = client.api_key
        else:
            self._user_client = None
            self._api_key = api_key or os.environ.get("OPENAI_API_KEY")
            base_url = base_url or os.environ.get("OPENAI_BASE_URL")
            if not self._api_key and base_url is None:
                raise AuthenticationError(
                    "no API key: pass api_key= or set OPENAI_API_KEY (or pass base_url= for a local server)",
                    provider=self.name,
                )
        key = self._api_key or "none"  # local servers often need no key; the SDK requires one
        self._owned = OwnedClient(
            lambda: openai.AsyncOpenAI(
                api_key=key,
                base_url=base_url,
                max_retries=0,
                timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
            ),
            lambda c: c.close(),
        )

    def __repr__(self) -> str:
        return f"OpenAIDraft(model={self.model!r}, endpoint={self.endpoint!r})"

    def stream(self, call: DraftCall) -> AsyncIterator[str]:
        call.continued_prefix = self.continues_prefix
        definition = self.native_grammar.definition_for(call)
        if definition is None:
            return self._retried(call, lambda: self._attempt(call))
        if self.native_grammar.style == "openai":
            native = self._retried(call, lambda: self._grammar_tool_attempt(call, definition))
        else:
            native = self._retried(call, lambda: self._attempt(call, definition))
        return self.native_grammar.stream(
            call, definition, native, lambda: self._retried(call, lambda: self._attempt(call))
        )

    async def aclose(self) -> None:
        await self._owned.aclose()

    def _retried(self, call: DraftCall, attempt: Callable[[], AsyncGenerator[str, None]]) -> AsyncIterator[str]:
        return stream_with_retries(call, attempt, provider=self.name, policy=self.retry)

    async def _grammar_tool_attempt(self, call: DraftCall, definition: str) -> AsyncGenerator[str, None]:
        """The Responses API with the grammar as a forced custom tool; yields the tool's input."""
        client = self._user_client or await self._owned.get()
        tool = {
            "type": "custom",
            "name": GRAMMAR_TOOL_NAME,
            "description": GRAMMAR_TOOL_DESCRIPTION,
            "format": {"type": "grammar", "syntax": "lark", "definition": definition},
        }
        body: dict[str, Any] = {
            "model": self.model,
            "input": [{"role": "user", "content": call.request.prompt}],
            "tools": [tool],
            "tool_choice": {"type": "custom", "name": GRAMMAR_TOOL_NAME},
            "parallel_tool_calls": False,
            "stream": True,
        }
        body.update({k: v for k, v in self.request_options.items() if k in _RESPONSES_OPTIONS})
        received = ""
        try:
            stream = await client.responses.create(**body)
        except Exception as exc:
            raise self._error(exc, received) from None
        try:
            async for event in stream:
                kind = event.type
                if kind == "response.custom_tool_call_input.delta":
                    received += event.delta
                    yield event.delta
                elif kind in ("response.completed", "response.incomplete"):
                    usage = event.response.usage
                    if usage is not None:
                        call.tokens_in, call.tokens_out = usage.input_tokens, usage.output_tokens
                    details = event.response.incomplete_details
                    call.finish_reason = "length" if details is not None and details.reason else "stop"
                elif kind in ("response.failed", "error"):
                    error = getattr(event, "response", event)
                    message = getattr(getattr(error, "error", None), "message", None) or getattr(error, "message", kind)
                    raise response_error(self.name, f"the response failed: {message}")
            if call.finish_reason is None:
                raise unfinished_stream(self.name, "response.completed", received=received)
        except Exception as exc:
            raise self._error(exc, received) from None
        finally:
            await stream.close()

    async def _attempt(self, call: DraftCall, definition: str | None = None) -> AsyncGenerator[str, None]:
        """A Chat Completions or Completions call; with ``definition``, the grammar goes in the
        serving engine's request fields and the call may write the whole answer."""
        client = self._user_client or await self._owned.get()
        standard, extra = draft_request(self, call.request, definition)
        if extra:
            standard["extra_body"] = extra
        api = client.completions if self.endpoint == "completions" else client.chat.completions
        received = ""
        call.finish_reason = None  # this attempt's own, read from the stream
        try:
            stream = await api.create(**standard)
        except Exception as exc:
            raise self._error(exc, received) from None
        try:
            async for chunk in stream:
                text = read_chunk(chunk.to_dict(), call, self.endpoint)
                if text:
                    received += text
                    yield text
        except Exception as exc:
            raise self._error(exc, received) from None
        finally:
            await stream.close()
        if call.finish_reason is None:
            # The SDK ends quietly when the connection closes cleanly before "[DONE]"; without
            # a finish reason the text may be cut short.
            raise unfinished_stream(self.name, "a finish_reason", received=received)

    def _error(self, exc: Exception, received: str) -> Exception:
        error = sdk_error(
            self.name,
            exc,
            connection_types=(openai.APIConnectionError,),
            secrets=(self._api_key,),
            received=received,
        )
        return error if error is not None else exc
