"""Lazy quantifiers read as lark's lexer reads them (issue 27): the match ``re.match`` returns,
checked against Python's ``re`` on every short text over each regex's alphabet.

The regexes are those of real grammars on the package index (pinned; tests/support/package_grammars.py),
as lark composes them, and small ones for each shape ``compiler.lazy`` reads or refuses.
"""

from __future__ import annotations

import itertools
import random
import re

import lark
import pytest

from grammar_guide import Grammar, GrammarError
from grammar_guide.compiler.exact import greedy_regex, lazy_is_greedy, lazy_to_first_stop
from grammar_guide.compiler.lazy import LazyReading, lazy_reading
from tests.support.lark_verdict import lark_accepts
from tests.support.package_grammars import grammar_file, terminal_definition

# id -> (package, version, grammar file, terminal)
PACKAGE_TERMINALS = {
    "blark-PRAGMA": ("blark", "0.8.3", "blark/iec.lark", "PRAGMA"),
    "blark-MULTI_LINE_COMMENT": ("blark", "0.8.3", "blark/iec.lark", "MULTI_LINE_COMMENT"),
    "hcl2-NL_OR_COMMENT": ("python-hcl2", "8.1.4", "hcl2/hcl2.lark", "NL_OR_COMMENT"),
    "eql-RAW_TQ_STRING": ("eql", "1.0.1", "eql/etc/eql.g", "RAW_TQ_STRING"),
    "eql-ML_COMMENT": ("eql", "1.0.1", "eql/etc/eql.g", "ML_COMMENT"),
}


def lark_pattern(definition: str) -> str:
    """The regex lark matches for a terminal defined on its own (composite parts joined)."""
    name = definition.split(":")[0].split(".")[0].strip()
    parser = lark.Lark(f"start: {name}\n{definition}\n", parser="earley")
    return next(t.pattern.to_regexp() for t in parser.terminals if t.name == name)


def reading_match(reading: LazyReading, text: str) -> int | None:
    """The end of the longest beginning of ``text`` in the reading's language (lark takes the
    longest of the matches ``re.match`` can return)."""
    dfa, state, end = reading.dfa, reading.dfa.start, None
    if dfa.empty:
        return None
    for i, ch in enumerate(text):
        if state in dfa.accepting:
            end = i
        nxt = dfa.step(state, ord(ch))
        if nxt is None:
            return end
        state = nxt
    return len(text) if state in dfa.accepting else end


def assert_reads_as_re_match(regex: str, alphabet: str, length: int) -> int:
    reading = lazy_reading(regex)
    assert isinstance(reading, LazyReading), reading
    pattern = re.compile(regex)
    checked = 0
    for n in range(length + 1):
        for chars in itertools.product(alphabet, repeat=n):
            text = "".join(chars)
            found = pattern.match(text)
            assert reading_match(reading, text) == (found.end() if found else None), (regex, text)
            checked += 1
    return checked


@pytest.mark.parametrize(
    ("case", "alphabet", "length"),
    [
        ("blark-PRAGMA", "{};a", 7),
        ("blark-MULTI_LINE_COMMENT", "(*)a\n", 7),
        ("hcl2-NL_OR_COMMENT", "/*#\n a", 7),
        ("eql-RAW_TQ_STRING", '"a\n', 10),
        ("eql-ML_COMMENT", "/*a\r\n", 7),
    ],
)
def test_package_terminals_read_as_re_match(case: str, alphabet: str, length: int) -> None:
    regex = lark_pattern(terminal_definition(*PACKAGE_TERMINALS[case]))
    checked = assert_reads_as_re_match(regex, alphabet, length)
    print(f"\n{case}: /{regex}/ agrees with re.match on {checked} texts")


@pytest.mark.parametrize(
    ("regex", "alphabet", "length"),
    [
        (r"a+?", "ab", 6),
        (r"x[a-z]*?y", "xyab", 7),
        (r"\d+?\.?", "12.a", 6),
        (r"a{2,4}?b?", "ab", 7),
        (r'"""[^\n]*?""""?"?', '"a\n', 10),
        (r"[rR]?'[^\n]*?'", "'rRa\n", 7),
        (r"(?:<!--.*?-->|<[a-z]+>)", "<!->ab", 7),
        (r"\s*?;", " ;a\t", 6),
        (r"#.*?\d{2}", "#1a2", 7),
        (r"(?i)<b>.*?</B>", "<>/bBx", 7),
    ],
)
def test_shapes_read_as_re_match(regex: str, alphabet: str, length: int) -> None:
    assert_reads_as_re_match(regex, alphabet, length)


@pytest.mark.parametrize(
    ("regex", "words"),
    [
        # A backslash read as an escape or as itself, as a later quote allows.
        (r'"(?:\\.|.)*?"', "longer than one character"),
        (r"(?:ab)*?c", "longer than one character"),
        # Which alternative matches first depends on the text after the lexeme.
        (r"(?:a.*?b|a)", "begin the same text"),
        (r"a.*?(?:b|cd)", "varying length"),
        (r"a*?b*?c", "more than one lazy quantifier"),
        (r"(?:a|ab)?.*?c", "not prefix-free"),
        # After c+?, re.match reads b* then (a|bc)*: 'acb' of 'acbc', not the longest.
        (r"(?:a|b)c+?b*(?:a|bc)*", "may not match as far as it can"),
    ],
)
def test_shapes_without_an_exact_reading_are_described(regex: str, words: str) -> None:
    reading = lazy_reading(regex)
    assert isinstance(reading, str) and words in reading
    assert "write" in reading  # and what to write instead


def test_cel_string_is_refused_where_it_is_written() -> None:
    # cel-python's STRING_LIT: which quote ends the string depends on the text after it.
    path = grammar_file("cel-python", "0.5.0", "celpy/cel.lark")
    with pytest.raises(GrammarError, match="lazy quantifier over a sub-pattern") as info:
        Grammar.from_file(path, start="expr")
    error = info.value
    assert (error.line, error.column) == (145, 18)
    assert error.construct is not None and error.construct.startswith('/[rR]?"(?:')
    # and lark's re.match does depend on what follows: the same opening, two different lexemes.
    pattern = re.compile(lark_pattern(terminal_definition("cel-python", "0.5.0", "celpy/cel.lark", "STRING_LIT")))
    assert [m.group() for m in (pattern.match('"a\\" x'), pattern.match('"a\\" x"'))] == ['"a\\"', '"a\\" x"']


def random_lazy_regex(rng: random.Random) -> str:
    """A small regex with one lazy quantifier, in any position, sometimes in an alternation."""
    atoms = ["a", "b", "c", ".", "[ab]", "[^a]", "(?:a|b)", "(?:ab)", "(?:a|bc)", "\\d"]
    parts = [rng.choice(atoms) + rng.choice(["", "", "*", "+", "?", "{2}", "{1,2}"]) for _ in range(rng.randint(0, 3))]
    lazy = rng.choice(["a", "b", ".", "[ab]", "[^c]", "(?:a|b)", "(?:ab)", "c"])
    parts.insert(rng.randint(0, len(parts)), lazy + rng.choice(["*?", "+?", "??", "{1,3}?", "{2,}?"]))
    body = "".join(parts)
    if rng.random() < 0.3:
        body = f"(?:{body}|{''.join(rng.choice(atoms) for _ in range(rng.randint(1, 2)))})"
    return body


def test_random_lazy_regexes_are_read_as_re_match_or_refused() -> None:
    rng = random.Random(5)
    texts = ["".join(chars) for n in range(7) for chars in itertools.product("abc1", repeat=n)]
    read = 0
    for _ in range(200):
        regex = random_lazy_regex(rng)
        reading = lazy_reading(regex)
        if isinstance(reading, str):
            continue
        read += 1
        pattern = re.compile(regex)
        for text in texts:
            found = pattern.match(text)
            assert reading_match(reading, text) == (found.end() if found else None), (regex, text)
    assert read > 40  # the shapes read are not rare (62 of these 200)


# pylogics 0.2.1's SYMBOL_NAME: an alternation whose lazy alternative repeats a class up to a
# quote the class lacks, so greedy and lazy end at the same quote (lazy_is_greedy).
SYMBOL_NAME = r'/(?:[a-z_][a-zA-Z0-9_\-]+[a-zA-Z0-9_]|"[ -!#-~]+?"|[a-z_][a-zA-Z0-9_]*)/'


def test_lazy_repeat_up_to_what_its_class_lacks_loads_and_agrees_with_lark() -> None:
    text = f'start: SYM ("&" SYM)*\nSYM: {SYMBOL_NAME}\n%ignore " "\n'
    grammar = Grammar.from_lark(text)
    assert_complete_as_lark(grammar, text, ['"a b" & x', '"a"b"', '"~"&"x"', 'ab-c&"q"', '""', '"a\x1c"', "a & b"])
    assert grammar.valid_prefix('"a\x1c"') == 2
    regex = SYMBOL_NAME.strip("/")
    assert lazy_is_greedy(regex)
    greedy = re.compile(greedy_regex(regex))
    for n in range(6):
        for chars in itertools.product('a"~ -', repeat=n):
            found, same = re.match(regex, "".join(chars)), greedy.match("".join(chars))
            assert (found and found.end()) == (same and same.end()), chars


@pytest.mark.parametrize(
    ("regex", "alphabet"),
    [
        (r"\[.*?\](?:[ \t\n]+)?", "[]a \n"),  # d20 1.1.2's ANNOTATION
        (r"a.*?b", "ab\n"),
        (r"(?:x|xy)[^;]*?\]\s*", "xy]; "),
    ],
)
def test_lazy_repeat_then_a_character_then_nothing_needed_stops_at_the_first(regex: str, alphabet: str) -> None:
    written = lazy_to_first_stop(regex)
    assert written is not None
    for n in range(7):
        for chars in itertools.product(alphabet, repeat=n):
            found, same = re.match(regex, "".join(chars)), re.match(written, "".join(chars))
            assert (found and found.end()) == (same and same.end()), chars
    assert lazy_to_first_stop(r"#.*?;?") is None  # no character needed after the repeat
    assert lazy_to_first_stop(r"a.{2,}?b") is None  # the first two may be b


def test_d20_annotation_loads_and_agrees_with_lark() -> None:
    text = "start: NUM ANNOTATION*\nNUM: /[0-9]+/\nANNOTATION: /\\[.*?\\]/ _WS?\n_WS: /[ \\t\\n]+/\n"
    assert_complete_as_lark(
        Grammar.from_lark(text), text, ["1[a]", "1[a] [b]", "1[a]]", "1[a] b]", "1[[a]", "1[a\nb]", "1[a]\n"]
    )


def assert_complete_as_lark(grammar: Grammar, text: str, samples: list[str]) -> None:
    """The checker calls each sample complete exactly when lark's Earley parser parses it."""
    parser = lark.Lark(text)
    for sample in samples:
        assert grammar.is_complete(sample) == lark_accepts(parser, sample), sample
