"""Terminals that end in a look-ahead of one character (issue 27), or begin with a look-behind of
one, read as lark's dynamic Earley lexer matches them: ``re.match`` on the whole text, so the
look-ahead sees the characters after the lexeme, ignored text included, and the text's end (where
``(?=...)`` fails and ``(?!...)`` holds); the look-behind the character before it, none at the
text's start (where ``(?<=...)`` fails and ``(?<!...)`` holds). Each grammar is checked against
lark on every short text over its alphabet: whole texts by lark's parse, prefixes by whether some
text that begins with them parses.
"""

from __future__ import annotations

import itertools

import lark
import pytest

from grammar_guide import Grammar, GrammarError
from grammar_guide.compiler.lookahead import Lookahead, LookaheadReading, lookahead_reading
from tests.support.lark_verdict import lark_accepts

# pylogics' operators (``U(?=[ "\(])``): an operator must be followed by one of three
# characters, so not by the text's end; a name may be the same letter.
POSITIVE = r"""
start: x
x: NAME | ALWAYS x | "(" x ")"
ALWAYS.2: /G(?=[ (])/
NAME: /[a-zG]+/
%ignore " "
"""

# flloat's ``X(?=[^a-z]|$)``: not followed by a letter; the text may end after it.
NEGATIVE = r"""
start: x
x: NAME | NEXT x | NEXT | "(" x ")"
NEXT: /X(?=[^a-z]|$)/
NAME: /[a-z]+/
%ignore " "
"""

# lark.lark's ``OP``: one alternative with a look-ahead, the others without.
PARTS = r"""
start: item+
item: NAME OP?
OP: /[+*]|[?](?![a-z])/
NAME: /[a-z]+/
%ignore " "
"""

# lark.lark's ``REGEXP`` (``\/(?!\/)...``): a look-ahead after the lexeme's first character.
WITHIN = r"""
start: item+
item: COMMENT | SLASHES | NAME
COMMENT: /\/(?!\/)[a\/ ]*?\//
SLASHES: "//"
NAME: /a+/
"""

# lark.lark's ``STRING`` (``_STRING "i"?``): common.lark's string, whose look-behind has an exact
# equivalent, then what may match empty text.
STRING = r"""
start: STRING+
STRING: "\"" _STRING_ESC_INNER "\"" "i"?
%import common._STRING_ESC_INNER
"""

# A word boundary at the end: after a word character (Python re's Unicode ``\\w``: ``é`` is one)
# it is ``(?!\\w)``, after another character ``(?=\\w)``, which fails at the text's end.
BOUNDARY = r"""
start: item+
item: KW | NAME | SIGN
KW: /if\b/
NAME: /[a-z]+\b/
SIGN: /-\b/
%ignore " "
"""

# A greedy repeat whose class is within the look-ahead's: the look-ahead says only that the
# repeat reads on as far as it can (and that no other letter follows).
REPEAT = r"""
start: item+
item: NAME | NUM
NAME: /[a-c]+(?![a-z])/
NUM: /[0-9]+/
%ignore " "
"""

# A word boundary at the start looks behind (lark's re.match(text, pos) sees the text before pos):
# before a word character it is (?<!\\w), the text's start allowed: a name may not follow a number
# or a name without a space; before another character (?<=\\w), so ``-`` only right after a word
# character, never first. NUM's matches end in a word character or in ``-``: what follows it
# depends on which (the reading refines its states by the class of the last character).
START_BOUNDARY = r"""
start: item+
item: KW | NAME | NUM | SIGN
KW: /\bi\b/
NAME: /\b[a-z]+/
NUM: /[0-9]+-?/
SIGN: /\b-/
%ignore " "
"""

# A look-behind of one character at the start: ``b`` only after ``a`` or a space, ``a`` never
# right after a digit; ignored text before a terminal is what it sees.
LOOK_BEHIND = r"""
start: item+
item: AFTER | A | DIGIT
AFTER: /(?<=[a ])b/
A: /(?<![0-9])a+/
DIGIT: /[0-9]/
%ignore " "
"""

# blark's IDENTIFIER: a look-ahead at the start keeps keywords (case-insensitive) from being
# names, which are whole words; blark's POINTER_TO: a \\b between a word and a space always holds.
KEYWORDS = r"""
start: item+
item: NAME | KW | PAIR
NAME: /\b(?!(if|f)\b)[a-z]+\b/i
KW: /\bif\b/i
PAIR: /\bi\b\s+\bi\b/
%ignore " "
"""

# blark's DOTTED_IDENTIFIER (IDENTIFIER ("." IDENTIFIER)*): lark writes it as one regex, each word's
# \\b and keyword look-ahead inside the repeat; re.match goes on while a dot and a word that is not
# a keyword follow, so ``a.ab`` is a name, a dot and the keyword.
DOTTED = r"""
start: item+
item: NAME | KW | "."
NAME: WORD ("." WORD)*
WORD: /\b(?!(ab)\b)[a-b]+\b/
KW: /\bab\b/
%ignore " "
"""

CASES = {
    "start-boundary": (START_BOUNDARY, "i1- "),
    "dotted": (DOTTED, "ab. "),
    "keywords": (KEYWORDS, "iF "),
    "look-behind": (LOOK_BEHIND, "ab1 "),
    "positive": (POSITIVE, "Ga( ) "),
    "boundary": (BOUNDARY, "ifé- "),
    "repeat": (REPEAT, "ad1 "),
    "negative": (NEGATIVE, "Xa( ) "),
    "parts": (PARTS, "a?+ "),
    "within": (WITHIN, "a/ "),
    "string": (STRING, '"\\ia'),
}
LENGTH = 5


def completed_within(text: str) -> int:
    """A bound on the characters that complete a valid prefix of these grammars: a name (or an
    operator's space and a name, a closing quote or slash after a backslash) and a ``)`` for
    each ``(``."""
    return text.count("(") + 2


@pytest.mark.parametrize("case", sorted(CASES))
def test_agrees_with_lark_on_every_short_text_and_prefix(case: str) -> None:
    source, alphabet = CASES[case]
    grammar = Grammar.from_lark(source)
    parser = lark.Lark(source, parser="earley")
    texts = ["".join(t) for n in range(LENGTH + 1) for t in itertools.product(alphabet, repeat=n)]
    accepted = {t for t in texts if lark_accepts(parser, t)}
    prefixes = {t[:k] for t in accepted for k in range(len(t) + 1)}
    for text in texts:
        checker = grammar.checker()
        fed = checker.feed(text)
        whole = fed == len(text) and checker.is_complete
        assert whole == (text in accepted), (text, fed)
        if len(text) + completed_within(text) <= LENGTH:
            assert (fed == len(text)) == (text in prefixes), (text, fed)


def test_the_end_of_the_text_after_a_positive_look_ahead() -> None:
    """``G`` alone is a name (the operator's look-ahead fails at the end); ``G `` may go on
    as the operator or end as the name; ``X`` alone is the negative operator, complete."""
    positive = Grammar.from_lark(POSITIVE).checker()
    assert positive.feed("G") == 1 and positive.is_complete
    negative = Grammar.from_lark(NEGATIVE).checker()
    assert negative.feed("X") == 1 and negative.is_complete
    assert Grammar.from_lark(NEGATIVE).checker().feed("Xa") == 1


def test_reading_of_each_shape() -> None:
    assert lookahead_reading("abc") is None
    reading = lookahead_reading(r"U(?=[ \"\(])")
    assert isinstance(reading, LookaheadReading)
    (part,) = reading.parts
    assert part.lookahead == Lookahead(((32, 32), (34, 34), (40, 40)), end_ok=False)
    # (?=[^a-z]|$) and (?![a-z]) say the same: $ before a final newline is [^a-z] too.
    dollar, negative = lookahead_reading("X(?=[^a-z]|$)"), lookahead_reading("X(?![a-z])")
    assert isinstance(dollar, LookaheadReading) and isinstance(negative, LookaheadReading)
    assert dollar.parts == negative.parts
    assert negative.parts[0].lookahead == Lookahead(((0, 96), (123, 0x10FFFF)), end_ok=True)


def test_reading_of_a_look_behind_at_the_start() -> None:
    """What may come before the lexeme: a ``\\b`` before a word character allows the text's start
    and any non-word character; ``(?<=a)`` only ``a``, not the start; ``(?<![0-9])`` the start too."""
    boundary, after_a, no_digit = (lookahead_reading(r) for r in (r"\bif\b", "(?<=a)b", "(?<![0-9])b"))
    assert isinstance(boundary, LookaheadReading) and isinstance(after_a, LookaheadReading)
    assert isinstance(no_digit, LookaheadReading)
    (part,) = boundary.parts
    assert part.behind is not None and part.behind.end_ok
    assert not any(lo <= ord(c) <= hi for lo, hi in part.behind.allowed for c in "a_7é")
    assert any(lo <= ord(" ") <= hi for lo, hi in part.behind.allowed)
    assert part.lookahead is not None and part.lookahead.end_ok
    assert after_a.parts[0].behind == Lookahead(((97, 97),), end_ok=False)
    assert no_digit.parts[0].behind == Lookahead(((0, 47), (58, 0x10FFFF)), end_ok=True)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("[a-z]+(?![b])", "one of whose matches is a prefix of another"),
        ("a(?=bc)", "more than one character"),
        ("a(?<=a)b", "looks behind"),
        ("(?<=ab)c", "look-behind that reads more than one character"),
        ("a+(?=b)[bc]", "inside the lexeme"),
        ("a(?=b|$)", "final newline"),
        ("b|[ab]b(?=c)", "one of whose matches is a prefix of another"),
    ],
)
def test_refused_with_place_and_what_to_write(pattern: str, why: str) -> None:
    source = f"start: T\nT: /{pattern}/\n"
    with pytest.raises(GrammarError) as caught:
        Grammar.from_lark(source)
    assert why in caught.value.message
    assert (caught.value.line, caught.value.column) == (2, 4)
    assert "look-ahead of one character" in caught.value.message


@pytest.mark.parametrize(
    ("pattern", "why", "instead"),
    [
        (r"\b(?:a|-)", "begin with a word character and with a non-word character", "two terminals"),
        (r"a(?:-\ba)*", "inside a group or a repeat", "as a rule of the grammar"),
        (r"(?!(if)\b)[a-z]+", "not whole words", "look-ahead of one character"),
        (r"a\bb", "inside the lexeme", "look-ahead of one character"),
        (r"a[a+]\b", "in a word character and in a non-word character", "two terminals"),
        (r"(?:a|)\b-", "inside the lexeme", "look-ahead of one character"),
    ],
)
def test_word_boundary_refused_with_place_and_what_to_write(pattern: str, why: str, instead: str) -> None:
    source = f"start: T\nT: /{pattern}/\n"
    with pytest.raises(GrammarError) as caught:
        Grammar.from_lark(source)
    assert why in caught.value.message and instead in caught.value.message, caught.value.message
    assert (caught.value.line, caught.value.column) == (2, 4)


@pytest.mark.parametrize("regex_module", [False, True])
def test_word_boundary_reads_the_word_characters_of_the_regex_module_lark_uses(regex_module: bool) -> None:
    """``‿`` is a word character to the ``regex`` module (lark's ``regex=True``), not to ``re``."""
    source = "start: item+\nitem: NAME | TIE\nNAME: /a\\b/\nTIE: /\u203f/\n"
    parser = lark.Lark(source, parser="earley", regex=regex_module)
    for text in ("a", "a\u203f", "\u203fa"):
        checker = Grammar.from_lark(source, regex=regex_module).checker()
        whole = checker.feed(text) == len(text) and checker.is_complete
        assert whole == lark_accepts(parser, text), (text, regex_module)


def test_greedy_lexer_refuses_a_look_ahead() -> None:
    with pytest.raises(GrammarError, match="look-around"):
        Grammar.from_lark(POSITIVE, lexer="greedy")


def test_gbnf_refuses_a_look_ahead_at_its_terminal() -> None:
    """GBNF has no lexer to say what may follow a lexeme: refused where the terminal is defined."""
    with pytest.raises(GrammarError, match="look-around") as caught:
        Grammar.from_lark(POSITIVE).to_gbnf()
    assert (caught.value.line, caught.value.column) == (4, 11), caught.value
