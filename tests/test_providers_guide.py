"""Full guided generations through each remote provider, over HTTP to the real SmolLM2 server,
with the real target model; and guided generations through faults."""

from __future__ import annotations

import pytest

import grammar_guide as gg
from grammar_guide import DraftSpan, ProviderError
from tests.support.llm_server import KINDS, NO_PREFILL_MODEL, Fault, get_server, make_draft

pytestmark = pytest.mark.model

CHAT_PROMPT = "Write a SQL query that lists the names of all users, with no explanation."
RAW_PROMPT = "-- SQLite query: the names of all users\n"
BUDGET = dict(limits=gg.GuideLimits(lookahead=12, max_draft_calls=4, max_new_tokens=40, finish_tokens=24))


def prompt_for(kind: str) -> str:
    return RAW_PROMPT if kind.endswith("completions") else CHAT_PROMPT


@pytest.fixture(scope="module")
def server():
    return get_server()


@pytest.mark.parametrize("kind", KINDS)
def test_guided_generation_through_each_provider(server, kind, small_sql):
    draft = make_draft(kind, server)
    before = len(server.records)
    result = gg.guide(draft, small_sql, prompt_for(kind), **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    assert result.complete
    calls = server.records[before:]
    assert len(calls) == result.stats.draft_calls >= 1
    kept = [e for e in result.events if isinstance(e, DraftSpan)]
    # What the draft wrote and the loop kept is text the server generated.
    assert kept and all(span.text.strip() in server_text(calls) for span in kept)
    # Streams the loop closed early stopped generating on the server.
    for record in calls:
        assert record.finished.wait(10)
        assert not record.disconnected or record.tokens_after_disconnect <= 1


def test_guided_generation_with_a_model_that_rejects_prefill(server, small_sql):
    draft = make_draft("anthropic", server, model=NO_PREFILL_MODEL)
    before = len(server.records)
    result = gg.guide(draft, small_sql, CHAT_PROMPT, **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    statuses = [r.status for r in server.records[before:]]
    # At most one rejected prefill, then every call without it.
    assert statuses.count(400) <= 1 and statuses.count(200) == result.stats.draft_calls
    if statuses.count(400):
        assert draft.continues_prefix is False


def server_text(records) -> str:
    return "\n".join(r.text for r in records)


@pytest.mark.parametrize(
    "steps",
    [
        [Fault("status", status=429, retry_after=0.2)],
        [Fault("status", status=500), Fault("status", status=502)],
        [Fault("drop", after_tokens=0)],
    ],
    ids=["429", "500-twice", "drop-before-text"],
)
def test_guided_generation_survives_retryable_faults(server, steps, small_sql):
    script = server.script(steps)
    draft = make_draft("openai-chat", server, script=script)
    result = gg.guide(draft, small_sql, CHAT_PROMPT, **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    assert len(server.records_for(script)) > len(steps)


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic", "http-chat"])
def test_guided_generation_after_a_drop_mid_stream_is_valid_or_a_clear_error(server, kind, small_sql):
    script = server.script([Fault("drop", after_tokens=3)])
    draft = make_draft(kind, server, script=script)
    try:
        result = gg.guide(draft, small_sql, CHAT_PROMPT, **BUDGET)
    except ProviderError as error:
        assert error.retryable and error.provider in kind
    else:
        assert small_sql.is_complete(result.text), result.text


def test_guided_generation_with_a_bad_key_is_a_clear_error(server, small_sql):
    draft = make_draft("anthropic", server, api_key="sk-ant-wrong-000000000000")
    with pytest.raises(gg.AuthenticationError, match="Incorrect API key") as caught:
        gg.guide(draft, small_sql, CHAT_PROMPT, **BUDGET)
    assert "000000000000" not in str(caught.value)


ANSWER = "SELECT name FROM users WHERE age > 30"


@pytest.mark.parametrize("fault", ["truncate", "drop"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_cut_where_the_text_is_complete_is_resumed_not_returned(server, kind, fault, small_sql):
    # The first stream stops after "SELECT name FROM users", a complete query: a broken stream
    # is not a finished answer, so the loop asks again and gets the rest.
    script = server.script([Fault(fault, after_tokens=4)], answer=ANSWER)
    result = gg.guide(make_draft(kind, server, script=script), small_sql, CHAT_PROMPT, target=False, lookahead=40)
    first = server.records_for(script)[0]
    assert first.text.strip() == "SELECT name FROM users" and small_sql.is_complete(first.text)  # the premise
    assert result.text.strip() == ANSWER and result.complete
    assert len(server.records_for(script)) == 2


@pytest.mark.parametrize("kind", ["openai-chat", "anthropic", "http-chat"])
def test_a_stream_that_keeps_breaking_is_a_connection_error_with_the_partial_result(server, kind, small_sql):
    script = server.script([Fault("truncate", after_tokens=2)] * 10, answer=ANSWER)
    with pytest.raises(gg.ProviderConnectionError, match="ended without") as caught:
        gg.guide(make_draft(kind, server, script=script), small_sql, CHAT_PROMPT, target=False, lookahead=40)
    partial = caught.value.result
    assert partial is not None and not partial.complete
    # What the broken streams wrote (a prefilled draft continues, a restating one starts over).
    assert partial.text.strip() and ANSWER.startswith(partial.text.strip()) and partial.text.strip() != ANSWER
    assert small_sql.valid_prefix(partial.text) == len(partial.text)
