"""A quoted literal that swallowed code because the draft forgot its closing quote: the quote is
inserted where the literal's text ends (a closing mark, nothing invented), every token of the draft
kept. Checked by SQLite's rows, whole and streamed in chunks; text valid as written is untouched."""

from __future__ import annotations

import sqlite3

import pytest

from grammar_guide import Correction, Grammar, guide
from tests.support.streamed import streamed

SQLITE = Grammar.builtin("sqlite")


def _guided(answer: str, chunk: int) -> tuple[str, list[Correction], bool]:
    result = guide(streamed(answer, chunk), SQLITE, "q", target=False)
    return result.text, [e for e in result.events if isinstance(e, Correction)], result.faithful


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE hero(id, alignment, publisher, language); CREATE TABLE hero_power(hero_id, power_id);"
        "CREATE TABLE power(id, name); INSERT INTO hero_power VALUES (1, 7), (2, 8);"
        "INSERT INTO power VALUES (7, 'fly'), (8, 'run');"
        "INSERT INTO hero VALUES (1, 'Bad', 'Marvel', 'Portuguese (Brazil)'), (2, 'Good', 'Marvel', 'English'),"
        " (3, 'Bad', 'DC', 'Portuguese (Brazil)'), (4, 'Bad', 'Marvel', 'English');"
    )
    return db


@pytest.mark.parametrize(
    ("answer", "meant", "quotes", "rows"),
    [
        (
            # Twice: each literal's closing quote was the next one's opening.
            "SELECT SUM(alignment = 'Bad) AS bad, COUNT(id) AS n, (SUM(alignment = 'Bad) / COUNT(id)) * 100 AS p"
            " FROM hero WHERE publisher = 'Marvel';",
            "SELECT SUM(alignment = 'Bad') AS bad, COUNT(id) AS n, (SUM(alignment = 'Bad') / COUNT(id)) * 100 AS p"
            " FROM hero WHERE publisher = 'Marvel';",
            2,
            [(2, 3, 0)],
        ),
        (
            # The literal's text ends with a bracket of its own: closed after it, not after 'Brazil'.
            "SELECT MAX(SUM(id = 1), SUM(language = 'Portuguese (Brazil)))*100 FROM hero"
            " WHERE language = 'Portuguese (Brazil)';",
            "SELECT MAX(SUM(id = 1), SUM(language = 'Portuguese (Brazil)'))*100 FROM hero"
            " WHERE language = 'Portuguese (Brazil)';",
            1,
            [(200,)],
        ),
        (
            # No keyword in capitals inside, but a comparison ends it: the quote after ``=`` opens
            # its value (not 'F' dropped and the quote written twice, ``= '') FROM hero;')``).
            "SELECT SUM(alignment = 'Bad' and publisher = 'Marvel'), SUM(alignment = 'Good and publisher = 'Marvel')"
            " FROM hero;",
            "SELECT SUM(alignment = 'Bad' and publisher = 'Marvel'), SUM(alignment = 'Good' and publisher = 'Marvel')"
            " FROM hero;",
            1,
            [(2, 1)],
        ),
        (
            # Quoted names, neither closed: the second runs on to the end of the answer.
            "SELECT p.name FROM `hero` h JOIN `hero_power hp ON h.id = hp.hero_id JOIN `power p ON hp.power_id = p.id"
            " WHERE h.id = 1; ",
            "SELECT p.name FROM `hero` h JOIN `hero_power` hp ON h.id = hp.hero_id JOIN `power` p ON hp.power_id = p.id"
            " WHERE h.id = 1; ",
            2,
            [("fly",)],
        ),
    ],
)
def test_a_literal_that_swallowed_code_is_closed_where_its_text_ends(
    answer: str, meant: str, quotes: int, rows: list[tuple[int, ...]]
) -> None:
    db = _db()
    for chunk in (len(answer), 5):
        text, corrections, faithful = _guided(answer, chunk)
        assert text == meant and faithful
        assert [c.removed for c in corrections] == [""] * quotes and {c.text for c in corrections} <= {"'", "`"}
        assert all("closed where its text ends" in c.detail for c in corrections)
        assert db.execute(text).fetchall() == rows


@pytest.mark.parametrize(
    "answer",
    [
        # A long string holding ') AS ' that parses is the draft's string.
        "SELECT id FROM hero WHERE alignment = 'x) AS y, (SUM(z' AND id = 1",
        "SELECT id FROM hero WHERE alignment = 'Bad) AS bad, COUNT(id) FROM hero' OR id = 2",
    ],
)
def test_a_string_valid_as_written_is_untouched(answer: str) -> None:
    for chunk in (len(answer), 5):
        text, corrections, faithful = _guided(answer, chunk)
        assert text == answer and not corrections and faithful


@pytest.mark.parametrize(
    "answer",
    [
        # No keyword in capitals inside: an apostrophe, not a swallowing literal.
        "SELECT id FROM hero WHERE publisher = 'O'Brien books' AND id = 1",
        # The word after the quote is not written on to it.
        "SELECT id FROM hero WHERE alignment = 'Bad AND id = 1' x AND 'y'",
        # An apostrophe after the comma an edit wrote: no evidence the quote opens a literal.
        "SELECT Tim Ward's phone FROM students WHERE Tim Ward = Tim Ward",
        # Its quote written twice: the slip is the second quote, not a close forgotten.
        "SELECT id FROM hero WHERE alignment = '+'' AND publisher IS NULL;",
        # A quote before the code: what it holds begins with a keyword, no name or value.
        "SELECT `SELECT id FROM hero WHERE id = 1",
        # Left open at the end, where no close inside it lets the rest read to a complete text.
        "SELECT id FROM hero WHERE alignment = 'Bad AND id = 1 ORDER BY",
    ],
)
def test_no_quote_is_inserted_where_the_literal_holds_no_code_or_nothing_reopens(answer: str) -> None:
    _, corrections, _ = _guided(answer, len(answer))
    assert not any("closed where its text ends" in c.detail for c in corrections)
