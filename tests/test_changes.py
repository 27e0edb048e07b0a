"""``GuideResult.changes`` and ``faithful``: what was changed of the draft's answer, read from the
events of real guided runs (real grammars, drafts that make real slips, no target model)."""

from __future__ import annotations

import pytest

import grammar_guide as gg
from grammar_guide import Changes, Correction, Cut, DraftSpan, GrammarViolation
from grammar_guide._changes import changes_of


def run(grammar: str, answer: str) -> gg.GuideResult:
    return gg.guide(lambda prompt: answer, grammar, "q", target=False)


@pytest.mark.parametrize(
    ("grammar", "answer", "text", "summary"),
    [
        ("json", '{"a": [1, 2, 3]}', '{"a": [1, 2, 3]}', "faithful"),
        # Cut short: closing marks end it, nothing invented.
        ("json", '{"a": [1, 2, 3', '{"a": [1, 2, 3]}', "faithful (1 closed)"),
        # Prose and a fence around the answer are not the answer.
        ("sqlite", "Sure!\n```sql\nSELECT a FROM t\n```\nThis selects a.", "SELECT a FROM t", "faithful"),
        # An explanation after a complete statement, in words ``This query ...`` would miss: not
        # the answer, cut (before, left out as unrepaired: "1 dropped", not faithful).
        ("sqlite", "SELECT a FROM t;\n\nExplanation:\n\n1. We select a.", "SELECT a FROM t;", "faithful"),
        ("sqlite", "SELECT a FROM t;\n\nI cannot tell if it is the right table.", "SELECT a FROM t;", "faithful"),
        # A ';' the draft wrote too many, dropped, as a ')' too many is: no word, literal or
        # operator changed (the scorer's reading too; before, "1 edit": 2 BIRD mini-dev answers).
        ("sqlite", "SELECT a AS p;\nFROM t;", "SELECT a AS p\nFROM t;", "faithful (1 closed)"),
        # (The second ';' alone after the complete statement is cut as an aside, as is any
        # explanation there, before an edit is looked for.)
        ("sqlite", "SELECT a FROM t LIMIT 3;\n;", "SELECT a FROM t LIMIT 3;", "faithful (1 closed)"),
        # A known slip of another dialect, rewritten to what it means.
        ("sqlite", "SELECT a::int FROM t", "SELECT CAST(a AS int) FROM t", "faithful (1 rewrite)"),
        # ... even when the rewrite is all of the answer (T-SQL's TOP, read by NL2SQL360's benchmark).
        ("sqlite", "SELECT DISTINCT TOP 3 name FROM t", "SELECT DISTINCT name FROM t LIMIT 3", "faithful (1 rewrite)"),
        # Edits of the draft's words: the text is valid, but not what the draft wrote.
        # (ILIKE on a pattern with a letter not ASCII: no rewrite, SQLite's LIKE would not ignore its case.)
        ("sqlite", "SELECT name FROM users WHERE name ILIKE '\u00e9%' LIMT 5", None, "1 edit, 1 respelt"),
        ("sqlite", "SELECT * FROM p WHERE age 30", None, "1 edit"),
    ],
)
def test_what_a_run_changed_of_the_drafts_answer(grammar: str, answer: str, text: str | None, summary: str) -> None:
    result = run(grammar, answer)
    if text is not None:
        assert result.text == text
    assert result.changes.summary() == summary
    assert result.faithful is summary.startswith("faithful")
    assert result.to_dict()["faithful"] is result.faithful


def test_a_prose_answer_is_no_answer_of_the_drafts() -> None:
    # Without a target nothing but invention could finish it: the partial result says so too.
    with pytest.raises(gg.GuideExhausted) as raised:
        run("json", "So the number is nine")
    partial = raised.value.result
    assert partial is not None and partial.faithful is False
    assert partial.changes.dropped == 1 and partial.changes.drafted_chars == 0


def test_repairs_record_their_rule_and_what_they_removed() -> None:
    result = run("sqlite", "SELECT a::int FROM t WHERE b ILIKE 'x'")
    repairs = [e for e in result.events if isinstance(e, Correction) and e.source == "repair"]
    assert [(e.rule, e.removed, e.text) for e in repairs] == [
        ("rewrite", "a::int", "CAST(a AS int)"),
        ("rewrite", "ILIKE", "LIKE"),  # PostgreSQL's ILIKE on an ASCII pattern: SQLite's LIKE
    ]


def test_counts_from_events() -> None:
    events = [
        DraftSpan(0, "SELECT a FROM t WHERE b = ", 0),
        Correction(26, "1", "target"),
        Correction(27, ")", "completion", "finish"),
        Cut(0, "Here it is:", "preamble", 0),
        Cut(27, "frobnicate", "unrepaired", 0),
    ]
    assert changes_of(events) == Changes(invented=1, dropped=1, closed=1, drafted_chars=26)
    assert changes_of(events).summary() == "1 invented, 1 dropped"
    # Only prose, cut: no answer of the draft's at all.
    prose = changes_of([Cut(0, "I cannot answer that.", "preamble", 0)])
    assert prose.faithful is False and prose.summary() == "no text of the draft's answer"


def test_words_the_target_wrote_a_whole_answer_in_place_of_are_dropped() -> None:
    """``hello world`` for JSON, with a target: it writes ``{`` where the words were rejected and
    none of the draft's text is in the result, so the draft's words were left out (not only the
    target's text invented); a rejected ``]`` alone holds no words to leave out."""
    written = [Correction(0, "{", "target"), Correction(1, "}", "completion", "finish")]
    words = changes_of([GrammarViolation(0, "hello world", (), 1, 1, 1), *written])
    assert words == Changes(invented=1, dropped=1, closed=1) and words.summary() == "1 invented, 1 dropped"
    assert changes_of([GrammarViolation(0, "]", (), 1, 1, 1), *written]).dropped == 0
    drafted = [DraftSpan(0, '{"a": ', 0), GrammarViolation(6, "frob", (), 1, 7, 1)]
    kept = changes_of([*drafted, Correction(6, "1}", "target")])
    assert kept.dropped == 0  # the draft's text is there: what was rejected is the target's to say


def test_a_partial_result_is_never_faithful() -> None:
    """``GuideExhausted``'s partial result (a valid prefix only) is not the draft's answer, even
    where nothing of it was changed: before, ``select`` alone (no close of marks ends it) said
    faithful. A budget that ended the run is not faithful either."""
    with pytest.raises(gg.GuideExhausted) as raised:
        run("sqlite", "select")
    partial = raised.value.result
    assert partial.text == "select" and partial.complete is False
    assert partial.faithful is False and partial.changes.summary() == "incomplete"
    pieces = iter(['{"a": [1', ", 2", ", 3", "]}"])
    budget = gg.guide(lambda prompt, prefix: next(pieces), "json", "q", target=False, max_draft_calls=2)
    assert budget.complete is False and budget.faithful is False
    assert budget.changes.summary() == "1 closed, incomplete"
    assert changes_of([DraftSpan(0, "select", 0)], complete=False).faithful is False


@pytest.mark.parametrize(
    ("answer", "text", "summary"),
    [
        # The draft's words quoted whole as one name: kept, only quotes written (formatting).
        ("SELECT a FROM t JOIN Ben Jones AS b", 'SELECT a FROM t JOIN "Ben Jones" AS b', "faithful (1 quoted)"),
        # A misspelt word respelt: named apart from other edits, but a word replaced all the same.
        ("SELECT COUNT(DICTINCT a) FROM t", "SELECT COUNT(DISTINCT a) FROM t", "1 respelt"),
    ],
)
def test_quoted_words_are_kept_and_a_respelt_word_is_named(answer: str, text: str, summary: str) -> None:
    result = run("sqlite", answer)
    assert result.text == text and result.changes.summary() == summary
    assert result.faithful is summary.startswith("faithful")
    if result.faithful:
        assert result.changes.drafted_chars == len(text)  # the quoted name is the draft's own text


def test_only_the_words_taken_away_quoted_and_a_typo_are_kept_or_respelt() -> None:
    def kind(removed: str, text: str) -> Changes:
        return changes_of([DraftSpan(0, "SELECT ", 0), Correction(7, text, "repair", removed=removed, rule="edit")])

    assert kind("Ben Jones", '"Ben Jones"').quoted == 1
    assert kind("Ben Jones", '"Ben Smith"').edits == 1  # other words in the quotes: an edit
    assert kind("FORM", "FROM").respelt == 1
    assert kind("ILIKE", "LIKE").edits == 1  # the first letter changed: another word
    assert kind("answer", "AS").edits == 1  # far from a typo


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        # The prose cut after its first words, which the text kept as names.
        ("SELECT Unfortunately, without knowing your tables, it's impossible", "SELECT Unfortunately, without"),
        # The prose left out up to its last words, which the text kept.
        ("SELECT The question is complex. Here is the SQLite query", "SELECT SQLite query"),
    ],
)
def test_a_sentence_kept_in_part_is_no_faithful_answer(answer: str, text: str) -> None:
    """Before, both said faithful: the prose left out was counted as no part of the answer, and
    the sentence's other words, kept as code, as the draft's answer."""
    result = run("sqlite", answer)
    assert result.text == text
    assert result.faithful is False and result.changes.edits == 1


@pytest.mark.parametrize(
    "answer",
    [
        "SELECT Unfortunately, without knowing your tables, it's impossible. Sorry.",
        "SELECT The question is complex. Here is the SQLite query:",
    ],
)
def test_a_whole_line_of_prose_after_a_keyword_is_no_answer(answer: str) -> None:
    """The same prose ended as a sentence is a line of prose, cut whole: no answer, not code."""
    with pytest.raises(gg.GuideExhausted) as refused:
        run("sqlite", answer)
    assert refused.value.reason == "no answer"


def test_prose_after_a_whole_answer_leaves_it_faithful() -> None:
    result = run("sqlite", "SELECT a FROM t;\n\nThis selects a from t, the table.")
    assert result.text == "SELECT a FROM t;" and result.faithful


def test_the_cli_summary_says_what_was_kept_respelt_or_left_unfinished() -> None:
    import io

    from grammar_guide.cli import Progress

    def summary_line(result: gg.GuideResult) -> str:
        out = io.StringIO()
        Progress(out, color=False).finished(result)
        return out.getvalue().strip().split(" · sqlite")[0]

    assert summary_line(run("sqlite", "SELECT a FROM t JOIN Ben Jones AS b")) == "✓ valid · faithful (1 quoted)"
    assert summary_line(run("sqlite", "SELECT COUNT(DICTINCT a) FROM t")) == "✓ valid · 1 respelt"
    with pytest.raises(gg.GuideExhausted) as raised:
        run("sqlite", "select")
    assert summary_line(raised.value.result) == "✗ incomplete · nothing changed so far"  # was '· faithful'
