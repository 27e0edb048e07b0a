"""sql_completion: the grammar's completion of SQL cut short, ranked by the chart and without it.

When no close of marks ends a text, the finish asks the grammar for a completion
(``shortest_completion``: a character search, then one a terminal at a time). The terminal
search once ranked a terminal by its own rule alone (``TerminalCosts``); it now ranks it by the
least whole completion an Earley chart of the text says it begins (``CompletionChart``). This
benchmark measures both rankings, in the same run, on queries nobody here wrote: Spider dev's
gold queries (``database/dev_gold.sql`` of a clone of xi-ix/spider_evaluation, the clone
``real_sql_repair --spider`` takes; commit ``git -C CLONE rev-parse HEAD`` is recorded), each cut
at the start of one of its lexemes (past the first, chosen at random with ``--seed``). A cut whose
prefix the grammar refuses, or that a close of marks alone ends (``shortest_close``: the finish
never needs a completion there), is left out.

For each cut, ``terminal_completion`` runs with the chart and without it (same budget as the
finish gives it: 464 tries, 64 terminals deep), on a checker that answers ``expected`` by its
probes, as the guide's does. SQLite is the judge: the prefix and its completion must be one
statement SQLite parses (``tests.support.sqlite_oracle``: a missing table or column is no
error). Reported: completions found, those SQLite takes, seconds (mean and largest), and the
completion's length, for all cuts and for the hard ones (a ranking finds nothing, or takes half
a second). On easy cuts the chart costs its reading of the text (tens of milliseconds); there the
finish's character search, which runs first, finds the completion and the terminal search is
not reached.

``python -m benchmarks.sql_completion CLONE [--limit 200] [--seed 0] [--results-dir DIR]``
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grammar_guide as gg
from benchmarks._common import machine, machine_line, markdown_table, write_results

NAME = "sql_completion"
MAX_TRIES = 464  # what the finish gives the terminal search (400 + its depth)
MAX_DEPTH = 64
_LEXEME = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|\w+|[^\w\s]")


def gold_queries(clone: Path) -> list[str]:
    """Spider dev's gold queries, in order (each line ``SQL<TAB or |>db_id``)."""
    path = clone / "database" / "dev_gold.sql"
    queries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        sql = re.split(r"\t|\s\|", line)[0].strip()
        if sql:
            queries.append(sql)
    return queries


def cuts(queries: list[str], limit: int, seed: int, grammar: gg.Grammar) -> list[str]:
    """Prefixes that need a completion: each query cut at a random lexeme's start (past its
    first), kept where the grammar takes the prefix and no close of marks ends it."""
    from grammar_guide._complete import shortest_close

    rng = random.Random(seed)
    picked: list[str] = []
    for sql in rng.sample(queries, len(queries)):
        starts = [m.start() for m in _LEXEME.finditer(sql)][1:]
        if not starts:
            continue
        prefix = sql[: rng.choice(starts)].rstrip()
        checker = grammar.checker(probe_from=0)
        if checker.feed(prefix) != len(prefix) or checker.is_complete or shortest_close(checker) is not None:
            continue
        picked.append(prefix)
        if len(picked) >= limit:
            break
    return picked


def complete(grammar: gg.Grammar, prefix: str, ranked_by_chart: bool) -> dict[str, Any]:
    """One completion of ``prefix`` by the terminal search, timed, and SQLite's verdict on it."""
    from grammar_guide._terminal_completion import terminal_completion
    from tests.support import sqlite_oracle

    checker = grammar.checker(probe_from=0)
    checker.feed(prefix)
    costs = grammar.terminal_costs
    assert costs is not None
    chart = grammar.completion_chart if ranked_by_chart else None
    t0 = time.perf_counter()
    found = terminal_completion(checker, costs, chart=chart, max_tries=MAX_TRIES, max_depth=MAX_DEPTH)
    seconds = time.perf_counter() - t0
    takes = found is not None and sqlite_oracle.check_one_statement(prefix + found).valid
    return {"found": found is not None, "sqlite_takes": takes, "seconds": seconds, "length": len(found or "")}


HARD_S = 0.5


def _hard(row: dict[str, Any]) -> bool:
    return not row["found"] or row["seconds"] >= HARD_S


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    found = [r for r in rows if r["found"]]
    return {
        "cuts": len(rows),
        "found": len(found),
        "sqlite_takes": sum(r["sqlite_takes"] for r in rows),
        "mean_s": statistics.fmean(r["seconds"] for r in rows) if rows else 0.0,
        "max_s": max((r["seconds"] for r in rows), default=0.0),
        "mean_length": statistics.fmean(r["length"] for r in found) if found else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clone", type=Path, help="a clone of xi-ix/spider_evaluation")
    parser.add_argument("--limit", type=int, default=200, help="cuts measured (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    grammar = gg.Grammar.builtin("sqlite")
    grammar.completion_chart  # built once, before any timing  # noqa: B018
    prefixes = cuts(gold_queries(args.clone), args.limit, args.seed, grammar)
    methods = {"chart (now)": True, "own rule only (before)": False}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in methods}
    for i, prefix in enumerate(prefixes, 1):
        for name, by_chart in methods.items():
            rows[name].append(complete(grammar, prefix, by_chart))
        print(f"[{NAME}] {i}/{len(prefixes)}", file=sys.stderr, flush=True)
    hard = [i for i in range(len(prefixes)) if any(_hard(rows[name][i]) for name in methods)]
    summaries = {name: summary(r) for name, r in rows.items()}
    hard_summaries = {name: summary([r[i] for i in hard]) for name, r in rows.items()}
    info = machine()
    print(f"{NAME}: {len(prefixes)} cuts of Spider dev's gold queries (seed {args.seed}); {machine_line(info)}\n")
    header = [
        "cuts",
        "ranking",
        "cuts",
        "completion found",
        "SQLite takes it",
        "s / cut (mean)",
        "s (max)",
        "length (mean)",
    ]
    table = [
        [subset, name, s["cuts"], s["found"], s["sqlite_takes"], s["mean_s"], s["max_s"], s["mean_length"]]
        for subset, group in (("all", summaries), (f"hard (a ranking fails or takes >= {HARD_S} s)", hard_summaries))
        for name, s in group.items()
    ]
    print(markdown_table(header, table))
    commit = subprocess.run(["git", "-C", str(args.clone), "rev-parse", "HEAD"], capture_output=True, text=True)
    payload = {
        "name": NAME,
        "machine": info,
        "clone_commit": commit.stdout.strip() or None,
        "seed": args.seed,
        "summaries": summaries,
        "hard_summaries": hard_summaries,
        "rows": [{"prefix": p, **{name: rows[name][i] for name in methods}} for i, p in enumerate(prefixes)],
    }
    path = write_results(NAME, payload, args.results_dir)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
