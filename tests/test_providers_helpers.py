"""The providers' shared machinery on real inputs: the SSE reader, secret scrubbing, Retry-After,
status-to-error mapping, error bodies and the backoff schedule."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from grammar_guide import (
    AuthenticationError,
    BadRequestError,
    ProviderConnectionError,
    RateLimitError,
    ServerError,
)
from grammar_guide.providers._retry import (
    RetryPolicy,
    error_for_status,
    message_from_body,
    parse_retry_after,
    scrub,
    status_for_error_body,
)
from grammar_guide.providers._sse import ServerSentEvent, aiter_sse


def read_sse(text: str) -> list[ServerSentEvent]:
    async def lines():
        for line in text.splitlines():
            yield line

    async def main():
        return [event async for event in aiter_sse(lines())]

    return asyncio.run(main())


def test_sse_events_names_multiline_data_and_comments():
    stream = (
        ": keep-alive\r\n"
        "event: message_start\r\n"
        'data: {"a": 1}\r\n'
        "\r\n"
        "data: line one\n"
        "data:line two\n"
        "id: 7\n"
        "\n"
        "\n"
        "data: [DONE]"  # no blank line after the last event
    )
    assert read_sse(stream) == [
        ServerSentEvent("message_start", '{"a": 1}'),
        ServerSentEvent(None, "line one\nline two"),
        ServerSentEvent(None, "[DONE]"),
    ]


def test_sse_keeps_colons_inside_the_data():
    assert read_sse('data: {"url": "http://x:1"}\n\n') == [ServerSentEvent(None, '{"url": "http://x:1"}')]


def test_scrub_removes_the_key_and_key_shaped_strings():
    key = "sk-proj-AbCdEf0123456789xyz"
    text = f"Incorrect API key provided: {key}. Header was Bearer {key}; other sk-ant-api03-QQQQQQQQQQ"
    clean = scrub(text, (key,))
    assert key not in clean
    assert "QQQQQQQQQQ" not in clean
    assert clean.startswith("Incorrect API key provided: ***")
    assert scrub("a custom secret token here", ("secret token",)) == "a custom *** here"


def test_retry_after_in_seconds_milliseconds_and_http_date():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": later}) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, BadRequestError, False),
        (401, AuthenticationError, False),
        (403, AuthenticationError, False),
        (404, BadRequestError, False),
        (422, BadRequestError, False),
        (408, ProviderConnectionError, True),
        (429, RateLimitError, True),
        (500, ServerError, True),
        (503, ServerError, True),
        (529, ServerError, True),
    ],
)
def test_status_codes_map_to_error_kinds(status, kind, retryable):
    error = error_for_status("openai", status, "boom", retry_after=1.5)
    assert type(error) is kind
    assert error.retryable is retryable
    assert error.status_code == status and error.provider == "openai"
    assert str(error) == f"openai (HTTP {status}): boom"
    assert error.retry_after == 1.5


def test_error_messages_come_from_either_vendors_body():
    openai_body = '{"error": {"message": "Invalid model", "type": "invalid_request_error", "code": null}}'
    anthropic_body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert message_from_body(openai_body) == "Invalid model"
    assert message_from_body(anthropic_body) == "Overloaded"
    assert message_from_body(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert message_from_body({"detail": "Not Found"}) == "Not Found"
    assert status_for_error_body(anthropic_body) == 529
    assert status_for_error_body({"error": {"code": 429}}) == 429
    assert status_for_error_body({"error": {"message": "?"}}) == 500


def test_backoff_doubles_up_to_the_cap_and_honours_retry_after():
    policy = RetryPolicy(initial_wait=0.5, max_wait=4.0, jitter=0.0)
    assert [policy.wait_for(n, None) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.wait_for(1, 3.0) == 3.0  # the server asked for longer
    assert policy.wait_for(4, 1.0) == 4.0  # the backoff is already longer
    jittered = RetryPolicy(initial_wait=1.0, jitter=0.5)
    assert all(1.0 <= jittered.wait_for(1, None) <= 1.5 for _ in range(50))
