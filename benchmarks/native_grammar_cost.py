"""Billed tokens, native grammar against speculative drafting, on the same SQL requests.

The local test server (``tests/support/llm_server.py``: the real SmolLM2-135M-Instruct behind
OpenAI's wire formats) answers each request of a fixed list (plain-English questions) five ways,
through the real ``openai`` SDK, always guided by ``grammars/sqlite.lark``:

- ``native (GPT-5 style)``: the Responses API with the grammar as a forced custom tool
  (``Grammar.to_plain_lark``); the server's llguidance engine masks the model's sampling;
- ``native (vLLM style)``: Chat Completions with ``structured_outputs.grammar`` (GBNF);
- ``speculative``: Chat Completions without the grammar; the loop checks the stream and repairs
  violations with the SmolLM2 target model;
- ``fallback (refused)``: a model that refuses the grammar as too complex (one 400), then as
  speculative;
- ``fallback (ignored)``: a server that ignores the grammar field (vLLM before 0.12), then the
  loop repairs what it wrote.

Reported per way: valid answers, the path the stats report, draft calls, corrections, billed
tokens in/out as the server counts them (prompt tokens of every request, tokens generated up to
the end or the disconnect: a stream the loop closes early is billed for what was generated, and
its usage never reaches the client), target tokens (local, not billed), wall time. The answers
are the same model's; only how the grammar is applied differs.

Run: ``python -m benchmarks.native_grammar_cost [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import attempt, machine, machine_line, markdown_table, write_results  # noqa: E402

NAME = "native_grammar_cost"
PROMPT = "Write a SQLite query, with no explanation, that lists {request}."
REQUESTS = [
    "the names of all users",
    "the emails of the users older than 30",
    "how many users live in each city",
    "the ten most recent rows of the orders table",
    "the total of the orders of each user, largest first",
    "the users who never placed an order",
    "the average total of the orders",
    "the names of the users from Paris, in alphabetical order",
]


def methods(server: Any) -> dict[str, dict[str, Any]]:
    from tests.support.llm_server import GRAMMAR_MODEL, IGNORES_GRAMMAR_MODEL, MODEL, SMALL_GRAMMAR_MODEL

    return {
        "native (GPT-5 style)": {"model": GRAMMAR_MODEL},
        "native (vLLM style)": {"model": MODEL, "grammar_style": "vllm"},
        "speculative": {"model": MODEL, "native_grammar": False},
        "fallback (refused)": {"model": SMALL_GRAMMAR_MODEL},
        "fallback (ignored)": {"model": IGNORES_GRAMMAR_MODEL, "grammar_style": "vllm"},
    }


def run(server: Any, options: dict[str, Any], requests: list[str], target: Any) -> list[dict[str, Any]]:
    import grammar_guide as gg
    from grammar_guide.providers.openai import OpenAIDraft
    from tests.support.llm_server import API_KEY

    grammar = gg.Grammar.builtin("sqlite")
    draft = OpenAIDraft(base_url=f"{server.base_url}/v1", api_key=API_KEY, **options)
    rows = []
    for request in requests:
        t0 = time.perf_counter()
        error = None
        try:
            before = len(server.records)
            result = gg.guide(
                draft, grammar, PROMPT.format(request=request), target=target, max_draft_calls=8, max_corrections=8
            )
        except gg.GuideExhausted as exc:
            result, error = exc.result, str(exc)
        stats = result.stats
        records = server.records[before:]
        for record in records:
            record.finished.wait(10)
        rows.append(
            {
                "request": request,
                "text": result.text,
                "valid": grammar.is_complete(result.text),
                "error": error,
                "path": stats.path,
                "draft_calls": stats.draft_calls,
                "corrections": stats.corrections,
                "tokens_in": sum(r.prompt_tokens for r in records),
                "tokens_out": sum(r.tokens_generated for r in records),
                "reported_in": stats.draft_tokens_in,
                "reported_out": stats.draft_tokens_out,
                "refused_requests": sum(r.status == 400 for r in records),
                "target_tokens": stats.target_tokens,
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.native_grammar_cost", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="3 requests instead of 8")
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    requests = REQUESTS[:3] if args.quick else REQUESTS

    from grammar_guide import TargetModel
    from tests.support.llm_server import get_server

    server = get_server()
    target = TargetModel.load()
    info = machine()
    results: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, str] = {}
    for name, options in methods(server).items():
        rows, note = attempt(NAME, name, len(requests), functools.partial(run, server, options, requests, target))
        if rows is None:
            notes[name] = note or ""
        else:
            results[name] = rows
    n = len(requests)
    table = markdown_table(
        [
            "way",
            "valid",
            "path (native/spec./fallback)",
            "draft calls",
            "corrections",
            "billed in",
            "billed out",
            "target tokens",
            "wall s",
        ],
        [
            [
                name,
                f"{sum(r['valid'] for r in rows)}/{n}",
                "/".join(str(sum(r["path"] == p for r in rows)) for p in ("native", "speculative", "fallback")),
                sum(r["draft_calls"] for r in rows),
                sum(r["corrections"] for r in rows),
                sum(r["tokens_in"] for r in rows),
                sum(r["tokens_out"] for r in rows),
                sum(r["target_tokens"] for r in rows),
                sum(r["seconds"] for r in rows),
            ]
            for name, rows in results.items()
        ],
    )
    print(
        f"\nNative grammar vs speculative: {n} SQL requests, grammars/sqlite.lark, SmolLM2-135M behind the "
        f"local test server (greedy). Machine: {machine_line(info)}\n"
    )
    print(table)
    for name, note in notes.items():
        print(f"\n{name}: {note}")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "requests": requests,
        "prompt": PROMPT,
        "table": table,
        "notes": notes,
        "rows": results,
    }
    path = write_results(NAME, payload, args.results_dir)
    print(f"\nwrote {path}", file=sys.stderr)
    server.stop()
    return payload


if __name__ == "__main__":
    main()
