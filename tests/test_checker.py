"""The incremental checker: byte-exact prefixes, UTF-8, violations, expectations, backtracking."""

from __future__ import annotations

import itertools
import json
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammar_guide import Checker, Grammar
from grammar_guide._checker import PROBE_FROM, _lark_expected, expected_terminals
from grammar_guide._feed_costs import COPY_BASE, FeedCosts

SQL = textwrap.dedent(
    """
    start: "SELECT"i columns "FROM"i NAME where? ";"?
    columns: NAME ("," NAME)* | "*"
    where: "WHERE"i NAME "=" (NAME | NUMBER | STRING)
    NAME: /[A-Za-z_][A-Za-z0-9_]*/
    NUMBER: /[0-9]+/
    STRING: /'[^']*'/
    %import common.WS
    %ignore WS
    """
)


@pytest.fixture(scope="module")
def sql() -> Grammar:
    return Grammar.from_lark(SQL, name="mini-sql")


@pytest.fixture(scope="module")
def json_grammar() -> Grammar:
    return Grammar.builtin("json")


def test_partial_keyword_is_a_valid_prefix(sql: Grammar):
    checker = sql.checker()
    assert checker.feed("SELECT name FROM users WHER") == len("SELECT name FROM users WHER")
    assert checker.violation is None
    assert not checker.is_complete  # "users WHER": WHER cannot be a second table name
    assert checker.allowed_bytes() == {ord("E"), ord("e")}
    assert checker.feed("E") == 1
    assert checker.feed(" id = 3") == 7
    assert checker.is_complete
    assert checker.text == "SELECT name FROM users WHERE id = 3"


def test_complete_text_may_still_continue(sql: Grammar):
    checker = sql.checker()
    checker.feed("select a, b from t")
    assert checker.is_complete
    assert checker.can_continue
    assert ord(";") in checker.allowed_bytes()


def test_first_invalid_byte_is_reported_and_the_checker_stays_there(sql: Grammar):
    checker = sql.checker()
    assert checker.feed("SELECT a\nFROM t WHERE x = = 2") == len("SELECT a\nFROM t WHERE x = ")
    violation = checker.violation
    assert violation is not None
    assert (violation.offset, violation.line, violation.column) == (26, 2, 18)
    assert violation.found.startswith("= 2")
    assert not checker.is_valid
    # Nothing more is accepted until a rollback.
    assert checker.feed("3") == 0
    assert checker.text == "SELECT a\nFROM t WHERE x = "
    assert checker.violation == violation


def test_utf8_str_chunks(json_grammar: Grammar):
    checker = json_grammar.checker()
    for chunk in ['["h', "é", "llo €", '", "𝄞', '"]']:
        assert checker.feed(chunk) == len(chunk)
    assert checker.is_complete
    assert checker.text == '["héllo €", "𝄞"]'


def test_bytes_chunks_ending_inside_a_character(json_grammar: Grammar):
    data = '["é€𝄞"]'.encode()
    for cut in range(1, len(data)):
        checker = json_grammar.checker()
        assert checker.feed(data[:cut]) == cut
        # Only whole characters show in the text while a character is half read.
        assert checker.text == data[:cut].decode("utf-8", errors="ignore")
        assert checker.feed(data[cut:]) == len(data) - cut
        assert checker.is_complete
        assert checker.text == '["é€𝄞"]'


def test_byte_by_byte_feed_of_multibyte_text(json_grammar: Grammar):
    checker = json_grammar.checker()
    for byte in '{"клю": "знач"}'.encode():
        assert checker.feed(bytes([byte])) == 1
    assert checker.is_complete


def test_invalid_utf8_continuation_is_rejected(json_grammar: Grammar):
    checker = json_grammar.checker()
    assert checker.feed(b'["\xc3') == 3
    assert checker.feed(b'("]') == 0
    assert checker.violation is not None
    assert checker.violation.offset == 2


def test_rejected_multibyte_character_is_not_half_accepted(json_grammar: Grammar):
    checker = json_grammar.checker()
    assert checker.feed('["a" é]') == 5
    assert checker.accepted_bytes == b'["a" '
    assert checker.violation is not None and checker.violation.found.startswith("é")


def test_expected_names_literals_and_regexes(json_grammar: Grammar, sql: Grammar):
    checker = json_grammar.checker()
    checker.feed('{"a": t')
    assert [(t.name, t.literal) for t in checker.expected()] == [("TRUE", "true")]
    assert checker.forced_text() == "rue"
    checker = json_grammar.checker()
    checker.feed('{"a": 1')
    expected = {t.name: t for t in checker.expected()}
    assert set(expected) == {"RBRACE", "COMMA", "NUMBER"}
    assert expected["RBRACE"].literal == "}"
    assert expected["NUMBER"].regex is not None and expected["NUMBER"].literal is None
    assert str(expected["RBRACE"]) == '"}"'
    checker = sql.checker()
    checker.feed("SELECT a FROM t WH")
    assert [t.name for t in checker.expected()] == ["WHERE"]
    assert checker.expected()[0].case_insensitive


def test_expected_terminals_have_short_reprs():
    checker = Grammar.builtin("sqlite").checker()
    checker.feed("SELECT ")
    expected = {t.name: t for t in checker.expected()}
    ident = max(expected.values(), key=lambda t: len(t.regex or ""))
    assert len(ident.regex) > 10_000  # the identifier pattern excludes every keyword
    shown = repr(ident)
    assert len(shown) < 200 and shown.startswith(f"Terminal(name={ident.name!r}, literal=None, regex='")
    assert f"({len(ident.regex):,} characters)" in shown
    assert max(len(repr(t)) for t in expected.values()) < 200  # before: 47,590 characters
    assert repr(expected["LPAR"]) == "Terminal(name='LPAR', literal='(', regex=None, case_insensitive=False)"


def test_allowed_bytes_at_the_start(json_grammar: Grammar):
    allowed = json_grammar.checker().allowed_bytes()
    assert allowed == set(b' \t\n\r{["-0123456789tfn')


def test_snapshot_and_rollback_restore_the_exact_state(sql: Grammar):
    checker = sql.checker()
    checker.feed("SELECT a FROM t ")
    state = checker.snapshot()
    allowed = checker.allowed_bytes()
    checker.feed("WHERE x = 1 ; junk")
    assert checker.violation is not None
    checker.rollback(state)
    assert checker.text == "SELECT a FROM t "
    assert checker.violation is None
    assert checker.allowed_bytes() == allowed
    assert checker.feed("where y = 'z';") == 14
    assert checker.is_complete
    # A snapshot taken after a violation brings the violation back.
    bad = checker.snapshot()
    checker.feed("x")
    after = checker.snapshot()
    checker.rollback(bad)
    assert checker.violation is None
    assert after.violation is not None
    with pytest.raises(ValueError):
        checker.rollback(10_000)


def test_rollback_to_byte_count_and_chars(json_grammar: Grammar):
    checker = json_grammar.checker()
    checker.feed('["é", 1]')
    checker.rollback_chars(3)
    assert checker.text == '["é'
    checker.rollback(2)
    assert checker.text == '["'
    assert checker.feed('x"]') == 3 and checker.is_complete


def test_copy_is_independent(json_grammar: Grammar):
    checker = json_grammar.checker()
    checker.feed("[1, ")
    other = checker.copy()
    assert other.feed("2]") == 2 and other.is_complete
    assert checker.text == "[1, " and not checker.is_complete
    assert checker.feed("}") == 0 and checker.violation is not None
    assert other.violation is None


def test_checkers_of_one_grammar_do_not_share_state(json_grammar: Grammar):
    a, b = json_grammar.checker(), json_grammar.checker()
    a.feed("[[[")
    assert b.feed("{}") == 2 and b.is_complete
    assert a.text == "[[["


# -- properties ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
json_texts = st.builds(
    lambda value, indent, ascii_: json.dumps(value, indent=indent, ensure_ascii=ascii_),
    json_values,
    st.sampled_from([None, 0, 2]),
    st.booleans(),
)
sql_texts = st.builds(
    lambda cols, table, cond, semi: f"SELECT {', '.join(cols)} FROM {table}{cond}{semi}",
    st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=4),
    st.from_regex(r"[A-Za-z_][a-z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(["", " WHERE id = 3", "\nwhere name = 'é x'", " WHERE a=b"]),
    st.sampled_from(["", ";", " ;\n"]),
)
PROPERTY_SETTINGS = settings(
    max_examples=60, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@PROPERTY_SETTINGS
@given(text=json_texts)
def test_every_prefix_of_a_valid_json_text_is_a_valid_prefix(json_grammar: Grammar, text: str):
    checker = json_grammar.checker()
    assert checker.feed(text) == len(text)
    assert checker.is_complete
    for k in range(len(text)):
        assert json_grammar.valid_prefix(text[:k]) == k


@PROPERTY_SETTINGS
@given(text=sql_texts)
def test_every_prefix_of_a_valid_sql_text_is_a_valid_prefix(sql: Grammar, text: str):
    assert sql.is_complete(text)
    for k in range(len(text)):
        assert sql.valid_prefix(text[:k]) == k


def _state(checker: Checker) -> tuple:
    violation = checker.violation
    # (Violation.found shows the rest of the chunk that was rejected, so it depends on chunking.)
    where = (violation.offset, violation.line, violation.column) if violation else None
    return (checker.text, checker.accepted_bytes, checker.is_complete, where, checker.allowed_bytes())


@PROPERTY_SETTINGS
@given(
    text=json_texts | json_texts.map(lambda t: t[: len(t) // 2] + "x" + t[len(t) // 2 :]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
    as_bytes=st.booleans(),
)
def test_any_chunking_gives_the_same_result_as_feeding_whole(
    json_grammar: Grammar, text: str, cuts: list[int], as_bytes: bool
):
    whole = json_grammar.checker()
    whole.feed(text.encode() if as_bytes else text)
    pieces = json_grammar.checker()
    if as_bytes:
        data = text.encode()
        points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
        for a, b in itertools.pairwise(points):
            pieces.feed(data[a:b])
    else:
        for piece in chunked(text, cuts):
            pieces.feed(piece)
    assert _state(pieces) == _state(whole)


@PROPERTY_SETTINGS
@given(
    text=sql_texts,
    mark=st.integers(min_value=0, max_value=10_000),
    extra=st.text(alphabet="SELCT WHR,;=*'xé1", max_size=12),
)
def test_rollback_restores_the_exact_state(sql: Grammar, text: str, mark: int, extra: str):
    k = mark % (len(text) + 1)
    checker = sql.checker()
    checker.feed(text[:k])
    before = _state(checker)
    state = checker.snapshot()
    checker.feed(text[k:] + extra)
    checker.rollback(state)
    assert _state(checker) == before
    # And the rolled-back checker behaves like a fresh one fed the same text.
    fresh = sql.checker()
    fresh.feed(text[:k])
    assert checker.feed(text[k:]) == fresh.feed(text[k:])
    assert _state(checker) == _state(fresh)


# -- expected terminals from the matcher's probes (issue 15: a violation's cost is flat) ---------

_JSON_DOCS = [
    '{"a": [1, -2.5e3, "x\\"y", true, null], "b": {}, "c": false}',
    '[\n  {"id": 0, "name": "user-0", "tags": ["a", "b"]},\n  {"é": "\\u00e9", "n": []}\n]',
    '{"nested": {"deeper": [[], [{}], [1, [2, [3]]]]}, "s": ""}',
]


def _prefixes(text: str) -> list[str]:
    return [text[:i] for i in range(len(text) + 1)]


def _lark_names(grammar: Grammar, text: str) -> set[str]:
    return {t.name for t in expected_terminals(grammar, text)}


@pytest.mark.parametrize("doc", _JSON_DOCS)
def test_probed_expectations_are_larks_on_every_json_prefix(json_grammar: Grammar, doc: str):
    checker = Checker(json_grammar, probe_from=0)
    assert checker.feed(doc) == len(doc)
    for i in range(len(doc) + 1):
        assert {t.name for t in checker.expected(i)} == _lark_names(json_grammar, doc[:i]), doc[:i]
    assert checker.text == doc and checker.is_complete  # asking moved nothing


def test_probed_expectations_of_sql_name_no_terminal_lark_does_not(sql: Grammar):
    # The SQLite grammar is read greedily (the matcher is its reference): where lark splits a glued
    # keyword ("SELECT in" read as "i" "n", "ORDER" as "OR" "DER"), it lists more; the probes never
    # list a terminal that lark does not, and agree elsewhere.
    grammar = Grammar.builtin("sqlite")
    texts = ["SELECT a, b FROM t WHERE x = 1 AND y LIKE 'z%' ORDER BY a DESC LIMIT 5;", "SELECT in", SQL_TEXT]
    same = total = 0
    for text in texts:
        checker = Checker(grammar, probe_from=0)
        checker.feed(text)
        for i in range(len(checker.text) + 1):
            probed = {t.name for t in checker.expected(i)}
            lark = _lark_names(grammar, text[:i])
            assert probed <= lark, text[:i]
            same, total = same + (probed == lark), total + 1
    assert same >= 0.9 * total


SQL_TEXT = "WITH c AS (SELECT count(*) AS n FROM t GROUP BY k) SELECT n FROM c"


def test_a_long_text_is_checked_alike_with_probes(json_grammar: Grammar):
    # Past ``probe_from`` bytes the matcher's grammar has a probe beside each terminal: what it
    # accepts, allows, forces and calls complete is the plain grammar's.
    head = "[" + ", ".join(f'{{"id": {i}, "v": [true, null]}}' for i in range(40))
    probing, plain = Checker(json_grammar, probe_from=64), Checker(json_grammar, probe_from=1 << 40)
    for text in [head + ', {"id": t', head + ', {"i', head + ", ", head + "]", head + ', {"id": 1} ,']:
        for checker in (probing, plain):
            checker.rollback(0)
            checker.feed(text)
        assert probing.text == plain.text
        assert probing.allowed_bytes() == plain.allowed_bytes()
        assert probing.forced_text() == plain.forced_text()
        assert probing.is_complete == plain.is_complete
        assert {t.name for t in probing.expected()} == _lark_names(json_grammar, text)
    # A probe's marker is not text.
    probing.rollback(0)
    assert probing.feed(head.encode() + b", \xf8\x80") == len(head) + 2
    assert probing.violation is not None


def test_a_long_texts_expectations_need_no_lark_parse(json_grammar: Grammar):
    text = "[" + ", ".join(f'{{"id": {i}}}' for i in range(2000)) + ", "
    checker = json_grammar.checker(probe_from=PROBE_FROM)
    checker.feed(text)
    misses = _lark_expected.cache_info().misses
    assert {t.name for t in checker.expected()} == {"LBRACE", "LSQB", "STRING", "NUMBER", "TRUE", "FALSE", "NULL"}
    assert _lark_expected.cache_info().misses == misses


def test_a_guide_checker_on_a_dynamic_grammar_probes_from_its_first_question(json_grammar: Grammar):
    # JSON is read as lark reads it, so its probes answer as lark does (above): the guide loop's
    # checker asks them from the first violation on, however short the text, and no lark parse
    # is made; the answers are lark's.
    checker = json_grammar.checker(probe_from=PROBE_FROM)
    texts = ['{"a": [1, tr', '{"a": 1, ', '{"a"', "[1, 2]"]
    misses = _lark_expected.cache_info().misses
    answers = []
    for text in texts:
        checker.rollback(0)
        checker.feed(text)
        answers.append({t.name for t in checker.expected()})
    assert _lark_expected.cache_info().misses == misses
    assert answers == [_lark_names(json_grammar, text) for text in texts]


def test_a_greedy_grammar_probes_too_and_answers_as_its_matcher_reads():
    # The SQLite grammar is read greedily: its matcher, not lark's dynamic lexer, is its
    # reference, and its probes answer as the matcher reads. Asking lark cost 2.4 s a question
    # on a 776-character answer (NL2SQL360: 186 s for one answer's repairs).
    sql = Grammar.builtin("sqlite")
    checker = sql.checker(probe_from=PROBE_FROM)
    for text, same in [("SELECT a FROM t WHERE ", True), ("SELECT a FROM t WHERE age > 30 ORD", False)]:
        checker.rollback(0)
        checker.feed(text)
        misses = _lark_expected.cache_info().misses
        names = {t.name for t in checker.expected()}
        assert _lark_expected.cache_info().misses == misses  # no lark parse
        lark_names = _lark_names(sql, text)
        # Lark's dynamic lexer also reads ORD as a whole word (AND, BETWEEN ... after it); the
        # greedy matcher reads it as the start of ORDER only.
        assert names == lark_names if same else names < lark_names


def test_a_one_shot_check_reads_at_full_speed_and_asks_lark(json_grammar: Grammar):
    # Grammar.checker() (grammar-guide check, valid_prefix) never switches to the probe grammar:
    # its feed keeps the plain matcher's speed, and its one diagnosis is one lark parse.
    text = "[" + ", ".join(f'{{"id": {i}}}' for i in range(2000)) + ", x"
    checker = json_grammar.checker()
    checker.feed(text)
    assert checker.violation is not None and checker.violation.offset == len(text) - 1
    misses = _lark_expected.cache_info().misses
    probed = json_grammar.checker(probe_from=PROBE_FROM)
    probed.feed(text)
    assert {t.name for t in checker.expected()} == {t.name for t in probed.expected()}
    assert _lark_expected.cache_info().misses == misses + 1  # the one-shot checker's parse only


def test_trial_comes_back_to_the_same_state(json_grammar: Grammar):
    checker = json_grammar.checker()
    checker.feed("[1, 2, 3] x")
    assert checker.violation is not None
    with checker.trial() as trial:
        assert trial.violation is None
        trial.rollback_chars(4)
        assert trial.feed('"a", {"b": [') == 12
        with trial.trial() as inner:
            inner.rollback(1)
            assert inner.feed("5]") == 2 and inner.is_complete
        assert trial.text == '[1, "a", {"b": ['
    assert checker.text == "[1, 2, 3] " and checker.is_complete
    assert checker.violation is not None and checker.violation.offset == 10
    assert checker.accepts(", 4") == 0  # still stopped at the violation
    checker.rollback(checker.snapshot().n_bytes)
    assert checker.accepts(", 4]") == 0 and checker.accepts(" ") == 1


def test_a_chunk_refused_when_read_once_leaves_the_checker_where_validating_would():
    # A fresh checker reads its first chunk once (consumed whole, no validation first); a refused
    # byte leaves llguidance's matcher in an error state, so the checker must go back to its copy
    # and find the valid prefix there, whole characters of a str only ("è" is C3 A8; "é" C3 A9).
    grammar = Grammar.from_lark('start: "a" "é" "b"', name="ae")
    checker = grammar.checker()
    assert checker.feed("aèb") == 1
    assert checker.accepted_bytes == b"a" and checker.violation is not None
    checker.rollback(1)
    assert checker.feed("éb") == 2 and checker.is_complete
    assert grammar.checker().feed("aèb".encode()) == 2  # bytes: the shared lead byte C3 too
    checker = grammar.checker()
    checker.feed(b"a\xc3")
    with checker.trial() as trial:
        assert trial.feed(b"\xa8") == 0
    assert checker.feed(b"\xa9b") == 2 and checker.is_complete


@pytest.mark.parametrize(
    ("costs", "held", "chunk", "once"),
    [
        (FeedCosts(), 10**6, 1, True),  # nothing measured yet
        (FeedCosts(consume_per_byte=100e-6, copy_per_byte=0.25e-6), 2_000, 16, True),
        (FeedCosts(consume_per_byte=100e-6, copy_per_byte=0.25e-6), 20_000, 16, False),
        (FeedCosts(consume_per_byte=1e-6, copy_per_byte=0.03e-6), 200_000, 16, False),
        (FeedCosts(consume_per_byte=1e-6, copy_per_byte=0.03e-6), 0, 100_000, True),
        (FeedCosts(consume_per_byte=100e-6, copy_per_byte=0.25e-6, refused=0.7), 0, 16, False),
        # A refusal that costs what validating hundreds of bytes does (RUST_BACKTRACE set): validate.
        (FeedCosts(consume_per_byte=1e-6, copy_per_byte=0.03e-6, refused=0.3, refusal=300e-6), 0, 64, False),
        (FeedCosts(consume_per_byte=1e-6, copy_per_byte=0.03e-6, refused=0.3, refusal=3e-6), 0, 64, True),
    ],
)
def test_a_chunk_is_read_once_where_the_copy_costs_less_than_validating(
    costs: FeedCosts, held: int, chunk: int, once: bool
):
    assert costs.read_once(held, chunk) is once


def test_feed_costs_follow_what_was_measured():
    costs = FeedCosts()
    costs.consumed(1e-3, 10)
    costs.copied(1e-3, 1_000 - COPY_BASE)
    assert (costs.consume_per_byte, costs.copy_per_byte) == (1e-4, 1e-6)
    for _ in range(20):
        costs.read(whole=False)
    assert costs.refused > 0.99 and not costs.read_once(0, 1_000)
    for _ in range(20):
        costs.read(whole=True)
    assert costs.refused < 0.01 and costs.read_once(0, 1_000)


def test_feed_costs_measure_what_a_refusal_costs_beyond_its_bytes():
    costs = FeedCosts(consume_per_byte=1e-6)
    costs.refused_after(310e-6, 20)  # about 10 bytes read, then the refusal
    assert costs.refusal == pytest.approx(300e-6)
    costs.refused_after(100e-6, 20)  # a running average
    assert costs.refusal == pytest.approx(247.5e-6)


def test_new_checkers_of_a_grammar_start_from_what_the_ones_before_measured():
    grammar = Grammar.from_lark(SQL, name="mini-sql")
    assert grammar.checker().feed("SELECT a FROM t WHERE a == 1") == 25  # read once, refused at the second =
    later = grammar.checker()
    assert later._costs.refusal > 0 and later._costs.refused > 0
    assert Grammar.from_lark(SQL, name="mini-sql").checker()._costs.refusal == 0
