"""Compare the two bundled SQLite grammars: grammars/sqlite.lark and grammars/sqlite_lean.lark.

Both are measured in the same run, on the same corpus sample, against SQLite's own parser:

Times are CPU times of this process where the work is ours (the machine may be shared), wall
time for ``continue_text``.

* load: ``Grammar.from_file`` (Lark's loader, compilation for the matcher, the matcher itself);
* checker us/byte: ``Grammar.is_complete`` over real corpus statements (the sample below);
* recall: SQLite-valid corpus statements the grammar accepts; precision: accepted strings that
  SQLite calls a syntax error, among invalid corpus statements, token mutations of valid ones, and
  glued words (``SELECTa``, ``5OFFSET``);
* the real target model's token mask (SmolLM2 via ``grammar_guide.TargetModel``): ms per
  ``compute_bitmask`` on prefixes of corpus statements, and ms per token of
  ``TargetModel.continue_text(..., max_new_tokens=16)`` (model forward included).

Usage: ``HF_HUB_OFFLINE=1 python benchmarks/sqlite_grammar_compare.py [--sample N] [--full]
[--no-model]``. ``--full`` also runs the lean grammar over the whole corpus (the other grammar
would take hours). Writes benchmarks/results/sqlite_grammar_compare.json.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._common import machine, machine_line, markdown_table, write_results  # noqa: E402
from grammar_guide import Grammar  # noqa: E402
from tests import sqlite_oracle  # noqa: E402
from tests.sql_corpus import load_corpus  # noqa: E402
from tests.test_grammar_sqlite_lean import mutations  # noqa: E402

GRAMMARS = {"sqlite": ROOT / "grammars" / "sqlite.lark", "sqlite_lean": ROOT / "grammars" / "sqlite_lean.lark"}
SEED = 8
GLUED = [
    "SELECTa FROM t",
    "SELECT * FROMt",
    "SELECT 1 ORDER BYx",
    "SELECT 1 LIMIT 5OFFSET 2",
    "SELECT 1 LIMIT 5 OFFSET2",
    "SELECT 1.5e3x",
    "INSERTINTO t VALUES (1)",
    "SELECT a FROM t WHERE a NOTNULLx",
    "SELECT a FROM t WHERE a ISNULL1",
    "DELETEFROM t",
    "SELECT a FROM t GROUPBY a",
    "SELECT 1 UNIONSELECT 2",
]
PROMPT = "Write one SQLite query over tables t(a, b) and u(id, c)."


def _invalid(sql: str) -> bool:
    return sqlite_oracle.check_script(sql).label is sqlite_oracle.Label.INVALID


def measure_checker(grammar: Grammar, statements: list[str]) -> tuple[list[bool], float]:
    """is_complete of each statement, and microseconds per byte over all of them."""
    total = sum(len(s.encode("utf-8")) for s in statements)
    started = time.process_time()
    verdicts = [grammar.is_complete(s) for s in statements]
    return verdicts, (time.process_time() - started) * 1e6 / max(total, 1)


def measure_mask(grammar: Grammar, target: Any, prefixes: list[str]) -> dict[str, float]:
    import llguidance as llg

    lm = target.lm
    started = time.process_time()
    proto = llg.LLMatcher(lm.ll_tokenizer, grammar.captured_grammar or grammar.llguidance_grammar, log_level=0)
    setup = time.process_time() - started
    times = []
    for prefix in prefixes:
        matcher = proto.deep_copy()
        ids = lm.ll_tokenizer.tokenize_str(prefix)
        if matcher.consume_tokens(ids):
            started = time.process_time()
            matcher.compute_bitmask()
            times.append(time.process_time() - started)
    target.continue_text(PROMPT, prefixes[0], grammar, max_new_tokens=2)  # warm-up, untimed
    wall = cpu = 0.0
    tokens = 0
    for prefix in prefixes[:3]:
        started, started_cpu = time.perf_counter(), time.process_time()
        cont = target.continue_text(PROMPT, prefix, grammar, max_new_tokens=16)
        wall += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
        tokens += cont.sampled_tokens + cont.forced_tokens + cont.healed_tokens
    return {
        "matcher_setup_s": setup,
        "mask_ms": 1e3 * sum(times) / max(len(times), 1),
        "continue_tokens": tokens,
        "continue_ms_per_token": 1e3 * wall / max(tokens, 1),
        "continue_cpu_ms_per_token": 1e3 * cpu / max(tokens, 1),
        "masks": len(times),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=60, help="corpus statements per class (default 60)")
    parser.add_argument("--full", action="store_true", help="also run the lean grammar over the whole corpus")
    parser.add_argument("--no-model", action="store_true", help="skip the token-mask measurements")
    args = parser.parse_args()

    corpus = load_corpus()
    rng = random.Random(SEED)
    valid = rng.sample([s.sql for s in corpus if s.label == "valid"], args.sample)
    invalid = rng.sample([s.sql for s in corpus if s.label == "invalid"], args.sample)
    mutants = [m for sql in valid for m in mutations(sql, rng, 3)]
    prefixes = [sql[: len(sql) // 2] for sql in valid[:4]]

    target = None
    if not args.no_model:
        from grammar_guide import TargetModel

        target = TargetModel.load()

    results: dict[str, Any] = {"machine": machine(), "sqlite": sqlite_oracle.sqlite_version(), "grammars": {}}
    for name, path in GRAMMARS.items():
        row: dict[str, Any] = {"file_bytes": path.stat().st_size}
        started, started_cpu = time.perf_counter(), time.process_time()
        grammar = Grammar.from_file(path)
        row["load_s"] = time.perf_counter() - started
        row["load_cpu_s"] = time.process_time() - started_cpu
        row["terminals"] = len(grammar.lark_parser.terminals)
        row["rules"] = len(grammar.lark_parser.rules)
        accepted, us_valid = measure_checker(grammar, valid)
        rejected_invalid, us_invalid = measure_checker(grammar, invalid)
        row["checker_us_per_byte"] = (us_valid + us_invalid) / 2
        row["recall"] = sum(accepted) / len(valid)
        row["invalid_accepted"] = [s for s, ok in zip(invalid, rejected_invalid) if ok]
        mutant_ok, _ = measure_checker(grammar, mutants)
        accepted_mutants = [m for m, ok in zip(mutants, mutant_ok) if ok]
        row["mutants_accepted"] = len(accepted_mutants)
        row["mutants_accepted_invalid"] = [m for m in accepted_mutants if _invalid(m)]
        glued_ok, _ = measure_checker(grammar, GLUED)
        row["glued_accepted_invalid"] = [g for g, ok in zip(GLUED, glued_ok) if ok and _invalid(g)]
        if target is not None:
            row.update(measure_mask(grammar, target, prefixes))
        if args.full and name == "sqlite_lean":
            labelled = [s for s in corpus if s.label != "undetermined"]
            verdicts, row["full_us_per_byte"] = measure_checker(grammar, [s.sql for s in labelled])
            n_valid = sum(s.label == "valid" for s in labelled)
            row["full_recall"] = sum(ok for s, ok in zip(labelled, verdicts) if s.label == "valid") / n_valid
            row["full_invalid_accepted"] = [s.sql for s, ok in zip(labelled, verdicts) if ok and s.label == "invalid"]
            row["full_counts"] = {"valid": n_valid, "invalid": len(labelled) - n_valid}
        results["grammars"][name] = row
        print(f"measured {name}", file=sys.stderr, flush=True)

    header = ["", *GRAMMARS]
    g = results["grammars"]

    def line(label: str, fn: Any) -> list[Any]:
        return [label, *(fn(g[n]) for n in GRAMMARS)]

    rows = [
        line("file size (KB)", lambda r: r["file_bytes"] / 1024),
        line("Lark terminals / rule alternatives", lambda r: f"{r['terminals']} / {r['rules']}"),
        line("load: Grammar.from_file (CPU s / wall s)", lambda r: f"{r['load_cpu_s']:.3g} / {r['load_s']:.3g}"),
        line(f"checker (CPU us/byte, {2 * args.sample} corpus statements)", lambda r: r["checker_us_per_byte"]),
        line(f"recall ({args.sample} SQLite-valid statements)", lambda r: f"{r['recall']:.1%}"),
        line(f"accepted of {args.sample} SQLite-invalid statements", lambda r: len(r["invalid_accepted"])),
        line(
            f"mutants accepted / of them SQLite-invalid ({len(mutants)} mutants)",
            lambda r: f"{r['mutants_accepted']} / {len(r['mutants_accepted_invalid'])}",
        ),
        line(f"glued words accepted that SQLite rejects (of {len(GLUED)})", lambda r: len(r["glued_accepted_invalid"])),
    ]
    if target is not None:
        rows += [
            line("SmolLM2 matcher setup (CPU s)", lambda r: r["matcher_setup_s"]),
            line("SmolLM2 token mask (CPU ms, compute_bitmask)", lambda r: r["mask_ms"]),
            line(
                "continue_text (ms/token, model included: CPU / wall; tokens)",
                lambda r: f"{r['continue_cpu_ms_per_token']:.0f} / {r['continue_ms_per_token']:.0f}; {r['continue_tokens']}",
            ),
        ]
    if args.full:
        lean = g["sqlite_lean"]
        rows += [
            ["full corpus: checker (CPU us/byte)", "-", lean["full_us_per_byte"]],
            [
                f"full corpus: recall ({lean['full_counts']['valid']} valid)",
                "-",
                f"{lean['full_recall']:.2%}",
            ],
            [
                f"full corpus: accepted of {lean['full_counts']['invalid']} invalid",
                "-",
                len(lean["full_invalid_accepted"]),
            ],
        ]
    print(f"SQLite grammars on {machine_line(results['machine'])}, SQLite {results['sqlite']}\n")
    print(markdown_table(header, rows))
    for name in GRAMMARS:
        for key in ("invalid_accepted", "mutants_accepted_invalid", "glued_accepted_invalid"):
            for sql in g[name][key][:5]:
                print(f"  {name} {key}: {sql[:120]!r}")
    path = write_results("sqlite_grammar_compare", results)
    print(f"\nresults: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
