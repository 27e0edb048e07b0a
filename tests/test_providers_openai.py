"""OpenAIDraft (the real ``openai`` SDK) against the test server: how the accepted text is sent
on each endpoint, prefill through vLLM's options, configuration, and the SDK's retries off."""

from __future__ import annotations

import asyncio

import openai
import pytest

from grammar_guide import AuthenticationError, DraftCall, DraftRequest, ServerError
from grammar_guide.providers._openai_format import CONTINUE_INSTRUCTION
from grammar_guide.providers.openai import OpenAIDraft
from tests.support.llm_server import API_KEY, Fault, collect, fast_retry, get_server, make_draft

pytestmark = pytest.mark.model

PROMPT = "Write a SQL query that lists the names of all users."


@pytest.fixture(scope="module")
def server():
    return get_server()


def test_chat_without_prefill_shows_the_answer_so_far_and_asks_to_continue(server):
    draft = make_draft("openai-chat", server)
    assert draft.continues_prefix is False
    got = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name", max_new_tokens=4))
    assert got.error is None and got.text
    assert got.call.continued_prefix is False
    assert server.records[-1].body["messages"] == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "SELECT name"},
        {"role": "user", "content": CONTINUE_INSTRUCTION},
    ]
    assert "continue_final_message" not in server.records[-1].body
    # Room to restate "SELECT name" (11 characters) and still write 4 new tokens.
    assert server.records[-1].body["max_tokens"] == 4 + 4


def test_chat_first_call_is_the_prompt_alone(server):
    got = collect(make_draft("openai-chat", server), DraftRequest(PROMPT, max_new_tokens=3))
    assert got.error is None
    assert server.records[-1].body["messages"] == [{"role": "user", "content": PROMPT}]
    assert server.records[-1].body["stream_options"] == {"include_usage": True}


def test_chat_prefill_with_continue_final_message_continues_the_text(server):
    draft = make_draft("openai-chat", server, prefill="continue_final_message")
    assert draft.continues_prefix is True
    got = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name FROM", max_new_tokens=4))
    assert got.error is None and got.text
    record = server.records[-1]
    assert record.body["continue_final_message"] is True
    assert record.body["add_generation_prompt"] is False
    assert record.body["messages"][-1] == {"role": "assistant", "content": "SELECT name FROM"}
    assert record.body["max_tokens"] == 4  # a true continuation restates nothing
    # The model saw its own unfinished answer as the end of the prompt: a true continuation.
    assert record.prompt_text.endswith("<|im_start|>assistant\nSELECT name FROM")
    assert got.call.continued_prefix is True


def test_completions_sends_prompt_and_accepted_text_as_one_prompt(server):
    draft = make_draft("openai-completions", server)
    assert draft.continues_prefix is True
    got = collect(draft, DraftRequest("-- all users\n", accepted_text="SELECT name", max_new_tokens=4))
    assert got.error is None and got.text
    assert server.records[-1].body["prompt"] == "-- all users\nSELECT name"
    assert server.records[-1].prompt_text == "-- all users\nSELECT name"


def test_request_options_reach_the_server(server):
    got = collect(
        make_draft("openai-chat", server, temperature=0.0, seed=7, extra_body={"top_k": 1}),
        DraftRequest(PROMPT, max_new_tokens=2),
    )
    assert got.error is None
    body = server.records[-1].body
    assert (body["temperature"], body["seed"], body["top_k"]) == (0.0, 7, 1)


def test_a_client_you_built_is_used_with_its_own_retries_off(server):
    async def main():
        client = openai.AsyncOpenAI(
            base_url=f"{server.base_url}/v1", api_key=API_KEY, max_retries=5, default_headers={"x-test-script": script}
        )
        try:
            draft = OpenAIDraft("smollm2", client=client, retry=fast_retry(1))
            call = DraftCall(DraftRequest(PROMPT, max_new_tokens=2))
            with pytest.raises(ServerError) as caught:
                async for _ in draft.stream(call):
                    pass
            return caught.value
        finally:
            await client.close()

    script = server.script([Fault("status", status=500), Fault("status", status=500)])
    error = asyncio.run(main())
    assert error.status_code == 500
    assert len(server.records_for(script)) == 1  # neither the SDK nor the policy retried


def test_model_key_and_url_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base_url}/v1")
    got = collect(OpenAIDraft("smollm2"), DraftRequest(PROMPT, max_new_tokens=2))
    assert got.error is None and got.text


def test_no_key_and_no_server_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        OpenAIDraft("gpt-4o-mini")


def test_a_sync_client_is_refused_with_the_reason():
    client = openai.OpenAI(api_key="sk-unused-0000000000", base_url="http://127.0.0.1:9/v1")
    try:
        with pytest.raises(TypeError, match="AsyncOpenAI"):
            OpenAIDraft("gpt-4o-mini", client=client)
    finally:
        client.close()


def test_the_key_is_not_in_the_repr(server):
    draft = make_draft("openai-chat", server)
    assert API_KEY not in repr(draft)
    assert API_KEY not in repr(vars(draft).get("request_options"))


def test_one_draft_serves_calls_from_two_event_loops(server):
    draft = make_draft("openai-chat", server)
    first = collect(draft, DraftRequest(PROMPT, max_new_tokens=2), close=False)
    second = collect(draft, DraftRequest(PROMPT, max_new_tokens=2))  # a new asyncio.run
    assert first.error is None and second.error is None
    assert first.text == second.text  # greedy
