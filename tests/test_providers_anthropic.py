"""AnthropicDraft (the real ``anthropic`` SDK) against the test server: assistant prefill, the
fallback for models that reject it, stop sequences, configuration, the SDK's retries off."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from grammar_guide import AuthenticationError, DraftCall, DraftRequest, ServerError
from grammar_guide.providers._openai_format import CONTINUE_INSTRUCTION
from grammar_guide.providers.anthropic import AnthropicDraft, refuses_prefill, supports_json_schema
from tests.support.llm_server import (
    API_KEY,
    CLAUDE_46_MODEL,
    NO_PREFILL_MODEL,
    Fault,
    collect,
    fast_retry,
    get_server,
    make_draft,
)

pytestmark = pytest.mark.model

PROMPT = "Write a SQL query that lists the names of all users."


@pytest.fixture(scope="module")
def server():
    return get_server()


def test_prefill_continues_the_accepted_text(server):
    draft = make_draft("anthropic", server)
    assert draft.continues_prefix is True
    got = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name FROM", max_new_tokens=4))
    assert got.error is None and got.text
    record = server.records[-1]
    assert record.body["messages"][-1] == {"role": "assistant", "content": "SELECT name FROM"}
    assert record.prompt_text.endswith("<|im_start|>assistant\nSELECT name FROM")
    assert got.call.continued_prefix is True


def test_trailing_whitespace_is_held_back_from_the_prefill(server):
    # The API rejects a prefill ending in whitespace; the draft sends it without, and drops the
    # whitespace the model then writes first (the accepted text already has it).
    got = collect(
        make_draft("anthropic", server), DraftRequest(PROMPT, accepted_text="SELECT name FROM ", max_new_tokens=4)
    )
    assert got.error is None and got.text
    record = server.records[-1]
    assert record.status == 200
    assert record.body["messages"][-1]["content"] == "SELECT name FROM"
    assert record.text[:1].isspace()  # the model wrote the space itself...
    assert not got.text[:1].isspace()  # ...and it was not handed on twice
    assert got.text == record.text.lstrip()


def test_a_model_that_rejects_prefill_falls_back_for_good(server):
    draft = make_draft("anthropic", server, model=NO_PREFILL_MODEL)
    before = len(server.records)
    got = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name", max_new_tokens=4), close=False)
    assert got.error is None and got.text
    first, second = server.records[before:]
    assert first.status == 400 and second.status == 200
    assert second.body["messages"] == [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "SELECT name"},
        {"role": "user", "content": CONTINUE_INSTRUCTION},
    ]
    assert second.body["max_tokens"] == 4 + 4  # room to restate "SELECT name"
    assert first.body["max_tokens"] == 4
    assert got.call.continued_prefix is False
    assert "prefill" in got.call.extra["prefill_rejected"]
    assert draft.continues_prefix is False
    # The next call goes straight to the fallback: one request.
    before = len(server.records)
    again = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name FROM", max_new_tokens=2))
    assert again.error is None
    assert len(server.records) - before == 1
    assert again.call.continued_prefix is False


def test_whitespace_only_stop_sequences_are_not_sent(server):
    got = collect(make_draft("anthropic", server), DraftRequest(PROMPT, max_new_tokens=2, stop=("\n", ";")))
    assert got.error is None
    assert server.records[-1].body["stop_sequences"] == [";"]


def test_max_tokens_bounds_each_call(server):
    got = collect(make_draft("anthropic", server, max_tokens=3), DraftRequest(PROMPT, max_new_tokens=50))
    assert got.error is None
    assert server.records[-1].body["max_tokens"] == 3
    assert got.call.tokens_out == 3 and got.call.finish_reason == "length"


def test_system_prompt_and_options_reach_the_server(server):
    got = collect(
        make_draft("anthropic", server, system="You write SQLite.", metadata={"user_id": "u-1"}),
        DraftRequest(PROMPT, max_new_tokens=2),
    )
    assert got.error is None
    body = server.records[-1].body
    assert body["system"] == "You write SQLite." and body["metadata"] == {"user_id": "u-1"}
    assert "You write SQLite." in server.records[-1].prompt_text


def test_a_client_you_built_is_used_with_its_own_retries_off(server):
    script = server.script([Fault("status", status=529), Fault("status", status=529)])

    async def main():
        client = anthropic.AsyncAnthropic(
            base_url=server.base_url, api_key=API_KEY, max_retries=5, default_headers={"x-test-script": script}
        )
        try:
            draft = AnthropicDraft("smollm2", client=client, retry=fast_retry(1))
            with pytest.raises(ServerError) as caught:
                async for _ in draft.stream(DraftCall(DraftRequest(PROMPT, max_new_tokens=2))):
                    pass
            return caught.value
        finally:
            await client.close()

    error = asyncio.run(main())
    assert error.status_code == 529
    assert len(server.records_for(script)) == 1


def test_key_and_url_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    got = collect(AnthropicDraft("smollm2"), DraftRequest(PROMPT, max_new_tokens=2))
    assert got.error is None and got.text


def test_no_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        AnthropicDraft("claude-haiku-4-5")


# -- models known by name to refuse prefill (Claude 4.6 and later) ------------------------------


@pytest.mark.parametrize(
    "model, refuses",
    [
        ("claude-opus-4-6", True),
        ("claude-sonnet-4-6-20260115", True),
        ("anthropic.claude-haiku-5-v1:0", True),
        ("claude-opus-4-7", True),
        ("claude-sonnet-4-5-20250929", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-3-5-sonnet-20241022", False),
        ("smollm2-no-prefill", False),
    ],
)
def test_models_known_to_refuse_prefill_by_name(model, refuses):
    assert refuses_prefill(model) is refuses


@pytest.mark.parametrize(
    "model, supports",
    [
        ("claude-haiku-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-opus-4-5", True),
        ("claude-opus-4-6", True),
        ("claude-opus-4-7", True),
        ("anthropic.claude-sonnet-4-6-v1:0", True),
        ("claude-opus-4-1-20250805", False),
        ("claude-sonnet-4-20250514", False),
        ("claude-3-5-haiku-20241022", False),
        ("smollm2", False),
    ],
)
def test_models_known_to_take_json_schema_outputs_by_name(model, supports):
    assert supports_json_schema(model) is supports


def test_native_schema_takes_true_false_or_auto():
    with pytest.raises(ValueError, match="native_schema must be True, False or 'auto'"):
        AnthropicDraft("claude-haiku-4-5", api_key=API_KEY, native_schema="yes")


def test_a_claude_46_model_is_never_sent_a_prefill_and_guided_runs_succeed(server, small_sql):
    import grammar_guide as gg

    draft = make_draft("anthropic", server, model=CLAUDE_46_MODEL)
    assert draft.continues_prefix is False
    before = len(server.records)
    limits = gg.GuideLimits(lookahead=12, max_draft_calls=4, max_new_tokens=40, finish_tokens=24)
    result = gg.guide(draft, small_sql, PROMPT, limits=limits)
    assert small_sql.is_complete(result.text), result.text
    records = server.records[before:]
    assert records and all(r.status == 200 for r in records)
    # Every conversation ends with a user message: the exact 400 is never provoked.
    assert all(r.body["messages"][-1]["role"] == "user" for r in records)


def test_the_name_rule_can_be_overridden_and_then_costs_one_request_at_most(server):
    draft = make_draft("anthropic", server, model=CLAUDE_46_MODEL, prefill=True)
    before = len(server.records)
    got = collect(draft, DraftRequest(PROMPT, accepted_text="SELECT name", max_new_tokens=4))
    assert got.error is None and got.text
    assert [r.status for r in server.records[before:]] == [400, 200]
    assert "does not support assistant message prefill" in got.call.extra["prefill_rejected"]
