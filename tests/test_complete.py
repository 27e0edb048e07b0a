"""The grammar's own completions of a valid prefix: the shortest one, and a close made of closing
marks alone (what the finish prefers: it invents nothing)."""

from __future__ import annotations

import pytest

from grammar_guide import Grammar
from grammar_guide._complete import shortest_close, shortest_completion
from grammar_guide._terminal_completion import terminal_completion


def checker_for(grammar: Grammar, text: str):
    checker = grammar.checker()
    assert checker.feed(text) == len(text)
    return checker


@pytest.mark.parametrize(
    ("grammar", "text", "close"),
    [
        ("json", '{"x": "unterminated', '"}'),
        ("json", '{"a": [1, {"b": 2', "}]}"),
        ("json", "[1, 2]", ""),
        ("sqlite", "SELECT (1 + (2", "))"),
        ("sqlite", "SELECT a FROM t WHERE b IN ('x', 'y", "')"),
    ],
)
def test_a_close_of_marks_alone(grammar: str, text: str, close: str) -> None:
    g = Grammar.builtin(grammar)
    found = shortest_close(checker_for(g, text))
    assert found == close and g.is_complete(text + found)


@pytest.mark.parametrize(
    ("grammar", "text"),
    [
        ("sqlite", "SELECT a FROM t WHERE b = "),  # '' would be a string nobody wrote
        ("sqlite", "SELECT a -"),  # '-' more would turn the rest into a comment
        ("sqlite", "SELECT a FROM t WHERE b > ("),  # a value is needed
        ("sqlite", "SELECT"),  # '*' is a value, not a close
        ("json", "[1, 2, "),
    ],
)
def test_no_close_where_the_text_needs_a_value(grammar: str, text: str) -> None:
    g = Grammar.builtin(grammar)
    assert shortest_close(checker_for(g, text)) is None
    assert shortest_completion(checker_for(g, text))  # the grammar's completion still exists


def test_a_close_opens_no_string() -> None:
    """A quote that opens a string is no close: inside the string every mark reads on, and the
    search spent its whole budget there (flloat's ``!A |``, 8 s of CPU on its LALR reading)."""
    g = Grammar.from_lark(
        'start: atom ("|" atom)*\natom: NAME | ESCAPED_STRING\n'
        "%import common.CNAME -> NAME\n%import common.ESCAPED_STRING\n%import common.WS\n%ignore WS\n"
    )
    checker = checker_for(g, "A |")
    feed, fed = checker.feed, []
    checker.feed = lambda text: fed.append(text) or feed(text)  # type: ignore[method-assign]
    assert shortest_close(checker, max_length=64, max_nodes=4_000) is None
    assert len(fed) < 100
    assert shortest_close(checker_for(g, 'A | "b')) == '"'  # the text's own string is closed


@pytest.mark.parametrize(
    "text",
    [
        # Inside a line comment every character reads on; the comment is ended first (before,
        # the search spent itself inside it: ``None``, and with a target ``GuideExhausted``).
        "SELECT 1 UNION -- and then the rows whose c is",
        "-- nothing but a comment",
        # A construct the cheapest-first order opens again and again (``WITH`` in ``WITH a AS
        # (``) is left for words the text's end has not written (before: ``None``).
        "WITH a AS (",
        "WITH a AS ( -- the first step",
    ],
)
def test_the_grammars_completion_is_found_past_a_comment_and_a_recursion(text: str) -> None:
    g = Grammar.builtin("sqlite")
    found = shortest_completion(checker_for(g, text))
    assert found is not None and g.is_complete(text + found)
    assert found.startswith("\n") == ("--" in text)


def test_a_string_of_closers_is_no_close_of_the_brackets_open() -> None:
    # A ``}`` or a mark inside a string closes no ``(``: counted as one, strings of ``}}}`` looked
    # as cheap as the closes the text needs, and the search found a longer completion (20).
    g = Grammar.builtin("sqlite")
    text = "SELECT a FROM t WHERE b IN " + "(" * 16
    found = shortest_completion(checker_for(g, text))
    assert found is not None and g.is_complete(text + found)
    assert len(found) <= 17 and found.count(")") == 16


@pytest.mark.parametrize(
    ("opened", "prefix", "loop"),
    [
        # 48 deep: a ``)`` inside a string closes nothing (``")))`` looked as cheap as ``)))``), and
        # among equal costs the search goes on from the longest text (before: ``None`` past 40).
        (48, "SELECT a FROM t WHERE b = ", "("),
        # 160 deep, beyond the character search: a terminal for each bracket (before: ``None``,
        # after the searches after keywords spent 40 times the budget).
        (160, "SELECT ", "COALESCE(a, "),
    ],
)
def test_a_model_looping_on_open_brackets_is_closed(opened: int, prefix: str, loop: str) -> None:
    g = Grammar.builtin("sqlite")
    text = prefix + loop * opened
    checker = g.checker(probe_from=0)  # as the guide reads: its probes answer ``expected``
    assert checker.feed(text) == len(text)
    found = shortest_completion(checker)
    assert found is not None and g.is_complete(text + found)
    assert found.count(")") == opened and len(found) <= opened + 2


def test_the_terminal_search_writes_a_value_not_a_parameter() -> None:
    # Among terminals of equal cost a number comes first: SQL's ``?`` (before: first, a mark) is a
    # parameter the caller would have to bind (``cursor.execute`` fails without one).
    g = Grammar.builtin("sqlite")
    text = "SELECT a FROM t WHERE b = (("
    found = terminal_completion(checker_for(g, text), g.terminal_costs)
    assert found == "0))" and g.is_complete(text + found)


@pytest.mark.parametrize(
    ("text", "completion"),
    [
        ("SELECT CASE a | b | c | d |", "0 WHEN 0 THEN 0 END"),
        ("SELECT COUNT(CASE WHEN x = 1", " THEN 0 END)"),
        ("select case a | b |", "0 when 0 then 0 end"),  # keywords in the case the text writes them
    ],
)
def test_the_chart_leads_the_terminal_search_through_the_construct_still_open(text: str, completion: str) -> None:
    # Ranked by what each terminal's own rule needs after it, an operator then a number looked
    # cheapest: the search wrote ``0 & 0 & 0 …`` to its depth and spent its budget (5 s on the
    # first text) finding nothing. The chart counts the CASE's WHEN … END in every terminal's
    # cost: a try a terminal.
    g = Grammar.builtin("sqlite")
    checker = g.checker(probe_from=0)
    assert checker.feed(text) == len(text)
    found = terminal_completion(checker, g.terminal_costs, chart=g.completion_chart, max_tries=8)
    assert found == completion and g.is_complete(text + found)
    assert terminal_completion(checker, g.terminal_costs, max_tries=8) is None


def test_the_terminal_search_finishes_a_keyword_the_text_ends_inside() -> None:
    g = Grammar.builtin("sqlite")
    text = "SELECT a FROM t WHERE x BETW"
    found = terminal_completion(checker_for(g, text), g.terminal_costs, chart=g.completion_chart, max_tries=8)
    assert found == "EEN 0 AND 0" and g.is_complete(text + found)
