"""Batch throughput and what guidance costs over the same unconstrained API call.

An API draft is simulated by replaying an answer (``_replay_draft.ReplayDraft``: the whole answer
first, then the rest of it from where the accepted text left it) as a stream with an API's timing:
``--ttft`` seconds before the first token, then ``--rate`` tokens a second (a token is 4
characters). Usage is billed as an API bills it: the prompt and the text sent back (the accepted
text a continuation restates) as input tokens, every streamed token as output, including the ones
streamed before the loop closed the stream. Nothing runs a model: the job is API-bound, as a batch
against a hosted model is.

1. **Rows per minute** of ``gg.guide_many`` (``target=False``) over ``--rows`` rows drawn in turn
   from the answers, at concurrency 1, 4 and 16.
2. **Guided over unconstrained**, one answer at a time: the wall time and the billed tokens of
   ``gg.aguide`` over one plain call of the same replayed draft with the same ``max_tokens``
   (``--lookahead``), separately for answers that were already valid and for those that needed a
   repair.

The answers (``ANSWERS``) are written for this benchmark after the slips chat models make (an
``ILIKE`` or ``LIMT`` for SQLite, a trailing comma, unquoted keys, prose and fences around the
answer); they are not recorded model output. ``--answers FILE`` replays others instead: JSONL with
``grammar`` (a builtin name), ``prompt`` and ``answer``. ``--nl2sql360 CLONE`` and ``--json-repair
CLONE`` replay real ones: ``--real N`` answers models gave to Spider dev questions that SQLite
accepts as they are and ``N`` it rejects (HKUSTDial/NL2SQL360 @ 689bdfa1da6a, the dev rejects
``real_sql_repair`` tunes on), and ``N`` inputs of json_repair's own tests (mangiucugna/json_repair
@ 600ede6, dev split) that parse as JSON and ``N`` that do not.

Run: ``python -m benchmarks.batch_throughput [--rows N] [--ttft S] [--rate TOK_PER_S] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import grammar_guide as gg  # noqa: E402
from benchmarks._common import machine, machine_line, markdown_table, write_results  # noqa: E402
from benchmarks._replay_draft import ReplayDraft  # noqa: E402

NAME = "batch_throughput"


@dataclass(frozen=True)
class Answer:
    grammar: str
    prompt: str
    answer: str


ANSWERS = [
    # SQL, already valid.
    Answer("sqlite", "Names of users older than 30.", "SELECT name FROM users WHERE age > 30"),
    Answer("sqlite", "How many orders per customer?",
           "SELECT customer_id, COUNT(*) AS orders FROM orders GROUP BY customer_id ORDER BY orders DESC"),
    Answer("sqlite", "The five most expensive products.",
           "SELECT name, price FROM products ORDER BY price DESC LIMIT 5"),
    Answer("sqlite", "Customers with no order.",
           "SELECT c.name FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id WHERE o.id IS NULL"),
    # SQL, needing a repair.
    Answer("sqlite", "Names starting with A, five of them.",
           "Sure! ```sql\nSELECT name FROM users WHERE name ILIKE 'a%' LIMT 5\n```"),
    Answer("sqlite", "Average salary per department.",
           "SELECT department, AVG(salary) FORM employees GROUP BY department"),
    Answer("sqlite", "Orders of the last 7 days.",
           "SELECT id, total FROM orders WHERE created_at >= NOW() - INTERVAL 7 DAY"),
    Answer("sqlite", "Ten newest posts.",
           "SELECT title, created_at FROM posts ORDER BY created_at DESC FETCH FIRST 10 ROWS ONLY"),
    # JSON, already valid.
    Answer("json", "Describe Ada Lovelace as a JSON object.",
           '{"name": "Ada Lovelace", "born": 1815, "died": 1852, "known_for": ["Analytical Engine notes"]}'),
    Answer("json", "A JSON list of three primary colours.", '["red", "green", "blue"]'),
    Answer("json", "The weather as JSON.", '{"city": "Paris", "temperature_c": 18.5, "conditions": "cloudy"}'),
    Answer("json", "A user record as JSON.",
           '{"id": 42, "email": "a@example.com", "active": true, "roles": ["admin"]}'),
    # JSON, needing a repair.
    Answer("json", "Describe Alan Turing as a JSON object.",
           'Here is the JSON:\n```json\n{"name": "Alan Turing", "born": 1912, "fields": ["logic", "computing"],}\n```'),
    Answer("json", "A book as JSON.", "{title: 'Dune', author: 'Frank Herbert', year: 1965}"),
    Answer("json", "A point as JSON.", '{"x": 1, "y": 2 "z": 3}'),
    Answer("json", "Settings as JSON.", '{"theme": "dark", "font_size": 14, "autosave": True}'),
]  # fmt: skip


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class TimedReplay:
    """Replayed answers as a streaming API: ``ttft`` seconds, then ``rate`` tokens a second."""

    def __init__(self, answers: dict[str, str], ttft: float, rate: float) -> None:
        self.replays = {prompt: ReplayDraft(text) for prompt, text in answers.items()}
        self.ttft, self.rate = ttft, rate

    async def stream(self, text: str, max_new_tokens: int, call: Any) -> AsyncIterator[str]:
        await asyncio.sleep(self.ttft)
        pieces = [text[i : i + 4] for i in range(0, len(text), 4)][:max_new_tokens]
        call.tokens_out = 0
        for piece in pieces:
            await asyncio.sleep(1 / self.rate)
            call.tokens_out += 1
            yield piece
        call.finish_reason = "length" if len(pieces) < tokens(text) else "stop"

    def draft(self) -> gg.FunctionDraft:
        async def generate(prompt: str, prefix: str, max_new_tokens: int, call: Any) -> AsyncIterator[str]:
            call.tokens_in = tokens(prompt) + tokens(prefix)
            text = self.replays[prompt].continue_from(prefix)
            async for piece in self.stream(text, max_new_tokens, call):
                yield piece

        return gg.FunctionDraft(generate, name="timed-replay")

    async def plain_call(self, prompt: str, max_new_tokens: int) -> tuple[float, int]:
        """One unconstrained call: (seconds, billed tokens)."""

        class Call:
            tokens_out = 0
            finish_reason: str | None = None

        call = Call()
        started = time.monotonic()
        async for _ in self.stream(self.replays[prompt].answer, max_new_tokens, call):
            pass
        return time.monotonic() - started, tokens(prompt) + call.tokens_out


def billed(result: gg.GuideResult | None) -> int:
    if result is None:
        return 0
    return (result.stats.draft_tokens_in or 0) + (result.stats.draft_tokens_out or 0)


async def throughput(
    answers: list[Answer], rows: int, concurrency: int, ttft: float, rate: float, lookahead: int
) -> dict[str, Any]:
    """``rows`` rows drawn in turn from ``answers``: one ``guide_many`` job per grammar, one after
    the other, each at ``concurrency``."""
    picked = [answers[i % len(answers)] for i in range(rows)]
    prompts = [f"[row {i}] {a.prompt}" for i, a in enumerate(picked)]
    replay = TimedReplay({p: a.answer for p, a in zip(prompts, picked, strict=True)}, ttft, rate)
    valid = errors = 0
    seconds = 0.0
    for grammar in sorted({a.grammar for a in picked}):
        job = [gg.BatchRow(i, prompts[i]) for i, a in enumerate(picked) if a.grammar == grammar]
        started = time.monotonic()
        async for r in gg.guide_many(replay.draft(), grammar, job, False, concurrency=concurrency, lookahead=lookahead):
            valid += r.valid
            errors += r.error is not None
        seconds += time.monotonic() - started
    return {"concurrency": concurrency, "rows": rows, "seconds": seconds, "rows_per_minute": 60 * rows / seconds,
            "valid": valid, "errors": errors}  # fmt: skip


async def overhead(answers: list[Answer], ttft: float, rate: float, lookahead: int) -> list[dict[str, Any]]:
    out = []
    for a in answers:
        grammar = gg.Grammar.builtin(a.grammar)
        already_valid = grammar.is_complete(a.answer)
        replay = TimedReplay({a.prompt: a.answer}, ttft, rate)
        plain_seconds, plain_tokens = await replay.plain_call(a.prompt, lookahead)
        replay = TimedReplay({a.prompt: a.answer}, ttft, rate)
        started = time.monotonic()
        try:
            result: gg.GuideResult | None = await gg.aguide(
                replay.draft(), grammar, a.prompt, False, lookahead=lookahead
            )
            error = None
        except (gg.GuideExhausted, gg.ProviderError) as exc:
            result, error = exc.result, type(exc).__name__
        guided_seconds = time.monotonic() - started
        out.append({
            "grammar": a.grammar, "prompt": a.prompt, "already_valid": already_valid,
            "plain_seconds": plain_seconds, "plain_tokens": plain_tokens,
            "guided_seconds": guided_seconds, "guided_tokens": billed(result),
            "text": result.text if result is not None else None, "error": error,
            "draft_calls": result.stats.draft_calls if result is not None else 0,
            "corrections": result.stats.corrections if result is not None else 0,
        })  # fmt: skip
    return out


def ratios(rows: list[dict[str, Any]], already_valid: bool) -> dict[str, Any]:
    chosen = [r for r in rows if r["already_valid"] == already_valid]
    if not chosen:
        return {"answers": 0}
    time_ratios = [r["guided_seconds"] / r["plain_seconds"] for r in chosen]
    token_ratios = [r["guided_tokens"] / r["plain_tokens"] for r in chosen]
    return {
        "answers": len(chosen),
        "time_ratio_mean": sum(time_ratios) / len(chosen),
        "time_ratio_max": max(time_ratios),
        "token_ratio_mean": sum(token_ratios) / len(chosen),
        "token_ratio_max": max(token_ratios),
        "time_ratio_total": sum(r["guided_seconds"] for r in chosen) / sum(r["plain_seconds"] for r in chosen),
        "token_ratio_total": sum(r["guided_tokens"] for r in chosen) / sum(r["plain_tokens"] for r in chosen),
        "errors": sum(r["error"] is not None for r in chosen),
    }


def load_answers(path: Path) -> list[Answer]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Answer(r["grammar"], r["prompt"], r["answer"]) for r in rows]


def real_answers(nl2sql360: Path | None, json_repair: Path | None, n: int) -> list[Answer]:
    """``n`` valid and ``n`` invalid real answers from each clone given (see the module's text)."""
    out: list[Answer] = []
    if nl2sql360 is not None:
        from benchmarks.real_sql_repair import interleave, sqlite_rejects
        from benchmarks.sql_sources import load_nl2sql360

        answers = load_nl2sql360(nl2sql360, "spider_dev")
        rejected = interleave(sqlite_rejects(answers), n)
        grammar = gg.Grammar.builtin("sqlite")
        distinct = {a.text: a for a in interleave(answers, 100 * n) if a.text.strip()}  # ~35% are valid
        accepted = [a for a in distinct.values() if grammar.is_complete(a.text)][:: max(1, len(distinct) // (3 * n))][
            :n
        ]
        prompt = "Spider dev, {db}: the model's SQLite answer to question {key} ({model})"
        out += [
            Answer("sqlite", prompt.format(db=a.db_id, key=a.key, model=a.model), a.text) for a in accepted + rejected
        ]
    if json_repair is not None:
        from benchmarks.json_repair_suite import read_cases

        cases = [c for c in read_cases(json_repair) if c.split == "dev" and c.broken.strip()]
        grammar = gg.Grammar.builtin("json")
        valid = [c for c in cases if grammar.is_complete(c.broken)][:n]
        broken = [c for c in cases if not grammar.is_complete(c.broken)][:n]
        out += [
            Answer("json", f"json_repair's test input {i} ({c.category})", c.broken)
            for i, c in enumerate(valid + broken)
        ]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=48, help="rows of the throughput job (48)")
    parser.add_argument("--ttft", type=float, default=0.4, help="seconds to the first token (0.4)")
    parser.add_argument("--rate", type=float, default=60.0, help="tokens a second after it (60)")
    parser.add_argument("--lookahead", type=int, default=256, help="max_tokens of every call, both ways (256)")
    parser.add_argument("--answers", type=Path, help="JSONL of grammar, prompt, answer (default: the built-in set)")
    parser.add_argument(
        "--subset",
        choices=("all", "valid", "repair"),
        default="all",
        help="the throughput job's answers: all, only those already valid, only those needing repair",
    )
    parser.add_argument("--nl2sql360", type=Path, help="a clone of HKUSTDial/NL2SQL360: real SQL answers")
    parser.add_argument("--json-repair", type=Path, help="a clone of mangiucugna/json_repair: its test inputs")
    parser.add_argument("--real", type=int, default=8, help="valid and invalid answers of each real source (8)")
    parser.add_argument("--quick", action="store_true", help="16 rows, a tenth of the latency")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.ttft, args.rate = 16, args.ttft / 10, args.rate * 10
    real = args.nl2sql360 is not None or args.json_repair is not None
    answers = (
        real_answers(args.nl2sql360, args.json_repair, args.real)
        if real
        else load_answers(args.answers)
        if args.answers
        else ANSWERS
    )
    if args.subset != "all":
        want = args.subset == "valid"
        answers = [a for a in answers if gg.Grammar.builtin(a.grammar).is_complete(a.answer) == want]
    runs = [asyncio.run(throughput(answers, args.rows, c, args.ttft, args.rate, args.lookahead)) for c in (1, 4, 16)]
    cost = asyncio.run(overhead(answers, args.ttft, args.rate, args.lookahead))
    summary = {"already valid": ratios(cost, True), "needed repair": ratios(cost, False)}
    info = machine()
    print(f"batch throughput ({args.subset} answers): replayed API draft, TTFT {args.ttft:g} s, "
          f"{args.rate:g} tokens/s, max_tokens {args.lookahead}; {machine_line(info)}\n")  # fmt: skip
    base = runs[0]["rows_per_minute"]
    print(markdown_table(
        ["concurrency", "rows", "seconds", "rows/min", "speed-up", "valid", "errors"],
        [[r["concurrency"], r["rows"], r["seconds"], r["rows_per_minute"], r["rows_per_minute"] / base,
          r["valid"], r["errors"]] for r in runs],
    ))  # fmt: skip
    print()
    print(markdown_table(
        ["answers", "n", "time ratio, mean", "time ratio, max", "token ratio, mean", "token ratio, max", "errors"],
        [[name, s["answers"], s.get("time_ratio_mean", "-"), s.get("time_ratio_max", "-"),
          s.get("token_ratio_mean", "-"), s.get("token_ratio_max", "-"), s.get("errors", "-")]
         for name, s in summary.items()],
    ))  # fmt: skip
    settings = vars(args) | {k: str(getattr(args, k)) for k in ("answers", "nl2sql360", "json_repair")}
    payload = {"machine": info, "settings": settings, "throughput": runs,
               "overhead": summary, "answers": cost}  # fmt: skip
    if not args.quick:
        name = NAME + ("_real" if real else "") + ("" if args.subset == "all" else f"_{args.subset}")
        write_results(name, payload)
    return payload


if __name__ == "__main__":
    main()
