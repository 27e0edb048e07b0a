"""Concurrent guided runs sharing one target model: one by one, concurrent but serialised, batched.

Eight calls of the target (SmolLM2-135M, greedy) over the JSON grammar, each with its own prompt
and the start of an object (``{"name": "``) to go on from: up to ``--tokens`` tokens each, in one
finishing call (``acontinue_text``, what ``aguide`` calls when the target writes). The benchmark
first ran ``aguide`` with a draft that stopped after the start; since issue 25 such an answer is
closed (``{"name": ""}``) and the target is not called, so the benchmark calls it directly. Three
ways, in one run:

- **one by one**: each run awaited before the next starts;
- **concurrent, batch=1**: the 8 runs started together on a target with ``batch=1`` (calls one at
  a time, as every target ran before batching: 63.8 s against 64.6 s one by one in issue 15);
- **concurrent, batch=8**: the same on a target with ``batch=8`` (the default): each call decodes
  with its own KV cache and the steps of all calls run in one forward pass.

``--local-draft`` measures instead a batch job whose draft is the local model itself, sharing the
target's model and KV caches (``TransformersDraft.from_target``, the CLI's default ``--draft
local``): ``guide_many`` over the same prompts, the draft writing freely, at concurrency 1 and 4.

``--scoring`` has each of the ``--runs`` calls score candidate texts between its steps, as a
guided run scores tied edits (``alog_likelihoods``, one scoring every ``--tokens`` / ``--rounds``
tokens): four texts, the text so far and a few tokens more each, then the target goes on. The three
ways as above; the scores must agree too (within 1e-3).

Every way must write the same texts (greedy; checked, and reported). The table gives the wall
time, the forward passes the target ran and the mean rows per pass, and the load average before
and after (the machine is shared: compare the ratio within one run).

``python -m benchmarks.concurrent_bench [--runs 8] [--tokens 64] [--repeat 1] [--local-draft |
--scoring [--rounds 4]]`` prints a table and
writes ``benchmarks/results/concurrent_bench.json``; with ``--repeat`` the three ways take turns and
each figure is the best of its turns.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grammar_guide as gg
from benchmarks._common import machine, machine_line, markdown_table, write_results

NAME = "concurrent_bench"
SUBJECTS = ["a cat", "a city", "a book", "a planet", "a song", "a river", "a car", "a tree", "a bird", "a chair"]
STARTS = ['{"name": "', '{"title": "', '{"kind": "', '{"id": 1, "label": "']
#: What ``--scoring`` adds to the text so far to make the texts it scores.
ENDINGS = ['", "note": "x"}', '"}', '", "id": 2}', '", "tags": []}']


def prompts(n: int) -> list[tuple[str, str]]:
    """``n`` prompts with the start of the draft's answer to each."""
    return [
        (f"Describe {SUBJECTS[i % len(SUBJECTS)]} as a JSON object with a few fields.", STARTS[i % len(STARTS)])
        for i in range(n)
    ]


async def one(target: gg.TargetModel, prompt: str, start: str, tokens: int) -> str:
    grammar = gg.Grammar.builtin("json")
    written = await target.acontinue_text(prompt, start, grammar, max_new_tokens=tokens, finish=True)
    if not written.text:
        raise AssertionError(f"the target wrote nothing after {start!r}")
    return start + written.text


async def scored(target: gg.TargetModel, prompt: str, start: str, tokens: int, rounds: int) -> str:
    """``rounds`` times: score four texts (the text so far and an ending each), then write up to
    ``tokens / rounds`` tokens. The text and the scores (to 4 decimals), as one string."""
    grammar = gg.Grammar.builtin("json")
    text, scores = start, []
    for _ in range(rounds):
        scores += await target.alog_likelihoods(prompt, [text + e for e in ENDINGS])
        written = await target.acontinue_text(prompt, text, grammar, max_new_tokens=tokens // rounds, finish=True)
        text += written.text
    return text + "\t" + " ".join(f"{s:.4f}" for s in scores)


def runs(args: argparse.Namespace, target: gg.TargetModel, work: list[tuple[str, str]]) -> list[Any]:
    """The coroutines of ``work``'s calls."""
    if args.scoring:
        return [scored(target, p, s, args.tokens, args.rounds) for p, s in work]
    return [one(target, p, s, args.tokens) for p, s in work]


async def one_by_one(calls: list[Any]) -> list[str]:
    return [await call for call in calls]


async def together(calls: list[Any]) -> list[str]:
    return list(await asyncio.gather(*calls))


def measure(name: str, target: gg.TargetModel, texts_of: Any) -> tuple[dict[str, Any], list[str]]:
    passes, steps = target.batcher.passes, target.batcher.steps
    load = os.getloadavg()[0]
    started = time.perf_counter()
    texts = asyncio.run(texts_of)
    seconds = time.perf_counter() - started
    passes, steps = target.batcher.passes - passes, target.batcher.steps - steps
    row = {
        "way": name,
        "seconds": round(seconds, 2),
        "forward_passes": passes,
        "steps": steps,
        "rows_per_pass": round(steps / passes, 2) if passes else 0.0,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    print(f"[{NAME}] {name}: {seconds:.1f} s, {passes} passes", file=sys.stderr, flush=True)
    return row, texts


async def job(target: gg.TargetModel, work: list[tuple[str, str]], concurrency: int) -> list[str]:
    """``guide_many`` over ``work``'s prompts with the local draft sharing ``target``'s model."""
    from grammar_guide.providers.transformers import TransformersDraft

    draft = TransformersDraft.from_target(target)
    rows = [{"id": i, "prompt": p} for i, (p, _) in enumerate(work)]
    texts: dict[object, str] = {}
    async for row in gg.guide_many(draft, "json", rows, target, concurrency=concurrency, max_new_tokens=60):
        texts[row.row.id] = row.result.text if row.result is not None else repr(row.error)
    return [texts[i] for i in range(len(work))]


def agree(texts: list[str], others: list[str]) -> bool:
    """The same texts, and scores (after a tab, ``--scoring``) within 1e-3 of each other."""

    def split(t: str) -> tuple[str, list[float]]:
        text, _, scores = t.partition("\t")
        return text, [float(s) for s in scores.split()]

    for a, b in zip(texts, others, strict=True):
        (ta, sa), (tb, sb) = split(a), split(b)
        if ta != tb or len(sa) != len(sb) or any(abs(x - y) > 1e-3 for x, y in zip(sa, sb, strict=True)):
            return False
    return True


def ways(args: argparse.Namespace, batched: gg.TargetModel, work: list[tuple[str, str]]) -> list[tuple[str, Any, Any]]:
    """The ways to time in one turn: (name, target, what it runs)."""
    if args.local_draft:
        return [(f"local draft, concurrency {c}", batched, job(batched, work, c)) for c in (1, 4)]
    serial = gg.TargetModel(batched.lm, batch=1)
    return [
        ("one by one", batched, one_by_one(runs(args, batched, work))),
        ("concurrent, batch=1", serial, together(runs(args, serial, work))),
        (f"concurrent, batch={batched.batch}", batched, together(runs(args, batched, work))),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=8, help="concurrent guided runs")
    ap.add_argument("--tokens", type=int, default=64, help="the target's token budget in each run")
    ap.add_argument("--repeat", type=int, default=1, help="turns of the three ways (best of)")
    ap.add_argument("--local-draft", action="store_true", help="a batch job drafted by the local model")
    ap.add_argument("--scoring", action="store_true", help="each call scores candidate texts between its steps")
    ap.add_argument("--rounds", type=int, default=4, help="--scoring: scorings (and writing turns) per call")
    args = ap.parse_args(argv)
    info = machine()
    work = prompts(args.runs)
    batched = gg.TargetModel.load()  # batch=8
    asyncio.run(one(batched, *work[0], 4))  # load the tokenizers and the grammar's matcher
    best: dict[str, dict[str, Any]] = {}
    outputs = []
    for _ in range(args.repeat):
        for name, target, texts_of in ways(args, batched, work):
            row, texts = measure(name, target, texts_of)
            if name not in best or row["seconds"] < best[name]["seconds"]:
                best[name] = row
            outputs.append(texts)
    rows = list(best.values())
    same = all(agree(texts, outputs[0]) for texts in outputs)
    base = rows[0]["seconds"]
    for row in rows:
        row["speedup"] = round(base / row["seconds"], 2) if row["seconds"] else 0.0
    what = (
        "the local draft writing freely" if args.local_draft else f"the target writing up to {args.tokens} tokens each"
    ) + (f", scoring 4 texts {args.rounds} times" if args.scoring else "")
    print(f"{args.runs} guided runs, {what}; {machine_line(info)}; best of {args.repeat}")
    header = ["way", "seconds", "speedup", "forward passes", "rows/pass", "load before", "load after"]
    keys = ["way", "seconds", "speedup", "forward_passes", "rows_per_pass", "load_before", "load_after"]
    print(markdown_table(header, [[row[k] for k in keys] for row in rows]))
    print(f"same texts every way: {'yes' if same else 'NO'}")
    mode = "_local_draft" if args.local_draft else "_scoring" if args.scoring else ""
    write_results(
        NAME + mode,
        {"machine": info, "runs": args.runs, "tokens": args.tokens, "repeat": args.repeat, "rows": rows, "same": same},
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
