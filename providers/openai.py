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
"""

from __future__ import annotations

import os
from typing import Any, AsyncGenerator, AsyncIterator

from grammar_guide import AuthenticationError, Draft, DraftCall, MissingDependencyError

from ._openai_format import CONTINUE_INSTRUCTION, PREFILL_MODES, Endpoint, Prefill, build_request, read_chunk
from ._retry import OwnedClient, RetryPolicy, sdk_error, stream_with_retries, unfinished_stream

try:
    import openai
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "providers.openai needs the openai SDK: pip install 'grammar-guide[openai]'"
    ) from exc

__all__ = ["OpenAIDraft"]

DEFAULT_TIMEOUT = 60.0


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
        self.continues_prefix = endpoint == "completions" or prefill is not None
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
        return stream_with_retries(call, lambda: self._attempt(call), provider=self.name, policy=self.retry)

    async def aclose(self) -> None:
        await self._owned.aclose()

    async def _attempt(self, call: DraftCall) -> AsyncGenerator[str, None]:
        client = self._user_client or await self._owned.get()
        standard, extra = build_request(
            call.request,
            model=self.model,
            endpoint=self.endpoint,
            prefill=self.prefill,
            include_usage=self.include_usage,
            instruction=self.instruction,
            options=self.request_options,
        )
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
