"""_lexemes: the draft's text as words, literals and operators, with plain strings."""

from __future__ import annotations

import pytest

from grammar_guide._lexemes import LEXEME, merges, splits_operator, word_becomes_other


def test_a_lexeme_is_a_word_a_literal_or_a_whole_operator() -> None:
    text = "SELECT a<=b, 'it''s x' FROM t WHERE 2 ** 3 != 8.5 AND c::int"
    assert LEXEME.findall(text) == [
        "SELECT", "a", "<=", "b", ",", "'it''s x'", "FROM", "t", "WHERE", "2", "**", "3", "!=", "8.5",
        "AND", "c", "::", "int",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "start", "end", "after", "splits"),
    [
        ("2 *", 3, 3, "* 3", True),  # writing between the two stars
        ("2 *", 3, 4, "* 3", True),  # dropping the second star
        ("2 ", 2, 4, "** 3", False),  # dropping the whole operator
        ("a &", 3, 4, "& b", True),  # '&&' is not the bitwise '&'
        ("a <", 2, 3, "= b", True),
        ("a )", 3, 4, ") b", False),  # '))' is two marks
        ("x = ", 4, 4, "'**'", False),  # inside a string is no operator
    ],
)
def test_an_edit_never_splits_a_multi_character_operator(
    before: str, start: int, end: int, after: str, splits: bool
) -> None:
    assert splits_operator(before, start, end, after) is splits


@pytest.mark.parametrize(
    ("word", "literal", "other"),
    [
        ("answer", "^", True),  # a word is not an operator
        ("FROM", ",", True),
        ("AS", "IS", True),  # a keyword is not another keyword
        ("IN", ";", True),
        ("FORM", "FROM", False),  # a misspelt keyword is a slip of one
        ("**", "^", False),  # not a word
    ],
)
def test_a_word_never_becomes_an_operator_or_another_keyword(word: str, literal: str, other: bool) -> None:
    assert word_becomes_other(word, literal, frozenset({"as", "is", "from", "in"})) is other


@pytest.mark.parametrize(
    ("before", "after", "merged"),
    [
        ("b", "title", True),  # two words into one
        ("LIMIT 1", ".030 sec", True),  # two numbers into the invented 1.030
        ("a <", "= b", True),  # two marks into the operator '<='
        ("LIMIT 1", " .030", False),  # white space keeps them apart
        ("f(x", ") + 1", False),  # marks that stay marks
        ("step", "-by", False),
        # A number and a word: a lexeme read across the seam (held-out 2's Qwen2, read in session 23:
        # ' WHERE ' dropped from '* 1.0 WHERE Patient', then '0Patient' dropped, the number cut to '1.').
        ("SUM(x) * 1.0", "Patient.Birthday", True),
        ("'abc'", "x", False),
    ],
)
def test_an_edit_never_merges_the_lexemes_at_its_seam(before: str, after: str, merged: bool) -> None:
    assert merges(before, after) is merged
