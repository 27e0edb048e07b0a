"""Native grammars: the grammar sent to the server's own engine (OpenAI's custom grammar tools on
the Responses API through the real ``openai`` SDK; vLLM's, SGLang's and llama.cpp's request
fields), over HTTP to the test server, which applies it with llguidance to its model's sampling.

An engine that takes the grammar writes a valid text in one draft call with no correction; a
refused grammar (HTTP 400) makes the call draft freely, recorded as an event; a server that
ignores the grammar (vLLM before 0.12) is caught by the checker and repaired as usual.
"""

from __future__ import annotations

import asyncio

import openai
import pytest

import grammar_guide as gg
from grammar_guide import DraftRequest, Grammar, GrammarError, GrammarRefused
from tests.support.llm_server import (
    API_KEY,
    GRAMMAR_MODEL,
    IGNORES_GRAMMAR_MODEL,
    MODEL,
    SMALL_GRAMMAR_MODEL,
    collect,
    get_server,
    make_draft,
)

pytestmark = pytest.mark.model

PROMPT = "Write a SQL query that lists the names of all users, with no explanation."
BUDGET = dict(limits=gg.GuideLimits(lookahead=12, max_draft_calls=4, max_new_tokens=40, finish_tokens=24))


@pytest.fixture(scope="module")
def server():
    return get_server()


def test_gpt5_style_custom_grammar_tool_writes_a_valid_text_in_one_call(server, small_sql):
    draft = make_draft("openai-chat", server, model=GRAMMAR_MODEL)
    before = len(server.records)
    result = gg.guide(draft, small_sql, PROMPT, **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    stats = result.stats
    assert (stats.draft_calls, stats.corrections, stats.path, stats.native_calls) == (1, 0, "native", 1)
    (record,) = server.records[before:]
    assert record.path == "/v1/responses"
    (tool,) = record.body["tools"]
    assert tool["type"] == "custom"
    assert tool["format"] == {"type": "grammar", "syntax": "lark", "definition": small_sql.to_plain_lark()}
    assert record.body["tool_choice"] == {"type": "custom", "name": tool["name"]}
    # The text is the tool's input as the server generated it; usage is what it billed.
    assert result.text == record.text
    assert stats.draft_tokens_out == record.tokens_generated and stats.draft_tokens_in


@pytest.mark.parametrize(
    "kind, style, field",
    [
        ("openai-chat", "vllm", ("structured_outputs", "grammar")),
        ("http-chat", "vllm", ("structured_outputs", "grammar")),
        ("http-chat", "sglang", ("ebnf",)),
        ("http-chat", "llama.cpp", ("grammar",)),
    ],
)
def test_serving_engine_fields_write_a_valid_text_in_one_call(server, small_sql, kind, style, field):
    draft = make_draft(kind, server, grammar_style=style)
    before = len(server.records)
    result = gg.guide(draft, small_sql, PROMPT, **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    assert (result.stats.draft_calls, result.stats.corrections, result.stats.path) == (1, 0, "native")
    (record,) = server.records[before:]
    sent = record.body
    for key in field:
        sent = sent[key]
    assert sent == small_sql.to_gbnf()


def test_a_refused_grammar_falls_back_to_drafting_freely_and_is_not_sent_again(server, small_sql):
    draft = make_draft("openai-chat", server, model=SMALL_GRAMMAR_MODEL)
    before = len(server.records)
    result = gg.guide(draft, small_sql, PROMPT, **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    records = server.records[before:]
    assert [(r.path, r.status) for r in records[:2]] == [("/v1/responses", 400), ("/v1/chat/completions", 200)]
    (refused,) = [e for e in result.events if isinstance(e, GrammarRefused)]
    assert "Grammar is too complex" in refused.message and refused.call == 1
    assert (result.stats.path, result.stats.fallback_calls, result.stats.native_calls) == ("fallback", 1, 0)
    # The same draft remembers the refusal: no request is wasted on it again.
    before = len(server.records)
    again = gg.guide(draft, small_sql, PROMPT, **BUDGET)
    assert small_sql.is_complete(again.text)
    assert all(r.path == "/v1/chat/completions" for r in server.records[before:])
    (remembered,) = [e for e in again.events if isinstance(e, GrammarRefused)]
    assert remembered.message.startswith("refused before: Grammar is too complex")


def test_a_server_that_ignores_the_grammar_is_caught_and_repaired(server, small_sql):
    draft = make_draft("openai-chat", server, model=IGNORES_GRAMMAR_MODEL, grammar_style="vllm")
    before = len(server.records)
    result = gg.guide(draft, small_sql, PROMPT, **BUDGET)
    assert small_sql.is_complete(result.text), result.text
    records = server.records[before:]
    assert records[0].body["structured_outputs"]["grammar"] == small_sql.to_gbnf()
    # The server's free text needed the loop: the path says the grammar was not enforced.
    assert result.stats.native_calls == 1
    assert result.stats.path == "fallback"
    assert result.stats.corrections or result.stats.draft_calls > 1 or result.stats.discarded_chars
    # Later calls draft freely (a grammar sent with a continuation would constrain it as a whole text).
    assert all("structured_outputs" not in r.body for r in records[1:])


def test_auto_sends_no_grammar_where_the_model_is_not_known_to_take_it(server, small_sql):
    got = collect(
        make_draft("openai-chat", server, model=MODEL), DraftRequest(PROMPT, max_new_tokens=3, grammar=small_sql)
    )
    assert got.error is None and got.call.path == "speculative"
    assert server.records[-1].path == "/v1/chat/completions" and "tools" not in server.records[-1].body


LAZY = Grammar.from_lark('start: "a" B\nB: /b+?c/\n')


def test_a_grammar_the_format_cannot_express_is_drafted_freely_or_raises_when_forced(server):
    got = collect(
        make_draft("openai-chat", server, model=GRAMMAR_MODEL), DraftRequest(PROMPT, max_new_tokens=3, grammar=LAZY)
    )
    assert got.error is None and got.call.path == "fallback"
    assert got.call.fallback_reason.startswith("not sent: terminal B uses a lazy quantifier")
    assert server.records[-1].path == "/v1/chat/completions"
    forced = make_draft("openai-chat", server, model=GRAMMAR_MODEL, native_grammar=True)
    with pytest.raises(GrammarError, match="lazy quantifier"):
        collect(forced, DraftRequest(PROMPT, max_new_tokens=3, grammar=LAZY))


@pytest.mark.parametrize(
    "definition, message",
    [
        ("start: B\nB: /b+?c/\n", "lazy quantifiers"),
        ('start: A\nA.2: "a"\n', "terminal priorities"),
        ("start: A\nA: /(?=a)a/\n", "look-around"),
        ("start: x\n%import other.x\n", "%import"),
    ],
)
def test_the_server_refuses_grammars_outside_the_subset_as_openai_does(server, definition, message):
    async def main() -> None:
        client = openai.AsyncOpenAI(api_key=API_KEY, base_url=f"{server.base_url}/v1", max_retries=0)
        tool = {
            "type": "custom",
            "name": "answer",
            "format": {"type": "grammar", "syntax": "lark", "definition": definition},
        }
        try:
            with pytest.raises(openai.BadRequestError) as caught:
                await client.responses.create(
                    model=GRAMMAR_MODEL,
                    input=PROMPT,
                    tools=[tool],
                    tool_choice={"type": "custom", "name": "answer"},
                    stream=True,
                )
        finally:
            await client.close()
        assert caught.value.status_code == 400
        assert message in caught.value.message
        assert caught.value.body["param"] == "tools[0].format.definition"

    asyncio.run(main())
