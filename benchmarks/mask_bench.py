"""Token-mask cost at SmolLM2's 49k vocabulary, and prefill saved by KV-cache reuse.

Part 1 decodes greedily under a grammar (SQL subset, the builtin SQLite grammar, JSON) with the
real SmolLM2-135M-Instruct and times each step's pieces: the model's forward pass (what an
unconstrained step costs), llguidance's mask (``compute_bitmask``), and applying it (bits -> bool
tensor -> masked argmax). Targets: mask median <= 0.5 ms, p99 <= 2 ms, masking <= 10% of a CPU
decoding step. Measured in the same run, the alternative Domino calls opportunistic masking:
check only the model's own token (``validate_tokens``) and compute the full mask when it is
rejected; the table gives its check time, how often the model's own token was allowed, and the
masking cost per step that results (what ``TargetModel`` does when decoding greedily).

Part 2 runs the guide loop (local draft + target sharing SmolLM2) and counts the prompt and text
tokens that the KV caches reused instead of feeding again, against re-prefilling every call.

    python -m benchmarks.mask_bench [--steps 40] [--threads N] [--no-sqlite]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._common import machine, machine_line, markdown_table, write_results

SQL_SUBSET = r"""
start: query ";"?
query: "SELECT"i ["DISTINCT"i] items "FROM"i source [where] [group] [order] [limit]
items: "*" | item ("," item)*
item: expr ["AS"i NAME]
source: NAME ("JOIN"i NAME "ON"i expr)*
where: "WHERE"i expr
group: "GROUP"i "BY"i expr ("," expr)*
order: "ORDER"i "BY"i expr ["ASC"i | "DESC"i] ("," expr ["ASC"i | "DESC"i])*
limit: "LIMIT"i NUMBER
?expr: expr "AND"i expr | expr "OR"i expr | operand (CMP operand)?
?operand: NAME | NAME "." NAME | NUMBER | STRING | NAME "(" ("*" | expr) ")"
CMP: "=" | "<>" | "<" | ">" | "<=" | ">=" | "LIKE"i
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STRING: /'[^']*'/
NUMBER: /[0-9]+(\.[0-9]+)?/
%import common.WS
%ignore WS
"""

SQL_CASES = [
    ("Table users(id, name, age). Write one SQL query: the names of users older than 30.", "SELECT"),
    ("Tables orders(id, user_id, total), users(id, name). Total spent per user name, largest first.", "SELECT"),
    ("Table products(id, name, price). The five cheapest products.", "SELECT name,"),
]
JSON_CASES = [
    ("Give a JSON object describing a person, with name, age, email and a list of hobbies.", "{"),
    ("Give a JSON array of three books, each an object with title and year.", "["),
    ("Give a JSON object describing a product.", '{"name": "'),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


@dataclass
class StepTimes:
    """Seconds per decoding step, by part; how often the model's own token was allowed."""

    forward: list[float] = field(default_factory=list)
    mask: list[float] = field(default_factory=list)
    apply: list[float] = field(default_factory=list)
    validate: list[float] = field(default_factory=list)
    opportunistic: list[float] = field(default_factory=list)
    own_allowed: int = 0
    steps: int = 0


def decode_and_time(lm: Any, grammar: Any, cases: list[tuple[str, str]], steps: int) -> StepTimes:
    import llguidance as llg
    import torch

    from grammar_guide.local import KVCache
    from grammar_guide.local.token_mask import STEP_MAX_ITEMS, bitmask_to_bool

    limits = llg.LLParserLimits(step_max_items=STEP_MAX_ITEMS)  # as the target builds its matcher
    proto = llg.LLMatcher(lm.ll_tokenizer, grammar.llguidance_grammar, log_level=0, limits=limits)
    assert not proto.is_error(), proto.get_error()
    t = StepTimes()
    for prompt, text in cases:
        matcher = proto.deep_copy()
        kept = lm.text_ids(text)
        assert matcher.consume_tokens(kept)
        ids = lm.prompt_ids(prompt) + kept
        kv = KVCache(lm)
        kv.advance(ids[:-1])  # the prompt's prefill is not a decoding step
        for _ in range(steps):
            t0 = time.perf_counter()
            logits = kv.advance(ids)
            t1 = time.perf_counter()
            own = int(torch.argmax(logits))
            own_ok = matcher.validate_tokens([own]) == 1
            t2 = time.perf_counter()
            bits = matcher.compute_bitmask()
            t3 = time.perf_counter()
            assert not matcher.is_error(), matcher.get_error()
            allowed = bitmask_to_bool(bits, lm.n_vocab, lm.device)
            token = int(torch.argmax(logits.masked_fill(~allowed, float("-inf"))))
            t4 = time.perf_counter()
            t.forward.append(t1 - t0)
            t.validate.append(t2 - t1)
            t.mask.append(t3 - t2)
            t.apply.append(t4 - t3)
            t.opportunistic.append((t2 - t1) + (0.0 if own_ok else (t4 - t2)))
            t.own_allowed += own_ok
            t.steps += 1
            if token in lm.eos_token_ids or not matcher.consume_token(token) or matcher.is_stopped():
                break
            ids.append(token)
    return t


def prefill_run(target_cls: Any, draft_cls: Any, gg: Any, grammar: Any) -> dict[str, Any]:
    target = target_cls.load()
    saved: list[int] = []
    fed: list[int] = []

    class CountingDraft(draft_cls):  # type: ignore[misc]  # TransformersDraft, passed in (imported lazily)
        def stream_sync(self, call: Any) -> Iterator[str]:
            try:
                yield from super().stream_sync(call)
            finally:
                saved.append(call.prefill_tokens_saved)
                fed.append(call.tokens_in or 0)

    draft = CountingDraft.from_target(target)  # one model and one KV cache for both
    target_calls = [0]
    original = target.continue_text

    def counting(*args: Any, **kwargs: Any) -> Any:
        target_calls[0] += 1
        return original(*args, **kwargs)

    target.continue_text = counting
    t_saved0, t_fed0 = target.prefill_tokens_saved, target.prefill_tokens
    result = gg.guide(
        draft,
        grammar,
        "Tables orders(id, user_id, total), users(id, name, age). Write one SQLite query: the name and "
        "total spent of every user older than 30 who spent more than 100, largest first.",
        target,
        lookahead=16,
        max_new_tokens=120,
    )
    guide_target = {
        "calls": target_calls[0],
        "fed": target.prefill_tokens - t_fed0,
        "saved": target.prefill_tokens_saved - t_saved0,
    }
    # The target over successive corrections of one text: each call's text extends the last.
    doc = "SELECT name, SUM(total) AS spent FROM orders JOIN users ON users.id = orders.user_id WHERE age > 30"
    cuts = [len("SELECT name,"), len("SELECT name, SUM(total) AS"), len(doc) - 30, len(doc) - 12, len(doc)]
    fed0, saved0 = target.prefill_tokens, target.prefill_tokens_saved
    for cut in cuts:
        target.continue_text("Total spent per user older than 30.", doc[:cut], grammar, max_new_tokens=4)
    successive = {
        "calls": len(cuts),
        "fed": target.prefill_tokens - fed0,
        "saved": target.prefill_tokens_saved - saved0,
    }
    return {
        "successive": successive,
        "draft_calls": len(saved),
        "draft_fed": sum(fed),
        "draft_saved": sum(saved),
        "target_calls": guide_target["calls"],
        "target_fed": guide_target["fed"],
        "target_saved": guide_target["saved"],
        "text": result.text,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="decoding steps per case")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the builtin SQLite grammar (20 s to compile)")
    args = parser.parse_args(argv)

    import torch

    import grammar_guide as gg
    from grammar_guide.local import load_model
    from grammar_guide.providers.transformers import TransformersDraft

    if args.threads:
        torch.set_num_threads(args.threads)
    lm = load_model()
    info = machine()
    print(
        f"# Token masks at {lm.n_vocab} tokens ({lm.name}, {lm.device}, {lm.dtype}); {machine_line(info)}, "
        f"torch threads {torch.get_num_threads()}\n"
    )

    grammars = [("SQL subset", gg.Grammar.from_lark(SQL_SUBSET, name="sql-subset"), SQL_CASES)]
    if not args.no_sqlite:
        started = time.perf_counter()
        sqlite = gg.Grammar.builtin("sqlite")
        print(f"(builtin sqlite grammar compiled in {time.perf_counter() - started:.1f} s)\n")
        grammars.append(("SQLite (builtin)", sqlite, SQL_CASES))
    grammars.append(("JSON (builtin)", gg.Grammar.builtin("json"), JSON_CASES))

    ms = 1e3
    rows = []
    payload: dict[str, Any] = {"machine": info, "n_vocab": lm.n_vocab, "grammars": {}}
    for label, grammar, cases in grammars:
        # Warm the matcher (lexer states are built lazily) and the model once, untimed.
        decode_and_time(lm, grammar, cases[:1], 3)
        t = decode_and_time(lm, grammar, cases, args.steps)
        step = [f + m + a for f, m, a in zip(t.forward, t.mask, t.apply, strict=True)]
        share = [(m + a) / s for m, a, s in zip(t.mask, t.apply, step, strict=True)]
        row = {
            "steps": t.steps,
            "mask_median_ms": statistics.median(t.mask) * ms,
            "mask_p99_ms": percentile(t.mask, 99) * ms,
            "apply_median_ms": statistics.median(t.apply) * ms,
            "forward_median_ms": statistics.median(t.forward) * ms,
            "mask_share_median": statistics.median(share),
            "mask_share_total": (sum(t.mask) + sum(t.apply)) / sum(step),
            "validate_median_ms": statistics.median(t.validate) * ms,
            "own_token_allowed": t.own_allowed / max(1, t.steps),
            "opportunistic_median_ms": statistics.median(t.opportunistic) * ms,
            "opportunistic_p99_ms": percentile(t.opportunistic, 99) * ms,
            "opportunistic_share_total": sum(t.opportunistic) / (sum(t.forward) + sum(t.opportunistic)),
        }
        payload["grammars"][label] = row
        rows.append(
            [
                label,
                row["steps"],
                f"{row['mask_median_ms']:.3f}",
                f"{row['mask_p99_ms']:.3f}",
                f"{row['apply_median_ms']:.3f}",
                f"{row['forward_median_ms']:.1f}",
                f"{100 * row['mask_share_total']:.1f}%",
                f"{row['validate_median_ms']:.3f}",
                f"{100 * row['own_token_allowed']:.0f}%",
                f"{row['opportunistic_median_ms']:.3f} / {row['opportunistic_p99_ms']:.3f}",
                f"{100 * row['opportunistic_share_total']:.1f}%",
            ]
        )
    print(
        markdown_table(
            [
                "grammar",
                "steps",
                "mask median ms",
                "mask p99 ms",
                "apply median ms",
                "forward median ms",
                "masking share of step",
                "own-token check ms (opportunistic)",
                "own token allowed",
                "greedy target: masking median / p99 ms",
                "greedy target: share of step",
            ],
            rows,
        )
    )
    print("\nTargets: mask median <= 0.5 ms, p99 <= 2 ms, masking <= 10% of a CPU decoding step.\n")

    grammar = grammars[1][1] if len(grammars) > 2 else grammars[0][1]
    run = prefill_run(gg.TargetModel, TransformersDraft, gg, grammar)
    payload["prefill"] = run
    print("# Prefill tokens over one guide run (local draft + target, SQL)\n")
    print(
        markdown_table(
            ["model", "calls", "tokens fed", "tokens reused from KV cache", "fed without reuse", "saved"],
            [
                [
                    "draft",
                    run["draft_calls"],
                    run["draft_fed"],
                    run["draft_saved"],
                    run["draft_fed"] + run["draft_saved"],
                    f"{100 * run['draft_saved'] / max(1, run['draft_fed'] + run['draft_saved']):.0f}%",
                ],
                [
                    "target",
                    run["target_calls"],
                    run["target_fed"],
                    run["target_saved"],
                    run["target_fed"] + run["target_saved"],
                    f"{100 * run['target_saved'] / max(1, run['target_fed'] + run['target_saved']):.0f}%",
                ],
            ],
        )
    )
    s = run["successive"]
    print(
        f"\nTarget over {s['calls']} successive corrections of one SQL text: fed {s['fed']} tokens, reused "
        f"{s['saved']} ({100 * s['saved'] / max(1, s['fed'] + s['saved']):.0f}% of {s['fed'] + s['saved']})."
    )
    print(f"\nText of the guide run: {run['text']!r}")
    path = write_results("mask_bench", payload)
    print(f"\nResults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
