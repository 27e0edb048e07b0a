"""The Earley chart over terminals that says, per terminal, the least whole completion it begins."""

from __future__ import annotations

import re

import pytest

from grammar_guide import Grammar
from grammar_guide.compiler.completion_chart import CompletionChart
from grammar_guide.compiler.terminal import Terminal


def _least_path(chart: CompletionChart, text: str) -> tuple[int, str]:
    """The least cost at the text's end, and the completion written by always taking the least
    cost terminal (each written as its shortest text, a space before it)."""
    column = chart.read(text)
    assert column is not None and chart.pending(text, column) == 0
    first = min(chart.costs(column).values()) if not chart.is_complete(column) else 0
    written = ""
    while not chart.is_complete(column):
        costs = chart.costs(column)
        name = min(costs, key=lambda n: costs[n])
        piece = " " + chart.texts[name]
        written += piece
        nxt = chart.scan(column, [name], len(text) + len(written) - len(piece) + 1, len(text) + len(written))
        assert nxt is not None
        column = nxt
    return first, written


@pytest.mark.parametrize(
    ("grammar", "text"),
    [
        ("sqlite", "SELECT CASE a | b | c | d |"),
        ("sqlite", "SELECT CASE a | b | c | d | 0"),
        ("sqlite", "SELECT COUNT(CASE WHEN x = 1"),
        ("sqlite", "WITH a AS (SELECT"),
        ("sqlite", "SELECT a FROM t WHERE b BETWEEN 1"),
        ("sqlite", "SELECT a FROM t WHERE x IN (SELECT b FROM u WHERE (c"),
        ("json", '{"a": [1, {"b":'),
        ("json", "[[[["),
    ],
)
def test_taking_the_least_cost_terminal_each_time_completes_the_text_at_that_cost(grammar: str, text: str) -> None:
    # The cost counts what must still be written (white space aside): following it never steps
    # back, and the completion it writes is as long as the first cost said.
    g = Grammar.builtin(grammar)
    assert g.completion_chart is not None
    first, written = _least_path(g.completion_chart, text)
    assert g.is_complete(text + written)
    assert first == len(written.replace(" ", ""))


def test_the_construct_open_around_the_text_costs_more_than_an_operator_looks() -> None:
    # After ``CASE a | b | c | d | 0`` an operator then a number costs 2 in its own rule, but
    # the CASE still needs WHEN 0 THEN 0 END: every terminal's cost counts it, WHEN's least.
    chart = Grammar.builtin("sqlite").completion_chart
    assert chart is not None
    column = chart.read("SELECT CASE a | b | c | d | 0")
    assert column is not None
    costs = chart.costs(column)
    assert costs["WHEN"] == len("WHEN0THEN0END") == min(costs.values())
    assert costs["AMPERSAND"] == len("&0WHEN0THEN0END")


@pytest.mark.parametrize(
    ("text", "pending"),
    [
        ("SELECT a FROM t", 0),
        ("SELECT a FROM t  ", 0),
        ("SELECT a FROM t WHERE b = 'abc", 4),  # inside a string
    ],
)
def test_a_text_may_end_inside_a_terminal(text: str, pending: int) -> None:
    chart = Grammar.builtin("sqlite").completion_chart
    assert chart is not None
    column = chart.read(text)
    assert column is not None and chart.pending(text, column) == pending


def test_the_terminal_read_last_may_be_the_start_of_a_longer_one() -> None:
    # ``FRO`` is a whole name (an alias) and the start of FROM: the column before it expects FROM.
    chart = Grammar.builtin("sqlite").completion_chart
    assert chart is not None
    column = chart.read("SELECT a FRO")
    assert column is not None and chart.is_complete(column)
    assert column.begin == len("SELECT a ") and "FROM" in chart.costs(column.origins[-1])


@pytest.mark.parametrize(
    "text",
    [
        "SELECT a FROM t WHERE b = 'x' AND c IN (1, 2) ORDER BY a DESC LIMIT 3",
        "SELECT a FROM t",
        "SELECT a FROM",
        "SELECT (1 + 2",
    ],
)
def test_a_whole_text_is_complete_as_the_grammar_says(text: str) -> None:
    g = Grammar.builtin("sqlite")
    assert g.completion_chart is not None
    column = g.completion_chart.read(text)
    assert column is not None and g.completion_chart.is_complete(column) == g.is_complete(text)


def test_the_reading_stops_where_the_chart_expects_no_terminal_there() -> None:
    chart = Grammar.builtin("sqlite").completion_chart
    assert chart is not None
    assert chart.read("SELECT a FROM FROM t") is None  # two keywords where a name is needed
    assert chart.read("SELECT a FROM t WHERE b = 1 ) x") is None


def test_a_pattern_pythons_re_does_not_read_stops_the_reading_there() -> None:
    # A terminal written for the ``regex`` module (``\p{L}``) has no pattern here: the chart reads
    # up to it and no further, and the caller ranks terminals as before.
    terminals = {
        "WORD": Terminal("WORD", regex=r"\p{L}+"),
        "NUMBER": Terminal("NUMBER", regex=r"[0-9]+"),
        "PLUS": Terminal("PLUS", literal="+"),
    }
    rules = [("start", ["item"]), ("item", ["NUMBER"]), ("item", ["WORD"]), ("item", ["item", "PLUS", "item"])]
    chart = CompletionChart.of(terminals, rules, ignored=re.compile(r"[ ]*"))
    assert chart.read("1 + 2") is not None
    assert chart.read("1 + abc + 2") is None
    column = chart.read("1 +")
    assert column is not None and chart.costs(column) == {"NUMBER": 1}  # WORD has no known text


def test_an_empty_rule_is_passed_at_once() -> None:
    # ``start: opt NUMBER``, ``opt:`` empty or ``-``: NUMBER is expected at the start.
    terminals = {"NUMBER": Terminal("NUMBER", regex=r"[0-9]+"), "MINUS": Terminal("MINUS", literal="-")}
    rules = [("start", ["opt", "NUMBER"]), ("opt", []), ("opt", ["MINUS"])]
    chart = CompletionChart.of(terminals, rules, ignored=re.compile(r"[ ]*"))
    assert chart.costs(chart.first()) == {"NUMBER": 1, "MINUS": 2}
    column = chart.read("12")
    assert column is not None and chart.is_complete(column)


@pytest.mark.parametrize("grammar", ["sqlite", "json"])
def test_every_shortest_text_is_one_a_text_can_hold(grammar: str) -> None:
    # A class that runs across the surrogates (a SQLite name takes any character above 0x7f) gave
    # the lone surrogate U+D800 as a shortest text: no UTF-8 text holds it, and the checker
    # raised on it in the middle of a finish.
    chart = Grammar.builtin(grammar).completion_chart
    assert chart is not None
    for text in chart.texts.values():
        text.encode("utf-8")
