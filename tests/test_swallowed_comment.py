"""A line comment that swallowed the draft's code because its line breaks were lost (an answer
stored on one line, as NL2SQL-Benchmark's prediction files store them: ``-- Step 1: … WITH s AS
(…``): a line break is written where the code begins, every word of the draft kept, and the result
says so (``faithful (1 line break)``). Checked by SQLite's rows, whole and streamed in chunks; a
comment after a complete answer, and a ``--`` inside a string, are untouched."""

from __future__ import annotations

import sqlite3

import pytest

from benchmarks.real_sql_repair import answer_sql, score_row
from benchmarks.sql_faithful import Excuses, excuses_of, read_broken
from benchmarks.sql_sources import Answer
from grammar_guide import Correction, FunctionDraft, Grammar, GuideExhausted, GuideResult, guide
from tests.support.streamed import streamed

SQLITE = Grammar.builtin("sqlite")


def _guided(answer: str, chunk: int) -> GuideResult:
    return guide(streamed(answer, chunk), SQLITE, "q", target=False)


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE visitor(id, name); CREATE TABLE visit(visitor_id, year);"
        "INSERT INTO visitor VALUES (1, 'Ann'), (2, 'Bo'), (3, 'Cy');"
        "INSERT INTO visit VALUES (1, 2005), (1, 2012), (2, 2005), (3, 2012);"
    )
    return db


_BOTH = (
    "-- Step 1: Select visitors who visited before 2009 SELECT v.name FROM visitor AS v JOIN visit AS t"
    " ON v.id = t.visitor_id WHERE t.year < 2009  -- Step 2: Select visitors who visited after 2011"
    " INTERSECT SELECT v.name FROM visitor AS v JOIN visit AS t ON v.id = t.visitor_id WHERE t.year > 2011 "
)


@pytest.mark.parametrize(
    ("answer", "breaks", "rows"),
    [
        # The whole answer swallowed by the comment it began with.
        ("-- The visitors of 2012  WITH v12 AS (SELECT visitor_id FROM visit WHERE year = 2012)"
         " SELECT name FROM visitor WHERE id IN (SELECT visitor_id FROM v12) ORDER BY name;", "1 line break",
         [("Ann",), ("Cy",)]),
        # Once, inside a clause: the condition the comment swallowed is the draft's, kept (before, it
        # was taken back with the comment as an unfinished end).
        ("SELECT name FROM visitor WHERE id > 0 AND -- only the rows the report still needs     id < 3",
         "1 line break", [("Ann",), ("Bo",)]),
        # Three times, between a query's parts, where a name can go as well as a keyword (a name
        # above 0x7f is a name to SQLite: the comment is told by a mark no name holds).
        ("-- Step 1: the visits of 2012 WITH v12 AS (SELECT visitor_id FROM visit WHERE year = 2012),  -- Step 2:"
         " their names names AS (SELECT name FROM visitor WHERE id IN (SELECT visitor_id FROM v12))  -- Step 3:"
         " in order SELECT name FROM names ORDER BY name;", "3 line breaks", [("Ann",), ("Cy",)]),
        # Twice: the code read again after the first break ends in a comment that swallowed more of
        # it (without the second break the text is complete, its INTERSECT a comment).
        (_BOTH, "2 line breaks", [("Ann",)]),
    ],
)  # fmt: skip
def test_a_line_comment_that_swallowed_code_ends_where_the_code_begins(
    answer: str, breaks: str, rows: list[tuple[str]]
) -> None:
    db = _db()
    for chunk in (len(answer), 7):
        result = _guided(answer, chunk)
        corrections = [e for e in result.events if isinstance(e, Correction)]
        assert [(c.text, c.removed, c.rule) for c in corrections] == [("\n", "", "line break")] * int(breaks[0])
        assert result.text.replace("\n", "") == answer  # every character the draft's
        assert result.faithful and result.changes.summary() == f"faithful ({breaks})"
        assert db.execute(result.text).fetchall() == rows


@pytest.mark.parametrize(
    "answer",
    [
        # After a complete answer a comment is the draft's comment, even one that reads as code.
        "SELECT name FROM visitor -- ORDER BY name",
        # A '--' inside a string is no comment.
        "SELECT name FROM visitor WHERE name = '-- x' AND id = 1",
    ],
)
def test_a_comment_or_a_string_that_the_answer_reads_as_written_is_untouched(answer: str) -> None:
    result = _guided(answer, len(answer))
    assert result.text == answer and result.faithful and not result.changes.line_breaks


def test_a_comment_of_code_alone_is_not_made_code() -> None:
    # The draft's code commented out, and nothing else: no prose word before it, so no break is
    # read into it (a model that comments its code out did not lose a line break).
    with pytest.raises(GuideExhausted):
        _guided("-- SELECT name FROM visitor", 5)


def test_the_score_reads_the_draft_with_the_breaks_the_result_recorded_and_checks_them() -> None:
    result = _guided(_BOTH, len(_BOTH))
    excuses = excuses_of(result.events)
    assert len(excuses.broken) == 2
    row = {"text": result.text, "excuses": excuses.to_dict()}
    score_row(row, Answer("f.sql", "0", "m", "sqlite", "db", _BOTH, "NL2SQL-Benchmark bird"))
    assert row["faithful"] and row["tokens_added"] == [] and row["invented_literals"] == []
    # Unrecorded, the draft is read as SQLite reads it: all comment, so every token is added.
    bare = {"text": result.text, "excuses": {}}
    score_row(bare, Answer("f.sql", "0", "m", "sqlite", "db", _BOTH, "NL2SQL-Benchmark bird"))
    assert not bare["faithful"] and bare["tokens_added"][:2] == ["SELECT", "v"]
    # The draft's last line after its break, with white space a later draft call added: the break
    # is found all the same (the text after it is matched less its white space at the end).
    ended = "SELECT name FROM visitor WHERE id = 1 AND -- the first one  year < 2009 -- old ones  ORDER BY name; "
    calls = iter((ended, " "))
    draft = FunctionDraft(lambda prompt, prefix: next(calls, ""))
    spaced = guide(draft, SQLITE, "q", target=False)
    assert spaced.changes.line_breaks == 2 and spaced.text.endswith("ORDER BY name;  ")
    row = {"text": spaced.text, "excuses": excuses_of(spaced.events).to_dict()}
    score_row(row, Answer("f.sql", "0", "m", "sqlite", "db", ended, "LLM-NL2SQL"))
    assert row["faithful"] and row["tokens_added"] == []
    # A recorded break is put only where a line comment on its line has the text after it.
    assert read_broken("SELECT a FROM t WHERE b = 1", Excuses(broken=("WHERE b",)))[0] == "SELECT a FROM t WHERE b = 1"
    # The comment's words are no answer: the answer begins at the statement after it.
    assert answer_sql("-- Step 1: Select the names\nSELECT name FROM visitor") == "SELECT name FROM visitor"
