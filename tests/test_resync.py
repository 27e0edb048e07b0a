"""Resynchronisation: where no edit fixes a violation and no model may write, the fewest of the
draft's lexemes are dropped after which its own text reads on, recorded; the rest is no longer
cut whole. A drop writes nothing, joins no operator on to another operand, and keeps prose out."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

import grammar_guide as gg
from grammar_guide import Correction, Cut, Grammar, guide
from grammar_guide._repair import Edit, decide
from grammar_guide._resync import resync


@pytest.fixture(scope="module")
def sqlite() -> Grammar:
    return Grammar.builtin("sqlite")


def _at_violation(grammar: Grammar, draft: str) -> tuple[object, str]:
    checker = grammar.checker()
    return checker, draft[checker.feed(draft) :]


def test_a_span_no_edit_fixes_is_dropped_and_the_rest_of_the_query_kept(sqlite: Grammar) -> None:
    # A CASE's THEN written inside SUM (BIRD answers): the rest was cut at the first THEN.
    draft = "SELECT (SUM(a = 1 THEN `T-CHO`) - SUM(a = 2 THEN `T-CHO`)) * 100 AS rate FROM lab WHERE id = 7"
    result = guide(lambda prompt: draft, sqlite, "q", target=False)
    assert result.text == "SELECT (SUM(a = 1 ) - SUM(a = 2 )) * 100 AS rate FROM lab WHERE id = 7"
    assert not result.faithful and result.changes.dropped == 2
    assert [(d.text.strip(), d.reason) for d in result.dropped] == [("THEN `T-CHO`", "resync")] * 2
    drops = [e for e in result.events if isinstance(e, Correction) and e.rule == "resync"]
    assert [e.removed.strip() for e in drops] == ["THEN `T-CHO`"] * 2
    assert not [e for e in result.events if isinstance(e, Cut) and e.reason == "unrepaired"]


def test_the_span_goes_to_the_end_of_the_bracket_and_no_further(sqlite: Grammar) -> None:
    draft = "SELECT a FROM t WHERE (b = 1 THEN 'x' ELSE 'y') AND c = 2 ORDER BY a"
    result = guide(lambda prompt: draft, sqlite, "q", target=False)
    assert result.text == "SELECT a FROM t WHERE (b = 1 ) AND c = 2 ORDER BY a"
    assert [d.text for d in result.dropped if d.reason == "resync"] == ["THEN 'x' ELSE 'y'"]
    # After a complete answer nothing is joined on (a model repeating itself with a change,
    # ``ORDER BY age FROM t ORDER BY age DESC``, would be read as its last words): it is cut.
    result = guide(lambda prompt: "SELECT a FROM t ORDER BY a PARTITION BY b LIMIT 5", sqlite, "q", target=False)
    assert result.text.rstrip() == "SELECT a FROM t ORDER BY a"
    assert {d.reason for d in result.dropped} >= {"unrepaired"} and "resync" not in {d.reason for d in result.dropped}


@pytest.mark.parametrize(
    "draft",
    [
        # Dropping 'WHERE YEAR(l.date)' would give '=' another operand: SUM(l.amount = 199).
        "SELECT SUM(l.amount WHERE YEAR(l.date) = 199",
        # ... or a qualifier's point another name: COUNT(p.id .sex = 'M').
        "SELECT COUNT(p.id WHERE p.sex = 'M') FROM p",
        # Nothing after the span to read on to: the cut stays.
        "SELECT a FROM t ORDER BY a QUALIFY ROW_NUMBER() OVER (ORDER BY a)",
        # An operator is never dropped, nor the close of a bracket opened before the violation.
        "SELECT a FROM t WHERE b = 1 QUALIFY x <= 5 AND c = 2",
        # Prose after the span is not read on as code.
        "SELECT a FROM t WHERE b = 1 THEN this query returns the rows",
    ],
)
def test_no_drop_joins_an_operand_on_or_reads_prose_as_code(sqlite: Grammar, draft: str) -> None:
    checker, moved = _at_violation(sqlite, draft)
    assert moved and resync(checker, moved, final=True) is None  # type: ignore[arg-type]


def test_a_json_value_is_never_given_another_keys_value(json_grammar: Grammar) -> None:
    # Dropping 'x y, "c":' would read 3 as b's value: a separator is never dropped.
    checker, moved = _at_violation(json_grammar, '{"a": 1, "b": x y, "c": 3}')
    assert resync(checker, moved, final=True) is None  # type: ignore[arg-type]
    checker, moved = _at_violation(json_grammar, "[1, 2 foo bar, 3]")
    edit = resync(checker, moved, final=True)  # type: ignore[arg-type]
    assert edit is not None and edit.removed.strip() == "foo bar" and edit.kept == ", 3]"


def _chunked(answer: str, chunk: int | None) -> gg.FunctionDraft:
    """``answer`` as a draft that streams it in chunks of ``chunk`` characters (whole if ``None``)."""

    def draft(prompt: str, prefix: str) -> Iterator[str]:
        if prefix:
            return iter(())
        return iter([answer] if chunk is None else [answer[i : i + chunk] for i in range(0, len(answer), chunk)])

    return gg.FunctionDraft(draft, continues_prefix=True)


_RACES = "CREATE TABLE races (name TEXT, year INT); INSERT INTO races VALUES ('a', 2005), ('b', 2005), ('c', 2006);"


@pytest.mark.parametrize("chunk", [None, 4])
def test_an_edit_whose_reading_soon_fails_gives_way_to_the_drop_that_keeps_the_rest(chunk: int | None) -> None:
    # SQLite 3.40 has no ORDER BY inside an aggregate: a ')' inserted before ORDER read on to the
    # bracket's close, which then could not be read, and FROM … WHERE … was cut. The drop of
    # 'ORDER BY name DESC' keeps the rest; it is recorded (the concatenation's order changes).
    draft = "SELECT COUNT(*) AS n, GROUP_CONCAT(name ORDER BY name DESC) AS l FROM races WHERE year = 2005; "
    result = gg.guide(_chunked(draft, chunk), "sqlite", "q", target=False)
    kept = "SELECT COUNT(*) AS n, GROUP_CONCAT(name ) AS l FROM races WHERE year = 2005;"
    assert " ".join(result.text.split()) == kept
    assert not result.faithful
    assert [d.text.strip() for d in result.dropped if d.reason == "resync"] == ["ORDER BY name DESC"]
    with sqlite3.connect(":memory:") as db:
        db.executescript(_RACES)
        assert db.execute(result.text).fetchone()[0] == 2


def test_an_edit_the_rest_reads_on_after_is_kept_over_a_drop(sqlite: Grammar) -> None:
    # A ')' inserted where the draft's text then reads on to its end loses nothing: no drop.
    draft = "SELECT COUNT(name FROM races WHERE year = 2005"
    result = guide(lambda prompt: draft, sqlite, "q", target=False)
    assert "FROM races WHERE year = 2005" in result.text
    assert "resync" not in {d.reason for d in result.dropped}
    # With a target model the target decides there: the comparison is only for a finished draft
    # with no model to write (``decide``'s ``lookahead`` follows edits only with ``no_target``).
    checker, moved = _at_violation(sqlite, "SELECT GROUP_CONCAT(name ORDER BY name DESC) AS l FROM races")
    decision = decide(checker, moved, final=True, floor=0)  # type: ignore[arg-type]
    assert not (isinstance(decision, Edit) and decision.rule == "resync")


def test_a_name_quoted_whole_loses_none_of_the_draft_and_is_kept_over_a_drop(sqlite: Grammar) -> None:
    # Quoting 'Examination Date' writes both words again: no drop of 'Date' loses less.
    draft = "SELECT a FROM t WHERE Examination Date LIKE '1981-11-%' AND b = 1 ORDER BY a"
    result = guide(lambda prompt: draft, sqlite, "q", target=False)
    assert result.text == "SELECT a FROM t WHERE \"Examination Date\" LIKE '1981-11-%' AND b = 1 ORDER BY a"
    assert "resync" not in {d.reason for d in result.dropped}
