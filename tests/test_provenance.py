"""Every character of a guided text by origin (``GuideResult.origins``), and what of the draft was
left out and why (``GuideResult.dropped``): read from the events, checked to rebuild the text on
real runs of the loop (no target: the draft's own text, forced text, edits, rewrites, closes,
cuts), on drafts made of random SQL pieces, and through ``to_dict``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammar_guide as gg
from grammar_guide import FunctionDraft, Grammar, GuideExhausted, GuideResult, Origin

SOURCES = {"draft", "forced", "healed", "repair", "target", "completion"}


def run(grammar: str | Grammar, draft: str, **options: object) -> GuideResult:
    try:
        return gg.guide(lambda prompt: draft, grammar, "Answer.", target=False, **options)  # type: ignore[arg-type]
    except GuideExhausted as exhausted:
        return exhausted.result


def assert_accounted(result: GuideResult) -> tuple[Origin, ...]:
    spans = result.origins
    assert "".join(result.text[o.start : o.end] for o in spans) == result.text
    assert [o.start for o in spans] == [0, *(o.end for o in spans[:-1])][: len(spans)]
    for o in spans:
        assert o.source in SOURCES and o.end > o.start
        assert (o.call is not None) is (o.source == "draft")
        assert (o.rule is not None) is (o.source == "repair")
    return spans


def by_source(result: GuideResult) -> list[tuple[str, str]]:
    return [(o.source, result.text[o.start : o.end]) for o in result.origins]


def test_each_edit_is_its_own_span_between_the_drafts_text() -> None:
    result = run("sqlite", "Sure! ```sql\nSELECT name FROM users WHERE name ILIKE 'a%' LIMT 5\n```")
    assert_accounted(result)
    assert by_source(result) == [
        ("draft", "SELECT name FROM users WHERE name "),
        ("repair", "LIKE"),
        ("draft", " 'a%' "),
        ("repair", "LIMIT"),
        ("draft", " 5"),
    ]
    assert [(d.text, d.reason) for d in result.dropped] == [
        ("Sure! ```sql\n", "preamble"),
        ("ILIKE", "rejected"),
        ("LIMT", "rejected"),
    ]


def test_a_rewrite_says_its_rule() -> None:
    result = run("sqlite", "SELECT a::int FROM t")
    assert_accounted(result)
    assert [(o.source, o.rule) for o in result.origins if o.source == "repair"] == [("repair", "rewrite")]


@pytest.mark.parametrize(
    ("grammar", "draft", "closing"),
    [
        ("json", '{"name": "Ada", "tags": ["x", "y"', '"]}'[1:]),
        ("sqlite", "SELECT * FROM bond WHERE bond_type = '", "'"),
    ],
)
def test_closing_marks_are_the_grammars_close(grammar: str, draft: str, closing: str) -> None:
    result = run(grammar, draft)
    spans = assert_accounted(result)
    assert spans[-1].source == "completion" and result.text[spans[-1].start :] == closing
    assert all(o.source == "draft" for o in spans[:-1])


@pytest.mark.parametrize(
    ("grammar", "draft", "reason", "left_out"),
    [
        ("sqlite", "SELECT 1; SELECT 2", "another answer", " SELECT 2"),
        ("sqlite", "SELECT name FROM users WHERE", "unfinished", " WHERE"),
        ("json", '{"a": 1, "b": ', "replaced", ', "b": '),
        ("sqlite", "SELECT a FROM t;\n\nThis query returns a.", "after complete text", "\n\nThis query returns a."),
    ],
)
def test_what_was_left_out_says_why(grammar: str, draft: str, reason: str, left_out: str) -> None:
    result = run(grammar, draft)
    assert_accounted(result)
    assert (left_out, reason) in [(d.text, d.reason) for d in result.dropped]


def test_a_budget_cut_is_accounted_for() -> None:
    result = run("json", json.dumps({"items": list(range(60))}), max_new_tokens=40)
    assert not result.complete
    assert_accounted(result)
    assert "budget" in [d.reason for d in result.dropped] or any(e.kind == "cut" for e in result.events)


def test_the_dict_form_carries_them() -> None:
    result = run("sqlite", "SELECT name FROM users WHERE name ILIKE 'a%'")
    data = json.loads(result.to_json())
    assert [(o["source"], o["start"], o["end"]) for o in data["origins"]] == [
        (o.source, o.start, o.end) for o in result.origins
    ]
    assert data["dropped"] == [{"text": "ILIKE", "reason": "rejected", "offset": 34, "event": 1}]


def test_a_result_whose_events_do_not_rebuild_its_text_says_so() -> None:
    result = GuideResult("SELECT 1", "p", "sqlite", [])
    with pytest.raises(ValueError, match="do not rebuild"):
        _ = result.origins


_PIECES = st.sampled_from(
    [
        "SELECT",
        " name",
        " FROM",
        " users",
        " WHERE",
        " age",
        " >",
        " 30",
        " ILIKE",
        " 'a%'",
        " LIMT",
        " 5",
        ",",
        " (",
        ")",
        ";",
        " AND",
        "\n\nThis returns",
        " ```",
        " ORDER BY",
        " x::int",
        "'",
    ]
)


def test_a_cut_running_past_the_accepted_text_is_accounted_for() -> None:
    # Found by the test below: "SELECT" was accepted, then cut with the evidence after it. A fence
    # on the code's own line now opens the answer: the backticks are the preamble, "SELECT name"
    # the answer, the second call's restatement cut; every character accounted for.
    result = run("sqlite", " ``` ```SELECT name")
    spans = assert_accounted(result)
    assert result.text == "SELECT name" and [s.source for s in spans] == ["draft"]
    assert (result.dropped[0].text, result.dropped[0].reason) == (" ``` ```", "preamble")


@settings(max_examples=60, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=12))
def test_any_draft_of_sql_pieces_is_accounted_for(pieces: list[str]) -> None:
    result = run("sqlite", "".join(pieces))
    assert_accounted(result)
    for d in result.dropped:
        assert d.text and d.reason


@settings(max_examples=40, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=12), st.booleans())
def test_any_streamed_draft_of_sql_pieces_is_accounted_for(pieces: list[str], continues_prefix: bool) -> None:
    """The same pieces as a stream: after an edit the call is read on, spans and edits of one call
    interleave."""

    def streaming(prompt: str, prefix: str) -> Iterator[str]:
        yield from pieces

    try:
        result = gg.guide(
            FunctionDraft(streaming, continues_prefix=continues_prefix), "sqlite", "Answer.", target=False
        )
    except GuideExhausted as exhausted:
        result = exhausted.result
    assert_accounted(result)
    for d in result.dropped:
        assert d.text and d.reason


def test_a_cut_of_the_accepted_end_and_the_rejected_text_after_it_is_accounted_for() -> None:
    # Another answer begun in the accepted text ('SELECT') and read on in the rejected (' name'):
    # one cut holds both (hypothesis found it, after fences: the events did not rebuild the text).
    result = run("sqlite", "SELECT 1 SELECT name")
    assert_accounted(result)
    assert [(d.text, d.reason) for d in result.dropped] == [(" SELECT name", "another answer")]


def test_prose_before_the_answer_is_dropped_as_prose(arithmetic: Grammar) -> None:
    result = run(arithmetic, "The answer is 3 + 4")
    assert result.text == "3 + 4"
    assert [(d.text, d.reason) for d in result.dropped] == [("The answer is ", "prose")]
    # The prose is not the answer: nothing of the answer was dropped or changed.
    assert result.faithful and result.changes.dropped == 0
