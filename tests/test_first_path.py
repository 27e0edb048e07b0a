"""``compiler.first_path``: Python's backtracking order, replayed to tell whether more text could change a
match. The oracle is Python's ``re`` on the text and on the text with one more character."""

from __future__ import annotations

import random
import re

import pytest

from grammar_guide.compiler.first_path import compile_first_path

ALPHABET = "-0123.e\"ab\\'x#\n y"
PATTERNS = [
    r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?",  # JSON's number: greedy optional parts
    r'"[^"]*"',
    r'".*"',  # greedy: backtracks from the end of the line
    r'".*?"',  # lazy: the first quote ends it
    r"[a-z]+",
    r"ab|a",
    r"a|ab",
    r"(?i:select)",
    r"\w+\b",
    r"([ubf]?r?|r[ubf])(\"(?!\"\").*?(?<!\\)(\\\\)*?\"|'(?!'').*?(?<!\\)(\\\\)*?')",  # python.lark's STRING
    r"(\r?\n[\t ]*|#[^\n]*)+",  # python.lark's _NEWLINE
    r"x{2,4}y?",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_first_match_is_re_match_and_no_character_more_changes_it(pattern):
    first = compile_first_path(pattern)
    assert first is not None
    compiled = re.compile(pattern)
    rng = random.Random(pattern)
    ends = 0
    for _ in range(1500):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8)))
        outcome, end = first.run(text, 0, len(text))
        match = compiled.match(text)
        if outcome == "match":
            assert match is not None and match.end() == end, repr(text)
            for ch in ALPHABET:
                longer = compiled.match(text + ch)
                assert longer is not None and longer.end() == end, (text, ch)
        elif outcome == "fail":
            assert match is None and all(compiled.match(text + ch) is None for ch in ALPHABET), repr(text)
        else:
            ends += 1
    assert ends  # the texts do reach the end of some paths


def test_greedy_optional_part_cut_at_the_end_may_still_grow():
    number = compile_first_path(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
    assert number is not None
    assert number.run("-0.", 0, 3) == ("end", 3)  # "-0.5" matches further
    assert number.run("-0.x", 0, 4) == ("match", 2)


def test_what_it_does_not_follow_is_none():
    assert compile_first_path(r"(a)\1") is None  # a back-reference
    assert compile_first_path(r"(?>a+)b") is None  # an atomic group
    assert compile_first_path(r"(a?)*") is None  # an unbounded repeat of what may be empty
