"""API cost on real SQL: a simulated black-box draft with realistic mistakes, three ways to guide it.

For each query of a fixed sample of the SQLite-valid corpus (``tests/support/sql_corpus.py``: statements
from sqlglot's and pglast's sources that SQLite itself prepares), ``SimulatedSQLDraft`` intends
that query and writes it with mistakes (see ``simulated_draft.py``). With the same draft, the same
seeds and the same per-call budget (``--lookahead`` tokens, an API's ``max_tokens``):

- ``ours``: ``grammar_guide.guide`` (streaming with early close, forced text, evidence-based
  repairs, continuation), with the target model (SmolLM2-135M-Instruct) and with ``target=False``;
- ``gg-0.0.11``: grammar-guide 0.0.11's generic-function path, in its own venv, with the same draft
  function (non-streaming: it takes a string) and SmolLM2 as its guidance target;
- ``retry``: validate-and-retry as instructor-style libraries do it: the whole answer is
  regenerated until it parses under the grammar, up to k attempts (k=3 in all), each retry
  sending the conversation so far (prompt, previous answer, parser error). A fenced block is
  taken out of the answer before checking. Assumption: the draft's mistake rate does not drop
  with the feedback (each attempt is a fresh draw at the same rates).

Reported per method: valid outputs, exact match with the intended query (white space and the case
of words ignored), normalized edit distance to it, draft calls, billed tokens in/out, discarded
tokens (billed output tokens not in the final text: max(0, out - tokens(final text))), wall time
(model loading excluded). Tokens are counted with the SmolLM2 tokenizer.

Run: ``python -m benchmarks.sql_api_cost [--quick] [--queries N] [--no-target] [--no-baseline]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import attempt, machine, machine_line, markdown_table, normalized_edit_distance, write_results  # noqa: E402
from benchmarks.simulated_draft import MistakeRates, SimulatedSQLDraft, TokenCounter, lex  # noqa: E402

NAME = "sql_api_cost"
PROMPT = (
    "You are an expert SQL assistant. The database is SQLite 3.40. Answer with exactly one SQLite "
    "statement that does what the user asks, and nothing else.\n\nRequest: {request}"
)
SEED = 20241122


# -- the sample --------------------------------------------------------------------------------


def load_sample(n: int, *, seed: int = 0, max_chars: int = 600) -> list[str]:
    """``n`` SQLite-valid queries drawn with a fixed seed from the labelled corpus: SELECT/WITH
    statements of 30..max_chars characters that grammars/sqlite.lark accepts, half from sqlglot's
    fixtures and half from PostgreSQL's regression scripts (via pglast)."""
    from grammar_guide import Grammar
    from tests.support.sql_corpus import load_corpus

    grammar = Grammar.builtin("sqlite")
    pools: dict[str, list[str]] = {"sqlglot": [], "pglast": []}
    seen: set[str] = set()
    for s in load_corpus():
        sql = s.sql.strip()
        if (
            s.label == "valid"
            and 30 <= len(sql) <= max_chars
            and sql.upper().startswith(("SELECT", "WITH"))
            and sql not in seen
        ):
            seen.add(sql)
            pools[s.source.split("/")[0]].append(sql)
    rng = random.Random(seed)
    sample: list[str] = []
    for k, (_name, pool) in enumerate(sorted(pools.items())):
        rng.shuffle(pool)
        want = n // 2 + (n % 2 if k == 0 else 0)
        taken = [sql for sql in pool[: want * 3] if grammar.is_complete(sql)][:want]
        sample += taken
    rng.shuffle(sample)
    return sample


def same_query(a: str, b: str) -> bool:
    """Equal up to white space, comments, a trailing ';' and the case of words."""

    def key(text: str) -> list[str]:
        return [x.key for x in lex(text.strip().rstrip(";")) if x.kind not in ("ws", "comment")]

    return key(a) == key(b)


# -- the methods -------------------------------------------------------------------------------


def run_ours(
    queries: list[str], counter: TokenCounter, rates: MistakeRates, *, target: Any, lookahead: int, seed: int = SEED
) -> list[dict[str, Any]]:
    import grammar_guide as gg
    from grammar_guide import FunctionDraft, GuideExhausted

    grammar = gg.Grammar.builtin("sqlite")
    rows = []
    for i, intended in enumerate(queries):
        draft = SimulatedSQLDraft(intended, seed=seed + i, counter=counter, rates=rates)
        fn = FunctionDraft(draft.as_function(), name="simulated", continues_prefix=True)
        t0 = time.perf_counter()
        error = None
        try:
            result = gg.guide(
                fn,
                grammar,
                PROMPT.format(request=i),
                target=target,
                lookahead=lookahead,
                max_corrections=16,
                max_draft_calls=16,
            )
        except GuideExhausted as exc:
            result, error = exc.result, str(exc)
        seconds = time.perf_counter() - t0
        stats = result.stats
        rows.append(
            {
                "text": result.text,
                "error": error,
                "seconds": seconds,
                "draft_calls": len(draft.calls),
                "tokens_in": draft.tokens_in,
                "tokens_out": draft.tokens_out,
                "corrections": stats.corrections,
                "calls": draft.calls,
                "reported": {
                    "tokens_in": stats.draft_tokens_in,
                    "tokens_out": stats.draft_tokens_out,
                    "discarded_tokens": stats.discarded_tokens,
                    "target_tokens": stats.target_tokens,
                },
            }
        )
    return rows


def _extract(answer: str) -> str:
    """The answer as an instructor-style library reads it: a fenced block's content when there is one."""
    if "```" in answer:
        inside = answer.split("```", 2)[1]
        first, _, rest = inside.partition("\n")
        inside = rest if first.strip().isalpha() or not first.strip() else inside
        return inside.strip()
    return answer.strip()


def run_retry(
    queries: list[str],
    counter: TokenCounter,
    rates: MistakeRates,
    *,
    lookahead: int,
    attempts: int = 3,
    seed: int = SEED,
) -> list[dict[str, Any]]:
    import grammar_guide as gg

    grammar = gg.Grammar.builtin("sqlite")
    rows = []
    for i, intended in enumerate(queries):
        draft = SimulatedSQLDraft(intended, seed=seed + i, counter=counter, rates=rates)
        prompt = PROMPT.format(request=i)
        conversation = prompt
        t0 = time.perf_counter()
        text, ok = "", False
        for _ in range(attempts):
            answer = draft.complete(conversation, "", lookahead)
            text = _extract(answer)
            checker = grammar.checker()
            accepted = checker.feed(text)
            ok = accepted == len(text) and checker.is_complete
            if ok:
                break
            error = str(checker.violation) if checker.violation else "unexpected end of the statement"
            conversation += (
                f"\n\nAssistant: {answer}\n\nUser: That is not valid SQLite ({error}). "
                "Write the whole corrected statement."
            )
        rows.append(
            {
                "text": text,
                "error": None if ok else f"no valid answer in {attempts} attempts",
                "seconds": time.perf_counter() - t0,
                "draft_calls": len(draft.calls),
                "tokens_in": draft.tokens_in,
                "tokens_out": draft.tokens_out,
                "corrections": len(draft.calls) - 1,
                "calls": draft.calls,
            }
        )
    return rows


def run_gg0011(
    queries: list[str],
    counter_file: str | None,
    rates: MistakeRates,
    *,
    lookahead: int,
    max_corrections: int = 20,
    seed: int = SEED,
    timeout: float = 3600,
) -> dict[str, Any]:
    from benchmarks import baseline_env

    request = {
        "mode": "sql_generic",
        "simulated_draft": str(Path(__file__).with_name("simulated_draft.py")),
        # The same SmolLM2 tokenizer, in the file format the venv's older tokenizers reads.
        "tokenizer_file": str(baseline_env.compat_model_folder() / "tokenizer.json") if counter_file else None,
        "rates": asdict(rates),
        "grammar": (ROOT / "grammars" / "sqlite.lark").read_text(encoding="utf-8"),
        "model": str(baseline_env.compat_model_folder()),
        "queries": [
            {"intended": q, "seed": seed + i, "prompt": PROMPT.format(request=i)} for i, q in enumerate(queries)
        ],
        "lookahead": lookahead,
        "max_corrections": max_corrections,
    }
    answer = baseline_env.run_worker(request, timeout=timeout)
    rows = answer["rows"]
    return {"rows": rows, "versions": answer.get("versions"), "parser_seconds": answer.get("parser_seconds")}


# -- scoring -----------------------------------------------------------------------------------


def score(rows: list[dict[str, Any]], queries: list[str], counter: TokenCounter) -> dict[str, Any]:
    from grammar_guide import Grammar

    grammar = Grammar.builtin("sqlite")
    valid = exact = 0
    ned = discarded = 0.0
    for row, intended in zip(rows, queries, strict=False):
        text = row.get("text") or ""
        row["valid"] = bool(row.get("text") is not None and grammar.is_complete(text))
        row["exact"] = row["valid"] and same_query(text, intended)
        row["ned"] = normalized_edit_distance(text, intended)
        row["discarded"] = max(0, row["tokens_out"] - counter.count(text))
        valid += row["valid"]
        exact += row["exact"]
        ned += row["ned"]
        discarded += row["discarded"]
    n = len(rows) or 1
    return {
        "queries": len(rows),
        "valid": valid,
        "exact": exact,
        "mean_ned": ned / n,
        "draft_calls": sum(r["draft_calls"] for r in rows),
        "tokens_in": sum(r["tokens_in"] for r in rows),
        "tokens_out": sum(r["tokens_out"] for r in rows),
        "tokens_discarded": int(discarded),
        "seconds": sum(r["seconds"] for r in rows),
        "errors": sorted({r["error"].splitlines()[-1][:200] for r in rows if r.get("error")}),
    }


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sql_api_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 queries instead of 40")
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--lookahead", type=int, default=256, help="tokens per draft call (max_tokens)")
    parser.add_argument("--no-target", action="store_true", help="skip ours with the target model")
    parser.add_argument("--no-baseline", action="store_true", help="skip grammar-guide 0.0.11")
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    n = args.queries or (8 if args.quick else 40)

    from grammar_guide.local import ensure_default_model

    tokenizer_file = str(ensure_default_model() / "tokenizer.json")
    counter = TokenCounter(tokenizer_file)
    rates = MistakeRates()
    queries = load_sample(n)
    info = machine()
    methods: dict[str, Any] = {}
    rows_by_method: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}

    def record(name: str, produce: Callable[[], list[dict[str, Any]]]) -> None:
        rows, note = attempt(NAME, name, len(queries), produce)
        if rows is None:
            notes[name] = note or ""
            return
        rows_by_method[name] = rows
        methods[name] = score(rows, queries, counter)

    record("ours (target=False)", lambda: run_ours(queries, counter, rates, target=False, lookahead=args.lookahead))
    if not args.no_target:
        from grammar_guide import TargetModel

        target = TargetModel.load()
        record(
            "ours (SmolLM2 target)", lambda: run_ours(queries, counter, rates, target=target, lookahead=args.lookahead)
        )
    record("validate-and-retry (k=3)", lambda: run_retry(queries, counter, rates, lookahead=args.lookahead))
    if not args.no_baseline:

        def gg_rows() -> list[dict[str, Any]]:
            out = run_gg0011(queries, tokenizer_file, rates, lookahead=args.lookahead)
            notes["grammar-guide 0.0.11 versions"] = str(out["versions"])
            rows: list[dict[str, Any]] = out["rows"]
            return rows

        record("grammar-guide 0.0.11 generic", gg_rows)

    header = ["method", "valid", "exact", "mean NED", "draft calls", "tokens in", "tokens out", "discarded", "wall s"]
    table = markdown_table(
        header,
        [
            [
                name,
                f"{m['valid']}/{m['queries']}",
                f"{m['exact']}/{m['queries']}",
                m["mean_ned"],
                m["draft_calls"],
                m["tokens_in"],
                m["tokens_out"],
                m["tokens_discarded"],
                m["seconds"],
            ]
            for name, m in methods.items()
        ],
    )
    print(
        f"\nSQL API cost: {len(queries)} SQLite-valid corpus queries, simulated draft (seed {SEED}), "
        f"lookahead {args.lookahead} tokens; tokens: {counter.rule}. Machine: {machine_line(info)}\n"
    )
    print(table)
    for name, note in notes.items():
        print(f"\n{name}: {note}")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "settings": {
            "queries": len(queries),
            "lookahead": args.lookahead,
            "seed": SEED,
            "rates": asdict(rates),
            "token_rule": counter.rule,
            "retry_attempts": 3,
            "gg0011_max_grammar_corrections": 20,
            "prompt": PROMPT,
        },
        "methods": methods,
        "notes": notes,
        "table": table,
        "queries": queries,
        "rows": {m: [{k: v for k, v in r.items() if k != "calls"} for r in rows] for m, rows in rows_by_method.items()},
    }
    path = write_results(NAME, payload, args.results_dir)
    print(f"\nwrote {path}", file=sys.stderr)
    return payload


if __name__ == "__main__":
    main()
