"""lark's ``g_regex_flags`` (timefhuman passes ``re.IGNORECASE``): every terminal matched with
the flags, literals and patterns alike, checked against lark on every short text over an
alphabet, with Earley and with LALR.
"""

from __future__ import annotations

import itertools
import re

import lark
import pytest

from grammar_guide import Grammar, GrammarError
from tests.support.lark_verdict import lark_accepts

GRAMMAR = r"""
start: word+
word: "se" | PAIR | DOT
PAIR: /[a-z]x/
DOT: /s./
%ignore " "
"""
ALPHABET = "sSeXx \n"
LENGTH = 4


@pytest.mark.parametrize("parser", ["earley", "lalr"])
@pytest.mark.parametrize("flags", [re.IGNORECASE, re.IGNORECASE | re.DOTALL])
def test_agrees_with_lark_on_every_short_text_and_prefix(parser: str, flags: int) -> None:
    grammar = Grammar.from_lark(GRAMMAR, parser=parser, g_regex_flags=flags)  # type: ignore[arg-type]
    reference = lark.Lark(GRAMMAR, parser=parser, g_regex_flags=flags)
    texts = ["".join(t) for n in range(LENGTH + 1) for t in itertools.product(ALPHABET, repeat=n)]
    accepted = {t for t in texts if lark_accepts(reference, t)}
    assert "Se" in accepted and "sX" in accepted
    assert ("S\n" in accepted) == bool(flags & re.DOTALL)
    prefixes = {t[:k] for t in accepted for k in range(len(t) + 1)}
    for text in texts:
        checker = grammar.checker()
        fed = checker.feed(text)
        assert (fed == len(text) and checker.is_complete) == (text in accepted), (text, fed)
        if len(text) <= LENGTH - 2:  # a valid prefix here is completed within two characters
            assert (fed == len(text)) == (text in prefixes), (text, fed)


def test_other_flags_are_refused() -> None:
    with pytest.raises(GrammarError, match="g_regex_flags"):
        Grammar.from_lark(GRAMMAR, g_regex_flags=re.VERBOSE)
