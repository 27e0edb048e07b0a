"""The target model on the machine's accelerator: pass costs, batched passes, and guided rows.

Issue 26 item 2 has each Ray actor load one target "on a GPU when there is one"; CI has none, so
this is run by hand where a GPU is lent (see benchmarks/README.md). It loads the default
SmolLM2-135M-Instruct with ``load_model(device=...)`` (bf16 on a GPU, float32 on a CPU) and prints
three tables:

1. **Pass cost**: the time of one forward pass of ``rows x tokens`` new tokens, relative to one
   token. ``local/batching.py`` plans steps by a pass cost (``CPU_PASS_COST``, ``GPU_PASS_COST``:
   how many tokens a pass takes before it costs more than one); this is the measurement behind it.
2. **Batched free writing**: ``TargetModel.continue_text`` under the ``json`` and ``sqlite``
   grammars from 1 and ``--batch`` threads at once (the threads' steps share forward passes):
   tokens a second, and whether every text is a valid prefix.
3. **Guided rows**: ``gg.guide_many`` over replayed answers (``batch_throughput.ANSWERS`` and
   truncated answers that the target must finish), with the target on this device: valid rows,
   target tokens, rows a minute.

Run: ``python -m benchmarks.target_device [--device cuda] [--batch 8] [--rows 32]``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import grammar_guide as gg  # noqa: E402
from benchmarks._common import machine, machine_line, markdown_table, write_results  # noqa: E402
from benchmarks.batch_throughput import ANSWERS, Answer, TimedReplay  # noqa: E402

NAME = "target_device"

SHAPES = [(1, 1), (1, 8), (1, 32), (1, 128), (1, 256), (1, 512), (4, 1), (16, 1), (64, 1), (16, 32)]

# Answers cut short, and prose with no answer in it (cut as prose: the target writes the answer).
CUT = [
    Answer("json", "A person as JSON.", "Sure! I can describe a person for you, just tell me who."),
    Answer("sqlite", "Names of users older than 30.", "I do not know the schema of your database."),
    Answer("sqlite", "Names of users older than 30.", "SELECT name FROM users WHERE age >"),
    Answer("sqlite", "Orders per customer.", "SELECT customer_id, COUNT(*) FROM orders GROUP BY"),
    Answer("json", "A person as JSON.", '{"name": "Ada", "languages": ["English",'),
    Answer("json", "A book as JSON.", '{"title": "Dune", "author":'),
]


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def pass_costs(lm: Any, repeat: int) -> list[dict[str, Any]]:
    """Median time of a forward pass per (rows, tokens) shape, and its ratio to one token."""
    import torch

    rows: list[dict[str, Any]] = []
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for batch, n in SHAPES:
            ids = torch.randint(0, lm.n_vocab - 1, (batch, n), generator=generator).to(lm.device)
            for _ in range(3):
                lm.model(input_ids=ids, logits_to_keep=1)
            times = []
            for _ in range(repeat):
                synchronize(lm.device)
                started = time.perf_counter()
                lm.model(input_ids=ids, logits_to_keep=1)
                synchronize(lm.device)
                times.append(time.perf_counter() - started)
            rows.append({"rows": batch, "tokens": n, "ms": 1000 * statistics.median(times)})
    one = rows[0]["ms"]
    for row in rows:
        row["x one token"] = row["ms"] / one
    return rows


def free_writing(target: Any, grammars: dict[str, gg.Grammar], threads: int, tokens: int) -> dict[str, Any]:
    """``threads`` continuations at once, alternating the grammars: tokens a second, all valid."""
    names = list(grammars)
    prompts = ["Write a JSON object describing a person.", "Write an SQL query listing users' names."]

    def one(i: int) -> tuple[int, bool]:
        grammar = grammars[names[i % len(names)]]
        out = target.continue_text(prompts[i % len(prompts)], "", grammar, max_new_tokens=tokens, min_terminals=10**6)
        return out.sampled_tokens + out.forced_tokens, grammar.valid_prefix(out.text) == len(out.text)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(one, range(threads)))
    seconds = time.perf_counter() - started
    made = sum(n for n, _ in results)
    return {
        "threads": threads,
        "tokens": made,
        "seconds": seconds,
        "tokens/s": made / seconds,
        "all valid prefixes": all(ok for _, ok in results),
    }


async def guided_rows(target: Any, answers: list[Answer], rows: int, concurrency: int) -> dict[str, Any]:
    picked = [answers[i % len(answers)] for i in range(rows)]
    prompts = [f"[row {i}] {a.prompt}" for i, a in enumerate(picked)]
    valid = target_tokens = errors = 0
    started = time.monotonic()
    for grammar in sorted({a.grammar for a in picked}):
        job = [p for p, a in zip(prompts, picked, strict=True) if a.grammar == grammar]
        replay = TimedReplay({p: a.answer for p, a in zip(prompts, picked, strict=True)}, ttft=0.0, rate=10_000)
        async for r in gg.guide_many(replay.draft(), grammar, job, target, concurrency=concurrency):
            valid += r.valid
            errors += r.error is not None
            target_tokens += r.result.stats.target_tokens if r.result is not None else 0
    seconds = time.monotonic() - started
    return {
        "concurrency": concurrency,
        "rows": rows,
        "valid": valid,
        "errors": errors,
        "target tokens": target_tokens,
        "rows/min": 60 * rows / seconds,
    }


def table(rows: list[dict[str, Any]]) -> str:
    header = list(rows[0])
    return markdown_table(header, [[row[k] for k in header] for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda, cpu, ... (default: load_model's choice)")
    parser.add_argument("--dtype", default=None, help="float32, bfloat16, ... (default: load_model's choice)")
    parser.add_argument("--batch", type=int, default=8, help="the target's batch (threads at once)")
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=48, help="tokens per free continuation")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args()

    import torch

    from grammar_guide.local import TargetModel, load_model

    started = time.monotonic()
    lm = load_model(device=args.device, dtype=args.dtype)
    loaded = time.monotonic() - started
    name = torch.cuda.get_device_name(0) if lm.device.startswith("cuda") else "cpu"
    print(f"{machine_line(machine())}; {lm!r} ({name}), loaded in {loaded:.1f} s", flush=True)

    costs = pass_costs(lm, args.repeat)
    print(table(costs), flush=True)

    target = TargetModel(lm, batch=args.batch)
    grammars = {"json": gg.Grammar.builtin("json"), "sqlite": gg.Grammar.builtin("sqlite")}
    free_writing(target, grammars, 1, 4)  # warm-up
    writing = [free_writing(target, grammars, n, args.tokens) for n in (1, args.batch)]
    print(table(writing), flush=True)

    answers = ANSWERS + CUT
    guided = [asyncio.run(guided_rows(target, answers, args.rows, c)) for c in (1, args.batch)]
    print(table(guided), flush=True)

    results: dict[str, Any] = {"device": lm.device, "device_name": name, "dtype": str(lm.dtype)}
    results["torch"] = torch.__version__
    results["load_seconds"] = loaded
    results |= {"pass_costs": costs, "free_writing": writing, "guided_rows": guided}
    suffix = ("" if lm.device == "cpu" else "_gpu") + ("" if args.dtype is None else "_" + args.dtype)
    print(f"wrote {write_results(NAME + suffix, results, args.results_dir)}")


if __name__ == "__main__":
    main()
