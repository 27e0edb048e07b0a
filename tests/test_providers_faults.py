"""Every remote provider against the real test server (SmolLM2 over HTTP on 127.0.0.1):
streaming, usage, stop sequences, early close, and each scripted fault.

After each fault the call either gives text or raises a clear ``ProviderError``; nothing hangs
(every call runs under a timeout).
"""

from __future__ import annotations

import time

import pytest

from grammar_guide import (
    AuthenticationError,
    DraftRequest,
    ProviderConnectionError,
    ProviderResponseError,
    RateLimitError,
    ServerError,
)
from tests.support.llm_server import API_KEY, KINDS, Fault, collect, fast_retry, get_server, make_draft

pytestmark = pytest.mark.model

PROMPT = "Write a SQL query that lists the names of all users."
REQUEST = DraftRequest(prompt=PROMPT, max_new_tokens=6)
# A raw prompt for the Completions endpoint (no chat template): the model continues the query.
RAW_PROMPT = "-- SQLite: the names of all users, oldest first\nSELECT"


def request_for(kind: str, max_new_tokens: int = 6, **fields) -> DraftRequest:
    prompt = RAW_PROMPT if kind.endswith("completions") else PROMPT
    return DraftRequest(prompt=prompt, max_new_tokens=max_new_tokens, **fields)


# The three client stacks: the openai SDK, the anthropic SDK, plain httpx.
STACKS = ("openai-chat", "anthropic", "http-chat")


@pytest.fixture(scope="module")
def server():
    return get_server()


@pytest.mark.parametrize("kind", KINDS)
def test_streams_text_and_reports_usage(server, kind):
    draft = make_draft(kind, server)
    got = collect(draft, request_for(kind))
    assert got.error is None
    assert got.text.strip()
    assert len(got.chunks) > 1  # streamed, not one block
    record = server.records[-1]
    assert got.text == record.text
    assert got.call.tokens_in == len(server.tokenizer(record.prompt_text, add_special_tokens=False).input_ids)
    assert got.call.tokens_out == record.tokens_generated == 6
    assert got.call.finish_reason == "length"
    assert got.call.extra["attempts"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_stop_sequence_ends_the_text_before_it(server, kind):
    request = request_for(kind, 24, stop=("FROM",))
    full = collect(make_draft(kind, server), request_for(kind, 24))
    assert "FROM" in full.text, full.text  # the premise
    got = collect(make_draft(kind, server), request)
    assert got.error is None
    assert got.text == full.text[: full.text.index("FROM")]
    assert got.call.finish_reason == "stop"


@pytest.mark.parametrize("kind", KINDS)
def test_early_close_stops_generation_on_the_server(server, kind):
    draft = make_draft(kind, server)
    got = collect(draft, request_for(kind, 300), limit=2)
    assert len(got.chunks) == 2
    assert got.call.finish_reason == "closed"
    record = server.records[-1]
    assert record.finished.wait(10), "generation went on after the client left"
    assert record.disconnected
    assert record.tokens_after_disconnect is not None and record.tokens_after_disconnect <= 1
    assert record.tokens_generated < 40 < record.max_tokens


@pytest.mark.parametrize("kind", STACKS)
def test_429_waits_retry_after_then_succeeds(server, kind):
    script = server.script([Fault("status", status=429, retry_after=0.5)])
    got = collect(make_draft(kind, server, script=script), REQUEST)
    assert got.error is None and got.text.strip()
    first, second = server.records_for(script)
    assert first.status == 429 and second.status == 200
    assert second.started - first.started >= 0.5
    assert got.call.extra["attempts"] == 2


@pytest.mark.parametrize("kind", STACKS)
def test_429_until_the_retries_run_out_is_a_rate_limit_error(server, kind):
    script = server.script([Fault("status", status=429, retry_after=0.05)] * 3)
    got = collect(make_draft(kind, server, script=script, retry=fast_retry(3)), REQUEST)
    assert isinstance(got.error, RateLimitError)
    assert got.error.status_code == 429 and got.error.retryable
    assert "Rate limit reached" in str(got.error)
    assert len(server.records_for(script)) == 3


@pytest.mark.parametrize("kind", STACKS)
def test_500_twice_then_success(server, kind):
    script = server.script([Fault("status", status=500), Fault("status", status=500)])
    got = collect(make_draft(kind, server, script=script), REQUEST)
    assert got.error is None and got.text.strip()
    assert [r.status for r in server.records_for(script)] == [500, 500, 200]
    assert got.call.extra["attempts"] == 3


@pytest.mark.parametrize("kind", STACKS)
def test_500_every_time_is_a_server_error(server, kind):
    script = server.script([Fault("status", status=503)] * 2)
    got = collect(make_draft(kind, server, script=script, retry=fast_retry(2)), REQUEST)
    assert isinstance(got.error, ServerError)
    assert got.error.status_code == 503
    assert len(server.records_for(script)) == 2


@pytest.mark.parametrize("kind", STACKS)
def test_401_is_not_retried_and_never_shows_the_key(server, kind, caplog):
    wrong_key = "sk-wrong-9f8e7d6c5b4a39281706"
    caplog.set_level("DEBUG")
    got = collect(make_draft(kind, server, api_key=wrong_key), REQUEST)
    assert isinstance(got.error, AuthenticationError)
    assert got.error.status_code == 401 and not got.error.retryable
    assert "Incorrect API key provided" in str(got.error)  # the provider's message...
    for shown in (str(got.error), repr(got.error), repr(got.error.args), caplog.text):
        assert wrong_key not in shown  # ...without the key
        assert API_KEY not in shown
    assert server.records[-1].status == 401
    assert got.call.extra["attempts"] == 1


@pytest.mark.parametrize("kind", STACKS)
def test_dropped_connection_mid_stream_ends_the_call_with_the_text_so_far(server, kind):
    script = server.script([Fault("drop", after_tokens=3)])
    got = collect(make_draft(kind, server, script=script), DraftRequest(prompt=PROMPT, max_new_tokens=20))
    assert isinstance(got.error, ProviderConnectionError)
    assert len(got.chunks) == 3 and got.text.strip()
    assert len(server.records_for(script)) == 1  # text was streamed: not retried
    assert got.call.finish_reason == "error"


@pytest.mark.parametrize("kind", STACKS)
def test_dropped_connection_before_any_text_is_retried(server, kind):
    script = server.script([Fault("drop", after_tokens=0)])
    got = collect(make_draft(kind, server, script=script), REQUEST)
    assert got.error is None and got.text.strip()
    assert len(server.records_for(script)) == 2


@pytest.mark.parametrize("kind", STACKS)
def test_read_timeout_before_the_answer_is_retried(server, kind):
    # The server sends heartbeats while a token is slow, so only the scripted delay times out.
    script = server.script([Fault("delay", seconds=2.5)])
    got = collect(make_draft(kind, server, script=script, timeout=1.5), REQUEST, timeout=120)
    assert got.error is None and got.text.strip()
    assert len(server.records_for(script)) == 2
    assert got.call.extra["attempts"] == 2


@pytest.mark.parametrize("kind", STACKS)
def test_read_timeout_mid_stream_ends_the_call_without_hanging(server, kind):
    script = server.script([Fault("stall", after_tokens=2, seconds=5.0)])
    started = time.monotonic()
    got = collect(
        make_draft(kind, server, script=script, timeout=1.5),
        DraftRequest(prompt=PROMPT, max_new_tokens=20),
        timeout=120,
    )
    assert isinstance(got.error, ProviderConnectionError)
    assert "Timeout" in str(got.error)
    assert len(got.chunks) == 2
    # The client gave up during the stall: the server saw it leave before sending more.
    record = server.records_for(script)[0]
    assert record.finished.wait(20) and record.disconnected
    assert record.text == got.text
    assert time.monotonic() - started < 60  # nothing hung
    assert len(server.records_for(script)) == 1  # text was streamed: not retried


@pytest.mark.parametrize("kind", STACKS)
def test_malformed_json_is_a_response_error(server, kind):
    script = server.script([Fault("malformed", after_tokens=0)])
    got = collect(make_draft(kind, server, script=script), REQUEST)
    assert isinstance(got.error, ProviderResponseError)
    assert not got.error.retryable
    assert len(server.records_for(script)) == 1


@pytest.mark.parametrize("kind", STACKS)
def test_empty_completion_is_no_text_and_no_error(server, kind):
    script = server.script([Fault("empty")])
    got = collect(make_draft(kind, server, script=script), REQUEST)
    assert got.error is None
    assert got.chunks == []
    assert got.call.finish_reason == "stop"
    assert got.call.tokens_out == 0


def test_unknown_model_is_a_bad_request_and_not_retried(server):
    from grammar_guide import BadRequestError

    got = collect(make_draft("http-chat", server, model="no-such-model"), REQUEST)
    assert isinstance(got.error, BadRequestError)
    assert got.error.status_code == 404
    assert "does not exist" in str(got.error)
    assert got.call.extra["attempts"] == 1


# A canned answer streamed by the server instead of the model's (instant, and known in advance).
ANSWER = "SELECT name FROM users WHERE age > 30"


@pytest.mark.parametrize("kind", KINDS)
def test_stream_closed_without_its_end_after_text_is_a_connection_error(server, kind):
    # The response ends cleanly (no transport error) but without "[DONE]" / a finish_reason /
    # message_stop: the text may be cut short, so it is not a finished answer.
    script = server.script([Fault("truncate", after_tokens=3)], answer=ANSWER)
    got = collect(make_draft(kind, server, script=script), DraftRequest(prompt=PROMPT, max_new_tokens=20))
    assert isinstance(got.error, ProviderConnectionError)
    assert got.error.retryable
    assert "ended without" in str(got.error)
    assert len(got.chunks) == 3 and ANSWER.startswith(got.text.lstrip())
    assert len(server.records_for(script)) == 1  # text was streamed: not retried here
    assert got.call.finish_reason == "error"


@pytest.mark.parametrize("kind", KINDS)
def test_stream_closed_without_its_end_before_any_text_is_retried(server, kind):
    script = server.script([Fault("truncate", after_tokens=0)], answer=ANSWER)
    got = collect(make_draft(kind, server, script=script), DraftRequest(prompt=PROMPT, max_new_tokens=20))
    assert got.error is None
    assert got.text.lstrip() == ANSWER
    assert len(server.records_for(script)) == 2
    assert got.call.finish_reason == "stop"


@pytest.mark.parametrize("kind", KINDS)
def test_a_complete_answer_streams_without_error(server, kind):
    script = server.script([], answer=ANSWER)
    got = collect(make_draft(kind, server, script=script), DraftRequest(prompt=PROMPT, max_new_tokens=20))
    assert got.error is None and got.text.lstrip() == ANSWER
    assert got.call.finish_reason == "stop"
