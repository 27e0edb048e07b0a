"""HTTPDraft (plain httpx, no SDK) against the test server: endpoints, prefill, headers, a client
you built, and a server that ignores ``stream=true``."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from grammar_guide import DraftCall, DraftRequest, ProviderConnectionError, RateLimitError
from grammar_guide.providers.http import HTTPDraft
from tests.support.llm_server import API_KEY, Fault, collect, fast_retry, get_server, make_draft

pytestmark = pytest.mark.model

PROMPT = "Write a SQL query that lists the names of all users."


@pytest.fixture(scope="module")
def server():
    return get_server()


def test_chat_prefill_with_continue_final_message(server):
    draft = make_draft("http-chat", server, prefill="continue_final_message")
    assert draft.continues_prefix is True
    got = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name FROM", max_new_tokens=3))
    assert got.error is None and got.text
    record = server.records[-1]
    assert record.body["continue_final_message"] is True
    assert record.prompt_text.endswith("<|im_start|>assistant\nSELECT name FROM")


def test_same_text_as_the_openai_sdk(server):
    request = DraftRequest(PROMPT, accepted_text="SELECT", max_new_tokens=5)
    plain = collect(make_draft("http-chat", server), request)
    sdk = collect(make_draft("openai-chat", server), request)
    assert plain.text == sdk.text and plain.text
    assert (plain.call.tokens_in, plain.call.tokens_out) == (sdk.call.tokens_in, sdk.call.tokens_out)


@pytest.mark.parametrize("kind", ["http-chat", "http-completions"])
def test_a_server_that_ignores_stream_true_still_gives_the_text(server, kind):
    script = server.script([Fault("json")])
    prompt = PROMPT if kind == "http-chat" else "-- all users\nSELECT"
    got = collect(make_draft(kind, server, script=script), DraftRequest(prompt, max_new_tokens=4))
    assert got.error is None
    assert got.text == server.records[-1].text and got.text
    assert got.call.tokens_out == 4 and got.call.finish_reason == "length"


def test_a_client_you_built_and_your_headers(server):
    script = server.script([Fault("status", status=500)])

    async def main():
        async with httpx.AsyncClient(timeout=20) as client:
            draft = HTTPDraft(
                f"{server.base_url}/v1/",
                "smollm2",
                api_key=API_KEY,
                client=client,
                headers={"x-test-script": script},
                retry=fast_retry(),
            )
            call = DraftCall(DraftRequest(PROMPT, max_new_tokens=2))
            chunks = [chunk async for chunk in draft.stream(call)]
            await draft.aclose()
            return chunks, call, client.is_closed

    chunks, call, closed = asyncio.run(main())
    assert chunks and call.extra["attempts"] == 2
    assert not closed  # aclose leaves your client alone
    assert [r.status for r in server.records_for(script)] == [500, 200]


def test_a_retry_after_longer_than_the_policy_allows_is_raised_at_once(server):
    script = server.script([Fault("status", status=429, retry_after=120)])
    got = collect(make_draft("http-chat", server, script=script), DraftRequest(PROMPT, max_new_tokens=2))
    assert isinstance(got.error, RateLimitError)
    assert got.error.retry_after == 120
    assert len(server.records_for(script)) == 1
    assert got.seconds < 10


def test_no_usage_option_for_servers_that_reject_it(server):
    got = collect(make_draft("http-chat", server, include_usage=False), DraftRequest(PROMPT, max_new_tokens=2))
    assert got.error is None and got.text
    assert "stream_options" not in server.records[-1].body
    assert got.call.tokens_in is None and got.call.tokens_out is None


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="endpoint"):
        HTTPDraft("http://127.0.0.1:1/v1", "m", endpoint="embeddings")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="prefill"):
        HTTPDraft("http://127.0.0.1:1/v1", "m", prefill="yes")  # type: ignore[arg-type]


def test_connection_refused_is_retried_then_a_connection_error():
    with socket_port() as port:
        pass  # the port is free again: nothing listens on it
    draft = HTTPDraft(f"http://127.0.0.1:{port}/v1", "m", retry=fast_retry(2))
    got = collect(draft, DraftRequest(PROMPT, max_new_tokens=2), timeout=20)
    assert isinstance(got.error, ProviderConnectionError)
    assert "ConnectError" in str(got.error)
    assert got.call.extra["attempts"] == 2


class socket_port:
    """A port that was free a moment ago."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.sock.close()
