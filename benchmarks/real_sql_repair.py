"""Repairs of real LLM answers that SQLite rejects: ours, sqlglot, grammar-guide 0.0.11.

The answers are those that GPT-4-class and open models gave on BIRD mini-dev, as published by the
benchmark's authors (https://github.com/bird-bench/mini_dev, ``llm/exp_result/``: one JSON file per
model and dialect asked, ``{"0": "<answer>\\t----- bird -----\\t<db_id>", ...}``; the answers are
the models' message contents as returned, cut only at the stop strings ``--``, blank line, ``;``,
``#``). The benchmark reads them from a local clone named on the command line (see
benchmarks/README.md for the repository and commit); nothing of them is vendored here.

Of all answers, those SQLite rejects as syntax (SQLite's own parser: ``tests/support/sqlite_oracle.py``
prepares the statement, creating what a "no such table/column" error asks for, so a missing schema
is no error) are replayed, one by one, as a black-box draft (``_replay_draft.ReplayDraft``: the
whole answer first, then the rest of it from where the accepted text left it) through

- ``ours``: ``grammar_guide.guide(draft, "sqlite", prompt)`` with the default SmolLM2 target;
- ``sqlglot``: ``sqlglot.transpile(sql, read=<dialect asked>, write="sqlite")`` on the answer's SQL
  (the fenced block or the text from the first statement keyword, prose after it left out: what a
  careful user would hand it; ``answer_sql``);
- ``gg-0.0.11``: grammar-guide 0.0.11's generic-function path (its own venv, ``baseline_env.py``)
  with the same replayed draft, the same grammar and SmolLM2 as its target.

Reported per method: SQLite-valid (the oracle again, on the output), GuideExhausted (or, for the
others, an exception), intact (a valid output that keeps every table/column name and literal of the
answer's SQL and invents no name), content kept (the mean fraction of those names and literals kept), edit size
(mean Levenshtein distance in characters between the answer's SQL and the output, white space
collapsed), corrections (ours and 0.0.11's count), seconds (mean wall time per answer).

Run: ``python -m benchmarks.real_sql_repair CLONE [--limit N] [--skip N] [--quick] [--questions FILE]
[--no-baseline] [--no-target]``.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import attempt, machine, machine_line, markdown_table, write_results  # noqa: E402
from benchmarks._replay_draft import ReplayDraft, lexemes  # noqa: E402

NAME = "real_sql_repair"
RESULTS_DIR = "llm/exp_result"
SEPARATOR = "\t----- bird -----\t"
PROMPT = (
    "You are an expert SQL assistant. The database is SQLite 3.40. Answer with exactly one SQLite "
    "statement that does what the user asks, and nothing else.\n\nDatabase: {db_id}\nQuestion: {question}"
)
MAX_CORRECTIONS = 16
MAX_NEW_TOKENS = 2048  # no answer is cut by the budget (the longest rejected one is 766 tokens)
TIMEOUT_S = 240.0


@dataclass(frozen=True)
class Answer:
    """One recorded answer: where it came from, the dialect the model was asked for, its text."""

    source: str  # file name under llm/exp_result/
    key: str  # the question's index in mini-dev
    model: str
    dialect: str  # "sqlite", "mysql" or "postgres" (sqlglot's names)
    db_id: str
    text: str


# -- reading the clone -------------------------------------------------------------------------


def _dialect(name: str) -> str:
    low = name.lower()
    return "mysql" if "mysql" in low else "postgres" if "postgresql" in low else "sqlite"


def _model(name: str) -> str:
    stem = name.removesuffix(".json").removeprefix("predict_mini_dev_")
    return re.sub(r"_(?:cot_)?(?:sqlite|mysql|mysqljson|postgresql)$", "", stem, flags=re.IGNORECASE)


def _files(clone: Path) -> dict[str, str]:
    """path -> text of every JSON file under llm/exp_result/, from a work tree or a bare git dir."""
    folder = clone / RESULTS_DIR
    if folder.is_dir():
        return {str(p.relative_to(clone)): p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*.json"))}
    git = ["git", "--git-dir", str(clone)] if (clone / "HEAD").is_file() else ["git", "-C", str(clone)]
    listed = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", "HEAD", RESULTS_DIR], capture_output=True, text=True, check=True
    ).stdout.split()
    return {
        p: subprocess.run([*git, "show", f"HEAD:{p}"], capture_output=True, text=True, check=True).stdout
        for p in sorted(listed)
        if p.endswith(".json")
    }


def load_answers(clone: Path) -> list[Answer]:
    """Every answer of the clone's prediction files, in file then key order."""
    out = []
    for path, text in _files(clone).items():
        name = path.rsplit("/", 1)[-1]
        for key, value in json.loads(text).items():
            answer, _, db_id = value.rpartition(SEPARATOR) if SEPARATOR in value else (value, "", "")
            out.append(Answer(name, key, _model(name), _dialect(name), db_id.strip(), answer))
    return out


def sqlite_rejects(answers: list[Answer]) -> list[Answer]:
    """The answers SQLite's parser rejects (distinct texts; an empty answer is no draft)."""
    from tests.support import sqlite_oracle

    seen: set[str] = set()
    out = []
    for a in answers:
        if not a.text.strip() or a.text in seen:
            continue
        seen.add(a.text)
        if sqlite_oracle.check_script(a.text).label is sqlite_oracle.Label.INVALID:
            out.append(a)
    return out


def interleave(answers: list[Answer], limit: int | None, skip: int = 0) -> list[Answer]:
    """Take answers from each model in turn (and, within a model, from each of its files in
    turn), so that a limit keeps the mix of models and dialects; the first ``skip`` left out."""

    def rounds(groups: list[list[Answer]]) -> list[Answer]:
        out: list[Answer] = []
        while any(groups):
            out += [g.pop(0) for g in groups if g]
        return out

    by_model: dict[str, dict[str, list[Answer]]] = {}
    for a in answers:
        by_model.setdefault(a.model, {}).setdefault(a.source, []).append(a)
    models = [rounds([files[s] for s in sorted(files)]) for _, files in sorted(by_model.items())]
    mixed = rounds(models)
    return mixed[skip:] if limit is None else mixed[skip : skip + limit]


# -- what an answer says -------------------------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_STATEMENT = re.compile(r"\b(?:SELECT|WITH)\b", re.IGNORECASE)
_CODE_LINE = re.compile(r"[()=]|\w_\w|^\w+\s+AS\b", re.IGNORECASE)  # "avg_salaries AS (": a CTE goes on
_PROSE_LINE = re.compile(r"\n\s*\n\s*(?=[A-Za-z])|\n(?=(?:This|The|Note|Here|Explanation|In this)\b)")


def answer_sql(answer: str) -> str:
    """The SQL an answer means: a fenced block's content, else the text from the first SELECT/WITH
    on; prose after it (a blank line then a word that is not a keyword, on a line with no bracket,
    ``=`` or snake_case name; or a line starting with This/The/Note/Here/Explanation) is left out."""
    fenced = _FENCE.search(answer)
    text = fenced.group(1) if fenced else answer
    if fenced and not text.strip() and answer[: fenced.start()].strip():
        text = answer[: fenced.start()]  # a closing fence with none before it: the SQL is before it
    start = _STATEMENT.search(text)
    if start and re.search(r"[A-Za-z]", text[: start.start()]):
        text = text[start.start() :]
    for m in _PROSE_LINE.finditer(text):
        word = re.match(r"[A-Za-z_]+", text[m.end() :])
        line = text[m.end() :].split("\n", 1)[0]
        if word and word.group().upper() not in _keywords() and not _CODE_LINE.search(line):
            text = text[: m.start()]
            break
    return text.strip()


@functools.lru_cache(maxsize=1)
def _keywords() -> frozenset[str]:
    """SQLite's own keyword list (sqlite3_keyword_name), upper case."""
    from tests.support import sqlite_oracle

    lib = ctypes.CDLL(sqlite_oracle.library_path())
    lib.sqlite3_keyword_count.restype = ctypes.c_int
    lib.sqlite3_keyword_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int)]
    words = set()
    for i in range(lib.sqlite3_keyword_count()):
        name, size = ctypes.c_char_p(), ctypes.c_int()
        lib.sqlite3_keyword_name(i, ctypes.byref(name), ctypes.byref(size))
        words.add(ctypes.string_at(name, size.value).decode().upper())
    return frozenset(words)


def _string_value(raw: str) -> str:
    body = raw[1:-1] if len(raw) >= 2 and raw.endswith("'") else raw[1:]
    return body.replace("''", "'").replace("\\'", "'")


def content(sql: str) -> tuple[set[str], set[str]]:
    """(names, literals) of ``sql``: table/column names and aliases (bare or quoted, case ignored,
    Markdown escapes undone), strings (by value) and numbers. Not names: keywords, function names
    (a word before ``(``), type names (after ``::`` or ``AS`` before ``)``), date parts in EXTRACT."""
    lx = lexemes(sql)
    names: set[str] = set()
    literals: set[str] = set()
    raw = [sql[a:b] for _, a, b in lx]
    for i, (low, _, _) in enumerate(lx):
        prev = lx[i - 1][0] if i else ""
        nxt = lx[i + 1][0] if i + 1 < len(lx) else ""
        first = raw[i][0]
        if first == "'":
            if i + 1 == len(lx) and (len(raw[i]) < 2 or not raw[i].endswith("'")):
                continue  # a string the answer was cut in: no literal it wrote whole
            literals.add(_string_value(raw[i]))
        elif re.fullmatch(r"[0-9]+(?:\.[0-9]*)?", low):
            literals.add(low)
        elif first in '"`[':
            names.add(low[1:-1] if len(low) >= 2 else low[1:])
        elif re.fullmatch(r"[a-z_$][a-z0-9_$]*", low):
            if low.upper() in _keywords() or nxt == "(" or prev == ":":
                continue
            if prev == "as" and nxt == ")":
                continue
            if i >= 2 and lx[i - 2][0] == "extract" and prev == "(":
                continue
            names.add(low)
    return names, literals


# An apostrophe between a word and an English contraction's ending inside a string the model wrote
# unescaped ('Women's Soccer'): read as part of the string, as the model meant it.
_APOSTROPHE = re.compile(r"(?<=[A-Za-z])'(?=(?:s|t|re|ve|ll|d|m)\b[^'\n]*')")


def compare(answer: str, output: str) -> dict[str, Any]:
    """How much of the answer's SQL the output keeps: kept fraction, names invented, intact."""
    sql = answer_sql(answer)
    a_names, a_lits = content(_APOSTROPHE.sub("''", sql))
    o_names, o_lits = content(output)
    wanted = {("n", n) for n in a_names} | {("l", v) for v in a_lits}
    have = {("n", n) for n in o_names} | {("l", v) for v in o_lits}
    kept = len(wanted & have) / len(wanted) if wanted else 1.0
    # A name the answer wrote as a word of its own is not invented (``FROM order`` kept as
    # ``FROM "order"``: a keyword there, a name once quoted).
    words = {low for low, _, _ in lexemes(sql)}
    invented = sorted(n for n in o_names - a_names if n not in words)
    return {
        "kept": kept,
        "lost": sorted(f"{k}:{v}" for k, v in wanted - have),
        "invented": invented,
        "intact": kept == 1.0 and not invented,
    }


def edit_size(answer: str, output: str) -> int:
    from grammar_guide._repair import levenshtein

    return levenshtein(" ".join(answer_sql(answer).split()), " ".join(output.split()))


# -- the methods -------------------------------------------------------------------------------


def prompt_for(a: Answer, questions: dict[str, str]) -> str:
    return PROMPT.format(db_id=a.db_id or "unknown", question=questions.get(a.key, f"BIRD mini-dev question {a.key}"))


def run_ours(items: list[Answer], questions: dict[str, str], *, target: Any) -> list[dict[str, Any]]:
    import grammar_guide as gg

    rows = []
    for a in items:
        replay = ReplayDraft(a.text)

        def generate(prompt: str, prefix: str, _replay: ReplayDraft = replay) -> str:
            return _replay.continue_from(prefix)

        draft = gg.FunctionDraft(generate, name="replay", continues_prefix=True)
        t0 = time.perf_counter()
        error = None
        try:
            result = gg.guide(
                draft,
                "sqlite",
                prompt_for(a, questions),
                target=target,
                max_corrections=MAX_CORRECTIONS,
                max_draft_calls=16,
                max_new_tokens=MAX_NEW_TOKENS,
                timeout=TIMEOUT_S,
            )
        except gg.GuideExhausted as exc:
            result, error = exc.result, f"GuideExhausted: {exc}"
        rows.append(
            {
                "text": result.text,
                "error": error,
                "exhausted": error is not None,
                "seconds": time.perf_counter() - t0,
                "corrections": result.stats.corrections,
                "draft_calls": len(replay.calls),
            }
        )
        print(
            f"[{NAME}] ours {len(rows)}/{len(items)}: {rows[-1]['seconds']:.1f} s" + (" (exhausted)" if error else ""),
            file=sys.stderr,
            flush=True,
        )
    return rows


def run_sqlglot(items: list[Answer]) -> list[dict[str, Any]]:
    import sqlglot

    rows = []
    for a in items:
        t0 = time.perf_counter()
        try:
            text = ";\n".join(sqlglot.transpile(answer_sql(a.text), read=a.dialect, write="sqlite"))
            error = None
        except Exception as exc:  # sqlglot's ParseError, TokenError, UnsupportedError ...
            text, error = "", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        rows.append(
            {"text": text, "error": error, "exhausted": False, "seconds": time.perf_counter() - t0, "corrections": None}
        )
    return rows


def run_gg0011(items: list[Answer], questions: dict[str, str], *, timeout: float = 4 * 3600) -> dict[str, Any]:
    from benchmarks import baseline_env

    request = {
        "mode": "sql_replay",
        "replay_draft": str(Path(__file__).with_name("_replay_draft.py")),
        "grammar": (ROOT / "grammars" / "sqlite.lark").read_text(encoding="utf-8"),
        "model": str(baseline_env.compat_model_folder()),
        "answers": [{"text": a.text, "prompt": prompt_for(a, questions)} for a in items],
        "lookahead": 256,
        "max_corrections": MAX_CORRECTIONS,
    }
    answer = baseline_env.run_worker(request, timeout=timeout)
    for row in answer["rows"]:
        row["exhausted"] = False
    return answer


# -- scoring -----------------------------------------------------------------------------------


def score(rows: list[dict[str, Any]], items: list[Answer]) -> dict[str, Any]:
    from tests.support import sqlite_oracle

    for row, a in zip(rows, items, strict=True):
        text = row.get("text") or ""
        row["valid"] = bool(text.strip()) and sqlite_oracle.check_script(text).label is not sqlite_oracle.Label.INVALID
        row.update(compare(a.text, text))
        row["intact"] = row["intact"] and row["valid"]  # kept everything, in SQL that SQLite takes
        row["edit"] = edit_size(a.text, text)
    n = len(rows) or 1
    with_corrections = [r["corrections"] for r in rows if r.get("corrections") is not None]
    return {
        "answers": len(rows),
        "valid": sum(r["valid"] for r in rows),
        "exhausted": sum(bool(r.get("exhausted")) for r in rows),
        "errors": sum(bool(r.get("error")) for r in rows),
        "intact": sum(r["intact"] for r in rows),
        "kept": sum(r["kept"] for r in rows) / n,
        "invented": sum(len(r["invented"]) for r in rows) / n,
        "edit": sum(r["edit"] for r in rows) / n,
        "corrections": sum(with_corrections) / len(with_corrections) if with_corrections else None,
        "seconds": sum(r["seconds"] for r in rows) / n,
    }


def _scores_only(row: dict[str, Any]) -> dict[str, Any]:
    """A scored row without the answer's or the output's text (an error keeps its kind only:
    sqlglot's messages quote the SQL)."""
    out = {k: v for k, v in row.items() if k not in ("text", "lost")}
    if out.get("error"):
        out["error"] = str(out["error"]).split(":", 1)[0]
    return out


def table(methods: dict[str, dict[str, Any]]) -> str:
    header = [
        "method",
        "SQLite-valid",
        "GuideExhausted / errors",
        "intact",
        "content kept",
        "names invented",
        "edit size (chars)",
        "corrections",
        "s / answer",
    ]
    rows = []
    for name, m in methods.items():
        n = m["answers"] or 1
        rows.append(
            [
                name,
                f"{100 * m['valid'] / n:.0f}% ({m['valid']}/{m['answers']})",
                f"{m['exhausted']} / {m['errors']}",
                f"{100 * m['intact'] / n:.0f}%",
                m["kept"],
                m["invented"],
                m["edit"],
                "-" if m["corrections"] is None else m["corrections"],
                m["seconds"],
            ]
        )
    return markdown_table(header, rows)


def dialect_table(rows_by_method: dict[str, list[dict[str, Any]]], items: list[Answer]) -> str:
    """Valid and intact answers per dialect asked, per method (rows must be scored)."""
    dialects = sorted({a.dialect for a in items})
    header = ["dialect asked", "answers"] + [f"{name}: valid / intact" for name in rows_by_method]
    out = []
    for d in dialects:
        picked = [i for i, a in enumerate(items) if a.dialect == d]
        out.append(
            [d, len(picked)]
            + [
                f"{sum(rows[i]['valid'] for i in picked)} / {sum(rows[i]['intact'] for i in picked)}"
                for rows in rows_by_method.values()
            ]
        )
    return markdown_table(header, out)


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_sql_repair", description=__doc__.split("\n")[0])
    parser.add_argument(
        "clone", type=Path, help="a local clone of github.com/bird-bench/mini_dev (work tree or git dir)"
    )
    parser.add_argument("--limit", type=int, default=None, help="replay at most N of the rejected answers")
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N (in the interleaved order): a held-out set beside the one repairs were tuned on",
    )
    parser.add_argument("--quick", action="store_true", help="6 answers (unless --limit), no grammar-guide 0.0.11")
    parser.add_argument(
        "--questions",
        type=Path,
        default=None,
        help="mini_dev_sqlite.json from the MiniDev download, for the questions' text",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip grammar-guide 0.0.11")
    parser.add_argument("--no-target", action="store_true", help="ours with target=False instead of SmolLM2")
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    limit = 6 if args.quick and args.limit is None else args.limit

    answers = load_answers(args.clone)
    rejected = sqlite_rejects(answers)
    items = interleave(rejected, limit, args.skip)
    questions: dict[str, str] = {}
    if args.questions:
        data = json.loads(args.questions.read_text(encoding="utf-8"))
        questions = {str(i): q["question"] for i, q in enumerate(data)}
    print(
        f"[{NAME}] {len(answers)} answers, {len(rejected)} distinct ones SQLite rejects; replaying {len(items)}",
        file=sys.stderr,
        flush=True,
    )
    info = machine()
    methods: dict[str, dict[str, Any]] = {}
    rows_by_method: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}

    def record(name: str, produce: Callable[[], list[dict[str, Any]]]) -> None:
        rows, note = attempt(NAME, name, len(items), produce)
        if rows is None:
            notes[name] = note or ""
            return
        rows_by_method[name] = rows
        methods[name] = score(rows, items)

    if args.no_target:
        record("ours (target=False)", lambda: run_ours(items, questions, target=False))
    else:
        from grammar_guide import TargetModel

        target = TargetModel.load()
        record("ours (SmolLM2 target)", lambda: run_ours(items, questions, target=target))
    record("sqlglot.transpile", lambda: run_sqlglot(items))
    if not (args.no_baseline or args.quick):

        def gg_rows() -> list[dict[str, Any]]:
            out = run_gg0011(items, questions)
            notes["grammar-guide 0.0.11 versions"] = str(out.get("versions"))
            rows: list[dict[str, Any]] = out["rows"]
            return rows

        record("grammar-guide 0.0.11 generic", gg_rows)

    text = table(methods)
    dialects = sorted({a.dialect for a in items})
    mix = ", ".join(f"{sum(a.dialect == d for a in items)} asked for {d}" for d in dialects)
    print(
        f"\nReal SQL repair: {len(items)} of {len(rejected)} BIRD mini-dev answers that SQLite rejects ({mix}); "
        f"machine: {machine_line(info)}\n"
    )
    print(text)
    by_dialect = dialect_table(rows_by_method, items)
    print("\n" + by_dialect)
    for name, note in notes.items():
        print(f"\n{name}: {note}")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "settings": {
            "clone": str(args.clone),
            "answers": len(answers),
            "rejected": len(rejected),
            "replayed": len(items),
            "skipped": args.skip,
            "max_corrections": MAX_CORRECTIONS,
            "timeout_s": TIMEOUT_S,
            "prompt": PROMPT,
            "questions": bool(questions),
        },
        "methods": methods,
        "notes": notes,
        "table": text,
        "by_dialect": by_dialect,
        # The answers and outputs (third-party text) are left out: ids and scores only.
        "items": [{k: v for k, v in asdict(a).items() if k != "text"} for a in items],
        "rows": {m: [_scores_only(r) for r in rows] for m, rows in rows_by_method.items()},
    }
    path = write_results(NAME, payload, args.results_dir)
    print(f"\nwrote {path}", file=sys.stderr)
    return payload


if __name__ == "__main__":
    main()
