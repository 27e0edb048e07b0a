"""Where the real SQL answers come from: local clones of public repositories, named on the command line.

- **BIRD mini-dev** (https://github.com/bird-bench/mini_dev @ 4d970a9a97b1): ``llm/exp_result/**/*.json``,
  one file per model and dialect asked, ``{"0": "<answer>\\t----- bird -----\\t<db_id>", ...}``.
- **NL2SQL360** (https://github.com/HKUSTDial/NL2SQL360 @ 689bdfa1da6a): ``data/predict/<split>/*.sql``,
  one file per model (Llama-2/3, CodeLlama, DeepSeek-Coder, StarCoder, CodeS, RESDSQL, and GPT-3.5 / GPT-4
  pipelines: C3-SQL, DIN-SQL, DAIL-SQL), one answer a line in the order of the split's questions,
  some files with ``\\t<db_id>`` after the answer. Three files hold bytes that are not UTF-8; they are
  read with U+FFFD in their place.
- **LLM-NL2SQL** (https://github.com/Qiqi-sweety/LLM-NL2SQL @ 8c2bbc551831, the last commit before
  ``output/`` was removed): ``output/<split>/<org>/<model>[/<variant>]/dev_pred.sql`` for split ``bird``
  (BIRD dev, 1534 questions) and ``spider`` (Spider dev, 1034), one file per open model and prompt or
  schema filter (Qwen1.5 7B/14B/32B, CodeQwen1.5, Qwen2, Symbol-LLM 7B/13B, GLM-4 9B, Llama-3 8B,
  SQLCoder 8B/34B, Granite 34B, CodeS 7B/15B), given the database's SQLite schema; one answer a line in
  the order of ``data/<split>/dev.json`` (the clone's copy, which names the database), the model's
  newlines made spaces by its runner, ``;`` where generation failed. ``dev_pred_gt.sql`` is the gold.
- **chatgpt-sql** (https://github.com/THU-BPM/chatgpt-sql @ 116c7fc54f31): ChatGPT's (gpt-3.5-turbo,
  early 2023) zero-shot answers on Spider dev and the variants asked on Spider's SQLite databases
  (``<variant>/predict*.json`` for Spider, Spider-Syn, Spider-DK, Spider-Realistic, ADVETA, Spider-CG,
  CSpider), a JSON list of ``{"db_id", "question", "query", "prompt", "result"}``: ``result`` is the
  model's text after the prompt's closing ``SELECT``, so the answer is ``SELECT`` and it (as the
  repository's ``generate_txt.py`` reads it). SParC, CoSQL (conversations) and DuSQL (its own
  databases) are left out.
- **BIRD's ChatGPT baseline** (https://github.com/AlibabaResearch/DAMO-ConvAI @ 483554eae102, the files
  last changed in dec31ae335d7; the repository MIT, BIRD CC BY-SA 4.0):
  ``bird/llm/exp_result/turbo_output[_kg]/predict_dev.json``, the BIRD paper's gpt-3.5-turbo answers on
  BIRD dev (1534 questions; ``_kg`` with the evidence in the prompt), asked for SQLite by
  ``bird/llm/run/run_gpt.sh``, in mini-dev's ``{"<index>": "<answer>\\t----- bird -----\\t<db_id>"}``;
  a failed request is a number there, no answer.
- **VeriSQL's candidates** (https://github.com/awaisaziz/uncertainity-text2sql @ 42777cfa9c41, no
  licence file; Spider CC BY-SA 4.0): ``outputs/llm/<model>_k=<n>.json``, deepseek-chat's,
  grok-4-1-fast-non-reasoning's and gpt-5-mini's answers (late 2025) on Spider dev's first 100
  questions, each asked for ``n`` different queries (1 to 35) as a JSON array ``[{"sql": ...}]``, no
  dialect named, given the tables' columns; ``{"default_model", "generated": [{"id", "db_id",
  "candidates": [{"sql"}]}]}``, the ``sql`` strings as the runner's ``clean_json_array`` read them
  from the reply (a reply it could not read has no candidates). ``outputs/reranked/`` and
  ``extracted_sql_for_evaluation/`` pick among the same candidates and are not read.
- **NL2SQL-Benchmark** (https://github.com/Artessay/NL2SQL-Benchmark @ 37c1fc563921, no licence file;
  LLM-NL2SQL's runner carried on): ``output/<split>/<method>/<org>/<model>/<linker>/dev_pred.sql`` for
  split ``bird`` (BIRD dev) and ``spider`` (Spider dev), one file per method (Base, CoT, Agent, Rule,
  Vote, SketchRetriever, Hero*), model (DeepSeek-R1, DeepSeek-R1-32B/70B, QwQ-32B/plus, Qwen2-72B,
  Qwen2.5-32B/72B, Qwen2.5-Coder-7B/32B, Qwen3-8B, Qwen-plus, DeepSeek-Coder-V2, gpt-4o) and schema
  linker, given the SQLite database's schema (CoT's prompts name SQLite); one answer a line in the
  order of the clone's ``data/<split>/dev.json``: the reply's first fenced block (or the reply) less its
  ``<think>`` part and comments, newlines made spaces by its runner, ``;`` for an empty one; some runs
  stopped early (fewer lines, or none). ``dev_pred_gt.sql`` is the gold; ``mini/exp_result`` holds
  copies of mini-dev's baselines and is not read.
- **DAIL-SQL's GPT-4 on BIRD** (https://github.com/BeachWang/DAIL-SQL @ 2965e8daeccd, Apache-2.0; BIRD
  CC BY-SA 4.0): ``results/BIRD_WITH_EVIDENCE-TEST_SQL_<k>-SHOT_<selector>_QA-EXAMPLE_CTX-150_ANS-4096[_TH-<t>].txt``,
  five gpt-4 runs (the commit "exp for bird in GPT-4", 2024-06) on BIRD dev with its evidence, 7- or
  9-shot, two example selectors; one answer a line in BIRD dev's order (the repository's "test" split);
  the prompt ends in ``SELECT`` and names no dialect; its runner (``ask_llm.py``) made the reply one
  line, dropped repeated parts and put ``SELECT`` before a reply that lacked it; at most 200 tokens
  were asked for. ``QUESTIONMASK_GPT-4_for_bird.txt`` (a byte copy of a 7-shot file) and the Spider
  files are not read. BIRD dev's ``dev.json`` (which names each line's database) is not in the
  repository: it is read from a clone that has ``data/bird/dev.json`` (LLM-NL2SQL, NL2SQL-Benchmark).
- **A fine-tuned Llama's raw replies on Spider dev** (https://github.com/samlhuillier/text-sql-with-execution-evaluation
  @ 5b5139eb32b2, no licence file; Spider CC BY-SA 4.0): ``lamini/output_sql_queries.txt``, one reply a
  line for Spider dev's first 875 questions in order, prose and all (``The SQL query to answer the
  question "…" is: SELECT …``), from a Llama-format fine-tune run through Lamini (the model is not
  named); the database is Spider dev's at that line.
- **Spider dev's gold and databases** (a clone holding Spider's ``dev.json`` and
  ``database/<db_id>/<db_id>.sqlite``, e.g. https://github.com/xi-ix/spider_evaluation @ 80a9084cbae5,
  which keeps them under ``database/``).

A clone is a work tree or a bare git directory (read with ``git show``).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Answer",
    "SpiderGold",
    "load_answers",
    "load_bird_turbo",
    "load_chatgpt_sql",
    "load_dail_sql_bird",
    "load_lamini_spider",
    "load_llm_nl2sql",
    "load_nl2sql360",
    "load_nl2sql_bench",
    "load_spider_gold",
    "load_verisql",
]

MINI_DEV_DIR = "llm/exp_result"
MINI_DEV_SEPARATOR = "\t----- bird -----\t"
NL2SQL360_DIR = "data/predict"
#: NL2SQL360's splits, each a collection of its own.
NL2SQL360_SPLITS = ("spider_dev", "bird_dev", "spider_test")
LLM_NL2SQL_DIR = "output"
LLM_NL2SQL_FILE = "dev_pred.sql"
#: The last commit of Qiqi-sweety/LLM-NL2SQL with its ``output/`` folder (removed by the next).
LLM_NL2SQL_COMMIT = "8c2bbc551831516355a3b33554c41434417b0a14"
#: LLM-NL2SQL's splits (``output/<split>``), each a collection of its own.
LLM_NL2SQL_SPLITS = ("bird", "spider")
#: chatgpt-sql's folders of answers on Spider's databases.
CHATGPT_SQL_DIRS = ("spider", "spider-syn", "spider-dk", "spider-realistic", "ADVETA", "spider-cg", "CSpider")
CHATGPT_SQL_COLLECTION = "chatgpt-sql Spider variants"
BIRD_TURBO_DIR = "bird/llm/exp_result"
BIRD_TURBO_COLLECTION = "BIRD dev gpt-3.5-turbo"
VERISQL_DIR = "outputs/llm"
VERISQL_COLLECTION = "VeriSQL Spider dev candidates"
NL2SQL_BENCH_DIR = "output"
#: NL2SQL-Benchmark's splits (``output/<split>``), each a collection of its own: ``NL2SQL_BENCH_COLLECTION <split>``.
NL2SQL_BENCH_SPLITS = ("bird", "spider")
NL2SQL_BENCH_COLLECTION = "NL2SQL-Benchmark"
DAIL_SQL_DIR = "results"
#: DAIL-SQL's BIRD dev answer files begin so (a byte copy of one, ``QUESTIONMASK_GPT-4_for_bird.txt``, does not).
DAIL_SQL_BIRD_PREFIX = "BIRD_WITH_EVIDENCE-TEST_SQL_"
DAIL_SQL_COLLECTION = "DAIL-SQL BIRD dev gpt-4"
LAMINI_FILE = "lamini/output_sql_queries.txt"
LAMINI_COLLECTION = "Lamini Llama Spider dev"


@dataclass(frozen=True)
class Answer:
    """One recorded answer: where it came from, the dialect the model was asked for, its text."""

    source: str  # the file, relative to the collection's folder
    key: str  # the question's index in its split
    model: str
    dialect: str  # "sqlite", "mysql" or "postgres" (sqlglot's names)
    db_id: str
    text: str
    collection: str = "BIRD mini-dev"


def _files(clone: Path, folder: str, suffix: str, rev: str = "HEAD") -> dict[str, str]:
    """path -> text of every ``suffix`` file under ``folder``, from a work tree or a bare git dir
    (at ``rev``; a work tree as it is checked out)."""
    if not (clone / "HEAD").is_file():  # a work tree (a folder it lacks has no files)
        return {
            str(p.relative_to(clone)): p.read_bytes().decode("utf-8", "replace")
            for p in sorted((clone / folder).rglob(f"*{suffix}"))
        }
    git = ["git", "--git-dir", str(clone)]
    listed = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", rev, folder], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return {
        p: subprocess.run([*git, "show", f"{rev}:{p}"], capture_output=True, check=True).stdout.decode(
            "utf-8", "replace"
        )
        for p in sorted(listed)
        if p.endswith(suffix)
    }


# -- BIRD mini-dev -----------------------------------------------------------------------------


def _dialect(name: str) -> str:
    low = name.lower()
    return "mysql" if "mysql" in low else "postgres" if "postgresql" in low else "sqlite"


def _model(name: str) -> str:
    stem = name.removesuffix(".json").removeprefix("predict_mini_dev_")
    return re.sub(r"_(?:cot_)?(?:sqlite|mysql|mysqljson|postgresql)$", "", stem, flags=re.IGNORECASE)


def load_answers(clone: Path) -> list[Answer]:
    """Every answer of a BIRD mini-dev clone's prediction files, in file then key order."""
    out = []
    for path, text in _files(clone, MINI_DEV_DIR, ".json").items():
        name = path.rsplit("/", 1)[-1]
        for key, value in json.loads(text).items():
            if MINI_DEV_SEPARATOR in value:
                answer, _, db_id = value.rpartition(MINI_DEV_SEPARATOR)
            else:
                answer, db_id = value, ""
            out.append(Answer(name, key, _model(name), _dialect(name), db_id.strip(), answer))
    return out


# -- NL2SQL360 -----------------------------------------------------------------------------------

_DB_ID_SUFFIX = re.compile(r"\t(\w+)\s*$")


def _lines(text: str) -> list[str]:
    """A file's lines, one answer each (a last empty line is the file's end, no answer)."""
    lines = text.split("\n")
    if lines and not lines[-1].strip():
        lines.pop()
    return lines


def _answer_lines(text: str) -> list[tuple[str, str]]:
    """(answer, db_id) per question: one a line; the ``\\t<db_id>`` column only where every line has it."""
    lines = _lines(text)
    tagged = all(_DB_ID_SUFFIX.search(line) for line in lines if line.strip())
    if not tagged:
        return [(line, "") for line in lines]
    return [(line[: m.start()], m.group(1)) if (m := _DB_ID_SUFFIX.search(line)) else (line, "") for line in lines]


def load_nl2sql360(clone: Path, split: str, db_ids: list[str] | None = None) -> list[Answer]:
    """Every answer of an NL2SQL360 clone's ``data/predict/<split>`` files (asked for SQLite),
    in file then line order; ``db_ids`` (the split's, in question order) fills the database where
    a file does not name it."""
    out = []
    folder = f"{NL2SQL360_DIR}/{split}"
    for path, text in _files(clone, folder, ".sql").items():
        name = path.removeprefix(folder + "/")
        for i, (answer, db_id) in enumerate(_answer_lines(text)):
            if not db_id and db_ids is not None and i < len(db_ids):
                db_id = db_ids[i]
            model = name.removesuffix(".sql")
            out.append(Answer(name, str(i), model, "sqlite", db_id, answer, f"NL2SQL360 {split}"))
    return out


# -- LLM-NL2SQL ----------------------------------------------------------------------------------


def load_llm_nl2sql(clone: Path, split: str, rev: str = LLM_NL2SQL_COMMIT) -> list[Answer]:
    """Every answer of an LLM-NL2SQL clone's ``output/<split>/**/dev_pred.sql`` files (at ``rev`` in
    a bare clone), in file then line order; the model is ``<org>/<model>``, the source the file's
    path under ``output/<split>``, the database the one ``data/<split>/dev.json`` names at that line."""
    return _runner_answers(clone, f"{LLM_NL2SQL_DIR}/{split}", split, slice(0, 2), f"LLM-NL2SQL {split}", rev)


def _runner_answers(
    clone: Path, folder: str, split: str, model_parts: slice, collection: str, rev: str = "HEAD"
) -> list[Answer]:
    """The answers of LLM-NL2SQL's runner's files (NL2SQL-Benchmark's too): every ``dev_pred.sql``
    under ``folder``, one answer a line in the order of ``data/<split>/dev.json`` (which names its
    database); the model is the file's path under ``folder``, its folders ``model_parts``."""
    db_ids = _dev_db_ids(clone, split, rev)
    out = []
    for path, text in _files(clone, folder, LLM_NL2SQL_FILE, rev).items():
        name = path.removeprefix(folder + "/")
        if name.rsplit("/", 1)[-1] != LLM_NL2SQL_FILE:
            continue
        model = "/".join(name.split("/")[model_parts])
        for i, answer in enumerate(_lines(text)):  # a tab in a line is the answer's own
            out.append(Answer(name, str(i), model, "sqlite", _db_id_at(db_ids, i), answer, collection))
    return out


def _dev_db_ids(clone: Path, split: str, rev: str = "HEAD") -> list[str]:
    """The databases of ``data/<split>/dev.json``'s questions in order ([] where the clone has none)."""
    questions = _files(clone, f"data/{split}", "dev.json", rev).get(f"data/{split}/dev.json")
    return [q["db_id"] for q in json.loads(questions)] if questions else []


def _db_id_at(db_ids: list[str], i: int) -> str:
    """The database ``db_ids`` names for question ``i`` ("" beyond its end)."""
    return db_ids[i] if i < len(db_ids) else ""


# -- chatgpt-sql ---------------------------------------------------------------------------------


def load_chatgpt_sql(clone: Path) -> list[Answer]:
    """Every answer of a chatgpt-sql clone's ``CHATGPT_SQL_DIRS`` files, in file then list order:
    ``SELECT`` and the model's ``result`` (which the prompt's ``SELECT`` began), or the result alone
    where it begins with its own ``SELECT``."""
    out = []
    for folder in CHATGPT_SQL_DIRS:
        for path, text in _files(clone, folder, ".json").items():
            for i, item in enumerate(json.loads(text)):
                result = item["result"]
                answer = result if re.match(r"\s*SELECT\b", result, re.IGNORECASE) else f"SELECT {result}"
                out.append(
                    Answer(path, str(i), "gpt-3.5-turbo", "sqlite", item["db_id"], answer, CHATGPT_SQL_COLLECTION)
                )
    return out


# -- BIRD's ChatGPT baseline -----------------------------------------------------------------------


def load_bird_turbo(clone: Path) -> list[Answer]:
    """Every answer of a DAMO-ConvAI clone's ``BIRD_TURBO_DIR/*/predict_dev.json`` files, in file then
    key order; the source is the file's path under ``BIRD_TURBO_DIR``, and a value that is no text (a
    failed request) is no answer."""
    out = []
    for path, text in _files(clone, BIRD_TURBO_DIR, "predict_dev.json").items():
        name = path.removeprefix(BIRD_TURBO_DIR + "/")
        for key, value in json.loads(text).items():
            if isinstance(value, str):
                answer, _, db_id = value.rpartition(MINI_DEV_SEPARATOR)
                out.append(Answer(name, key, "gpt-3.5-turbo", "sqlite", db_id.strip(), answer, BIRD_TURBO_COLLECTION))
    return out


# -- VeriSQL's candidates -------------------------------------------------------------------------


def load_verisql(clone: Path) -> list[Answer]:
    """Every candidate of an uncertainity-text2sql clone's ``VERISQL_DIR/*.json`` files, in file,
    question then candidate order; the key is ``<question's index in Spider dev>.<candidate's>``,
    the model the file's ``default_model``, the dialect SQLite (none was named; Spider's databases
    are SQLite)."""
    out = []
    for path, text in _files(clone, VERISQL_DIR, ".json").items():
        name, run = path.removeprefix(VERISQL_DIR + "/"), json.loads(text)
        for item in run["generated"]:
            for j, candidate in enumerate(item["candidates"]):
                key, model = f"{item['id']}.{j}", run["default_model"]
                out.append(Answer(name, key, model, "sqlite", item["db_id"], candidate["sql"], VERISQL_COLLECTION))
    return out


# -- NL2SQL-Benchmark ----------------------------------------------------------------------------


def load_nl2sql_bench(clone: Path, split: str) -> list[Answer]:
    """Every answer of an NL2SQL-Benchmark clone's ``output/<split>/**/dev_pred.sql`` files, in file then
    line order; the model is ``<org>/<model>`` (the path's second and third folders, after the method),
    the source the file's path under ``output/<split>``, the database the one ``data/<split>/dev.json``
    names at that line. ``mini/`` (copies of BIRD mini-dev's baselines) is not read."""
    folder = f"{NL2SQL_BENCH_DIR}/{split}"
    return _runner_answers(clone, folder, split, slice(1, 3), f"{NL2SQL_BENCH_COLLECTION} {split}")


# -- DAIL-SQL's GPT-4 on BIRD dev ---------------------------------------------------------------


def bird_dev_db_ids(clone: Path) -> list[str]:
    """BIRD dev's databases in question order, from a clone holding ``data/bird/dev.json``
    (LLM-NL2SQL, NL2SQL-Benchmark); [] where it has none."""
    return _dev_db_ids(clone, "bird")


def load_dail_sql_bird(clone: Path, db_ids: list[str]) -> list[Answer]:
    """Every answer of a DAIL-SQL clone's BIRD dev files (``DAIL_SQL_BIRD_PREFIX``), in file then
    line order; the key is the line's index, the database ``db_ids`` names there."""
    out = []
    for path, text in _files(clone, DAIL_SQL_DIR, ".txt").items():
        name = path.removeprefix(DAIL_SQL_DIR + "/")
        if name.startswith(DAIL_SQL_BIRD_PREFIX):
            for i, answer in enumerate(_lines(text)):
                out.append(Answer(name, str(i), "gpt-4", "sqlite", _db_id_at(db_ids, i), answer, DAIL_SQL_COLLECTION))
    return out


# -- a fine-tuned Llama's replies on Spider dev --------------------------------------------------


def load_lamini_spider(clone: Path, db_ids: list[str]) -> list[Answer]:
    """Every reply of a text-sql-with-execution-evaluation clone's ``LAMINI_FILE``, in line order;
    the key is the line's index (Spider dev's question), the database ``db_ids`` names there."""
    folder, _, name = LAMINI_FILE.rpartition("/")
    text = _files(clone, folder, name).get(LAMINI_FILE, "")
    return [
        Answer(LAMINI_FILE, str(i), "lamini-llama", "sqlite", _db_id_at(db_ids, i), answer, LAMINI_COLLECTION)
        for i, answer in enumerate(_lines(text))
    ]


# -- Spider's gold queries and databases --------------------------------------------------------


@dataclass(frozen=True)
class SpiderGold:
    """Spider dev's questions in order (question, gold query, database) and where its databases are."""

    questions: list[dict[str, str]]
    databases: Path

    def database(self, db_id: str) -> Path | None:
        """The database file of ``db_id``, if the clone has it (whole: a git-LFS pointer is not)."""
        path = self.databases / db_id / f"{db_id}.sqlite"
        return path if path.is_file() and path.stat().st_size > 1024 else None


def load_spider_gold(clone: Path) -> SpiderGold:
    """Spider dev's gold from a clone holding ``dev.json`` and ``database/<db>/<db>.sqlite``
    (at its root or under ``database/``, as xi-ix/spider_evaluation keeps them)."""
    for root in (clone, clone / "database", clone / "spider"):
        dev = root / "dev.json"
        if dev.is_file():
            for databases in (root / "database", root / "database" / "database"):
                if databases.is_dir() and any(databases.glob("*/*.sqlite")):
                    data = json.loads(dev.read_text(encoding="utf-8"))
                    questions = [{"question": q["question"], "query": q["query"], "db_id": q["db_id"]} for q in data]
                    return SpiderGold(questions, databases)
    raise FileNotFoundError(f"no Spider dev.json with a database/ folder of SQLite files under {clone}")
