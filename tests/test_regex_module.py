"""lark's ``regex=True``: Unicode properties and the ``regex`` module's own classes (issue 27),
checked against lark with ``regex=True`` on real grammars' terminals and every kind of character."""

from __future__ import annotations

import random
import re
import warnings

import lark
import pytest

from grammar_guide import Grammar, GrammarError
from tests.support.lark_verdict import lark_accepts
from tests.support.package_grammars import grammar_file

GDSCRIPT = ("gdtoolkit", "4.5.0", "gdtoolkit/parser/gdscript.lark")


def sample_characters(rng: random.Random) -> list[str]:
    """ASCII (with \\x1c-\\x1f, spaces to re and not to regex), the code points gdtoolkit's NAME
    names, and random ones from the planes in use."""
    points = [*range(0x1C, 0x7F), 0x0, 0xAA, 0xB7, 0xBA, 0xE9, 0x300, 0x37A, 0x387, 0x660, 0x1369]
    points += [0x1885, 0x19DA, 0x2118, 0x212E, 0x2160, 0x309B, 0x4E00, 0xFE70, 0xFE76, 0x10000, 0x1D400]
    points += [rng.randrange(0x80, 0x32000) for _ in range(400)]
    return [chr(c) for c in points if not 0xD800 <= c <= 0xDFFF]


def gdscript_name() -> str:
    text = grammar_file(*GDSCRIPT).read_text()
    found = re.search(r"(?m)^NAME:.*", text)
    assert found
    return found.group()


@pytest.mark.parametrize(
    "terminal",
    [
        "from-gdtoolkit",
        r"WORD: /\w+/",
        r"DIGITS: /\d+/",
        r"GAP: /\s+/",
        r"LETTERS: /[\p{L}\p{Nl}]+/",
        r"OTHER: /\P{L}/",
        r"SHORT: /\pN+/",
        r"POSIX: /[[:alpha:]_]+/",
        r"NOT_ALNUM: /[^[:alnum:]\s]+/",
    ],
)
def test_regex_true_terminals_agree_with_lark(terminal: str) -> None:
    if terminal == "from-gdtoolkit":
        terminal = gdscript_name()
    name = terminal.split(":")[0]
    text = f'start: {name} (" " {name})*\n{terminal}\n'
    with warnings.catch_warnings():
        # lark compiles [[:alpha:]] with Python's re too, which warns of a possible nested set.
        warnings.simplefilter("ignore", FutureWarning)
        grammar = Grammar.from_lark(text, regex=True)
        parser = lark.Lark(text, parser="earley", regex=True)
    rng = random.Random(7)
    pool = sample_characters(rng)
    singles = [c for c in pool if c != " "]
    for ch in singles:  # every sampled character alone, then random short texts
        assert grammar.is_complete(ch) == lark_accepts(parser, ch), (terminal, ch)
    for _ in range(1500):
        sample = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 6)))
        assert grammar.is_complete(sample) == lark_accepts(parser, sample), (terminal, sample)


def test_case_insensitive_literals_fold_as_the_regex_module_does() -> None:
    # re matches "ı" (dotless i) for "i" case-insensitively; the regex module does not.
    text = 'start: "if"i\n'
    assert Grammar.from_lark(text).is_complete("ıf")
    assert lark_accepts(lark.Lark(text, parser="earley"), "ıf")
    assert not Grammar.from_lark(text, regex=True).is_complete("ıf")
    assert not lark_accepts(lark.Lark(text, parser="earley", regex=True), "ıf")
    assert Grammar.from_lark(text, regex=True).is_complete("IF")


def test_case_insensitive_regexes_are_refused_where_they_are_written() -> None:
    text = "start: A\nA: /[a-z]+/i\n"
    with pytest.raises(GrammarError, match="case-insensitive matching with regex=True") as info:
        Grammar.from_lark(text, regex=True)
    assert (info.value.line, info.value.column, info.value.construct) == (2, 4, "/[a-z]+/i")


def test_unicode_property_without_regex_true_points_at_it() -> None:
    # gdtoolkit's grammar needs regex=True (its parser passes it); without it lark cannot
    # compile NAME. The error names that terminal's regex, not text in another rule.
    with pytest.raises(GrammarError, match="regex=True") as info:
        Grammar.from_file(grammar_file(*GDSCRIPT))
    assert (info.value.line, info.value.column) == (310, 7)
    assert info.value.construct is not None and info.value.construct.startswith(r"/[\p{XID_Start}")


def test_gdscript_with_regex_true_is_refused_for_its_look_behind() -> None:
    with pytest.raises(GrammarError, match="look-around") as info:
        Grammar.from_file(grammar_file(*GDSCRIPT), regex=True)
    assert (info.value.line, info.value.column) == (300, 14)
    assert info.value.construct == '/""".*?(?<!\\\\)(\\\\\\\\)*?"""/is'
