"""Native grammars: the grammar sent to the server's own engine (OpenAI's custom grammar tools on
the Responses API through the real ``openai`` SDK; vLLM's, SGLang's and llama.cpp's request
fields; Anthropic's JSON-schema outputs through the real ``anthropic`` SDK), over HTTP to the test
server, which applies it with llguidance to its model's sampling.

An engine that takes the grammar writes a valid text in one draft call with no correction; a
refused grammar (HTTP 400) makes the call draft freely, recorded as an event; a server that
ignores the grammar (vLLM before 0.12) is caught by the checker and repaired as usual.
"""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest

import grammar_guide as gg
from grammar_guide import Correction, Cut, DraftRequest, Grammar, GrammarError, GrammarRefused
from tests.support.llm_server import (
    API_KEY,
    GRAMMAR_MODEL,
    IGNORES_GRAMMAR_MODEL,
    JSON_SCHEMA_MODEL,
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


def test_text_the_grammar_forces_before_the_first_call_still_lets_the_grammar_go_native(server):
    # The loop writes "SELECT name FROM " (forced) before the first call; the engine's answer
    # restates it, and the draft hands on only what follows.
    grammar = Grammar.from_lark('start: "SELECT name FROM " NAME ";"\nNAME: /[a-z_]+/\n')
    before = len(server.records)
    result = gg.guide(make_draft("openai-chat", server, model=GRAMMAR_MODEL), grammar, PROMPT, **BUDGET)
    assert grammar.is_complete(result.text), result.text
    assert (result.stats.draft_calls, result.stats.corrections, result.stats.path) == (1, 0, "native")
    (record,) = server.records[before:]
    assert record.body["input"] == [{"role": "user", "content": PROMPT}]  # the prompt alone
    assert result.text == record.text


def test_auto_sends_no_grammar_where_the_model_is_not_known_to_take_it(server, small_sql):
    got = collect(
        make_draft("openai-chat", server, model=MODEL), DraftRequest(PROMPT, max_new_tokens=3, grammar=small_sql)
    )
    assert got.error is None and got.call.path == "speculative"
    assert server.records[-1].path == "/v1/chat/completions" and "tools" not in server.records[-1].body


LAZY = Grammar.from_lark('start: "a" B\nB: /b.*?cd/\n')  # (a lazy quantifier no exact Lark says)


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


# -- Anthropic: JSON-schema outputs (output_config.format), no grammars ----------------------------

PERSON_PROMPT = 'Reply with only a JSON object with the keys "name" and "age" for Albert Einstein.'
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
# Valid JSON Schemas outside Anthropic's subset: objects must say "additionalProperties": false,
# and numeric bounds are not taken.
OPEN_PERSON = {k: v for k, v in PERSON.items() if k != "additionalProperties"}
BOUNDED_PERSON = {**PERSON, "properties": {**PERSON["properties"], "age": {"type": "integer", "minimum": 0}}}
JSON_BUDGET = dict(limits=gg.GuideLimits(lookahead=12, max_draft_calls=6, max_new_tokens=48, finish_tokens=32))


def guide_json(server, draft, schema):
    """A guided run of ``draft`` for ``schema``, its text checked to be valid JSON of the schema;
    the result and the server's records of its requests."""
    grammar = Grammar.from_json_schema(schema)
    before = len(server.records)
    result = gg.guide(draft, grammar, PERSON_PROMPT, **JSON_BUDGET)
    assert grammar.is_complete(result.text), result.text
    assert set(json.loads(result.text)) == {"name", "age"}
    return result, server.records[before:]


def test_anthropic_json_schema_outputs_write_valid_json_in_one_call(server):
    result, records = guide_json(server, make_draft("anthropic", server, model=JSON_SCHEMA_MODEL), PERSON)
    stats = result.stats
    assert (stats.draft_calls, stats.corrections, stats.path, stats.native_calls) == (1, 0, "native", 1)
    (record,) = records
    assert record.path == "/v1/messages" and record.status == 200
    assert record.body["output_config"] == {"format": {"type": "json_schema", "schema": PERSON}}
    assert record.body["messages"] == [{"role": "user", "content": PERSON_PROMPT}]
    assert "anthropic-beta" not in record.headers  # GA: no beta header
    # The engine's answer restates the "{" the loop forced before the call; the draft hands on
    # the rest, so the text is what the server generated. Usage is what it billed.
    assert result.text == record.text
    assert stats.draft_tokens_out == record.tokens_generated and stats.draft_tokens_in


def test_anthropic_output_config_options_of_the_caller_are_kept(server):
    got = collect(
        make_draft("anthropic", server, model=JSON_SCHEMA_MODEL, output_config={"effort": "low"}),
        DraftRequest(PERSON_PROMPT, max_new_tokens=4, grammar=Grammar.from_json_schema(PERSON)),
    )
    assert got.error is None and got.call.path == "native"
    assert server.records[-1].body["output_config"] == {
        "effort": "low",
        "format": {"type": "json_schema", "schema": PERSON},
    }


def test_anthropic_refused_schema_falls_back_to_drafting_freely_and_is_not_sent_again(server):
    draft = make_draft("anthropic", server, model=JSON_SCHEMA_MODEL)
    result, records = guide_json(server, draft, BOUNDED_PERSON)
    assert [r.status for r in records[:2]] == [400, 200]
    assert "output_config" in records[0].body and all("output_config" not in r.body for r in records[1:])
    (refused,) = [e for e in result.events if isinstance(e, GrammarRefused)]
    assert refused.call == 1
    assert refused.message == "output_config.format.schema: For 'integer' type, property 'minimum' is not supported"
    assert (result.stats.path, result.stats.fallback_calls, result.stats.native_calls) == ("fallback", 1, 0)
    # The same draft remembers the refusal: no request is wasted on it again.
    again, records = guide_json(server, draft, BOUNDED_PERSON)
    assert all("output_config" not in r.body for r in records)
    (remembered,) = [e for e in again.events if isinstance(e, GrammarRefused)]
    assert remembered.message.startswith("refused before: output_config.format.schema:")


def test_anthropic_server_that_ignores_the_output_format_is_caught_and_repaired(server):
    # native_schema=True sends the schema whatever the model's name; this server ignores it.
    draft = make_draft("anthropic", server, model=IGNORES_GRAMMAR_MODEL, native_schema=True)
    result, records = guide_json(server, draft, PERSON)
    assert records[0].body["output_config"]["format"]["schema"] == PERSON
    assert result.stats.native_calls == 1 and result.stats.path == "fallback"
    # The model's free answer came in a Markdown fence: cut and aligned, not taken as JSON.
    repairs = [e for e in result.events if isinstance(e, Cut) or (isinstance(e, Correction) and e.reason != "forced")]
    assert repairs, result.events
    assert all("output_config" not in r.body for r in records[1:])


def test_anthropic_never_sends_a_grammar_that_is_not_a_json_schema(server, small_sql):
    for setting in ("auto", True):
        got = collect(
            make_draft("anthropic", server, model=JSON_SCHEMA_MODEL, native_schema=setting),
            DraftRequest(PROMPT, max_new_tokens=3, grammar=small_sql),
        )
        assert got.error is None and (got.call.path, got.call.fallback_reason) == ("speculative", None)
        assert "output_config" not in server.records[-1].body


def test_anthropic_auto_sends_no_schema_to_models_not_known_to_take_it(server):
    request = DraftRequest(PERSON_PROMPT, max_new_tokens=3, grammar=Grammar.from_json_schema(PERSON))
    got = collect(make_draft("anthropic", server, model=MODEL), request)
    assert got.error is None and got.call.path == "speculative"
    assert "output_config" not in server.records[-1].body
    off = collect(make_draft("anthropic", server, model=JSON_SCHEMA_MODEL, native_schema=False), request)
    assert off.error is None and off.call.path == "speculative"
    assert "output_config" not in server.records[-1].body


@pytest.mark.parametrize(
    "schema, message",
    [
        (OPEN_PERSON, "'additionalProperties' must be explicitly set to false"),
        ({**PERSON, "additionalProperties": True}, "'additionalProperties: true' is not supported"),
        ({"type": "integer", "minimum": 1}, "property 'minimum' is not supported"),
        ({"type": "array", "items": {"type": "string", "maxLength": 3}}, "property 'maxLength' is not supported"),
    ],
)
def test_the_server_refuses_schemas_outside_the_subset_as_anthropic_does(server, schema, message):
    async def main() -> None:
        client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=server.base_url, max_retries=0)
        try:
            with pytest.raises(anthropic.BadRequestError) as caught:
                await client.messages.create(
                    model=JSON_SCHEMA_MODEL,
                    max_tokens=16,
                    messages=[{"role": "user", "content": PERSON_PROMPT}],
                    output_config={"format": {"type": "json_schema", "schema": schema}},
                    stream=True,
                )
        finally:
            await client.close()
        assert caught.value.status_code == 400
        assert caught.value.body["type"] == "error"
        assert caught.value.body["error"]["type"] == "invalid_request_error"
        assert caught.value.body["error"]["message"].startswith("output_config.format.schema: ")
        assert message in caught.value.body["error"]["message"]

    asyncio.run(main())
