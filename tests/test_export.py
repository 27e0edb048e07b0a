"""Grammar export: plain Lark and GBNF, loaded back by their readers, mean the same language.

Each exported text is read back by the readers the servers use, and every reader's verdict on
many strings (random derivations of the grammar, and mutations of them) must equal the original
grammar's checker's verdict (complete, valid prefix, or invalid at the same byte):

- plain Lark: llguidance's Lark reader (what OpenAI's custom grammar tools run), and the lark
  package itself (``Grammar.from_lark`` of the exported text);
- GBNF: llguidance's GBNF reader (``llguidance.gbnf_to_lark``, as SGLang's and llama.cpp's
  llguidance backends read it).
"""

from __future__ import annotations

import functools
import random
import textwrap

import lark
import llguidance as llg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from llguidance.gbnf_to_lark import any_to_lark

from grammar_guide import Grammar, GrammarError
from grammar_guide.compiler.matcher import byte_tokenizer
from tests.test_differential import ALPHABET, FIXTURES, ISSUE_19, LARK_EXAMPLES, mutations
from tests.test_differential import checker_verdict as verdict

COMMON = textwrap.dedent(
    r"""
    start: (item ";")*
    ?item: SIGNED_NUMBER | ESCAPED_STRING | CNAME | WORD "=" HEXDIGIT+ | NEWLINE
    %import common (SIGNED_NUMBER, ESCAPED_STRING, CNAME, WORD, HEXDIGIT, NEWLINE, WS_INLINE)
    %import common.CPP_COMMENT
    %ignore WS_INLINE
    %ignore CPP_COMMENT
    """
)


def grammar_cases() -> list:
    cases = [pytest.param(("builtin", name), id=name) for name in Grammar.builtin_names()]
    cases += [pytest.param(("fixture", name), id=name) for name in FIXTURES]
    # lark's own common.lark, through %import (its other grammars use look-around or %declare).
    cases += [pytest.param(("fixture", "common"), id="common")]
    return cases


@functools.cache
def load(case: tuple[str, str]) -> Grammar:
    kind, name = case
    if kind == "builtin":
        return Grammar.builtin(name)
    return Grammar.from_lark({**FIXTURES, "common": COMMON}[name], name=name)


class Reader:
    """A byte-level llguidance matcher for a grammar text in llguidance's Lark."""

    def __init__(self, lark_text: str) -> None:
        compiled = llg.LLMatcher.grammar_from_lark(lark_text)
        self.proto = llg.LLMatcher(byte_tokenizer(), compiled, log_level=0)
        assert not self.proto.is_error(), self.proto.get_error()

    def verdict(self, text: str) -> tuple[str, int]:
        matcher = self.proto.deep_copy()
        data = text.encode()
        n = matcher.try_consume_tokens(list(data))
        if n < len(data):
            return "invalid", len(data[:n].decode(errors="ignore"))
        return ("complete" if matcher.is_accepting() else "prefix"), len(text)


def sample_strings(grammar: Grammar, count: int) -> list[str]:
    """``count`` random derivations of the grammar (lark's parser drives hypothesis), each with
    three mutations."""
    found: list[str] = []

    @settings(
        max_examples=1,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def draw(data: st.DataObject) -> None:
        strings = from_lark(grammar.lark_parser, alphabet=ALPHABET)
        rng = random.Random(3)
        for _ in range(count):
            text = data.draw(strings)[:300]
            found.append(text)
            found.extend(mutations(text, rng, 3))

    draw()
    return found


@pytest.mark.parametrize("case", grammar_cases())
def test_exported_grammars_mean_the_same_language(case):
    grammar = load(case)
    plain = grammar.to_plain_lark()
    gbnf = grammar.to_gbnf()
    readers = {"plain Lark, llguidance": Reader(plain).verdict}
    gbnf_reader = Reader(any_to_lark(gbnf)).verdict
    reloaded = Grammar.from_lark(plain, name=f"{grammar.name} (plain)", lexer=grammar.lexer or "dynamic")
    readers["plain Lark, lark"] = functools.partial(verdict, reloaded)
    strings = sample_strings(grammar, {"sqlite": 12, "sqlite_script": 12}.get(grammar.name, 40))
    complete = same_offset = 0
    for text in strings:
        expected = verdict(grammar, text)
        complete += expected[0] == "complete"
        for reader, read in readers.items():
            assert read(text) == expected, (reader, text)
        # GBNF has no lexer, so a grammar that relies on greedy lexing (sqlite.lark's dead-end
        # guards against glued keywords) may reject a text at another byte: the language is the
        # same, the first invalid byte may differ.
        gbnf_verdict = gbnf_reader(text)
        assert (gbnf_verdict[0] == "complete") == (expected[0] == "complete"), text
        same_offset += gbnf_verdict == expected
    # The strings exercise both sides: valid texts and invalid ones.
    assert 0 < complete < len(strings)
    if grammar.lexer != "greedy":
        assert same_offset == len(strings)
    print(f"\n{grammar.name}: {len(strings)} strings, {complete} complete; GBNF at the same byte: {same_offset}")


# The grammars a greedy lexer would read differently from lark (issue 19's tsv and unicode-classes
# only needed Python's classes: their terminals are still lexemes).
HAZARDOUS = {
    **{name: text for name, text in ISSUE_19.items() if name not in ("tsv", "unicode-classes")},
    "expressions": FIXTURES["expressions"],
    "csv": (LARK_EXAMPLES / "csv.lark").read_text(),
}


@pytest.mark.parametrize("name", sorted(HAZARDOUS))
def test_plain_lark_of_a_hazardous_grammar_is_its_exact_reading(name):
    # Read by a greedy lexer (llguidance's, OpenAI's) the grammar would mean something else: the
    # export is the character-level reading, which lark and llguidance both read as lark reads
    # the original.
    original = Grammar.from_lark(HAZARDOUS[name], name=name, import_paths=[LARK_EXAMPLES])
    assert original.character_level
    plain = original.to_plain_lark()
    assert '""' not in plain and "%ignore" not in plain
    reloaded = Grammar.from_lark(plain, name=f"{name} (plain)")
    reader = Reader(plain)
    exported_lark = lark.Lark(plain, parser="earley")
    strings = sample_strings(original, 30)
    complete = 0
    for text in strings:
        expected = verdict(original, text)
        complete += expected[0] == "complete"
        assert verdict(reloaded, text) == expected, text
        assert reader.verdict(text) == expected, text
        try:
            exported_lark.parse(text)
            accepted = True
        except lark.exceptions.LarkError:
            accepted = False
        assert accepted == (expected[0] == "complete"), text
    assert 0 < complete < len(strings)
    print(f"\n{name}: {len(strings)} strings, {complete} complete, all agree")


def test_plain_lark_is_readable_lark():
    grammar = Grammar.from_lark(
        textwrap.dedent(
            r"""
        start: _list{item, ","}
        _list{x, sep}: x (sep x)*
        item: NUMBER | WORD | "null"i
        WORD.2: /[a-z]+/
        %import common.NUMBER
        %import common.WS
        %ignore WS
        """
        )
    )
    plain = grammar.to_plain_lark()
    # No template, priority, import or llguidance directive is left; start is "start".
    assert "{" not in plain and "%import" not in plain and "%llguidance" not in plain
    assert ".2" not in plain and plain.startswith("start:")
    assert '"null"i' in plain and "%ignore WS" in plain
    lark.Lark(plain, parser="earley").parse(" 1, abc ,NULL ")


def test_gbnf_spells_unicode_classes_and_case_out():
    grammar = Grammar.from_lark('start: "sel"i WORD\nWORD: /\\w+/')
    gbnf = grammar.to_gbnf()
    assert gbnf.startswith("root ::= ")
    reader = Reader(any_to_lark(gbnf))
    for text in ["SELécrit", "sEl_9", "selé€", "se"]:
        assert reader.verdict(text) == verdict(grammar, text), text


@pytest.mark.parametrize(
    "text, line, column",
    [
        # (lark turns the escape \n into a newline; the literal is still found as written.)
        ("start: COMMENT\nCOMMENT: /\\/\\*(.|\\n)*?\\*\\//\n", 2, 10),
        # (``/b.*?c/`` is read exactly now: it stops at the first c; a two-character end is not.)
        ('start: "a" B\n\nB: /b.*?cd/\n', 3, 4),
    ],
)
def test_lazy_quantifiers_are_reported_with_their_position(text, line, column):
    grammar = Grammar.from_lark(text)
    for export in (grammar.to_plain_lark, grammar.to_gbnf):
        with pytest.raises(GrammarError, match="lazy quantifier") as info:
            export()
        assert (info.value.line, info.value.column) == (line, column)


def test_regex_grammars_export_and_schemas_say_why_not():
    grammar = Grammar.from_regex(r"[0-9]{3}-[a-z]+")
    assert Reader(grammar.to_plain_lark()).verdict("123-ab") == ("complete", 6)
    assert Reader(any_to_lark(grammar.to_gbnf())).verdict("12a") == ("invalid", 2)
    with pytest.raises(GrammarError, match="JSON schema"):
        Grammar.from_json_schema({"type": "integer"}).to_plain_lark()
