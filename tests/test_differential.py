"""Differential tests: the checker's verdicts against the lark package's Earley parser.

For every bundled grammar and a few classic Lark grammars, strings generated with
``hypothesis.extra.lark.from_lark`` and character-level mutations of them (delete, insert,
replace, duplicate) get three verdicts from each side: complete, incomplete-but-valid prefix, or
invalid at an offset. lark has no "valid prefix" answer, so the reference decides it like this:

- ``parse(text)`` succeeds: complete. ``UnexpectedEOF``: every lexeme was read and more may
  follow, so a valid prefix.
- ``UnexpectedCharacters`` at position p: the text may still end inside a lexeme. It is a valid
  prefix when for some k <= p the text before k is complete or a valid prefix (by lark), and the
  rest, ``text[k:]``, is the beginning of a lexeme of a terminal lark expects at k (or of an
  ``%ignore``d terminal). "Beginning of a lexeme" is decided with the ``regex`` module's partial
  matching on lark's own terminal patterns.

The checker's invalid offset n must agree exactly: by lark, ``text[:n]`` is a valid prefix and
``text[:n+1]`` is not.

One genuine difference is allowed, and each case is verified to be of this kind:
**greedy lexing**. llguidance reads each lexeme as far as any terminal allowed there can go (the
longest match over the union of allowed terminals), as conventional lexers do. lark's dynamic
lexer tries every expected terminal separately, so it can end terminal A and start the next token
at a point where a longer lexeme of another terminal C was still possible: with ``start: A "b" |
B "c"``, ``A: "a"``, ``B: "ab"``, lark accepts ``ab`` as A then ``"b"``; the checker reads ``ab`` as
(the start of) B and waits for ``c``. In practice this is keywords glued to names: lark's dynamic
lexer reads ``SELECTname`` as SELECT then a name. The difference only ever goes one way: the
checker's language is a subset of lark's (every maximal-munch tokenization is one of lark's), so
the checker never accepts what lark rejects; that is asserted without exception.
"""

from __future__ import annotations

import functools
import random
import re
import textwrap
from dataclasses import dataclass

import lark
import pytest
import regex
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis.extra.lark import from_lark

from grammar_guide import Grammar

ARITHMETIC = textwrap.dedent(
    r"""
    ?start: sum
    ?sum: product
        | sum "+" product -> add
        | sum "-" product -> sub
    ?product: power
        | product "*" power -> mul
        | product "/" power -> div
    ?power: atom ("**" power)?
    ?atom: NUMBER
         | NAME
         | "-" atom -> neg
         | "(" sum ")"
         | NAME "(" [sum ("," sum)*] ")" -> call
    NUMBER: /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
    NAME: /[a-z_][a-z0-9_]*/
    %ignore /[ \t]+/
    """
)

INI = textwrap.dedent(
    r"""
    start: _NL* (entry | section)*
    section: "[" SECTION "]" _NL+ entry*
    entry: KEY "=" VALUE? _NL+
    SECTION: /[A-Za-z0-9_. ]+/
    KEY: /[A-Za-z_][A-Za-z0-9_.-]*/
    VALUE: /[^ \t\n;#][^\n;#]*/
    COMMENT: /[;#][^\n]*/
    _NL: /\n/
    %ignore COMMENT
    %ignore /[ \t]+/
    """
)

EXPRESSIONS = textwrap.dedent(
    r"""
    start: stmt+
    ?stmt: "let" NAME "=" expr ";"        -> let
         | "if" expr "then" stmt+ "end"   -> if_
         | "print" expr ";"               -> print_
         | "return" expr? ";"             -> return_
    ?expr: disj
    ?disj: conj ("or" conj)*
    ?conj: neg ("and" neg)*
    ?neg: "not" neg | cmp
    ?cmp: arith (CMP arith)?
    ?arith: term (ADD term)*
    ?term: factor (MUL factor)*
    ?factor: NUMBER | STRING | "true" | "false" | "none"
           | NAME | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"
    CMP: "==" | "!=" | "<=" | ">=" | "<" | ">"
    ADD: "+" | "-"
    MUL: "*" | "/" | "%"
    NAME: /[a-zA-Z_][a-zA-Z0-9_]*/
    NUMBER: /[0-9]+/
    STRING: /"[^"\\\n]*"/
    %import common.WS
    %import common.SH_COMMENT
    %ignore WS
    %ignore SH_COMMENT
    """
)

FIXTURES = {"arithmetic": ARITHMETIC, "ini": INI, "expressions": EXPRESSIONS}


@dataclass(eq=False)
class Reference:
    """lark's verdicts for one grammar, with lark's own terminal patterns."""

    grammar: Grammar
    parser: lark.Lark
    patterns: dict[str, regex.Pattern]
    exact: dict[str, re.Pattern]
    ignored: frozenset[str]

    @classmethod
    def of(cls, grammar: Grammar) -> Reference:
        parser = grammar.lark_parser
        assert parser is not None
        patterns = {t.name: regex.compile(t.pattern.to_regexp()) for t in parser.terminals}
        exact = {t.name: re.compile(t.pattern.to_regexp()) for t in parser.terminals}
        return cls(grammar, parser, patterns, exact, frozenset(parser.ignore_tokens))

    @functools.lru_cache(maxsize=None)
    def parse_status(self, text: str) -> tuple[str, frozenset[str]]:
        """('complete' | 'eof' | 'error', terminals lark allows next, or the error position)."""
        try:
            self.parser.parse(text)
        except lark.exceptions.UnexpectedEOF as exc:
            return "eof", frozenset(exc.expected)
        except lark.exceptions.UnexpectedCharacters as exc:
            return "error", frozenset({str(exc.pos_in_stream)})
        except lark.exceptions.UnexpectedInput as exc:  # pragma: no cover - not from Earley
            return "error", frozenset({str(exc.pos_in_stream)})
        return "complete", frozenset()

    @functools.lru_cache(maxsize=None)
    def next_terminals(self, text: str) -> frozenset[str]:
        """Terminals lark allows right after ``text`` (which is complete or a lexeme-level prefix)."""
        status, names = self.parse_status(text)
        if status == "eof":
            return names | self.ignored
        try:
            self.parser.parse(text + "\x00")
        except lark.exceptions.UnexpectedCharacters as exc:
            if exc.pos_in_stream == len(text):
                return frozenset(exc.allowed or ()) | self.ignored
        except lark.exceptions.UnexpectedInput:
            pass
        return self.ignored

    def starts_lexeme(self, name: str, text: str) -> bool:
        match = self.patterns[name].fullmatch(text, partial=True)
        if match is None:
            return False
        # A whole match is confirmed with Python's re, which lark matches with: the regex
        # module (2026.11) wrongly lets the empty class [^\s\S] match any character.
        return match.partial or self.exact[name].fullmatch(text) is not None

    @functools.lru_cache(maxsize=None)
    def status(self, text: str) -> str:
        """'complete', 'prefix' or 'invalid', as lark decides (see the module docstring)."""
        status, info = self.parse_status(text)
        if status == "complete":
            return "complete"
        if status == "eof":
            return "prefix"
        position = min(int(next(iter(info))), len(text))
        for k in range(position, -1, -1):
            rest = text[k:]
            if not rest:
                continue
            starting = [n for n in self.patterns if self.starts_lexeme(n, rest)]
            if not starting:
                continue
            if self.parse_status(text[:k])[0] == "error":
                continue
            if set(starting) & self.next_terminals(text[:k]):
                return "prefix"
        return "invalid"

    def greedy_lexing_explains(self, text: str, n: int) -> bool:
        """Whether a lexeme of some terminal A ends at j < n in ``text`` while a lexeme of another
        terminal C runs on past j from the same start: the case where the checker's maximal
        munch reads on and lark's dynamic lexer may split."""
        for i in range(max(0, n - 32), n):
            for j in range(i + 1, n):
                ending = {a for a in self.exact if self.exact[a].fullmatch(text[i:j])}
                if not ending:
                    continue
                running = {c for c in self.patterns if self.starts_lexeme(c, text[i : j + 1])}
                if any(a != c for a in ending for c in running):
                    return True
        return False


def checker_verdict(grammar: Grammar, text: str) -> tuple[str, int]:
    checker = grammar.checker()
    n = checker.feed(text)
    if n < len(text):
        return "invalid", n
    return ("complete" if checker.is_complete else "prefix"), n


@dataclass
class Tally:
    agree: int = 0
    greedy: int = 0


def compare(reference: Reference, text: str, tally: Tally) -> None:
    """Assert the checker agrees with lark on ``text`` (or differs only by greedy lexing)."""
    verdict, n = checker_verdict(reference.grammar, text)
    # The checker never accepts what lark rejects.
    assert reference.status(text[:n]) in ("complete", "prefix"), (text, n)
    if verdict == "complete":
        assert reference.status(text) == "complete", text
        tally.agree += 1
        return
    lark_verdict = reference.status(text if verdict == "prefix" else text[: n + 1])
    expected = "prefix" if verdict == "prefix" else "invalid"
    if lark_verdict == expected:
        tally.agree += 1
        return
    # lark is more permissive here: only greedy lexing may explain it.
    end = len(text) if verdict == "prefix" else n + 1
    assert reference.greedy_lexing_explains(text, end), (
        f"checker says {verdict} at {n}, lark says {lark_verdict}: {text!r}"
    )
    tally.greedy += 1


MUTATION_CHARS = list(" \t\n;=()[],.+-*/<>\"'#_0123456789aeiklnoprstxyzAELSTé")


def mutations(text: str, rng: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        chars = list(text)
        for _ in range(rng.randint(1, 2)):
            i = rng.randrange(len(chars) + 1)
            op = rng.choice(["delete", "insert", "replace", "duplicate"])
            if op == "insert" or i == len(chars):
                chars.insert(i, rng.choice(MUTATION_CHARS))
            elif op == "delete":
                del chars[i]
            elif op == "replace":
                chars[i] = rng.choice(MUTATION_CHARS)
            else:
                chars.insert(i, chars[i])
        out.append("".join(chars))
    return out


def grammar_cases() -> list:
    cases = [pytest.param(("builtin", name), id=name) for name in Grammar.builtin_names()]
    cases += [pytest.param(("fixture", name), id=name) for name in FIXTURES]
    return cases


@functools.lru_cache(maxsize=None)
def load(case: tuple[str, str]) -> Grammar:
    kind, name = case
    return Grammar.builtin(name) if kind == "builtin" else Grammar.from_lark(FIXTURES[name], name=name)


TALLIES: dict[str, Tally] = {}
# Printable ASCII, tab, newline and two non-ASCII characters.
ALPHABET = st.sampled_from([chr(c) for c in range(32, 127)] + ["\t", "\n", "é", "€"])


@pytest.mark.parametrize("case", grammar_cases())
def test_checker_agrees_with_lark_earley(case):
    grammar = load(case)
    reference = Reference.of(grammar)
    tally = TALLIES.setdefault(case[1], Tally())
    # The SQLite grammar is large (lark needs seconds to build its Earley parser and ~0.1 s a
    # parse), so it gets fewer strings; tests/test_grammar_sqlite.py checks it against SQLite.
    max_examples = {"sqlite": 15}.get(case[1], 60)
    generator = reference.parser

    # One example that draws many strings: hypothesis's engine then spends its time on our
    # checks rather than on exploring the (deeply recursive) grammars' choice sequences.
    @settings(
        max_examples=1,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        strings = from_lark(generator, alphabet=ALPHABET)
        rng = random.Random(2)
        for _ in range(max_examples):
            text = data.draw(strings)[:400]
            compare(reference, text, tally)
            for mutated in mutations(text, rng, 3):
                compare(reference, mutated, tally)

    check()
    total = tally.agree + tally.greedy
    assert total == 4 * max_examples
    # The greedy-lexing difference is the exception, not the rule.
    assert tally.greedy <= total // 4, tally
    print(f"\n{case[1]}: {total} strings, {tally.agree} agree, {tally.greedy} differ by greedy lexing")


@pytest.mark.parametrize(
    "grammar_text, text, checker_says, lark_says",
    [
        # Another terminal's longer lexeme is still possible: the checker reads on.
        ('start: A "b" | B "c"\nA: "a"\nB: "ab"\n', "ab", "prefix", "complete"),
        # A keyword glued to a name: lark's dynamic lexer splits it, the checker reads one name.
        (
            'start: "print" NAME ";" | NAME "=" NAME ";"\nNAME: /[a-z]+/\n%ignore " "\n',
            "printx;",
            "invalid",
            "complete",
        ),
    ],
)
def test_greedy_lexing_is_the_documented_difference(grammar_text, text, checker_says, lark_says):
    grammar = Grammar.from_lark(grammar_text)
    reference = Reference.of(grammar)
    verdict, n = checker_verdict(grammar, text)
    assert verdict == checker_says
    assert reference.status(text) == lark_says
    assert reference.greedy_lexing_explains(text, len(text) if verdict == "prefix" else n + 1)
    # With the separator a lexer needs, both agree.
    spaced = text.replace("printx", "print x")
    assert checker_verdict(grammar, spaced)[0] == reference.status(spaced) or spaced == text


def test_reference_decides_prefixes_inside_a_lexeme():
    grammar = Grammar.from_lark(EXPRESSIONS)
    reference = Reference.of(grammar)
    assert reference.status("let x = 1;") == "complete"
    assert reference.status("let x = ") == "prefix"
    assert reference.status('let x = "abc') == "prefix"  # inside a STRING
    assert reference.status("let x = 1; ret") == "prefix"  # inside "return" (or a name)
    assert reference.status("let x = ;") == "invalid"
    assert checker_verdict(grammar, "let x = ;") == ("invalid", 8)
