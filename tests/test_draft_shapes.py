"""benchmarks/draft_shapes.py: the constructs SQLite 3.40 has no form for, told apart from those a
rewrite keeps (grammars/README.md), each checked against SQLite itself."""

from __future__ import annotations

import sqlite3

import pytest

from benchmarks.draft_shapes import NO_SQLITE_FORM, draft_shape, no_sqlite_form

NO_FORM = {
    "SELECT s.Name FROM stadium s JOIN LATERAL (SELECT 1 FROM concert c WHERE c.id = s.id) x ON 1": "LATERAL",
    "SELECT DISTINCT ON (s.Name) s.Name, s.Capacity FROM stadium s": "DISTINCT ON",
    "SELECT Name FROM stadium EXCEPT ALL SELECT Name FROM stadium": "EXCEPT ALL, INTERSECT ALL",
    "SELECT GROUP_CONCAT(DISTINCT Name ORDER BY Name) FROM stadium": "an aggregate's own ORDER BY",
    "SELECT string_agg(Name, ',' ORDER BY Name DESC) FROM stadium": "an aggregate's own ORDER BY",
    "SELECT mode() WITHIN GROUP (ORDER BY Age) FROM singer": "an ordered-set aggregate other than PERCENTILE_CONT/DISC",
    "SELECT MAX(Year) KEEP (DENSE_RANK FIRST ORDER BY cnt DESC) FROM concert": "KEEP (DENSE_RANK …)",
    "SELECT Name FROM singer MATCH_RECOGNIZE (ORDER BY Age PATTERN (A) DEFINE A AS TRUE)": "MATCH_RECOGNIZE",
    "SELECT Capacity FROM stadium PIVOT (count(id) FOR id IN (1, 2))": "PIVOT, UNPIVOT",
    "SELECT unnest(ARRAY[1, 2]) FROM stadium": "ARRAY[…]",
    "SELECT Location FROM stadium WHERE MATCH (Name) AGAINST ('x')": "MATCH … AGAINST",
    "SELECT id INTO @top FROM stadium": "SELECT … INTO a variable",
    "SELECT id FROM t START WITH p IS NULL CONNECT BY PRIOR id = p": "CONNECT BY",
    "SELECT count(P.*) FROM Pets P": "a row's count (COUNT(t.*))",
}

KEPT = [
    "SELECT Name FROM stadium WHERE id = ANY (ARRAY[1, 2])",  # rewritten: id IN (1, 2)
    "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY Age) FROM singer",  # percentile_cont(Age, 0.5)
    "SELECT GROUP_CONCAT(Name) FROM (SELECT Name FROM stadium ORDER BY Name)",  # ORDER BY outside the call
    "SELECT Name FROM stadium WHERE Name = 'lateral array[1] distinct on ('",  # in a string
    "SELECT Name FROM stadium UNION ALL SELECT Name FROM stadium",
    "SELECT count(*) FROM stadium AS lateral_view",
    "SELECT unnest(string_to_array(Name, ',')) FROM stadium",  # calls SQLite parses (no such function)
]


@pytest.mark.parametrize(("sql", "construct"), NO_FORM.items())
def test_a_construct_sqlite_has_no_form_for_is_named(sql: str, construct: str) -> None:
    assert no_sqlite_form(sql) == [construct]
    assert draft_shape(sql) == "no SQLite form"


@pytest.mark.parametrize("sql", KEPT)
def test_what_sqlite_or_a_rewrite_keeps_is_a_query(sql: str) -> None:
    assert no_sqlite_form(sql) == []
    assert draft_shape(sql) == "query"


def test_sqlite_rejects_every_construct_named() -> None:
    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE stadium(id, Name, Capacity, Location); CREATE TABLE singer(Name, Age);"
        "CREATE TABLE concert(id, Year, cnt); CREATE TABLE Pets(id); CREATE TABLE t(id, p);"
    )
    for sql in NO_FORM:
        with pytest.raises(sqlite3.OperationalError):
            db.execute(sql)
    assert set(NO_FORM.values()) == set(NO_SQLITE_FORM)


def test_a_cut_or_a_loop_is_told_before_a_construct() -> None:
    assert draft_shape("SELECT s.Name FROM stadium s JOIN LATERAL (SELECT 1 FROM concert c WHERE") == "cut off"
    assert draft_shape("sql LATERAL") == "no query"
