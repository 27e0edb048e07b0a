"""Issue 25: a refusal without a target says which case it is (``GuideExhausted.reason``), and
``needs invention`` is checked: no close of marks alone ends the text."""

from __future__ import annotations

import pytest

from grammar_guide import Correction, Grammar, GuideExhausted, guide

JSON = Grammar.builtin("json")


def refusal(answer: object, grammar: Grammar = JSON, **options: object) -> GuideExhausted:
    draft = answer if callable(answer) else (lambda prompt: answer)
    with pytest.raises(GuideExhausted) as raised:
        guide(draft, grammar, "Answer.", target=False, **options)
    return raised.value


@pytest.mark.parametrize("answer", ["hello world", "]", "", "So the number is nine"])
def test_a_draft_with_nothing_readable_is_no_answer(answer: str) -> None:
    # Before: "needs invention", as for a value cut short: the record told the two apart nowhere.
    exhausted = refusal(answer)
    assert exhausted.reason == "no answer" and "no answer" in str(exhausted)
    assert not exhausted.result.text.strip()


@pytest.mark.parametrize("answer", ["-- I cannot answer: the schema has no date column", "/* no answer */ "])
def test_a_draft_of_comments_alone_is_no_answer(answer: str) -> None:
    # Before: "needs invention", as if a value had been cut short.
    exhausted = refusal(answer, Grammar.builtin("sqlite"))
    assert exhausted.reason == "no answer"


def test_a_value_only_invention_could_finish_needs_invention() -> None:
    exhausted = refusal("-")
    assert exhausted.reason == "needs invention" and "needs invention" in str(exhausted)
    assert exhausted.result.text == "-"


def test_a_budget_that_cut_the_draft_is_the_reason() -> None:
    pieces = iter(["-", "1"])
    exhausted = refusal(lambda prompt, prefix: next(pieces), max_draft_calls=1)
    assert exhausted.reason == "budget reached" and "max_draft_calls (1)" in str(exhausted)


def test_needs_invention_is_checked_by_a_wider_search_for_marks_alone() -> None:
    # Ten marks close it, past the finish's own search (8): it was refused as "needs invention".
    grammar = Grammar.from_lark('start: WORD (";" | ".")~10\nWORD: /[a-z]+/\n')
    result = guide(lambda prompt: "ab", grammar, "Answer.", target=False)
    assert result.complete and result.text == "ab;;;;;;;;;;"
    (close,) = [e for e in result.events if isinstance(e, Correction) and e.source == "completion"]
    assert close.text == ";;;;;;;;;;"
