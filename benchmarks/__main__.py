"""Run every benchmark: ``python -m benchmarks [--only NAME ...] [--list]``.

Runs each ``benchmarks/*_bench.py`` module and each module named in ``MODULES`` in its own
process (``python -m benchmarks.<name>``), one after another, so that one benchmark's imports
and memory do not colour the next one's timings. Each module writes its own JSON to
``benchmarks/results/``; this runner writes ``benchmarks/results/summary.md`` (a table of what ran,
how long, and whether it succeeded, followed by each module's printed output) and
``benchmarks/results/summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

#: Benchmark modules that are not named ``*_bench.py`` (run after the discovered ones, in order).
MODULES: list[str] = ["json_keys", "sql_api_cost", "native_grammar_cost", "grammar_sweep"]


def discover() -> list[str]:
    found = sorted(p.stem for p in HERE.glob("*_bench.py"))
    return found + [m for m in MODULES if m not in found]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=None, help="run only these modules")
    ap.add_argument("--list", action="store_true", help="list the benchmark modules and exit")
    args, rest = ap.parse_known_args(argv)
    names = discover()
    if args.list:
        print("\n".join(names))
        return 0
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            ap.error(f"unknown benchmark(s) {unknown}; known: {names}")
        names = [n for n in names if n in args.only]
    RESULTS.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    runs: list[dict[str, Any]] = []
    for name in names:
        print(f"== {name}", flush=True)
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", f"benchmarks.{name}", *rest],
            cwd=HERE.parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        elapsed = time.perf_counter() - start
        print(proc.stdout, end="", flush=True)
        runs.append(
            {"module": name, "returncode": proc.returncode, "seconds": round(elapsed, 1), "output": proc.stdout}
        )
    lines = ["# Benchmark results", "", "| benchmark | status | seconds |", "|---|---|---|"]
    for r in runs:
        status = "ok" if r["returncode"] == 0 else f"FAILED (exit {r['returncode']})"
        lines.append(f"| {r['module']} | {status} | {r['seconds']} |")
    for r in runs:
        lines += ["", f"## {r['module']}", "", "```", r["output"].rstrip()[-20_000:], "```"]
    (RESULTS / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (RESULTS / "summary.json").write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    print(f"\nsummary: {RESULTS / 'summary.md'}")
    return 0 if all(r["returncode"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
