"""``parser="lalr"`` and ``Indenter`` postlexers: the checker says what lark's LALR parser says.

The oracle is lark itself (``lark.Lark(..., parser="lalr", postlex=...)``). Real text: CPython's
standard library sources on this machine (``STDLIB_FILES``, a fixed list), read with the
``python.lark`` grammar shipped inside the lark package and ``PythonIndenter``.
"""

from __future__ import annotations

import itertools
import random
import re
import sysconfig
from pathlib import Path
from typing import ClassVar

import lark
import pytest
from lark.indenter import Indenter, PythonIndenter

import grammar_guide as gg
from grammar_guide import Grammar, GrammarError

PYTHON_LARK = Path(lark.__file__).parent / "grammars" / "python.lark"
STDLIB = Path(sysconfig.get_paths()["stdlib"])

#: 31 modules of the standard library (790 KB of Python on CPython 3.11), fixed so runs compare.
STDLIB_FILES = [
    "abc.py",
    "argparse.py",
    "ast.py",
    "base64.py",
    "bisect.py",
    "calendar.py",
    "colorsys.py",
    "contextlib.py",
    "copy.py",
    "csv.py",
    "dataclasses.py",
    "difflib.py",
    "enum.py",
    "fnmatch.py",
    "fractions.py",
    "functools.py",
    "getopt.py",
    "glob.py",
    "heapq.py",
    "json/decoder.py",
    "json/encoder.py",
    "keyword.py",
    "linecache.py",
    "operator.py",
    "pprint.py",
    "queue.py",
    "random.py",
    "shlex.py",
    "string.py",
    "textwrap.py",
    "tokenize.py",
]
#: The smaller ones, corrupted at random places.
MUTATED_FILES = ("bisect.py", "colorsys.py", "fnmatch.py", "getopt.py", "glob.py", "heapq.py", "shlex.py")


@pytest.fixture(scope="module")
def python_grammar() -> Grammar:
    return Grammar.from_file(PYTHON_LARK, "file_input", parser="lalr", postlex=PythonIndenter())


@pytest.fixture(scope="module")
def python_lark() -> lark.Lark:
    return lark.Lark(
        PYTHON_LARK.read_text(encoding="utf-8"), start="file_input", parser="lalr", postlex=PythonIndenter()
    )


def lark_error(parser: lark.Lark, text: str) -> Exception | None:
    """lark's error on ``text``, ``None`` when it parses."""
    try:
        parser.parse(text)
    except Exception as exc:
        return exc
    return None


def feed_in_chunks(grammar: Grammar, text: str, rng: random.Random) -> tuple[int, bool]:
    """Feed ``text`` in random chunks (each chunk's end is a prefix checked on its own); the
    characters accepted and whether the checker then calls the text complete."""
    checker = grammar.checker()
    accepted = pos = 0
    while pos < len(text) and checker.is_valid:
        step = rng.randint(1, 48)
        accepted += checker.feed(text[pos : pos + step])
        pos += step
    return accepted, checker.is_valid and checker.is_complete


# -- real Python ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", STDLIB_FILES)
def test_stdlib_file_and_all_its_cut_prefixes_agree_with_lark(python_grammar, python_lark, name):
    text = (STDLIB / name).read_text(encoding="utf-8")
    assert lark_error(python_lark, text) is None  # the oracle reads every file on the list
    accepted, complete = feed_in_chunks(python_grammar, text, random.Random(name))
    assert accepted == len(text)  # every prefix cut at a chunk's end is a prefix of this file
    assert complete
    whole = python_grammar.checker()
    assert whole.feed(text) == len(text) and whole.is_complete


def _newline_end(text: str, start: int) -> int:
    """Where the newline token (line ends, blank and comment lines, the indentation) from
    ``start`` ends: lark reports INDENT/DEDENT errors at its start."""
    match = re.compile(r"(\r?\n[\t ]*|#[^\n]*)*").match(text, start)
    return match.end() if match else start


def _lark_failure_span(error: Exception, text: str, accepted: int) -> tuple[int, int]:
    """The characters where lark's reading fails: the refused token (a newline token for an
    indentation error), or the refused character."""
    start = getattr(error, "pos_in_stream", None)
    token = getattr(error, "token", None)
    if token is not None and token.type == "$END":  # the text ends too soon: all of it is a prefix
        return start, len(text)
    if token is not None and token.type in ("_INDENT", "_DEDENT"):
        return start, _newline_end(text, start)
    if start is None:  # DedentError: the line whose indentation no open block has
        line_start = text.rfind("\n", 0, accepted) + 1
        assert text[line_start:accepted].strip(" \t") == "", type(error)
        return accepted, accepted
    if token is None:  # no terminal matches here; a lexeme may still begin (a line continuation)
        return start, text.find("\n", start) % (len(text) + 1)
    return start, start + max(1, len(token))


@pytest.mark.parametrize("name", MUTATED_FILES)
def test_corrupted_stdlib_files_agree_with_lark_on_verdict_and_position(python_grammar, python_lark, name):
    text = (STDLIB / name).read_text(encoding="utf-8")
    rng = random.Random(f"mutate {name}")
    refused = 0
    for _ in range(8):
        i = rng.randrange(len(text))
        piece = rng.choice([*"():=,.[]{}'\"\n x1#\\\t+", text[i : i + 5]])
        mutated = text[:i] + piece + text[i:] if rng.random() < 0.7 else text[:i] + text[i + 1 :]
        error = lark_error(python_lark, mutated)
        checker = python_grammar.checker()
        accepted = checker.feed(mutated)
        assert (accepted == len(mutated) and checker.is_complete) == (error is None), (i, piece, error)
        if error is not None:
            refused += 1
            low, high = _lark_failure_span(error, mutated, accepted)
            assert low <= accepted <= high, (i, piece, error, accepted)
    assert refused  # the corruptions are not all harmless


@pytest.mark.parametrize(
    ("text", "accepted", "complete"),
    [
        ("def f(x):\n    return x\n", None, True),
        ("if x:\n", None, False),  # the block may follow
        ("if x:\n    y\n  z\n", len("if x:\n    y\n  "), False),  # no open block at column 3
        ("x = (1,\n 2)\n", None, True),  # no indentation inside brackets
        ("whil", None, False),  # NAME or the keyword "while" in progress
        ("while True:\n    pass\n", None, True),
        ("x = 1 +", None, False),
        ("x = 1 +\n", len("x = 1 +"), False),  # a line end needs the bracket it has not
        ("x = 'abc", None, False),  # a string in progress
        ("x = 'abc\n", len("x = 'abc"), False),
        ('x = """abc\n\ndef', None, False),  # a long string in progress
        ("x = 1  # note", None, False),  # a comment in progress: a line end must follow
        ("def f():\n    return 1\n\n\nx = f()\n", None, True),
    ],
)
def test_python_prefixes(python_grammar, python_lark, text, accepted, complete):
    checker = python_grammar.checker()
    assert checker.feed(text) == (len(text) if accepted is None else accepted)
    assert checker.is_complete == complete
    assert (lark_error(python_lark, text) is None) == (complete and accepted is None)


def test_rollback_and_trial_read_the_same_as_a_fresh_checker(python_grammar):
    text = (STDLIB / "bisect.py").read_text(encoding="utf-8")
    checker = python_grammar.checker()
    assert checker.feed(text) == len(text)
    rng = random.Random(7)
    for _ in range(20):
        cut = rng.randrange(len(text))
        checker.rollback_chars(cut)
        with checker.trial():
            assert checker.feed("\n)") < 2 or not checker.is_complete
        assert checker.text == text[:cut]
        assert checker.feed(text[cut:]) == len(text) - cut
        assert checker.is_complete
    snapshot = checker.snapshot()
    assert checker.feed("def (") == len("def ")
    assert not checker.is_valid
    checker.rollback(snapshot)
    assert checker.is_valid and checker.is_complete


def test_violation_names_the_expected_terminals(python_grammar):
    checker = python_grammar.checker()
    assert checker.feed("def f(:\n") == len("def f(")
    violation = checker.violation
    assert violation is not None and (violation.line, violation.column) == (1, 7)
    expected = [t.display for t in checker.expected()]
    assert '")"' in expected and "NAME" in expected
    assert checker.accepts(")") == 0  # after a violation, nothing more


def test_forced_and_allowed_text(python_grammar):
    checker = python_grammar.checker()
    checker.feed("def f(x)")
    assert ord(":") in checker.allowed_bytes() and ord("-") in checker.allowed_bytes()
    assert ord("x") not in checker.allowed_bytes()
    checker.feed(" -")
    assert checker.forced_text() == ">"


# -- a user's own Indenter -------------------------------------------------------------------

TREE_GRAMMAR = r"""
start: _NL* tree
tree: NAME _NL [_INDENT tree+ _DEDENT]
NAME: /\w+/
_NL: /(\r?\n[\t ]*)+/
%ignore " "
%declare _INDENT _DEDENT
"""


class TreeIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types: ClassVar[list[str]] = []
    CLOSE_PAREN_types: ClassVar[list[str]] = []
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 4


def test_own_indenter_agrees_with_lark_on_every_short_text():
    grammar = Grammar.from_lark(TREE_GRAMMAR, parser="lalr", postlex=TreeIndenter())
    reference = lark.Lark(TREE_GRAMMAR, parser="lalr", postlex=TreeIndenter())
    complete_texts = []
    for n in range(1, 7):
        for letters in itertools.product("a\n\t ", repeat=n):
            text = "".join(letters)
            checker = grammar.checker()
            whole = checker.feed(text) == len(text) and checker.is_complete
            assert whole == (lark_error(reference, text) is None), repr(text)
            if whole:
                complete_texts.append(text)
    assert len(complete_texts) > 100
    # Every prefix of a text lark reads is a valid prefix.
    for text in complete_texts:
        checker = grammar.checker()
        for ch in text:
            assert checker.feed(ch) == 1, repr(text)


class FourNames(TreeIndenter):
    """An indenter with its own ``_process`` and state of its own (a local count): a fifth name
    is refused."""

    def _process(self, stream):
        names = 0
        for token in super()._process(stream):
            names += token.type == "NAME"
            if names > 4:
                raise lark.indenter.DedentError("a fifth name")
            yield token


def test_indenter_with_its_own_process_is_replayed_and_agrees_with_lark_on_every_short_text():
    grammar = Grammar.from_lark(TREE_GRAMMAR, parser="lalr", postlex=FourNames())
    reference = lark.Lark(TREE_GRAMMAR, parser="lalr", postlex=FourNames())
    complete = 0
    for n in range(1, 7):
        for letters in itertools.product("a\n ", repeat=n):
            text = "".join(letters)
            checker = grammar.checker()
            accepted = checker.feed(text)
            whole = accepted == len(text) and checker.is_complete
            assert whole == (lark_error(reference, text) is None), repr(text)
            complete += whole
    assert complete > 30
    assert grammar.valid_prefix("a\n b\n c\n d\n e") == len("a\n b\n c\n d\n ")
    assert grammar.is_complete("a\n b\n c\n d\n")


@pytest.mark.parametrize(
    ("prefix", "valid"),
    [("a\n", True), ("a\n    b", True), ("a\n  b\n c", False), ("a\n  b\n  c\nd", False), ("a\n\tb\n    c\n", True)],
)
def test_own_indenter_prefixes_have_a_completion_exactly_when_accepted(prefix, valid):
    grammar = Grammar.from_lark(TREE_GRAMMAR, parser="lalr", postlex=TreeIndenter())
    reference = lark.Lark(TREE_GRAMMAR, parser="lalr", postlex=TreeIndenter())
    completions = ["", "\n", "x\n", " x\n", "\n x\n"]
    assert (grammar.checker().feed(prefix) == len(prefix)) == valid
    assert any(lark_error(reference, prefix + c) is None for c in completions) == valid


# -- the contextual lexer: a keyword glued to a name -------------------------------------------

QASM = r"""
start: header? stmt*
header: "OPENQASM" REAL ";"
stmt: NAME ";"
REAL: /\d+\.\d+/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
%ignore " "
"""


def test_lalr_reads_a_keyword_glued_to_a_name_as_lark_lalr_does():
    lalr = Grammar.from_lark(QASM, parser="lalr")
    earley = Grammar.from_lark(QASM)
    reference = lark.Lark(QASM, parser="lalr")
    assert lalr.is_complete("OPENQASM 2.0; x;")
    assert earley.is_complete("OPENQASM2.0;")  # Earley's dynamic lexer splits the word
    assert lark_error(reference, "OPENQASM2.0;") is not None
    assert not lalr.is_complete("OPENQASM2.0;")
    assert lalr.valid_prefix("OPENQASM2.0;") == len("OPENQASM2")  # a NAME, then no ";"
    assert lalr.valid_prefix("OPENQ") == 5


# Minimal cases of three faults real grammars met (benchmarks/grammar_sweep.py): d20's COMMENT
# leaves a parser state after which only the text's end may come; flloat's SYMBOL_NAME is \w+
# with %ignore /\s+/ (lark matches them with Python's re, not the regex module); pylogics'
# quoted symbol is a lazy /"[ -!#-~]+?"/.
SWEEP_CASES = {
    "nothing-after": ("start: NUM COMMENT?\nNUM: /[0-9]+/\nCOMMENT: /#.+/\n", ["1#x", "1#x\n", "1#x\n2"]),
    "python-classes": (
        "start: WORD+\nWORD: /\\w+/\n%ignore /\\s+/\n",
        ["a ²", "a ౸b", "a ‿", "a\x1cb", "a\x85b", "x\u2029y", "a\u00a0b"],
    ),
    "python-boundary": ('start: (WORD | "-")+\nWORD: /\\b\\w+\\b/\n%ignore " "\n', ["a-b", "a²-b", "²a", "a ‿"]),
    "lazy-partial": (
        'start: SYM ("&" SYM)*\nSYM: /"[ -!#-~]+?"/ | /[a-z]+/\n%ignore /\\s+/\n',
        ['"~\x1c"', '"a b"&x', '"a"b"', '"a\x1c', 'a&"\x1c'],
    ),
}


@pytest.mark.parametrize("name", list(SWEEP_CASES))
def test_lalr_agrees_with_lark_on_every_prefix_of_sweep_cases(name):
    """Every prefix of each text: complete exactly when lark's LALR parses it, and accepted
    exactly when some completion of it lark parses (by the checker's own refusal point)."""
    text, samples = SWEEP_CASES[name]
    grammar = Grammar.from_lark(text, parser="lalr")
    reference = lark.Lark(text, parser="lalr")
    for sample in samples:
        for end in range(len(sample) + 1):
            prefix = sample[:end]
            assert grammar.is_complete(prefix) == (lark_error(reference, prefix) is None), prefix
    assert grammar.valid_prefix(samples[0]) == len(samples[0]) or lark_error(reference, samples[0]) is not None


def test_lalr_classes_are_python_re_classes():
    grammar = Grammar.from_lark(SWEEP_CASES["python-classes"][0], parser="lalr")
    assert grammar.is_complete("a ²")  # \\w has ² in re, not in the regex module
    assert grammar.is_complete("a\x1cb")  # \\s has \x1c in re
    assert grammar.valid_prefix("a ‿") == 2  # the regex module's \\w has ‿, re's has not


def test_lalr_case_insensitive_keyword_folds_case_as_python_re():
    """lark-dbml's "TablePartial"i: Python's re has "ı" as an "i", the regex module has not."""
    text = 'start: "tablepartial"i NAME\nNAME: /[a-z]+/\n%ignore " "\n'
    grammar = Grammar.from_lark(text, parser="lalr")
    assert lark_error(lark.Lark(text, parser="lalr"), "TablEParTıal x") is None
    assert grammar.is_complete("TablEParTıal x")
    assert grammar.valid_prefix("TablEParTial ı") == len("TablEParTial ")  # NAME is no (?i)


def test_lalr_terminal_the_lexer_never_returns_ends_the_prefixes():
    """timefhuman's ``duration_numbername " " duration_unit``: lark's lexer tries the ignored WS
    before ``" "``, so that token never comes and nothing after the number word completes."""
    text = 'start: WORD (" " WORD | ";")\nWORD: /[a-z]+/\n%import common.WS\n%ignore WS\n'
    grammar = Grammar.from_lark(text, parser="lalr")
    reference = lark.Lark(text, parser="lalr")
    assert lark_error(reference, "a b") is not None and lark_error(reference, "a ;") is None
    assert grammar.valid_prefix("a b") == 2  # "a " may still end in ";"
    assert grammar.is_complete("a ;")
    dead = Grammar.from_lark('start: WORD " " WORD\nWORD: /[a-z]+/\n%import common.WS\n%ignore WS\n', parser="lalr")
    assert dead.valid_prefix("a b") == 0  # no text completes: lark's language is empty


def test_lalr_lazy_terminal_is_not_a_prefix_where_no_match_goes_on():
    lazy = Grammar.from_lark(SWEEP_CASES["lazy-partial"][0], parser="lalr")
    assert lazy.valid_prefix('"~\x1c"') == 2  # no symbol has \x1c between its quotes


def test_lalr_state_after_which_only_the_end_may_come():
    ended = Grammar.from_lark(SWEEP_CASES["nothing-after"][0], parser="lalr")
    assert ended.valid_prefix("1#x\n2") == 3  # nothing may follow the comment (a crash before)
    assert ended.is_complete("1#x")


# -- refusals --------------------------------------------------------------------------------


class Upper(lark.lark.PostLex):
    def process(self, stream):
        return stream

    always_accept = ()


class OwnProcess(PythonIndenter):
    def process(self, stream):
        return super().process(stream)


def test_another_postlexer_is_refused_saying_what_is_read():
    with pytest.raises(GrammarError, match="Indenter postlexers") as info:
        Grammar.from_lark(QASM, parser="lalr", postlex=Upper())
    assert info.value.construct == "postlex"
    with pytest.raises(GrammarError, match="postlex needs parser='lalr'"):
        Grammar.from_lark(QASM, postlex=PythonIndenter())


def test_lalr_conflict_is_refused_with_lark_reason_and_the_rule():
    text = 'start: a | b\na: "x"\nb: "x"\n'
    with pytest.raises(GrammarError, match="Reduce/Reduce collision") as info:
        Grammar.from_lark(text, parser="lalr")
    assert (info.value.line, info.value.column, info.value.construct) == (2, 1, "a")
    Grammar.from_lark(text)  # Earley reads it


def test_no_llguidance_form_so_masks_and_exports_say_so(python_grammar):
    uses = (lambda: python_grammar.llguidance_grammar, python_grammar.to_gbnf, python_grammar.to_plain_lark)
    for use in (*uses, python_grammar.new_matcher, python_grammar.require_token_masks):
        with pytest.raises(GrammarError, match="no llguidance form"):
            use()


@pytest.mark.parametrize(
    ("draft", "expected"),
    [
        ("def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a + b\n"),
        ("def add(a, b)\n    return a + b\n", "def add(a, b):\n    return a + b\n"),  # the colon
        (
            "def f(x):\n    if x > 1:\n        return (x + 1\n    return 0\n",
            "def f(x):\n    if x > 1:\n        return (x + 1)\n    return 0\n",  # the bracket, then the line end
        ),
    ],
)
def test_guide_repairs_a_python_draft_into_what_lark_parses(python_grammar, python_lark, draft, expected):
    result = gg.guide(lambda prompt: draft, python_grammar, "Write the function.", target=False)
    assert result.text == expected
    assert lark_error(python_lark, result.text) is None


def test_guide_with_a_target_model_refuses_the_grammar_before_it_starts(python_grammar):
    """A target writes under llguidance's token masks, which an LALR grammar has not: the guide
    says so before any draft call rather than mask with another language."""
    calls = []
    with pytest.raises(GrammarError, match="no token masks for a target model"):
        gg.guide(lambda prompt: calls.append(prompt) or "x = 1\n", python_grammar, "Write it.", target=None)
    assert calls == []


# -- JSON: LALR's language is Earley's, so the valid prefixes are the same ----------------------


def test_lalr_json_agrees_with_lark_on_texts_and_with_the_earley_checker_on_prefixes():
    """The builtin JSON grammar means the same under both parsers: every full verdict is lark
    LALR's, and every valid prefix's length is that of the (exact) Earley checker, including
    numbers cut where a greedy optional part gave up (``-0.``, ``1e+``)."""
    earley = Grammar.builtin("json")
    source = earley.lark_source
    assert source is not None
    lalr = Grammar.from_lark(source, parser="lalr", name="json-lalr")
    reference = lark.Lark(source, parser="lalr")
    rng = random.Random(3)
    samples = ['{"a": [1, 2.5e3, -0.1, true, false, null], "b": {"c": "d\\u00e9\\n"}}', '[1, [2, {}], "x y", ""]']
    alphabet = '{}[]",:.-+eE0123456789 \n\\tunlrfasx'
    for _ in range(600):
        text = rng.choice(samples)
        for _ in range(rng.randint(0, 3)):
            i = rng.randrange(len(text) + 1)
            op = rng.random()
            text = (
                text[:i] + rng.choice(alphabet) + text[i:]
                if op < 0.5
                else text[:i] + text[i + 1 :]
                if op < 0.8
                else text[:i]
            )
        assert lalr.is_complete(text) == (lark_error(reference, text) is None), repr(text)
        assert lalr.valid_prefix(text) == earley.valid_prefix(text), repr(text)
    for prefix in ("-0.", "1e+", "[1.5E-", '{"a": -'):
        assert lalr.valid_prefix(prefix) == len(prefix)
