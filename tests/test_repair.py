"""Repair decisions as data: ``decide`` returns an Edit, a Cut or NeedTarget and changes nothing."""

from __future__ import annotations

import pytest

from grammar_guide import Grammar
from grammar_guide import _repair as repair


@pytest.fixture(scope="module")
def sqlite() -> Grammar:
    return Grammar.builtin("sqlite")


def at_violation(grammar: Grammar, draft: str) -> tuple[object, str]:
    checker = grammar.checker()
    n = checker.feed(draft)
    return checker, draft[n:]


def test_a_stray_comma_is_an_edit(json_grammar: Grammar) -> None:
    checker, evidence = at_violation(json_grammar, "[1, 2,]")
    before = checker.text  # type: ignore[attr-defined]
    decision = repair.decide(checker, evidence, final=True, floor=0)  # type: ignore[arg-type]
    assert isinstance(decision, repair.Edit)
    assert decision.description == "dropped ','" and decision.start == len("[1, 2")
    assert checker.text == before  # type: ignore[attr-defined]


def test_an_explanation_after_a_complete_answer_is_a_cut(sqlite: Grammar) -> None:
    checker, evidence = at_violation(sqlite, "SELECT a FROM road\n\nThis query returns all roads.")
    decision = repair.decide(checker, evidence, final=True, floor=0)  # type: ignore[arg-type]
    assert decision == repair.Cut(len("SELECT a FROM road"), "after complete text", len("SELECT a FROM road"))


def test_no_supported_edit_needs_the_target_at_the_word_start(json_grammar: Grammar) -> None:
    checker, evidence = at_violation(json_grammar, '{"a": tru x')
    decision = repair.decide(checker, evidence, final=False, floor=0)  # type: ignore[arg-type]
    assert isinstance(decision, repair.NeedTarget)


def test_the_same_violation_twice_is_not_edited_again(json_grammar: Grammar) -> None:
    checker, evidence = at_violation(json_grammar, "[1, 2,]")
    first = repair.decide(checker, evidence, final=True, floor=0)  # type: ignore[arg-type]
    last = repair.signature(checker.text, evidence, first.at)  # type: ignore[attr-defined]
    again = repair.decide(checker, evidence, final=True, floor=0, last=last)  # type: ignore[arg-type]
    assert not isinstance(again, repair.Edit)


def test_a_doubled_logical_operator_is_not_halved_into_a_bitwise_one(sqlite: Grammar) -> None:
    checker, evidence = at_violation(sqlite, "SELECT a FROM t WHERE a && b AND c = 1")
    decision = repair.decide(checker, evidence, final=True, floor=0)  # type: ignore[arg-type]
    assert isinstance(decision, repair.Edit)
    assert decision.removed.strip() == "&&" and decision.text.strip() == "AND"
