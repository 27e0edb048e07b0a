"""benchmarks/real_sql_repair.py's parts on small answers written here, of the kinds real models
give on BIRD mini-dev (Markdown escapes, PostgreSQL casts, backslash-escaped quotes, prose after
the query, answers cut at a stop string). No timings are asserted."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from benchmarks._replay_draft import ReplayDraft
from benchmarks.draft_shapes import draft_shape
from benchmarks.real_sql_repair import (
    Answer,
    answer_sql,
    compare,
    dialect_table,
    edit_size,
    goals_table,
    gold_question,
    interleave,
    load_answers,
    load_hand_fixes,
    main,
    run_ours,
    run_sqlglot,
    score,
    sqlite_rejects,
)

SEP = "\t----- bird -----\t"
ANSWERS = {
    "predict_mini_dev_gpt-4_postgresql.json": [
        "SELECT COUNT(id)::FLOAT / 2 FROM posts",  # rejected: PostgreSQL cast
        "SELECT name FROM users",  # valid
    ],
    "predict_mini_dev_mistralai-mixtral-8x7b-instru-4_sqlite.json": [
        " SELECT COUNT(\\*)\nFROM event e\nWHERE e.event\\_name = 'Soccer';",  # rejected: Markdown escapes
        "SELECT COUNT(*) FROM member WHERE event_name = 'Women\\'s Soccer'",  # rejected: backslash quote
        "SELECT a.atom_id FROM atom a WHERE a.element = '",  # rejected: cut at the stop string '#'
    ],
}


def _clone(tmp_path: Path) -> Path:
    folder = tmp_path / "llm" / "exp_result" / "sql_output_kg"
    folder.mkdir(parents=True)
    for name, texts in ANSWERS.items():
        data = {str(i): f"{t}{SEP}db{i}" for i, t in enumerate(texts)}
        (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


def test_reads_a_clone_and_keeps_what_sqlite_rejects(tmp_path: Path) -> None:
    answers = load_answers(_clone(tmp_path))
    assert [(a.model, a.dialect, a.key, a.db_id) for a in answers][:2] == [
        ("gpt-4", "postgres", "0", "db0"),
        ("gpt-4", "postgres", "1", "db1"),
    ]
    assert answers[2].model == "mistralai-mixtral-8x7b-instru-4" and answers[2].dialect == "sqlite"
    rejected = sqlite_rejects(answers + answers)  # distinct texts only
    assert [a.text for a in rejected] == [
        ANSWERS["predict_mini_dev_gpt-4_postgresql.json"][0],
        *ANSWERS["predict_mini_dev_mistralai-mixtral-8x7b-instru-4_sqlite.json"],
    ]
    # A limit takes from each file in turn.
    assert [a.model[:5] for a in interleave(rejected, 3)] == ["gpt-4", "mistr", "mistr"]
    assert interleave(rejected, 2, skip=1) == interleave(rejected, 3)[1:]  # a held-out set after them


def test_the_sql_an_answer_means() -> None:
    assert answer_sql("Here it is:\n```sql\nSELECT 1\n```\nDone.") == "SELECT 1"
    assert answer_sql("The query: SELECT a FROM t") == "SELECT a FROM t"
    assert answer_sql("SELECT a\nFROM t;\n\nThis SQL query counts rows.") == "SELECT a\nFROM t;"
    assert answer_sql("SELECT a\n\nFROM t") == "SELECT a\n\nFROM t"  # a keyword after the blank line
    assert answer_sql("SELECT a\nFROM t\n```") == "SELECT a\nFROM t"  # a closing fence alone
    # Prose between a closing fence and another, and a sentence after a whole statement (with a
    # bracket or '=' in it): not the answer (the result cut them; before, read as the answer's SQL).
    assert answer_sql("SELECT a FROM t;\n```\n\nThis query returns a.\n```") == "SELECT a FROM t;"
    assert answer_sql("SELECT a FROM t;\n\nThis returns a (where b = 1).") == "SELECT a FROM t;"
    assert answer_sql("SELECT a FROM t;\n```\nThis query with t returns a.\n```") == "SELECT a FROM t;"
    assert answer_sql("SELECT a FROM t;\n\n(Note: a is assumed to exist.)") == "SELECT a FROM t;"
    cte = "WITH a AS (SELECT 1),\n\nmax_salaries AS (SELECT 2)\nSELECT * FROM a"
    assert answer_sql(cte) == cte  # a CTE after a blank line is not prose
    # Markup that ends a code block ends the SQL, as a closing fence does (a forum thread after it).
    assert answer_sql("SELECT a FROM t ) \\end{code} Comment: which table?") == "SELECT a FROM t )"
    assert answer_sql("<code>SELECT a FROM t</code> Here") == "SELECT a FROM t"
    assert answer_sql("SELECT a FROM t;<|im_end|>") == "SELECT a FROM t;"  # an end of turn written out
    # A full stop after a whole statement is the sentence's; a qualifier's point or a number's is not.
    assert answer_sql("SELECT a FROM t WHERE b = 'x'.") == "SELECT a FROM t WHERE b = 'x'"
    assert answer_sql("SELECT a FROM t.") == "SELECT a FROM t."
    assert answer_sql("SELECT 1.") == "SELECT 1."
    # A fenced block after the SQL that holds no SQL (prose, a tagged closing fence) is not it.
    assert answer_sql("SELECT a FROM t\n```sql\n\nThis query lists a.\n```") == "SELECT a FROM t"
    # Prose after a blank line that begins as a sentence, brackets in it or not.
    assert answer_sql("SELECT a FROM t;\n\nThis SQL query will return a (the id).") == "SELECT a FROM t;"
    assert answer_sql("SELECT a FROM t;\n\n(Note: The a_id values are placeholders.)") == "SELECT a FROM t;"
    # 'with' in prose does not begin a statement; WITH before a CTE does.
    assert answer_sql("Here it is, with the title 'x':\n\nSELECT a FROM t") == "SELECT a FROM t"


def test_names_and_literals_kept_and_invented() -> None:
    answer = "SELECT COUNT(\\*) FROM event e WHERE e.event\\_name = 'Women\\'s Soccer' AND EXTRACT(YEAR FROM d) > 2019"
    fixed = (
        "SELECT COUNT(*) FROM event e WHERE e.event_name = 'Women''s Soccer'"
        " AND CAST(strftime('%Y', d) AS INTEGER) > 2019"
    )
    same = compare(answer, fixed)
    assert same["lost"] == [] and same["invented"] == [] and same["intact"]  # '%Y' is a literal, not a name
    cut = compare(answer, "SELECT COUNT(*) FROM event e WHERE e.event_name = 'Women'")
    assert not cut["intact"] and "l:Women's Soccer" in cut["lost"] and "n:d" in cut["lost"]
    assert 0 < cut["kept"] < 1
    glued = compare("SELECT a FROM t", "SELECT aHERE FROM t")
    assert glued["invented"] == ["ahere"] and not glued["intact"]
    assert compare("SELECT x::FLOAT FROM t", "SELECT CAST(x AS FLOAT) FROM t")["intact"]
    assert compare("SELECT COUNT(*) FROM order", 'SELECT COUNT(*) FROM "order"')["intact"]  # the answer's word
    assert compare("SELECT a FROM t WHERE b = '", "SELECT a FROM t WHERE b = 'B'")["intact"]  # cut in a string
    apostrophe = "SELECT a FROM t WHERE n = 'Women's Soccer' AND m = 'Medium'"
    assert compare(apostrophe, "SELECT a FROM t WHERE n = 'Women''s Soccer' AND m = 'Medium'")["intact"]
    assert compare(apostrophe, "SELECT a FROM t WHERE n = 'Women'")["lost"] == ["l:Medium", "l:Women's Soccer", "n:m"]
    assert edit_size("SELECT  a\nFROM t", "SELECT a FROM t") == 0


def test_replayed_answer_continues_from_a_repaired_prefix() -> None:
    draft = ReplayDraft("SELECT e.event\\_name FROM event e WHERE x = 'it\\'s'")
    assert draft.continue_from("") == draft.answer
    assert draft.continue_from("SELECT e.event_name FROM event") == " e WHERE x = 'it\\'s'"
    assert draft.continue_from("SELECT e.event\\_na") == "me FROM event e WHERE x = 'it\\'s'"
    assert draft.continue_from("SELECT nothing like it") == ""
    # After a cut introduction the prefix's lexemes stand later in the answer than their count
    # says: the whole answer was read, and a tail that repeats earlier is not given again.
    intro = ReplayDraft("To count them we can use the following SQL query:  SELECT a FROM t WHERE f(b) > 0 OR g(b) > 0")
    assert intro.continue_from("SELECT a FROM t WHERE f(b) > 0 OR g(b) > 0") == ""
    # A fence's backticks are a lexeme of their own, not the start of a quoted name running on
    # to the closing fence (the answer inside was then one lexeme, and nothing continued it).
    fenced = ReplayDraft("Sure! ```sql\nSELECT name FROM users WHERE name ILIKE 'a%' LIMT 5\n```")
    assert fenced.continue_from("SELECT name FROM users WHERE name LIKE 'a%' LI") == "MT 5\n```"


def test_methods_run_and_are_scored() -> None:
    items = [
        Answer("f.json", "0", "m", "postgres", "db", "SELECT id::FLOAT / 2 FROM posts"),
        Answer("f.json", "1", "m", "sqlite", "db", "SELECT a FROM t WHERE b = 'x"),
    ]
    glot = run_sqlglot(items)
    assert glot[0]["text"] == "SELECT CAST(id AS REAL) / 2 FROM posts" and glot[1]["error"]
    ours = run_ours(items, {}, target=False)
    assert ours[0]["text"] == "SELECT CAST(id AS FLOAT) / 2 FROM posts"
    summary = score(ours, items)
    assert ours[0]["valid"] and ours[0]["intact"]
    assert ours[0]["corrections"] == 1 and summary["answers"] == 2 and summary["valid"] >= 1
    assert score(glot, items)["errors"] == 1
    table = dialect_table({"ours": ours, "sqlglot": glot}, items)
    assert "| postgres | 1 | 1 / 1 | 1 / 1 |" in table


def test_the_unfaithful_answers_are_told_apart_by_what_the_model_wrote() -> None:
    assert draft_shape("sql placeholder") == "no query"
    assert draft_shape("SELECT a FROM t WHERE b IN (SELECT c FROM u WHERE d =") == "cut off"
    assert draft_shape("SELECT a FROM t WHERE b IN (SELECT c FROM u)") == "query"
    loop = "SELECT a FROM t WHERE " + " AND ".join(["b = 'x' AND c = 1"] * 3)
    assert draft_shape(loop) == "repeats itself"
    cut = [Answer("f.json", "0", "m", "sqlite", "db", "SELECT a FROM t WHERE b =")]
    assert score(run_ours(cut, {}, target=False), cut)["unfaithful_shapes"] == {"cut off": 1}


def test_command_line_on_a_clone(tmp_path: Path) -> None:
    clone = _clone(tmp_path / "clone")
    questions = tmp_path / "mini_dev_sqlite.json"
    questions.write_text(json.dumps([{"question": f"question {i}", "db_id": "db"} for i in range(3)]))
    payload = main(
        [str(clone), "--quick", "--no-target", "--questions", str(questions), "--results-dir", str(tmp_path / "out")]
    )
    assert payload["settings"]["rejected"] == 4 and payload["settings"]["replayed"] == 4
    assert payload["settings"]["questions"] is True
    assert list(payload["methods"]) == ["ours (target=False)", "sqlglot.transpile"]  # --quick: no 0.0.11
    assert (tmp_path / "out" / "real_sql_repair.json").is_file()
    assert "| postgres | 1 |" in payload["by_dialect"]
    written = (tmp_path / "out" / "real_sql_repair.json").read_text()
    assert all(answer not in written for texts in ANSWERS.values() for answer in texts)  # ids, not answers


def test_a_run_replays_the_answers_an_earlier_run_left_invalid(tmp_path: Path) -> None:
    clone = _clone(tmp_path / "clone")
    first = main([str(clone), "--quick", "--no-target", "--results-dir", str(tmp_path / "a")])
    rows = first["rows"]["ours (target=False)"]
    assert all(len(row["text_sha1"]) == 12 for row in rows)  # outputs compared without their text
    written = json.loads((tmp_path / "a" / "real_sql_repair.json").read_text())
    written["rows"]["ours (target=False)"][2]["valid"] = False  # as if this one were left invalid
    (tmp_path / "a" / "real_sql_repair.json").write_text(json.dumps(written))
    args = ["--invalid-in", str(tmp_path / "a" / "real_sql_repair.json"), "--results-dir", str(tmp_path / "b")]
    again = main([str(clone), "--quick", "--no-target", *args])
    assert again["items"] == [first["items"][2]]
    assert again["rows"]["ours (target=False)"][0]["text_sha1"] == rows[2]["text_sha1"]


def test_answers_to_spider_questions_are_executed_by_their_question(tmp_path: Path) -> None:
    from benchmarks.real_sql_repair import SPIDER
    from benchmarks.sql_sources import VERISQL_COLLECTION, SpiderGold

    (tmp_path / "pets_1").mkdir()
    (tmp_path / "pets_1" / "pets_1.sqlite").write_bytes(b"x" * 2048)
    gold = SpiderGold([{"question": "q", "query": "SELECT 1", "db_id": "pets_1"}] * 3, tmp_path)
    verisql = Answer("m_k=5.json", "2.4", "m", "sqlite", "pets_1", "SELECT", VERISQL_COLLECTION)
    assert gold_question(verisql, gold) == 2  # '<question>.<candidate>'
    assert gold_question(Answer("f.sql", "1", "m", "sqlite", "pets_1", "x", SPIDER), gold) == 1
    assert gold_question(Answer("f.sql", "1", "m", "sqlite", "car_1", "x", SPIDER), gold) is None
    assert gold_question(Answer("f.json", "1", "m", "sqlite", "pets_1", "x"), gold) is None  # BIRD: no Spider gold


def test_hand_fixes_are_read_from_every_file_there_is(tmp_path: Path) -> None:
    for name, key in (("a.json", "1"), ("b.json", "2")):
        fix = {"collection": "c", "source": "s", "key": key, "fix": "SELECT " + key, "reason": "r"}
        (tmp_path / name).write_text(json.dumps({"fixes": [fix]}), encoding="utf-8")
    fixes = load_hand_fixes([tmp_path / "a.json", tmp_path / "b.json", tmp_path / "absent.json"])
    assert sorted(f["fix"] for f in fixes.values()) == ["SELECT 1", "SELECT 2"]


def test_the_goals_say_how_many_are_faithful_where_sqlite_has_a_form() -> None:
    items = [
        Answer("f.json", "0", "m", "sqlite", "db", "SELECT a FROM t JOIN LATERAL (SELECT 1 FROM u WHERE u.k = t.k) x"),
        Answer("f.json", "1", "m", "sqlite", "db", "SELECT a FROM t WHERE b = 1)"),
    ]
    items = [replace(a, collection="NL2SQL360 spider_dev") for a in items]
    rows = run_ours(items, {}, target=False)
    summary = score(rows, items)
    assert summary["unfaithful_shapes"] == {"no SQLite form": 1}
    assert "that use no construct without a SQLite form: 100% (1/1)" in goals_table(rows, items, None)
