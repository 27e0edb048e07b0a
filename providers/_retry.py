"""What every remote provider shares: the retry policy, error normalisation, secret scrubbing.

One retry policy (tenacity) wraps each draft call, and only the part of it before the first
text: once text has been handed to the guide loop, a failure ends the call (the loop keeps the
text and may call again), because a retried stream would restate what was already consumed.

What is retried: 429 (waiting at least ``Retry-After``), 5xx, 408, dropped or refused
connections and read timeouts, with exponential backoff up to a cap. What is never retried:
400, 401, 403, 404, 422 and anything that is not the provider's protocol.

Inside a batch job (``grammar_guide.guide_many``) every attempt first waits at the job's
``RateGate``, and a 429 closes that gate for its ``Retry-After`` (else the backoff): one rate
limit slows every row, not only the one that met it.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from grammar_guide import (
    AuthenticationError,
    BadRequestError,
    DraftCall,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    RateGate,
    RateLimitError,
    ServerError,
)

__all__ = [
    "OwnedClient",
    "RetryPolicy",
    "connection_error",
    "error_for_status",
    "message_from_body",
    "parse_retry_after",
    "response_error",
    "scrub",
    "sdk_error",
    "status_for_error_body",
    "stream_with_retries",
    "unfinished_stream",
]

logger = logging.getLogger("grammar_guide.providers")

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How a provider retries the start of a call.

    ``max_attempts`` counts the first try. The n-th wait is ``initial_wait * 2**(n-1)`` seconds,
    at most ``max_wait``, plus up to ``jitter`` of itself at random; a ``Retry-After`` from the
    server is waited in full when it is longer, up to ``max_retry_after`` seconds (a longer one
    ends the retries: the error is raised at once).
    """

    max_attempts: int = 4
    initial_wait: float = 0.5
    max_wait: float = 8.0
    jitter: float = 0.1
    max_retry_after: float = 60.0

    def wait_for(self, attempt_number: int, retry_after: float | None) -> float:
        backoff = min(self.max_wait, self.initial_wait * 2.0 ** (attempt_number - 1))
        backoff += backoff * self.jitter * random.random()
        if retry_after is not None:
            return max(backoff, retry_after)
        return backoff


NO_RETRY = RetryPolicy(max_attempts=1)

# Things shaped like API keys: "sk-...", "sk-ant-...", bearer tokens.
_KEY_LIKE = re.compile(r"\b(sk-(?:ant-)?)[A-Za-z0-9_\-]{6,}|\b(Bearer\s+)[A-Za-z0-9_\-.]{6,}")


def scrub(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """``text`` with every given secret, and anything shaped like an API key, masked."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_LIKE.sub(lambda m: (m.group(1) or m.group(2)) + "***", text)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def message_from_body(body: object, limit: int = 500) -> str:
    """The human message in an error body: OpenAI's and Anthropic's ``{"error": {"message"}}``,
    a plain ``{"message"}`` or ``{"detail"}``, or the text itself, shortened."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        text = body
        try:
            body = json.loads(text)
        except ValueError:
            text = text.strip()
            return text[:limit] + ("..." if len(text) > limit else "")
    for _ in range(3):
        if isinstance(body, dict) and isinstance(body.get("error"), (dict, str)):
            body = body["error"]
        else:
            break
    if isinstance(body, dict):
        for key in ("message", "detail", "msg"):
            value = body.get(key)
            if isinstance(value, str):
                return value[:limit]
    if isinstance(body, str):
        return body[:limit]
    text = json.dumps(body)
    return text[:limit] + ("..." if len(text) > limit else "")


def error_for_status(
    provider: str,
    status_code: int,
    message: str,
    *,
    retry_after: float | None = None,
    secrets: tuple[str | None, ...] = (),
) -> ProviderError:
    """The ``ProviderError`` for an HTTP status, with the message scrubbed of secrets."""
    message = scrub(message or f"HTTP {status_code}", secrets)
    error: ProviderError
    if status_code in (401, 403):
        error = AuthenticationError(message, provider=provider, status_code=status_code)
    elif status_code == 429:
        error = RateLimitError(message, provider=provider, status_code=status_code)
    elif status_code == 408:
        error = ProviderConnectionError(message, provider=provider, status_code=status_code)
    elif status_code >= 500:
        error = ServerError(message, provider=provider, status_code=status_code)
    else:
        error = BadRequestError(message, provider=provider, status_code=status_code)
    error.retry_after = retry_after
    return error


def connection_error(provider: str, exc: BaseException, *, received: str = "") -> ProviderConnectionError:
    """A ``ProviderConnectionError`` for a transport failure (refused, dropped, timed out)."""
    kind = type(exc).__name__
    detail = str(exc) or kind
    message = f"{kind}: {detail}" if detail != kind else kind
    if received:
        message += f" (after {len(received)} characters of text were received)"
    return ProviderConnectionError(scrub(message), provider=provider)


def unfinished_stream(provider: str, end: str, *, received: str = "") -> ProviderConnectionError:
    """A ``ProviderConnectionError`` for a stream that stopped without the protocol's end (``end``
    names what was missing): the server or a proxy closed it early, so the text may be cut short.
    Like a dropped connection it is retried before the first chunk, and ends the call after it."""
    message = f"the stream ended without {end}"
    if received:
        message += f" (after {len(received)} characters of text were received)"
    return ProviderConnectionError(message, provider=provider)


def response_error(provider: str, what: str) -> ProviderResponseError:
    """A ``ProviderResponseError``: the answer is not the provider's protocol."""
    return ProviderResponseError(scrub(what), provider=provider)


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.retryable


def _wait(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        return policy.wait_for(state.attempt_number, retry_after)

    return wait


def _stop(policy: RetryPolicy) -> Callable[[RetryCallState], bool]:
    by_count = stop_after_attempt(policy.max_attempts)

    def stop(state: RetryCallState) -> bool:
        if by_count(state):
            return True
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        return retry_after is not None and retry_after > policy.max_retry_after

    return stop


def _log_retry(provider: str) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        logger.info("%s: attempt %d failed (%s); retrying in %.2fs", provider, state.attempt_number, exc, wait)

    return before_sleep


async def stream_with_retries(
    call: DraftCall,
    attempt: Callable[[], AsyncGenerator[str, None]],
    *,
    provider: str,
    policy: RetryPolicy,
) -> AsyncIterator[str]:
    """Run ``attempt()`` (an async generator of non-empty text chunks) under ``policy``.

    The attempt is retried while it fails retryably before its first chunk; after that, its
    errors pass through unchanged. Closing this generator closes the attempt (and with it the
    HTTP response). ``call.extra["attempts"]`` counts the tries; ``call.finish_reason`` becomes
    ``"closed"`` when the caller closed the stream before the provider finished, ``"error"``
    when the provider failed after text was streamed.
    """
    attempts = 0
    stream: AsyncGenerator[str, None] | None = None
    first: str | None = None
    retrying = AsyncRetrying(
        stop=_stop(policy),
        wait=_wait(policy),
        retry=retry_if_exception(_is_retryable),
        before_sleep=_log_retry(provider),
        reraise=True,
    )
    gate = RateGate.current()
    async for try_ in retrying:
        with try_:
            attempts += 1
            call.extra["attempts"] = attempts
            if gate is not None:
                await gate.wait()
            stream = attempt()
            try:
                first = await stream.__anext__()
            except StopAsyncIteration:
                first = None
            except BaseException as exc:
                await stream.aclose()
                if gate is not None and isinstance(exc, RateLimitError):
                    gate.hold(exc.retry_after if exc.retry_after is not None else policy.wait_for(attempts, None))
                raise
    assert stream is not None
    if first is None:
        return
    try:
        yield first
        async for chunk in stream:
            yield chunk
    except GeneratorExit:
        if call.finish_reason is None:
            call.finish_reason = "closed"
        raise
    except Exception:
        if call.finish_reason is None:
            call.finish_reason = "error"
        raise
    finally:
        await stream.aclose()


class OwnedClient(Generic[T]):
    """An HTTP client a provider created itself, bound to the event loop that uses it.

    An async HTTP client's connections belong to one event loop. The client is made on first use
    in a loop and closed when that loop shuts down: a started async generator holds it, and
    ``asyncio.run`` (like any loop runner that calls ``shutdown_asyncgens``) closes open async
    generators before closing the loop, which closes the client's connections. A draft used
    from a second ``asyncio.run`` gets a fresh client. ``aclose`` closes the current one now.
    """

    def __init__(self, factory: Callable[[], T], close: Callable[[T], Awaitable[None]]) -> None:
        self._factory = factory
        self._close = close
        self._client: T | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    async def get(self) -> T:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            client = self._factory()
            self._client, self._loop = client, loop
            self._keeper = self._keep(client)
            await self._keeper.__anext__()  # now the loop tracks it, and closes it at shutdown
        return self._client

    async def _keep(self, client: T) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._client is client:
                self._client, self._loop, self._keeper = None, None, None
            await self._close(client)

    async def aclose(self) -> None:
        keeper = self._keeper
        if keeper is not None and self._loop is asyncio.get_running_loop():
            await keeper.aclose()
        self._client, self._loop, self._keeper = None, None, None


# Error types that some APIs send inside a stream (HTTP status 200), as the status they stand for.
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
}


def status_for_error_body(body: Any, default: int = 500) -> int:
    """The HTTP status an error body stands for, from its ``code`` or ``type``."""
    for _ in range(3):
        if not isinstance(body, dict):
            break
        code = body.get("code")
        if isinstance(code, int) and 400 <= code < 600:
            return code
        kind = body.get("type")
        if isinstance(kind, str) and kind in _ERROR_TYPE_STATUS:
            return _ERROR_TYPE_STATUS[kind]
        body = body.get("error")
    return default


def sdk_error(
    provider: str,
    exc: Exception,
    *,
    connection_types: tuple[type[BaseException], ...],
    secrets: tuple[str | None, ...] = (),
    received: str = "",
) -> ProviderError | None:
    """The ``ProviderError`` for an exception from the ``openai`` or ``anthropic`` SDK, or
    ``None`` when it is not one this layer knows (a bug to let through).

    Both SDKs raise ``APIStatusError`` (``status_code``, ``response``, ``body``) for an HTTP error
    or an error event in the stream, ``APIConnectionError``/``APITimeoutError`` for transport
    failures, and ``ValueError`` for malformed JSON in the stream.
    """
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, connection_types):
        return connection_error(provider, exc.__cause__ or exc, received=received)
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if isinstance(status, int) and response is not None:
        body = getattr(exc, "body", None)
        message = message_from_body(body) if body is not None else str(getattr(exc, "message", exc))
        if status < 400:  # an error event inside a 200 stream
            status = status_for_error_body(body)
        headers = getattr(response, "headers", None)
        return error_for_status(provider, status, message, retry_after=parse_retry_after(headers), secrets=secrets)
    if hasattr(exc, "body") and hasattr(exc, "request"):  # an error event without a status
        body = getattr(exc, "body", None)
        return error_for_status(provider, status_for_error_body(body), message_from_body(body), secrets=secrets)
    if isinstance(exc, ValueError):
        return response_error(provider, f"malformed data in the event stream: {exc}")
    module = type(exc).__module__
    if module.startswith(("httpx", "httpcore", "h11", "anyio")):
        return connection_error(provider, exc, received=received)
    return None
