"""benchmarks/other_grammar_repairs: its judges flag what they name, and a short run on poetry-core's
PEP 508 grammar (two of its own test texts) is valid by lark with nothing flagged."""

from __future__ import annotations

from benchmarks.other_grammar_repairs import judge_edits, lost, main, prose_kept, slipped
from grammar_guide import Correction

KEYWORDS = frozenset({"as", "is", "from"})


def repair(offset: int, text: str, removed: str) -> Correction:
    return Correction(offset=offset, text=text, source="repair", rule="edit", removed=removed)


def test_judges_flag_a_word_made_an_operator_a_split_operator_and_a_number_extended():
    assert judge_edits([repair(4, "^", "answer")], "The ^ is 3", KEYWORDS)["word_to_operator"]
    assert judge_edits([repair(7, "IS", "AS")], "SELECT IS x", KEYWORDS)["word_to_operator"]
    assert judge_edits([repair(3, "", "*")], "2 * 3", KEYWORDS)["splits_operator"]
    extended = Correction(offset=11, text="0", source="completion")
    assert judge_edits([extended], "retries = 10", KEYWORDS)["number_extended"]
    # A misspelt keyword put right, a bracket dropped and a closing bracket: nothing flagged.
    fine = [repair(0, "FROM", "FORM"), repair(5, "", ")"), Correction(offset=9, text=")", source="completion")]
    assert not any(judge_edits(fine, "FROM (a b)", KEYWORDS).values())


def test_slips_are_the_same_on_every_run_and_prose_is_found():
    assert slipped("g", 3, "a & b", KEYWORDS) == slipped("g", 3, "a & b", KEYWORDS)
    slip, draft = slipped("g", 3, "a & b", KEYWORDS)
    assert slip == "prose around" and "a & b" in draft and draft != "a & b\n"
    assert prose_kept("Sure! This works:\na & b\nHope this helps\n", "works & a & b | Hope") == ["works", "Hope"]
    assert prose_kept("Sure! This works:\nworks & b\nHope this helps\n", "works & b") == []
    assert lost("Sure:\nprocess hwere x == 1\nOK\n", "process", prose=True) == ["hwere", "x", "1"]


def test_a_short_run_on_poetry_pep508_is_valid_by_lark(tmp_path):
    payload = main(["--texts", "2", "--grammars", "poetry-pep508", "--results-dir", str(tmp_path)])
    rows = [r["target=False"] for r in payload["rows"]]
    assert len(rows) == 2 and all(r["valid"] for r in rows)
    assert [r["slip"] for r in payload["rows"]] == ["cut", "token dropped"]
    assert not any(r["word_to_operator"] or r["splits_operator"] or r["number_extended"] for r in rows)
    assert (tmp_path / "other_grammar_repairs.json").is_file()


def test_a_grammar_with_no_target_run_says_why():
    # cel's lazy STRING_LIT: its match depends on the text after it (a backslash read as an escape
    # or as itself, as a later quote allows), so no character-level reading is exact: refused with
    # a GrammarError that names the terminal, and said, not skipped silently.
    from benchmarks.other_grammar_repairs import target_reading
    from tests.test_differential import load_suite

    grammar, why = target_reading("cel", load_suite("cel"))
    assert grammar is None and why is not None
    assert why.startswith("its Earley reading is refused: terminal STRING_LIT uses a lazy quantifier")
