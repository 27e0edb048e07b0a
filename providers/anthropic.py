"""``AnthropicDraft``: Claude through the ``anthropic`` SDK's streaming Messages API.

Install with ``pip install 'grammar-guide[anthropic]'``. The accepted text is sent as a final
assistant message (prefill), which the model continues: a true continuation. The API rejects a
prefill that ends in whitespace, so trailing whitespace is held back and the continuation's
leading whitespace dropped in its place.

Some models reject prefill altogether: the Claude 4.6 family and later answer HTTP 400 "This
model does not support assistant message prefill. The conversation must end with a user
message." A model known by its name to refuse it (``refuses_prefill``) is never sent one; for
any other model, a 400 that says so makes the draft fall back, after that one request, for the
rest of its life, to showing the accepted text as an unfinished answer and asking the model to
continue it (with a larger token budget, see ``restatement_allowance``); ``continues_prefix``
becomes False and the guide loop aligns restatements. Each
call records the mode it actually used in ``call.continued_prefix``.

Anthropic has no grammars, but JSON-schema outputs (``native_schema``, see ``providers._native``):
for a grammar built from a JSON Schema (``Grammar.from_json_schema``) on a model that takes them
(``supports_json_schema``: Claude Haiku, Sonnet and Opus 4.5 and later, by name), the first call
sends the schema as ``output_config={"format": {"type": "json_schema", "schema": ...}}`` (the
Messages API's structured outputs, GA since SDK 0.77, no beta header) and streams the text:
Anthropic's engine writes valid JSON, the checker still reads every byte. A 400 for the schema
(features outside Anthropic's subset, such as an object without ``"additionalProperties":
false``) makes the call draft freely instead, recorded on the call (``path="fallback"``, the
server's message in ``fallback_reason``). Other grammars are never sent.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from grammar_guide import AuthenticationError, BadRequestError, Draft, DraftCall, DraftRequest, MissingDependencyError

from ._native import NATIVE_MAX_TOKENS, NativeGrammar, NativeSchemaPolicy, whole_answer_request
from ._openai_format import CONTINUE_INSTRUCTION, restatement_allowance
from ._retry import OwnedClient, RetryPolicy, sdk_error, stream_with_retries, unfinished_stream

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingDependencyError(
        "grammar_guide.providers.anthropic needs the anthropic SDK: pip install 'grammar-guide[anthropic]'"
    ) from exc

__all__ = ["AnthropicDraft", "refuses_prefill", "supports_json_schema"]

logger = logging.getLogger("grammar_guide.providers")

DEFAULT_TIMEOUT = 60.0

# A 400 that rejects prefill itself (not one of its details, such as trailing whitespace).
_PREFILL_REJECTED = re.compile(
    r"prefill|must end with a user message|final assistant (?:content|message)", re.IGNORECASE
)


def rejects_prefill(error: BadRequestError) -> bool:
    """Whether a 400 says the model does not accept an assistant prefill."""
    return bool(_PREFILL_REJECTED.search(error.message)) and "whitespace" not in error.message.lower()


# "claude-opus-4-6", "claude-sonnet-4.6-20260115", "anthropic.claude-haiku-5-v1:0",
# "claude-5-opus": the family's version, whatever the provider's prefix or date suffix.
_CLAUDE_VERSION = re.compile(
    r"claude-(?:(?:opus|sonnet|haiku)-)?(\d+)(?:[-.](\d{1,2})(?!\d))?(?:-(?:opus|sonnet|haiku))?", re.IGNORECASE
)


def _claude_version(model: str) -> tuple[int, int] | None:
    """The Claude family version a model name carries (``(4, 6)`` for ``claude-opus-4-6``)."""
    match = _CLAUDE_VERSION.search(model)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def refuses_prefill(model: str) -> bool:
    """Whether ``model`` is known by its name to refuse assistant prefill: the Claude 4.6 family
    and later (older and unknown names: False, and the draft learns from the first 400)."""
    version = _claude_version(model)
    return version is not None and version >= (4, 6)


def supports_json_schema(model: str) -> bool:
    """Whether ``model`` is known by its name to take JSON-schema outputs (``output_config.format``):
    Claude 4.5 and later (Haiku 4.5, Sonnet 4.5, Opus 4.5, the 4.6 family, Opus 4.7), the models
    Anthropic's structured-outputs page lists as generally available. Others and unknown names:
    False (``native_schema=True`` sends the schema anyway)."""
    version = _claude_version(model)
    return version is not None and version >= (4, 5)


class AnthropicDraft(Draft):
    """A draft served by Anthropic's Messages API.

    Args:
        model: the model name (``"claude-haiku-4-5"``, ...).
        client: an ``anthropic.AsyncAnthropic`` you built; used with ``max_retries=0``. When
            omitted, one is made from ``base_url``/``api_key`` or ``ANTHROPIC_BASE_URL`` and
            ``ANTHROPIC_API_KEY``, and closed by ``aclose``.
        base_url: the API root (the SDK's ``base_url``, without ``/v1``).
        api_key: the API key; never logged or shown in errors.
        max_tokens: an upper bound on ``max_tokens`` per call (the guide loop asks for its
            lookahead, ``DraftRequest.max_new_tokens``); ``None`` for no bound.
        prefill: start in prefill mode (True) or in continuation-by-instruction mode (False);
            ``None`` (default) decides by the model's name: False for models known to refuse
            prefill (``refuses_prefill``: Claude 4.6 and later), True for the others.
        timeout: seconds for a request of the client made here.
        retry: the ``RetryPolicy``.
        instruction: the user message that asks the model to continue without prefill.
        native_schema: ``"auto"`` (default: send a JSON-schema grammar's schema as the output
            format where the model is known to take it, ``supports_json_schema``), ``True``
            (for any model) or ``False``. Grammars not built from a JSON Schema are never sent.
        **request_options: more arguments for ``messages.create`` (``system``, ``temperature``,
            ``extra_headers``, ``output_config`` options such as ``effort``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        client: Any | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        prefill: bool | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        instruction: str = CONTINUE_INSTRUCTION,
        native_schema: NativeGrammar = "auto",
        **request_options: Any,
    ) -> None:
        if client is not None and not isinstance(client, anthropic.AsyncAnthropic):
            raise TypeError(
                "client must be an anthropic.AsyncAnthropic (drafts stream asynchronously), "
                f"not {type(client).__name__}"
            )
        self.name = "anthropic"
        self.model = model
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self.instruction = instruction
        self.request_options = request_options
        self.continues_prefix = not refuses_prefill(model) if prefill is None else prefill
        self.native_schema = NativeSchemaPolicy(native_schema, model, known=supports_json_schema(model))
        self._user_client: anthropic.AsyncAnthropic | None
        self._api_key: str | None
        if client is not None:
            self._user_client = client.with_options(max_retries=0)
            self._api_key = client.api_key
        else:
            self._user_client = None
            self._api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL")
            if not self._api_key:
                raise AuthenticationError("no API key: pass api_key= or set ANTHROPIC_API_KEY", provider=self.name)
        key = self._api_key
        self._owned = OwnedClient(
            lambda: anthropic.AsyncAnthropic(
                api_key=key,
                base_url=base_url,
                max_retries=0,
                timeout=timeout if timeout is not None else DEFAULT_TIMEOUT,
            ),
            lambda c: c.close(),
        )

    def __repr__(self) -> str:
        return f"AnthropicDraft(model={self.model!r}, prefill={self.continues_prefix!r})"

    async def aclose(self) -> None:
        await self._owned.aclose()

    def stream(self, call: DraftCall) -> AsyncIterator[str]:
        definition = self.native_schema.definition_for(call)
        if definition is None:
            return self._drafted(call)
        # Set again by the policy once the answer's start is read (it restates any forced text).
        call.continued_prefix = self.continues_prefix
        native = self._stream(call, False, schema=definition)
        return self.native_schema.stream(call, definition, native, lambda: self._drafted(call))

    async def _drafted(self, call: DraftCall) -> AsyncGenerator[str, None]:
        """Drafting freely: with prefill, or, when the model rejects it, by instruction."""
        use_prefill = self.continues_prefix
        call.continued_prefix = use_prefill
        inner = self._stream(call, use_prefill)
        try:
            try:
                first = await inner.__anext__()
            except StopAsyncIteration:
                return
            except BadRequestError as error:
                if not (use_prefill and rejects_prefill(error)):
                    raise
                logger.info("%s: %s rejects prefill (%s); continuing without it", self.name, self.model, error)
                self.continues_prefix = False
                call.continued_prefix = False
                call.extra["prefill_rejected"] = error.message
                await inner.aclose()
                inner = self._stream(call, False)
                try:
                    first = await inner.__anext__()
                except StopAsyncIteration:
                    return
            yield first
            async for chunk in inner:
                yield chunk
        finally:
            await inner.aclose()

    def _stream(self, call: DraftCall, prefill: bool, schema: str | None = None) -> AsyncGenerator[str, None]:
        return stream_with_retries(  # type: ignore[return-value]
            call, lambda: self._attempt(call, prefill, schema), provider=self.name, policy=self.retry
        )

    def _messages(self, request: DraftRequest, prefill: bool) -> tuple[list[dict[str, str]], str]:
        """The messages, and the whitespace held back from the end of a prefill."""
        messages = [{"role": "user", "content": request.prompt}]
        if not request.accepted_text:
            return messages, ""
        if prefill:
            head = request.accepted_text.rstrip()
            if head:
                messages.append({"role": "assistant", "content": head})
            return messages, request.accepted_text[len(head) :]
        messages.append({"role": "assistant", "content": request.accepted_text})
        messages.append({"role": "user", "content": self.instruction})
        return messages, ""

    async def _attempt(self, call: DraftCall, prefill: bool, schema: str | None = None) -> AsyncGenerator[str, None]:
        """One Messages call; with ``schema`` (a JSON Schema's text), sent as the output format,
        the call may write the whole answer."""
        client = self._user_client or await self._owned.get()
        request = call.request if schema is None else whole_answer_request(call.request)
        messages, held_back = self._messages(request, prefill)
        max_tokens = request.max_new_tokens
        if not prefill:
            max_tokens += restatement_allowance(request.accepted_text)
        if schema is not None:
            max_tokens = max(max_tokens, NATIVE_MAX_TOKENS)
        if self.max_tokens is not None:
            max_tokens = min(max_tokens, self.max_tokens)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        stops = [s for s in request.stop if s.strip()]  # the API rejects whitespace-only stops
        if stops:
            kwargs["stop_sequences"] = stops
        kwargs.update(self.request_options)
        if schema is not None:
            output_format = {"type": "json_schema", "schema": json.loads(schema)}
            kwargs["output_config"] = {**(kwargs.get("output_config") or {}), "format": output_format}
        skip_space = bool(held_back)
        received = ""
        stopped = False  # a stop_reason or message_stop was read: the message is whole
        try:
            stream = await client.messages.create(stream=True, **kwargs)
        except Exception as exc:
            raise self._error(exc, received) from None
        try:
            async for event in stream:
                data = event.to_dict()
                kind = data.get("type")
                if kind == "message_start":
                    usage = (data.get("message") or {}).get("usage") or {}
                    if usage.get("input_tokens") is not None:
                        call.tokens_in = int(usage["input_tokens"])
                elif kind == "content_block_delta":
                    delta = data.get("delta") or {}
                    text = delta.get("text") if delta.get("type") == "text_delta" else None
                    if not text:
                        continue
                    if skip_space:
                        text = text.lstrip()
                        if not text:
                            continue
                        skip_space = False
                    received += text
                    yield text
                elif kind == "message_delta":
                    usage = data.get("usage") or {}
                    if usage.get("output_tokens") is not None:
                        call.tokens_out = int(usage["output_tokens"])
                    reason = (data.get("delta") or {}).get("stop_reason")
                    if reason:
                        stopped = True
                        call.finish_reason = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}.get(
                            reason, reason
                        )
                elif kind == "message_stop":
                    stopped = True
        except Exception as exc:
            raise self._error(exc, received) from None
        finally:
            await stream.close()
        if not stopped:
            raise unfinished_stream(self.name, "a stop_reason or message_stop", received=received)

    def _error(self, exc: Exception, received: str) -> Exception:
        error = sdk_error(
            self.name,
            exc,
            connection_types=(anthropic.APIConnectionError,),
            secrets=(self._api_key,),
            received=received,
        )
        return error if error is not None else exc
