"""benchmarks/real_sql_repair.py's scores on small inputs: the token-aligned faithful score (on real
``guide`` results and their events), one-statement validity (SQLite's own parser), rows compared on
a real SQLite database file, and the NL2SQL360 and Spider readers on clones laid out as theirs are.
The answers are written here after kinds that NL2SQL360's 7B models give on Spider (a stray ``)``,
``FROM a OR b``, a type word after a column, a PostgreSQL cast). No timings are asserted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import grammar_guide as gg
from benchmarks.real_sql_repair import answer_sql, escape_apostrophes, main
from benchmarks.sql_execution import Rows, error_class, gold_is_ordered, run_query, same_rows
from benchmarks.sql_faithful import Excuses, excuses_of, faithfulness, sql_tokens
from benchmarks.sql_sources import load_nl2sql360, load_spider_gold
from tests.support import sqlite_oracle


def _guide(answer: str) -> gg.GuideResult:
    def generate(prompt: str, prefix: str) -> str:
        return "" if prefix.strip() else answer

    draft = gg.FunctionDraft(generate, name="replay", continues_prefix=True)
    return gg.guide(draft, "sqlite", "q", target=False, max_draft_calls=4)


def test_sql_tokens_read_quotes_operators_and_escapes() -> None:
    tokens = sql_tokens("SELECT COUNT(\\*), `a b` FROM t -- note\nWHERE x >= 1.5 AND y != 'it''s'")
    assert [(t.kind, t.raw) for t in tokens][-8:] == [
        ("keyword", "WHERE"),
        ("name", "x"),
        ("op", ">="),
        ("number", "1.5"),
        ("keyword", "AND"),
        ("name", "y"),
        ("op", "!="),
        ("string", "'it''s'"),
    ]
    keys = [t.key for t in tokens]
    assert ("o", "\\*") in keys and ("w", "a b") in keys and ("s", "it's") in keys and ("o", ">=") in keys
    assert not any(t.raw == "note" for t in tokens)  # a comment is no token
    assert sql_tokens('FROM "Order"')[1].key == sql_tokens("FROM order")[1].key  # a quoted name is the name


def test_a_recorded_rewrite_is_faithful_and_the_same_change_unrecorded_is_not() -> None:
    draft = "SELECT COUNT(id)::FLOAT / 2 FROM posts"
    result = _guide(draft)
    assert result.text == "SELECT CAST(COUNT(id) AS FLOAT) / 2 FROM posts"
    excuses = excuses_of(result.events)
    assert excuses.removed and not excuses.formatting
    assert faithfulness(draft, result.text, excuses).faithful
    unrecorded = faithfulness(draft, result.text)  # sqlglot's way: nothing recorded, nothing excused
    assert unrecorded.lost == ["::"] and not unrecorded.faithful


def test_a_bracket_a_rewrite_took_is_excused_where_its_twin_was_aligned() -> None:
    # 'FROM ((SELECT': difflib keeps the rewrite's '(' and calls the group's lost; the run took one.
    draft = "SELECT a FROM ((SELECT a FROM t WHERE b = 1) UNION (SELECT a FROM u)) T"
    result = _guide(draft)
    assert result.text == "SELECT a FROM (SELECT a FROM t WHERE b = 1 UNION SELECT a FROM u) T"
    assert faithfulness(draft, result.text, excuses_of(result.events)).faithful
    assert faithfulness(draft, result.text).lost == ["(", ")", "(", ")"]  # unrecorded: each member's brackets lost


def test_words_quoted_whole_as_one_name_are_excused_only_when_the_result_quoted_them() -> None:
    draft = "SELECT a FROM t JOIN Ben Jones AS T3 ON T3.b = t.b"
    result = _guide(draft)
    assert result.text == 'SELECT a FROM t JOIN "Ben Jones" AS T3 ON T3.b = t.b'
    assert faithfulness(draft, result.text, excuses_of(result.events)).faithful
    unrecorded = faithfulness(draft, result.text)  # nothing recorded: two names made one
    assert unrecorded.lost == ["Ben", "Jones"] and unrecorded.added == ['"Ben Jones"']
    # A repair that wrote more than the words in quotes is no quoting whole.
    edit = gg.Correction(0, '"Ben Jones", x', source="repair", reason="violation", rule="edit", removed="Ben Jones")
    assert not excuses_of([edit]).removed


def test_a_name_with_a_bracket_quoted_whole_is_excused_a_keyword_quoted_alone_is_not() -> None:
    draft = "SELECT s.CDSCode FROM schools s WHERE s.Enrollment(K-12) > 500"
    result = _guide(draft)
    assert result.text == 'SELECT s.CDSCode FROM schools s WHERE s."Enrollment(K-12)" > 500'
    assert result.changes.quoted == 1
    assert faithfulness(draft, result.text, excuses_of(result.events)).faithful
    keyword = gg.Correction(0, '"FROM"', source="repair", reason="violation", rule="edit", removed="FROM")
    assert not excuses_of([keyword]).removed


def test_a_string_closed_where_its_text_ends_is_read_closed_only_when_the_result_recorded_it() -> None:
    """The draft forgot a closing quote, so its string swallowed code; the result closed it (a
    closing mark): the scorer reads the draft with the recorded marks where the output put them."""
    draft = "SELECT SUM(a = 'Bad) AS bad, (SUM(a = 'Bad) / COUNT(id)) AS p FROM h WHERE n = 'Marvel';"
    result = _guide(draft)
    assert result.text == "SELECT SUM(a = 'Bad') AS bad, (SUM(a = 'Bad') / COUNT(id)) AS p FROM h WHERE n = 'Marvel';"
    excuses = excuses_of(result.events)
    assert excuses.closed == ("'", "'")
    judged = faithfulness(draft, result.text, excuses)
    assert judged.faithful and not judged.invented_literals
    unrecorded = faithfulness(draft, result.text)  # nothing recorded: the swallowed code counts as lost
    assert not unrecorded.faithful and unrecorded.invented_literals == ["'Bad'", "'Bad'"]
    # A recorded mark puts no quote where the output's string is not the draft's text closed.
    other = faithfulness(draft, result.text.replace("'Bad'", "'Good'", 1), excuses)
    assert not other.faithful and "'Good'" in other.invented_literals


def test_a_misspelt_keyword_respelt_is_a_loss_as_the_result_says() -> None:
    """The result names it ``respelt`` and says not faithful: the scorer agrees (a word replaced)."""
    draft = "SELECT COUNT(DICTINCT content) FROM tv"
    result = _guide(draft)
    assert result.text == "SELECT COUNT(DISTINCT content) FROM tv"
    assert result.changes.respelt == 1 and not result.faithful
    assert faithfulness(draft, result.text, excuses_of(result.events)).lost == ["DICTINCT"]


def test_markdown_escapes_are_excused_only_when_the_result_undid_them() -> None:
    draft = "SELECT e.event\\_name FROM event e"
    result = _guide(draft)
    assert result.text == "SELECT e.event_name FROM event e"
    assert excuses_of(result.events).formatting
    assert faithfulness(draft, result.text, excuses_of(result.events)).faithful
    assert faithfulness(draft, result.text).lost == ["event\\_name"]


def test_a_string_in_a_markdown_escaped_answer_is_the_drafts_unescaped_or_kept() -> None:
    """Escapes undone outside strings are undone inside them too (``'TR_8'``), except in a LIKE
    pattern (``%``), kept byte for byte: the draft's string either way, for the scorer as for the
    result (before, the draft read with every escape undone lost a string kept as written)."""
    draft = "SELECT e.event\\_name FROM event e WHERE e.id = 'TR\\_8' OR e.n LIKE 'a\\_%'"
    result = _guide(draft)
    assert result.text == "SELECT e.event_name FROM event e WHERE e.id = 'TR_8' OR e.n LIKE 'a\\_%'"
    assert result.faithful
    assert faithfulness(draft, result.text, excuses_of(result.events)).faithful
    assert not faithfulness(
        draft, "SELECT e.event_name FROM event e WHERE e.id = 'TR_9' OR e.n LIKE 'a\\_%'", excuses_of(result.events)
    ).faithful


def test_a_second_statement_is_excused_only_when_the_result_cut_and_named_it() -> None:
    draft = "SELECT name FROM boats WHERE len > 3; SELECT name FROM boats WHERE len > 4;"
    result = _guide(draft)
    assert result.text == "SELECT name FROM boats WHERE len > 3;"
    assert result.changes.other_answers == 1
    assert faithfulness(draft, result.text, excuses_of(result.events)).faithful
    assert faithfulness(draft, result.text).lost[:2] == ["SELECT", "name"]  # unrecorded: lost
    # A second query in a fenced block after the first: both are the answer's SQL (before, the
    # block alone was, and the first query kept was scored as added words).
    answer = "SELECT a FROM t\n```sql\nSELECT b FROM u\n```"
    assert answer_sql(answer) == "SELECT a FROM t\nSELECT b FROM u"
    result = _guide(answer)
    assert result.text == "SELECT a FROM t" and result.changes.other_answers == 1
    assert faithfulness(answer_sql(answer), result.text, excuses_of(result.events)).faithful
    assert answer_sql("Here it is:\n```sql\nSELECT b FROM u\n```") == "SELECT b FROM u"


def test_an_answer_cut_off_is_unfaithful_and_counted_apart_when_its_end_was_taken_back() -> None:
    from benchmarks.real_sql_repair import score_row
    from benchmarks.sql_sources import Answer

    draft = "SELECT a FROM t JOIN u ON t.id ="
    result = _guide(draft)
    assert result.text == "SELECT a FROM t JOIN u"  # no value invented to finish it
    excuses = excuses_of(result.events)
    assert excuses.cut_off == (" ON t.id =",)
    row = {"text": result.text, "excuses": excuses.to_dict()}
    score_row(row, Answer("f.sql", "0", "m", "sqlite", "db", draft, "NL2SQL360 spider_dev"))
    assert not row["faithful"] and row["faithful_but_cut_off"] and not row["invented_literals"]


def test_a_statement_kept_before_the_answer_loses_the_answer_and_invents_none_of_its_own_values() -> None:
    # The model's setup statement, then its answer: one statement is kept, the first; the answer
    # (the SELECT, cut as another answer) is not the output, and the INSERT's values, which the
    # model wrote, are not invented.
    from benchmarks.real_sql_repair import score_row
    from benchmarks.sql_sources import Answer

    draft = "INSERT INTO race (id, race) VALUES (6, 'Demi-God');  SELECT name FROM hero WHERE race_id = 6 LIMIT 5;"
    result = _guide(draft)
    assert result.text == "INSERT INTO race (id, race) VALUES (6, 'Demi-God');"
    row = {"text": result.text, "excuses": excuses_of(result.events).to_dict()}
    score_row(row, Answer("f.sql", "0", "m", "sqlite", "db", draft, "NL2SQL-Benchmark bird"))
    assert not row["faithful"] and row["tokens_added"][:2] == ["INSERT", "INTO"] and row["invented_literals"] == []
    # Read from the answer alone, as the score did before: the INSERT's name invented.
    alone = faithfulness(answer_sql(draft), result.text)
    assert alone.invented_literals == ["'Demi-God'"]  # (its 6 the SELECT has too)
    # A value the draft has nowhere is invented still.
    assert faithfulness(answer_sql(draft), result.text.replace("6", "7"), whole=draft).invented_literals == ["7"]


def test_a_repeated_tail_is_excused_only_where_the_output_has_every_token_of_it() -> None:
    draft = "SELECT a FROM t ORDER BY a FROM t"
    assert faithfulness(draft, "SELECT a FROM t ORDER BY a", Excuses(repeated=(" FROM t",))).faithful
    assert not faithfulness(draft, "SELECT a FROM u ORDER BY a", Excuses(repeated=(" FROM t",))).faithful
    assert not faithfulness(draft, "SELECT a FROM t ORDER BY a").faithful
    # Words the output has, but not as it has them: an alias dropped, no repetition.
    alias = "SELECT a AS n FROM t GROUP BY a HAVING COUNT(*) AS COUNT"
    assert not faithfulness(alias, alias.removesuffix(" AS COUNT"), Excuses(repeated=(" AS COUNT",))).faithful


def test_a_run_written_twice_is_excused_up_to_a_length_beyond_which_it_is_a_loop() -> None:
    # A run the draft wrote twice in a row, one copy kept: excused; a run of more lost tokens than
    # the search reads (a model's loop, searched in time cubic in its length) is a loss.
    short = "SELECT a FROM t ORDER BY a FROM t ORDER BY a DESC"
    assert faithfulness(short, "SELECT a FROM t ORDER BY a DESC").faithful
    run = " ".join(f"c{k}" for k in range(400))
    long = f"SELECT {run} FROM t WHERE {run} {run}"
    judged = faithfulness(long, f"SELECT {run} FROM t WHERE {run}")
    assert not judged.faithful and len(judged.lost) == 400


def test_a_word_written_twice_at_once_is_one_word_and_a_lone_quote_is_a_stray_mark() -> None:
    # 'DISTINCT DISTINCT' written once keeps the draft's meaning; both copies dropped do not.
    stutter = "SELECT COUNT(DISTINCT DISTINCT kind) FROM t"
    assert faithfulness(stutter, "SELECT COUNT(DISTINCT kind) FROM t").faithful
    assert faithfulness(stutter, "SELECT COUNT(kind) FROM t").lost == ["DISTINCT", "DISTINCT"]
    # Two different words, or a repeat that is no word ('1 1'), dropped: a loss.
    assert faithfulness("SELECT a b FROM t", "SELECT a FROM t").lost == ["b"]
    assert faithfulness("SELECT a FROM t WHERE b IN (1 1)", "SELECT a FROM t WHERE b IN (1)").lost == ["1"]
    # A quote mark that opens nothing at the draft's end, dropped (the result recorded it as
    # after the complete text): faithful, as a stray ')' is. A cut-open string is no stray mark.
    result = _guide('SELECT a FROM t WHERE p = 80000"')
    assert result.text == "SELECT a FROM t WHERE p = 80000" and result.faithful
    assert faithfulness('SELECT a FROM t WHERE p = 80000"', result.text, excuses_of(result.events)).faithful
    assert faithfulness("SELECT a FROM t WHERE p = 'Fr", "SELECT a FROM t WHERE p = 1").lost == ["'Fr"]
    # A quote whose string would run past the end of the code into the prose after it is a stray
    # mark: the draft's tokens after it are its own (6'0"), not one string literal.
    tall = "SELECT a FROM t WHERE h > 6'0\" AND b = 1 LIMIT 1 \\end{code}  Comment: I'm sure"
    assert [t.raw for t in sql_tokens(tall)][7:13] == ["6", "'", "0", '"', "AND", "b"]
    kept = faithfulness(tall, "SELECT a FROM t WHERE h > 6 AND b = 1 LIMIT 1")
    assert kept.invented_literals == [] and kept.added == []
    # The same where the draft's SQL was cut at its \\end{code} (the answer's code ended there,
    # the model was not cut off): the string left open to the end is a stray quote too.
    ended = "SELECT a FROM t WHERE h > 6'0\" AND b = 1 LIMIT 1"
    assert faithfulness(ended, "SELECT a FROM t WHERE h > 6 AND b = 1 LIMIT 1", code_ended=True).added == []
    assert faithfulness(ended, "SELECT a FROM t WHERE h > 6 AND b = 1 LIMIT 1").invented_literals == ["1", "1"]


def test_losses_additions_and_invented_literals() -> None:
    # A word the repair made into nothing: 'OR' dropped makes Owners an alias.
    dropped = faithfulness(
        "SELECT first_name FROM Professionals OR Owners", "SELECT first_name FROM Professionals  Owners"
    )
    assert dropped.lost == ["OR"] and not dropped.faithful
    # An operator put in beside a word: nothing dropped, but the meaning changed.
    inserted = faithfulness("SELECT a FROM t WHERE Airport TEXT = 'x'", "SELECT a FROM t WHERE Airport & TEXT = 'x'")
    assert inserted.lost == [] and inserted.added == ["&"] and not inserted.faithful
    # A ')' the draft never opened, dropped; a ')' it opened, closed: both faithful.
    assert faithfulness("SELECT a FROM t WHERE b = 'x')", "SELECT a FROM t WHERE b = 'x'").faithful
    assert faithfulness(
        "SELECT a FROM t WHERE b IN (SELECT c FROM u", "SELECT a FROM t WHERE b IN (SELECT c FROM u)"
    ).faithful
    # The END of a CASE the draft left open is a closing mark; an END the draft did not need is added.
    case = "SELECT SUM(CASE WHEN a = 1 THEN 1 ELSE 0) FROM t"
    assert faithfulness(case, "SELECT SUM(CASE WHEN a = 1 THEN 1 ELSE 0 END) FROM t").faithful
    ended = faithfulness("SELECT SUM(CASE WHEN a THEN 1 END) FROM t", "SELECT SUM(CASE WHEN a THEN 1 END END) FROM t")
    assert ended.added == ["END"] and not ended.faithful
    # A value the draft did not start: invented.
    cut = faithfulness("SELECT a FROM t WHERE b = ", "SELECT a FROM t WHERE b = 1")
    assert cut.invented_literals == ["1"] and cut.added == ["1"] and not cut.faithful
    # A value closed where the draft was cut inside it: the same value.
    assert faithfulness("SELECT a FROM t WHERE b = 'Fr", "SELECT a FROM t WHERE b = 'Fr'").faithful
    assert faithfulness("SELECT a FROM t WHERE b = 'Fr", "SELECT a FROM t WHERE b = 'France'").invented_literals
    # Text a recorded rewrite wrote is not invented.
    rewrite = Excuses(removed=("EXTRACT(YEAR FROM d)",), written=("CAST(strftime('%Y', d) AS INTEGER)",))
    judged = faithfulness(
        "SELECT EXTRACT(YEAR FROM d) FROM t", "SELECT CAST(strftime('%Y', d) AS INTEGER) FROM t", rewrite
    )
    assert judged.faithful and judged.invented_literals == []


def test_a_contractions_apostrophe_is_the_strings_only_inside_a_string() -> None:
    # Inside a string the model wrote unescaped: its text, written twice as SQLite escapes it.
    assert escape_apostrophes("WHERE b = 'Women's Soccer'") == "WHERE b = 'Women''s Soccer'"
    assert escape_apostrophes("b = 'don't' AND c = 'won't'") == "b = 'don''t' AND c = 'won''t'"
    # In prose before the query (a string opens nowhere there): left single, so the query's string
    # on the line is read as the draft wrote it, and a value the output keeps is the draft's.
    prose = "The user's question asks for 'abc'.\nSELECT a FROM t WHERE b = 'abc'"
    assert escape_apostrophes(prose) == prose
    judged = faithfulness(answer_sql(escape_apostrophes(prose)), "SELECT a FROM t WHERE b = 'abc'")
    assert judged.faithful and judged.invented_literals == []


def test_the_sql_of_a_json_answer_is_its_statements_value_and_a_foreign_comment_ends_it() -> None:
    # Qwen's chain-of-thought JSON: the statement is the value; its closing quote and brace are JSON's.
    wrapped = '{"chain_of_thought_reasoning": "First select the rows.", "SQL": "SELECT a FROM t WHERE b > 1" }'
    assert answer_sql(wrapped) == "SELECT a FROM t WHERE b > 1"
    assert answer_sql('{"SQL": "SELECT a FROM t WHERE') == "SELECT a FROM t WHERE"  # cut off: read as before
    # After a statement's own ';', a comment SQLite has no form of is no SQL (one line, as recorded).
    assert answer_sql("SELECT a FROM t WHERE b = 1; # Note: t holds the rows") == "SELECT a FROM t WHERE b = 1;"
    assert answer_sql("SELECT a FROM t; // the rows") == "SELECT a FROM t;"


def test_one_statement_validity() -> None:
    one = sqlite_oracle.check_one_statement
    assert one("SELECT a FROM t").valid  # the missing table is no syntax error
    assert one("SELECT 1;").valid and one("SELECT 1; -- done\n").valid
    assert one("SELECT 1; SELECT 2").label is sqlite_oracle.Label.INVALID
    assert one("SELECT 1; SELECT 2").message == "more than one statement"
    assert sqlite_oracle.check_script("SELECT 1; SELECT 2").valid  # valid as a script, not as one answer
    assert one("SELECT 1;;").label is sqlite_oracle.Label.INVALID  # cursor.execute refuses it too
    assert one("SELECT a FROM t WHERE").label is sqlite_oracle.Label.INVALID
    assert one("  ").label is sqlite_oracle.Label.INVALID


def _database(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE singer (name TEXT, age INTEGER, country TEXT)")
        conn.executemany(
            "INSERT INTO singer VALUES (?, ?, ?)",
            [
                ("Joe", 52, "Netherlands"),
                ("Rose", 41, "United States"),
                ("Tribal", 43, "France"),
                ("Ann", 41, "France"),
            ],
        )
    conn.close()
    return path


def test_rows_compared_with_the_gold_query(tmp_path: Path) -> None:
    db = _database(tmp_path / "concert_singer.sqlite")
    gold = "SELECT name FROM singer WHERE country = 'France'"
    reference = run_query(db, gold)
    assert sorted(reference.rows or ()) == [("Ann",), ("Tribal",)]
    assert not gold_is_ordered(gold)
    reordered = run_query(db, 'SELECT name FROM singer WHERE country = "France" ORDER BY name DESC')
    assert same_rows(reference, reordered, ordered=False)  # a multiset: order ignored
    assert not same_rows(reference, run_query(db, "SELECT name FROM singer"), ordered=False)
    doubled = run_query(db, "SELECT name FROM singer WHERE country = 'France' UNION ALL SELECT 'Ann'")
    assert not same_rows(reference, doubled, ordered=False)  # a multiset: counts matter
    ordered_gold = "SELECT name FROM singer ORDER BY age DESC, name"
    assert gold_is_ordered(ordered_gold) and not gold_is_ordered("SELECT a FROM (SELECT a FROM t ORDER BY a)")
    by_age = run_query(db, ordered_gold)
    assert same_rows(by_age, run_query(db, "SELECT name FROM singer ORDER BY age DESC, name ASC"), ordered=True)
    assert not same_rows(by_age, run_query(db, "SELECT name FROM singer ORDER BY age, name"), ordered=True)
    assert run_query(db, "SELECT avg(age) FROM singer").rows == run_query(db, "SELECT 44.25").rows
    assert run_query(db, "SELECT count(*) FROM singer").rows == run_query(db, "SELECT 4.0").rows  # 4 and 4.0
    # What cursor.execute refuses or cannot run is an error, never the rows of nothing.
    assert run_query(db, "").error and run_query(db, "SELECT 1; SELECT 2").error
    assert run_query(db, "SELECT nope FROM singer").error and not same_rows(reference, Rows(None, "x"), False)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    assert run_query(db, endless, timeout_s=0.2).error == "OperationalError: timeout"
    with sqlite3.connect(db) as conn:  # opened read-only: nothing the query does changes the file
        assert run_query(db, "DELETE FROM singer").error
        assert conn.execute("SELECT count(*) FROM singer").fetchone() == (4,)
    conn.close()


@pytest.mark.parametrize(
    ("query", "label"),
    [
        ("SELECT nope FROM singer", "no such column"),
        ("SELECT name FROM nowhere", "no such table"),
        ("SELECT name FROM singer WHERE age = MIN(age)", "misuse of an aggregate"),
        ("SELECT name FROM singer WHERE age > (41, 43)", "row value misused"),
        ("SELECT name FROM singer (age)", "a table called as a function"),
        ("SELECT count(*) FROM singer GROUP BY 1", "an aggregate in GROUP BY"),
        ("SELECT name FROM singer WHERE age IN (SELECT age, name FROM singer)", "a subquery of several columns"),
        ("SELECT name FROM singer WHERE name MATCH 'Jo%'", "a function out of its context"),
        ("SELECT name FROM singer WHERE country = ?", "parameters without values"),
        ("SELECT name FROM singer; SELECT 1", "more than one statement"),
        ("SELECT name FROM singer WHERE", "syntax error"),
        ("SELECT name FROM singer ORDER BY name UNION SELECT 'x'", "a clause out of its place"),
        ("", "no statement"),
        ("SELECT name FROM singer", None),
    ],
)
def test_an_error_is_named_by_its_class_without_the_querys_names(tmp_path: Path, query: str, label: str | None) -> None:
    db = _database(tmp_path / "concert_singer.sqlite")
    assert error_class(run_query(db, query).error) == label


def test_an_error_no_class_has_is_other() -> None:
    assert error_class("OperationalError: a message no class has") == "other"


def _nl2sql360(root: Path) -> Path:
    spider = root / "data" / "predict" / "spider_dev"
    spider.mkdir(parents=True)
    # DAIL-SQL's layout: "<answer>\t<db_id>" on every line.
    (spider / "DAILSQL.sql").write_text(
        "SELECT count(*) FROM singer\tconcert_singer\n"
        "SELECT name FROM singer WHERE country = 'France')\tconcert_singer\n"
    )
    # A 7B model's: one answer a line, no db_id (a tab inside an answer is not one), a byte that is not UTF-8.
    (spider / "Llama2-7B.sql").write_bytes(
        b"SELECT name FROM singer OR concert\nSELECT name FROM\tsinger WHERE country = 'Fr\xe9\n"
    )
    (root / "data" / "predict" / "bird_dev").mkdir()
    (root / "data" / "predict" / "bird_dev" / "SuperSQL.sql").write_text("SELECT a FROM t WHERE b = \n")
    return root


def _spider(root: Path) -> Path:
    (root / "database" / "database" / "concert_singer").mkdir(parents=True)
    _database(root / "database" / "database" / "concert_singer" / "concert_singer.sqlite")
    dev = [
        {"db_id": "concert_singer", "query": "SELECT count(*) FROM singer", "question": "How many singers?"},
        {"db_id": "concert_singer", "query": "SELECT name FROM singer WHERE country = 'France'", "question": "French?"},
    ]
    (root / "database" / "dev.json").write_text(json.dumps(dev))
    return root


def test_nl2sql360_and_spider_readers(tmp_path: Path) -> None:
    clone = _nl2sql360(tmp_path / "nl2sql360")
    gold = load_spider_gold(_spider(tmp_path / "spider"))
    assert gold.database("concert_singer") is not None and gold.database("wta_1") is None
    answers = load_nl2sql360(clone, "spider_dev", [q["db_id"] for q in gold.questions])
    assert [(a.source, a.key, a.db_id, a.collection) for a in answers] == [
        ("DAILSQL.sql", "0", "concert_singer", "NL2SQL360 spider_dev"),
        ("DAILSQL.sql", "1", "concert_singer", "NL2SQL360 spider_dev"),
        ("Llama2-7B.sql", "0", "concert_singer", "NL2SQL360 spider_dev"),
        ("Llama2-7B.sql", "1", "concert_singer", "NL2SQL360 spider_dev"),
    ]
    assert answers[1].text.endswith("'France')") and "\t" in answers[3].text and "\ufffd" in answers[3].text
    assert [a.text for a in load_nl2sql360(clone, "bird_dev")] == ["SELECT a FROM t WHERE b = "]


def test_command_line_on_nl2sql360_and_spider(tmp_path: Path) -> None:
    clone = _nl2sql360(tmp_path / "nl2sql360")
    spider = _spider(tmp_path / "spider")
    fixes, out = tmp_path / "fixes.json", tmp_path / "out"
    fix = {"collection": "NL2SQL360 spider_dev", "source": "DAILSQL.sql", "key": "1", "reason": "stray ')'"}
    fixes.write_text(json.dumps({"fixes": [{**fix, "fix": "SELECT name FROM singer WHERE country = 'France'"}]}))
    payload = main(
        ["--nl2sql360", str(clone), "--spider", str(spider), "--hand-fixes", str(fixes), "--results-dir", str(out)]
    )
    counts = payload["settings"]["collections"]
    assert counts["NL2SQL360 spider_dev"] == {"answers": 4, "rejected": 3, "replayed": 3}
    assert (
        counts["NL2SQL360 bird_dev"]["rejected"] == 1
        and payload["settings"]["split"]["NL2SQL360 bird_dev"] == "held-out"
    )
    assert list(payload["methods"]) == ["ours (target=False)", "sqlglot.transpile"]
    assert set(payload["by_split"]) == {"dev", "held-out"}
    ours = payload["rows"]["ours (target=False)"]
    bird = next(i for i, a in enumerate(payload["items"]) if a["collection"] == "NL2SQL360 bird_dev")
    assert ours[bird]["invented_literals"] == 0  # 'b = ' is never finished with a value it made up
    executed = payload["execution_rows"]
    stray = next(i for i, a in enumerate(payload["items"]) if a["source"] == "DAILSQL.sql")
    assert executed["hand fix (slip only)"][str(stray)]["gold_rows"] is True
    assert executed["ours (target=False)"][str(stray)]["gold_rows"] is True  # the stray ')' dropped
    assert executed["unrepaired"][str(stray)]["gold_rows"] is False
    assert "| hand fix (slip only) | 1 |" in payload["execution_sample"]
    assert "| faithful, fails when run |" in payload["execution"].splitlines()[0]
    assert payload["execution_errors"].splitlines()[0].startswith("| error | ours (target=False) |")
    written = (out / "real_sql_repair.json").read_text()
    assert "France')" not in written and "OR concert" not in written  # ids and scores, not answers


def test_a_clause_written_twice_in_a_row_is_lost_only_where_both_copies_are() -> None:
    draft = "SELECT a FROM t ORDER BY x FROM t ORDER BY x DESC"
    assert faithfulness(draft, "SELECT a FROM t ORDER BY x DESC").faithful
    assert faithfulness(draft, "SELECT a FROM t ORDER BY x").lost == ["DESC"]
    assert faithfulness(draft, "SELECT a").lost == ["FROM", "t", "ORDER", "BY", "x"] * 2 + ["DESC"]


def test_markdown_escapes_inside_a_string_are_the_drafts_value_not_formatting() -> None:
    # The result undoes 'atom\_id' and 'COUNT(\*)', and the string's 'TR004\_8' with them: the
    # draft's value, not an invented one; kept as written, it is the draft's value too.
    draft = "SELECT COUNT(\\*) FROM connected WHERE atom\\_id = 'TR004\\_8'"
    result = _guide(draft)
    assert result.text == "SELECT COUNT(*) FROM connected WHERE atom_id = 'TR004_8'"
    excuses = excuses_of(result.events)
    judged = faithfulness(draft, result.text, excuses)
    assert judged.faithful and judged.invented_literals == []
    kept = faithfulness(draft, "SELECT COUNT(*) FROM connected WHERE atom_id = 'TR004\\_8'", excuses)
    assert kept.faithful and kept.invented_literals == []


def test_a_closing_fence_then_prose_in_a_fence_pair_leaves_the_sql_before_it() -> None:
    # Mixtral's answers on BIRD: the SQL, a closing fence, prose, and another fence. The SQL is
    # what comes before the first fence, not the prose between the fences.
    answer = " SELECT a FROM t WHERE b = 'x' AND c = 2009;\n```\n\nThis query returns a with b 'x'.\n```"
    assert answer_sql(answer) == "SELECT a FROM t WHERE b = 'x' AND c = 2009;"
    assert answer_sql("```sql\nSELECT a FROM t\n```\nThis returns a.") == "SELECT a FROM t"
    judged = faithfulness(answer_sql(answer), "SELECT a FROM t WHERE b = 'x' AND c = 2009;")
    assert judged.faithful and judged.invented_literals == []


def test_a_word_alone_between_two_queries_joins_them_and_is_no_prose() -> None:
    """Llama-3's ``MINUS`` (Oracle's EXCEPT) on its own line between two queries: read as prose
    before, so an output that dropped it and the second query was scored faithful (BIRD mini-dev;
    the result said "1 dropped")."""
    answer = "SELECT a FROM t\n\nMINUS\n\nSELECT a FROM u;"
    assert answer_sql(answer) == answer
    assert not faithfulness(answer_sql(answer), "SELECT a FROM t").faithful
    assert answer_sql("SELECT a FROM t;\n\nExplanation:\n\n1. We select a.") == "SELECT a FROM t;"


def test_a_rewrite_excuses_the_tokens_it_took_away_where_it_took_them_not_the_same_spelling_elsewhere() -> None:
    rewrite = Excuses(removed=("EXTRACT(YEAR FROM d)",), written=("CAST(strftime('%Y', d) AS INTEGER)",))
    draft = "SELECT EXTRACT(YEAR FROM d) FROM t WHERE f(d) = 1"
    assert faithfulness(draft, "SELECT CAST(strftime('%Y', d) AS INTEGER) FROM t WHERE f(d) = 1", rewrite).faithful
    dropped = faithfulness(draft, "SELECT CAST(strftime('%Y', d) AS INTEGER) FROM t WHERE f = 1", rewrite)
    assert dropped.lost == ["(", "d", ")"]
    # A removed text the draft no longer has as written (an earlier change inside it) excuses by spelling.
    respelt = Excuses(removed=("EXTRACT(YEAR FROM dd)",), written=("CAST(strftime('%Y', d) AS INTEGER)",))
    assert faithfulness(draft, "SELECT CAST(strftime('%Y', d) AS INTEGER) FROM t WHERE f(d) = 1", respelt).faithful


def test_a_rewrite_excuses_the_tokens_it_wrote_where_it_wrote_them_not_the_same_spelling_elsewhere() -> None:
    # dev 6: 'RIGHT,(e."Examination Date", 5)' beside a rewrite's 'substr(p.Birthday, -5)': the
    # rewrite's comma had excused the one inserted between RIGHT and its bracket.
    rewrite = Excuses(removed=("RIGHT(p.b, 5)",), written=("substr(p.b, -5)",))
    draft = "SELECT (RIGHT(e.d, 5) < RIGHT(p.b, 5)) FROM t"
    assert faithfulness(draft, "SELECT (RIGHT(e.d, 5) < substr(p.b, -5)) FROM t", rewrite).faithful
    inserted = faithfulness(draft, "SELECT (RIGHT,(e.d, 5) < substr(p.b, -5)) FROM t", rewrite)
    assert inserted.added == [","] and not inserted.faithful
    # The alignment may put a written token beside the run, where a like one stands: still the run's.
    cast = Excuses(removed=("(SUM(a) * 100)::numeric",), written=("CAST((SUM(a) * 100) AS REAL)",))
    assert faithfulness(
        "SELECT ROUND((SUM(a) * 100)::numeric, 4) FROM t", "SELECT ROUND(CAST((SUM(a) * 100) AS REAL), 4) FROM t", cast
    ).faithful
    moved = Excuses(removed=("WHERE a.n = 1 JOIN s ON h.i = s.id",), written=("JOIN s ON h.i = s.id WHERE a.n = 1",))
    clauses = "SELECT s.x FROM h JOIN a ON h.a = a.id WHERE a.n = 1 JOIN s ON h.i = s.id"
    assert faithfulness(
        clauses, "SELECT s.x FROM h JOIN a ON h.a = a.id JOIN s ON h.i = s.id WHERE a.n = 1", moved
    ).faithful
    # A written text the output no longer has as written (an edit inside it since) excuses by spelling.
    respelt = Excuses(removed=("RIGHT(p.b, 5)",), written=("substr(p.bb, -5)",))
    assert faithfulness(draft, "SELECT (RIGHT(e.d, 5) < substr(p.b, -5)) FROM t", respelt).added == []


def test_the_drafts_sql_ends_at_its_own_semicolon_where_prose_follows_on_the_line() -> None:
    answer = "SELECT COUNT(*) FROM singer;  Write Sql for the following question: How many? Answer : SELECT 1;"
    assert answer_sql(answer) == "SELECT COUNT(*) FROM singer;"
    assert answer_sql("SELECT a FROM t WHERE b = 'x; How are you' ") == "SELECT a FROM t WHERE b = 'x; How are you'"
    assert answer_sql("SELECT a FROM t; SELECT b FROM u") == "SELECT a FROM t; SELECT b FROM u"  # the result's to cut


def test_a_square_bracket_tags_close_ends_the_drafts_sql() -> None:
    assert answer_sql("  [SOL] SELECT COUNT(*) FROM t; [/SOL]") == "SELECT COUNT(*) FROM t;"


def test_answer_sql_reads_inline_code_and_ends_before_a_sentence_sqlite_ends_it_at() -> None:
    # Markdown's inline code holds the answer, after prose or a runner's lone SELECT.
    assert answer_sql("The query is `SELECT name FROM singer`. It lists names.") == "SELECT name FROM singer"
    assert answer_sql(" SELECT `SELECT COUNT(*) FROM t;`  Write Sql for it") == "SELECT COUNT(*) FROM t;"
    assert answer_sql("SELECT `name` FROM `singer`") == "SELECT `name` FROM `singer`"  # quoted names
    # A name quoted inside the code is part of it; code left open runs to the answer's end.
    quoted = " SELECT `SELECT id FROM p WHERE `T-CHO` < 250;`   Write Sql for it"
    assert answer_sql(quoted) == "SELECT id FROM p WHERE `T-CHO` < 250;"
    assert answer_sql(" SELECT `SELECT q1 FROM r WHERE id = 3") == "SELECT q1 FROM r WHERE id = 3"
    # A sentence after a statement SQLite accepts whole (no ';' between): a base model going on.
    run_on = (
        " SELECT COUNT(1) FROM c WHERE Score > 60 Write Sql for the following question: How many? Answer : SELECT 1"
    )
    assert answer_sql(run_on) == "SELECT COUNT(1) FROM c WHERE Score > 60"
    # Not where the text before the sentence is no whole statement (the words may be the query's).
    assert answer_sql("SELECT a FROM t WHERE Name is the best") == "SELECT a FROM t WHERE Name is the best"
    # A sentence of words alone to its stop ends even a statement SQLite rejects.
    slip = " SELECT COUNT(ID) where a > 1 / COUNT(ID) where b = 2  Write Sql for the following question: Why? Answer"
    assert answer_sql(slip) == "SELECT COUNT(ID) where a > 1 / COUNT(ID) where b = 2"
    assert answer_sql("SELECT a FROM t WHERE Name is the best.") == "SELECT a FROM t WHERE Name is the best."
    # Names with spaces written bare, then code, are no sentence (held-out 2's glm-4, read in session
    # 23: its SQL had been read as ending at 'frpm.Educational', and its literals after as invented).
    spaced = "SELECT frpm.School Name, frpm.Educational Option Type FROM frpm WHERE frpm.County Code = '37';"
    assert answer_sql(spaced) == spaced
    assert answer_sql("SELECT COUNT(*) FROM United Airlines flights WHERE x = 1") == (
        "SELECT COUNT(*) FROM United Airlines flights WHERE x = 1"
    )


def test_a_sentences_select_is_no_start_of_the_drafts_sql() -> None:
    # Held-out 6 (read as dev 6): 'select the corresponding id from the sets table.' in the reasoning
    # before the query was scored as the start of the draft's SQL, and the output, the query alone,
    # as losing those words.
    reasoning = "To find it, we then select the corresponding id from the sets table.  **Answer:**  "
    assert answer_sql(reasoning + "SELECT id FROM sets;") == "SELECT id FROM sets;"
    steps = "We count. 1. **Select Data:** Use a SELECT statement to read it. **Answer:** "
    assert answer_sql(steps + "SELECT COUNT(*) FROM m") == "SELECT COUNT(*) FROM m"
    assert answer_sql("select name from singer") == "select name from singer"
    # Code quoted in the reasoning is not the answer where a label gives it (dev 6).
    quoted = "1. **SELECT COUNT(*)**: This counts rows. 2. Use `SELECT a FROM t`.  **Answer:** "
    assert answer_sql(quoted + "SELECT COUNT(*) FROM t WHERE b > 6;") == "SELECT COUNT(*) FROM t WHERE b > 6;"
