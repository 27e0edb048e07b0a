"""benchmarks.sql_sources' readers of the second held-out split's sources, on small clones laid out as
theirs are: Qiqi-sweety/LLM-NL2SQL (``output/<split>/<org>/<model>[/<variant>]/dev_pred.sql`` beside
the gold ``dev_pred_gt.sql``, the questions in ``data/<split>/dev.json``; one clone a bare git directory
whose last commit removed ``output/`` as the real one's did) and THU-BPM/chatgpt-sql
(``<variant>/predict*.json``); the third's, AlibabaResearch/DAMO-ConvAI
(``bird/llm/exp_result/turbo_output[_kg]/predict_dev.json``); held-out 5's, awaisaziz/uncertainity-text2sql
(``outputs/llm/<model>_k=<n>.json``); held-out 6's, Artessay/NL2SQL-Benchmark
(``output/<split>/<method>/<org>/<model>/<linker>/dev_pred.sql``); and real_sql_repair's ``--llm-nl2sql``,
``--chatgpt-sql``, ``--bird-turbo``, ``--verisql`` and ``--nl2sql-bench``; held-out 7's, BeachWang/DAIL-SQL
(``results/BIRD_WITH_EVIDENCE-*.txt``, BIRD dev's databases from another clone's ``data/bird/dev.json``)
and samlhuillier/text-sql-with-execution-evaluation (``lamini/output_sql_queries.txt``), and
``--dail-sql``, ``--bird-dev`` and ``--lamini``. The answers are written here."""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import pytest

from benchmarks.real_sql_repair import Answer, gold_question, main, run_sqlglot
from benchmarks.sql_sources import (
    SpiderGold,
    bird_dev_db_ids,
    load_bird_turbo,
    load_chatgpt_sql,
    load_dail_sql_bird,
    load_lamini_spider,
    load_llm_nl2sql,
    load_nl2sql_bench,
    load_verisql,
)

PREDICTIONS = {
    "output/bird/Qwen/Qwen1.5-7B-Chat/dev_pred.sql": "SELECT name FROM t WHERE a = 1 OR\nSELECT count(*) FROM t\n",
    # A variant of the same model (a schema filter); a tab inside an answer is the answer's own.
    "output/bird/THUDM/glm-4-9b-chat/BertFilter/dev_pred.sql": "SELECT a FROM\tt\nSELECT b FROM u WHERE\n",
    "output/bird/THUDM/glm-4-9b-chat/BertFilter/dev_pred_gt.sql": "SELECT gold FROM t\tdb_a\n",  # the gold: no answer
    "output/spider/defog/sqlcoder-34b-alpha/dev_pred.sql": ";\n",  # ';': generation failed
}
CHATGPT = {
    # The model's text after the prompt's closing SELECT (once with a SELECT of its own).
    "spider/predict.json": [" name FROM singer WHERE", "SELECT count(*)\nFROM singer"],
    "spider-cg/predict-app.json": [" age FROM singer ORDER BY"],
}
BIRD_TURBO = {
    # mini-dev's layout: the answer, the separator, the database; a failed request is a number.
    "bird/llm/exp_result/turbo_output/predict_dev.json": {
        "0": "SELECT name FROM t WHERE\t----- bird -----\tdb_a",
        "1": 0,
    },
    "bird/llm/exp_result/turbo_output_kg/predict_dev.json": {
        "0": "SELECT name FROM t\t----- bird -----\tdb_a",
        "1": "SELECT count(*) FROM u ORDER\t----- bird -----\tdb_b",
    },
    "bird/llm/data/dev.json": [{"db_id": "db_a"}],  # the questions: no answer
}
VERISQL = {
    # One run per model and number of candidates asked; a reply the runner could not read has none.
    "outputs/llm/deepseek_chat_k=2.json": {
        "default_model": "deepseek-chat",
        "generated": [
            {
                "id": 0,
                "db_id": "concert_singer",
                "question": "q0",
                "candidates": [{"sql": "SELECT name FROM singer WHERE"}, {"sql": "SELECT count(*) FROM singer"}],
            },
            {"id": 1, "db_id": "pets_1", "question": "q1", "candidates": []},
        ],
    },
    "outputs/llm/gpt-5-mini_k=1.json": {
        "default_model": "gpt-5-mini",
        "generated": [
            {
                "id": 0,
                "db_id": "concert_singer",
                "question": "q0",
                "candidates": [{"sql": "SELECT age FROM singer ORDER"}],
            }
        ],
    },
    "outputs/reranked/deepseek_chat_k=2_reranked.json": {"generated": []},  # picks among the same: not read
}
R1_70B = "output/bird/Base/DeepSeek/DeepSeek-R1-70B/VanillaLinker"
CODER_7B = "output/spider/Agent/Qwen/Qwen2.5-Coder-7B-Instruct/VanillaLinker"
NL2SQL_BENCH = {
    # output/<split>/<method>/<org>/<model>/<linker>/dev_pred.sql, one answer a line, ';' for an empty reply.
    f"{R1_70B}/dev_pred.sql": "SELECT a FROM t WHERE\nSELECT count(*) FROM u\n",
    f"{R1_70B}/dev_pred_gt.sql": "SELECT gold FROM t\tdb_a\n",  # the gold: no answer
    "output/bird/CoT/Qwen/Qwen2.5-32B-Instruct/SchemaInfo/dev_pred.sql": "",  # a run stopped before its first answer
    f"{CODER_7B}/dev_pred.sql": "SELECT name FROM singer ORDER\n;\n",
    # Copies of BIRD mini-dev's baselines: not read.
    "mini/exp_result/sql_output_kg/predict_mini_dev_gpt-4_sqlite.json": '{"0": "SELECT x FROM"}',
    "data/bird/dev.json": '[{"db_id": "db_a", "question": "q0"}, {"db_id": "db_b", "question": "q1"}]',
    "data/spider/dev.json": '[{"db_id": "concert_singer", "question": "q0"}, {"db_id": "pets_1", "question": "q1"}]',
}
QUESTIONS = {
    "data/bird/dev.json": [{"db_id": "db_a", "question": "q0"}, {"db_id": "db_b", "question": "q1"}],
    "data/spider/dev.json": [{"db_id": "concert_singer", "question": "q0"}],
}


def _work_tree(root: Path) -> Path:
    for path, text in PREDICTIONS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    for path, questions in QUESTIONS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(json.dumps(questions), encoding="utf-8")
    return root


def _git(work: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, cwd=work, capture_output=True, text=True, check=True).stdout.strip()


def _bare_clone(root: Path) -> tuple[Path, str]:
    """A bare clone whose HEAD has no ``output/``, and the commit before that had it."""
    work = _work_tree(root / "work")
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "results")
    with_output = _git(work, "rev-parse", "HEAD")
    _git(work, "rm", "-q", "-r", "output")
    _git(work, "commit", "-q", "-m", "remove output result")
    _git(root, "clone", "-q", "--bare", str(work), "bare")
    return root / "bare", with_output


def _summary(answers: list) -> list[tuple[str, str, str, str, str]]:
    return [(a.source, a.key, a.model, a.db_id, a.collection) for a in answers]


def test_reads_the_predictions_and_not_the_gold_from_a_work_tree(tmp_path: Path) -> None:
    answers = load_llm_nl2sql(_work_tree(tmp_path), "bird")
    assert _summary(answers) == [
        ("Qwen/Qwen1.5-7B-Chat/dev_pred.sql", "0", "Qwen/Qwen1.5-7B-Chat", "db_a", "LLM-NL2SQL bird"),
        ("Qwen/Qwen1.5-7B-Chat/dev_pred.sql", "1", "Qwen/Qwen1.5-7B-Chat", "db_b", "LLM-NL2SQL bird"),
        ("THUDM/glm-4-9b-chat/BertFilter/dev_pred.sql", "0", "THUDM/glm-4-9b-chat", "db_a", "LLM-NL2SQL bird"),
        ("THUDM/glm-4-9b-chat/BertFilter/dev_pred.sql", "1", "THUDM/glm-4-9b-chat", "db_b", "LLM-NL2SQL bird"),
    ]
    assert answers[2].text == "SELECT a FROM\tt" and {a.dialect for a in answers} == {"sqlite"}
    assert [a.text for a in load_llm_nl2sql(tmp_path, "spider")] == [";"]


def test_reads_a_bare_clone_at_the_commit_that_still_had_the_results(tmp_path: Path) -> None:
    bare, with_output = _bare_clone(tmp_path)
    assert load_llm_nl2sql(bare, "bird", rev="HEAD") == []  # the folder is gone at HEAD
    assert _summary(load_llm_nl2sql(bare, "bird", rev=with_output)) == _summary(
        load_llm_nl2sql(_work_tree(tmp_path / "fresh"), "bird")  # the work tree lost its output/ with HEAD
    )


def _chatgpt_sql(root: Path) -> Path:
    for path, results in CHATGPT.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        items = [
            {"db_id": "concert_singer", "question": "q", "query": "gold", "prompt": "p", "result": r} for r in results
        ]
        (root / path).write_text(json.dumps(items), encoding="utf-8")
    (root / "sparc").mkdir()  # conversations: not read
    (root / "sparc" / "predict.json").write_text(json.dumps([{"database_id": "x", "interaction": []}]))
    return root


def test_reads_chatgpts_answers_with_the_prompts_select(tmp_path: Path) -> None:
    answers = load_chatgpt_sql(_chatgpt_sql(tmp_path))
    assert [(a.source, a.key, a.db_id, a.text) for a in answers] == [
        ("spider/predict.json", "0", "concert_singer", "SELECT  name FROM singer WHERE"),
        ("spider/predict.json", "1", "concert_singer", "SELECT count(*)\nFROM singer"),
        ("spider-cg/predict-app.json", "0", "concert_singer", "SELECT  age FROM singer ORDER BY"),
    ]
    assert {(a.model, a.dialect, a.collection) for a in answers} == {
        ("gpt-3.5-turbo", "sqlite", "chatgpt-sql Spider variants")
    }


def test_command_line_reports_them_as_a_held_out_split_of_their_own(tmp_path: Path) -> None:
    clone = _work_tree(tmp_path / "clone")
    chatgpt = _chatgpt_sql(tmp_path / "chatgpt")
    out = ["--results-dir", str(tmp_path / "out")]
    payload = main(["--llm-nl2sql", str(clone), "--chatgpt-sql", str(chatgpt), "--no-target", *out])
    counts = payload["settings"]["collections"]
    assert counts["LLM-NL2SQL bird"] == {"answers": 4, "rejected": 2, "replayed": 2}
    assert counts["LLM-NL2SQL spider"] == {"answers": 1, "rejected": 0, "replayed": 0}
    assert counts["chatgpt-sql Spider variants"] == {"answers": 3, "rejected": 2, "replayed": 2}
    assert set(payload["settings"]["split"].values()) == {"held-out 2"} and set(payload["by_split"]) == {"held-out 2"}
    assert "| held-out 2 | 4 |" in payload["goals"]
    written = (tmp_path / "out" / "real_sql_repair.json").read_text()
    assert "a = 1 OR" not in written and "u WHERE" not in written  # ids and scores, not answers


def _json_files(root: Path, files: dict[str, object]) -> Path:
    """A work tree holding ``files`` (path -> JSON value)."""
    for path, value in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(json.dumps(value), encoding="utf-8")
    return root


def _bare_copy(work: Path) -> Path:
    """A bare clone of ``work`` with its files committed, beside it."""
    _git(work, "init", "-q")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "results")
    _git(work.parent, "clone", "-q", "--bare", str(work), "bare")
    return work.parent / "bare"


def _bird_turbo(root: Path) -> Path:
    return _json_files(root, BIRD_TURBO)


def test_reads_birds_chatgpt_answers_and_not_its_failed_requests(tmp_path: Path) -> None:
    answers = load_bird_turbo(_bird_turbo(tmp_path))
    assert [(a.source, a.key, a.db_id, a.text) for a in answers] == [
        ("turbo_output/predict_dev.json", "0", "db_a", "SELECT name FROM t WHERE"),
        ("turbo_output_kg/predict_dev.json", "0", "db_a", "SELECT name FROM t"),
        ("turbo_output_kg/predict_dev.json", "1", "db_b", "SELECT count(*) FROM u ORDER"),
    ]
    assert {(a.model, a.dialect, a.collection) for a in answers} == {
        ("gpt-3.5-turbo", "sqlite", "BIRD dev gpt-3.5-turbo")
    }


def test_reads_birds_chatgpt_answers_from_a_bare_clone(tmp_path: Path) -> None:
    work = _bird_turbo(tmp_path / "work")
    assert load_bird_turbo(_bare_copy(work)) == load_bird_turbo(work)


def test_command_line_reports_birds_chatgpt_as_a_held_out_split_of_its_own(tmp_path: Path) -> None:
    out = ["--results-dir", str(tmp_path / "out")]
    payload = main(["--bird-turbo", str(_bird_turbo(tmp_path / "clone")), "--no-target", *out])
    assert payload["settings"]["collections"] == {
        "BIRD dev gpt-3.5-turbo": {"answers": 3, "rejected": 2, "replayed": 2}
    }
    assert set(payload["by_split"]) == {"held-out 4"} and "| held-out 4 | 2 |" in payload["goals"]
    assert "FROM u ORDER" not in (tmp_path / "out" / "real_sql_repair.json").read_text()


def test_reads_each_candidate_of_verisqls_runs(tmp_path: Path) -> None:
    answers = load_verisql(_json_files(tmp_path, VERISQL))
    assert [(a.source, a.key, a.model, a.db_id, a.text) for a in answers] == [
        ("deepseek_chat_k=2.json", "0.0", "deepseek-chat", "concert_singer", "SELECT name FROM singer WHERE"),
        ("deepseek_chat_k=2.json", "0.1", "deepseek-chat", "concert_singer", "SELECT count(*) FROM singer"),
        ("gpt-5-mini_k=1.json", "0.0", "gpt-5-mini", "concert_singer", "SELECT age FROM singer ORDER"),
    ]
    assert {(a.dialect, a.collection) for a in answers} == {("sqlite", "VeriSQL Spider dev candidates")}


def test_command_line_reports_verisql_as_a_held_out_split_of_its_own(tmp_path: Path) -> None:
    work = _json_files(tmp_path / "work", VERISQL)
    bare = _bare_copy(work)
    assert load_verisql(bare) == load_verisql(work)
    out = ["--results-dir", str(tmp_path / "out")]
    payload = main(["--verisql", str(bare), "--no-target", *out])
    assert payload["settings"]["collections"] == {
        "VeriSQL Spider dev candidates": {"answers": 3, "rejected": 2, "replayed": 2}
    }
    assert set(payload["by_split"]) == {"held-out 5"} and "| held-out 5 | 2 |" in payload["goals"]
    assert "FROM singer ORDER" not in (tmp_path / "out" / "real_sql_repair.json").read_text()


def test_sqlglot_prints_no_answer(caplog: pytest.LogCaptureFixture) -> None:
    # sqlglot warns "'<the answer>' contains unsupported syntax": a held-out answer is never printed.
    prose = Answer("f.sql", "0", "m", "sqlite", "db", "SHOW names for all stadiums that had a concert")
    with caplog.at_level(logging.WARNING):
        assert run_sqlglot([prose])[0]["error"] is None
    assert "stadiums" not in caplog.text


def _text_files(root: Path, files: dict[str, str]) -> Path:
    """A work tree holding ``files`` (path -> text)."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def test_reads_nl2sql_benchmarks_predictions_by_line_and_not_its_gold_or_copies(tmp_path: Path) -> None:
    clone = _text_files(tmp_path / "work", NL2SQL_BENCH)
    bird = load_nl2sql_bench(clone, "bird")
    source = "Base/DeepSeek/DeepSeek-R1-70B/VanillaLinker/dev_pred.sql"
    assert [(a.source, a.key, a.model, a.db_id, a.text) for a in bird] == [
        (source, "0", "DeepSeek/DeepSeek-R1-70B", "db_a", "SELECT a FROM t WHERE"),
        (source, "1", "DeepSeek/DeepSeek-R1-70B", "db_b", "SELECT count(*) FROM u"),
    ]
    spider = load_nl2sql_bench(clone, "spider")
    assert [(a.source, a.key, a.model, a.db_id, a.text) for a in spider] == [
        (
            "Agent/Qwen/Qwen2.5-Coder-7B-Instruct/VanillaLinker/dev_pred.sql",
            "0",
            "Qwen/Qwen2.5-Coder-7B-Instruct",
            "concert_singer",
            "SELECT name FROM singer ORDER",
        ),
        (
            "Agent/Qwen/Qwen2.5-Coder-7B-Instruct/VanillaLinker/dev_pred.sql",
            "1",
            "Qwen/Qwen2.5-Coder-7B-Instruct",
            "pets_1",
            ";",
        ),
    ]
    assert {(a.dialect, a.collection) for a in bird} == {("sqlite", "NL2SQL-Benchmark bird")}
    assert {a.collection for a in spider} == {"NL2SQL-Benchmark spider"}
    assert load_nl2sql_bench(_bare_copy(clone), "bird") == bird


def test_nl2sql_benchmarks_spider_answers_are_executed_by_their_line(tmp_path: Path) -> None:
    spider = load_nl2sql_bench(_text_files(tmp_path / "clone", NL2SQL_BENCH), "spider")
    for db_id in ("concert_singer", "pets_1"):
        (tmp_path / "db" / db_id).mkdir(parents=True)
        (tmp_path / "db" / db_id / f"{db_id}.sqlite").write_bytes(b"x" * 2048)
    questions = [{"question": "q", "query": "SELECT 1", "db_id": d} for d in ("concert_singer", "pets_1")]
    gold = SpiderGold(questions, tmp_path / "db")
    assert [gold_question(a, gold) for a in spider] == [0, 1]
    bird = load_nl2sql_bench(tmp_path / "clone", "bird")
    assert [gold_question(a, gold) for a in bird] == [None, None]  # BIRD: no Spider gold


def test_command_line_reports_nl2sql_benchmark_as_a_held_out_split_of_its_own(tmp_path: Path) -> None:
    clone = _text_files(tmp_path / "clone", NL2SQL_BENCH)
    out = ["--results-dir", str(tmp_path / "out")]
    payload = main(["--nl2sql-bench", str(clone), "--no-target", *out])
    assert payload["settings"]["collections"] == {
        "NL2SQL-Benchmark bird": {"answers": 2, "rejected": 1, "replayed": 1},
        "NL2SQL-Benchmark spider": {"answers": 2, "rejected": 1, "replayed": 1},  # ';' is no draft
    }
    assert payload["settings"]["nl2sql_bench"] == str(clone)
    assert set(payload["by_split"]) == {"held-out 6"} and "| held-out 6 | 2 |" in payload["goals"]
    written = (tmp_path / "out" / "real_sql_repair.json").read_text()
    assert "FROM t WHERE" not in written and "singer ORDER" not in written  # ids and scores, not answers


DAIL_SQL = {
    # One gpt-4 run a file, one answer a line in BIRD dev's order.
    "results/BIRD_WITH_EVIDENCE-TEST_SQL_7-SHOT_EUCDISQUESTIONMASK_QA-EXAMPLE_CTX-150_ANS-4096.txt": (
        "SELECT a FROM t WHERE\nSELECT count(*) FROM u\n"
    ),
    # A byte copy of a run under another name, and a Spider run: not read.
    "results/QUESTIONMASK_GPT-4_for_bird.txt": "SELECT a FROM t WHERE\nSELECT count(*) FROM u\n",
    "results/DAIL-SQL+GPT-4.txt": "SELECT name FROM singer ORDER\n",
}
LAMINI = {
    "lamini/output_sql_queries.txt": 'The SQL query to answer the question "q0" is:  SELECT name FROM\nSELECT 1;\n',
    "lamini/validation_queries.txt": "SELECT gold FROM singer\n",  # the gold: no answer
}


def test_reads_dail_sqls_bird_runs_with_bird_devs_databases_from_another_clone(tmp_path: Path) -> None:
    db_ids = bird_dev_db_ids(_text_files(tmp_path / "bird", NL2SQL_BENCH))
    assert db_ids == ["db_a", "db_b"]
    clone = _text_files(tmp_path / "work", DAIL_SQL)
    answers = load_dail_sql_bird(clone, db_ids)
    source = "BIRD_WITH_EVIDENCE-TEST_SQL_7-SHOT_EUCDISQUESTIONMASK_QA-EXAMPLE_CTX-150_ANS-4096.txt"
    assert [(a.source, a.key, a.model, a.db_id, a.text) for a in answers] == [
        (source, "0", "gpt-4", "db_a", "SELECT a FROM t WHERE"),
        (source, "1", "gpt-4", "db_b", "SELECT count(*) FROM u"),
    ]
    assert {(a.dialect, a.collection) for a in answers} == {("sqlite", "DAIL-SQL BIRD dev gpt-4")}
    assert load_dail_sql_bird(_bare_copy(clone), db_ids) == answers
    assert [a.db_id for a in load_dail_sql_bird(clone, [])] == ["", ""]  # no dev.json: no database


def test_reads_laminis_raw_replies_by_line_and_runs_them_on_spiders_databases(tmp_path: Path) -> None:
    answers = load_lamini_spider(_text_files(tmp_path / "clone", LAMINI), ["concert_singer", "pets_1"])
    assert [(a.key, a.db_id, a.text) for a in answers] == [
        ("0", "concert_singer", 'The SQL query to answer the question "q0" is:  SELECT name FROM'),
        ("1", "pets_1", "SELECT 1;"),
    ]
    assert {(a.source, a.model, a.collection) for a in answers} == {
        ("lamini/output_sql_queries.txt", "lamini-llama", "Lamini Llama Spider dev")
    }
    for db_id in ("concert_singer", "pets_1"):
        (tmp_path / "db" / db_id).mkdir(parents=True)
        (tmp_path / "db" / db_id / f"{db_id}.sqlite").write_bytes(b"x" * 2048)
    questions = [{"question": "q", "query": "SELECT 1", "db_id": d} for d in ("concert_singer", "pets_1")]
    assert [gold_question(a, SpiderGold(questions, tmp_path / "db")) for a in answers] == [0, 1]


def test_command_line_reports_dail_sql_and_lamini_as_held_out_7(tmp_path: Path) -> None:
    dail = _text_files(tmp_path / "dail", DAIL_SQL)
    bird = _text_files(tmp_path / "bird", NL2SQL_BENCH)
    lamini = _text_files(tmp_path / "lamini", LAMINI)
    out = ["--results-dir", str(tmp_path / "out"), "--no-target"]
    payload = main(["--dail-sql", str(dail), "--bird-dev", str(bird), "--lamini", str(lamini), *out])
    assert payload["settings"]["collections"] == {
        "DAIL-SQL BIRD dev gpt-4": {"answers": 2, "rejected": 1, "replayed": 1},
        "Lamini Llama Spider dev": {"answers": 2, "rejected": 1, "replayed": 1},
    }
    assert set(payload["by_split"]) == {"held-out 7"} and "| held-out 7 | 2 |" in payload["goals"]
    assert main(["--dail-sql", str(dail), "--split", "held-out 6", *out])["settings"]["collections"] == {}
