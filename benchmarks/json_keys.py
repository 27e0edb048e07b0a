"""The reference project's headline benchmark: JSON objects with exactly n string key/value pairs.

grammar-guide 0.0.11's README measures tokens/s for a JSON object with n in {10, 20, 30, 40}
string keys, prompt "Here is a JSON object, with {n} keys, using only string values:\\n\\n```json\\n",
a SmolLM model, token lookahead 20, greedy, 3 trials. Here, in one run and on one machine, with
SmolLM2-135M-Instruct (the same weights on both sides) as draft and target:

- ``ours``: ``TransformersDraft`` (KV-cache backtracking, lookup guesses of 5 tokens checked in
  one forward pass) + ``TargetModel``, sharing one model; ``ours, lookup off``: the same with
  ``lookup=0`` for both (one forward pass per token), to show what the guesses add;
- ``gg-0.0.11 transformers`` and ``gg-0.0.11 generic``: grammar-guide 0.0.11 from PyPI in its own
  venv (``baseline_env.py``), its transformers path and its generic path with a greedy
  ``model.generate`` function as the draft; ``stop_at=["```", "}"]`` as in its own benchmark;
- ``unconstrained``: ``model.generate`` with the same model and prompt (greedy, stops at ```);
  ``unconstrained, lookup``: the same with transformers' own prompt-lookup decoding
  (``prompt_lookup_num_tokens=5``, the same guess length), the nearest peer of ours' guesses;
- ``constrained``: the target alone, a grammar mask at every token (``TargetModel.continue_text``
  with ``finish=True``; tokens the grammar forces are appended without sampling; lookup guesses).

The grammar (the same Lark text for both projects; the reference project ships none on PyPI):
an object of exactly n pairs of JSON strings. Every method sees the same text: the prompt in the
model's chat template (ours applies it; the others are given the formatted text).

Reported per n and method: output tokens/s (tokens of the output in the SmolLM2 tokenizer over
the generation wall time; model loading and grammar compilation excluded), the share of outputs
that ``json.loads`` accepts as an object with exactly n keys, all string values, corrections,
wall time.

Run: ``python -m benchmarks.json_keys [--quick] [--trials T] [--keys 10 20] [--no-baseline]
[--baseline-keys 10] [--baseline-trials 1]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import machine, machine_line, markdown_table, write_results  # noqa: E402

NAME = "json_keys"
PROMPT = "Here is a JSON object, with {n} keys, using only string values:\n\n```json\n"
LOOKAHEAD = 20
GG_STOP_AT = ["```", "}"]
GG_MAX_CORRECTIONS = 100


def grammar_text(n: int) -> str:
    """Lark: an object of exactly ``n`` string-valued pairs (JSON strings as RFC 8259 has them)."""
    repeat = f' ("," pair)~{n - 1}' if n > 1 else ""
    return "\n".join(
        [
            "start: object",
            f'object: "{{" pair{repeat} "}}"',
            'pair: STRING ":" STRING',
            r'STRING: /"([^"\\\x00-\x1f]|\\["\\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/',
            "%import common.WS",
            "%ignore WS",
            "",
        ]
    )


def is_valid(text: str | None, n: int) -> bool:
    """``json.loads`` accepts it as an object with exactly ``n`` keys, all with string values."""
    if text is None:
        return False
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    body = body.split("```", 1)[0].strip()
    try:
        value = json.loads(body)
    except ValueError:
        return False
    return isinstance(value, dict) and len(value) == n and all(isinstance(v, str) for v in value.values())


# -- our side ----------------------------------------------------------------------------------


def run_ours_side(keys: list[int], trials: int) -> tuple[dict[str, list[dict[str, Any]]], Any]:
    import torch

    import grammar_guide as gg
    from grammar_guide import GuideExhausted, TargetModel
    from grammar_guide.providers.transformers import TransformersDraft

    target = TargetModel.load()
    draft = TransformersDraft.from_target(target)
    lm = target.lm
    # Warm-up (first-call overheads are not generation speed).
    with torch.inference_mode():
        lm.model.generate(**lm.tokenizer("Hello", return_tensors="pt"), max_new_tokens=4, do_sample=False)
    plain_target = TargetModel(lm, lookup=0)
    drafts = {
        "ours": (draft, target),
        "ours, lookup off": (TransformersDraft.from_target(plain_target, lookup=0), plain_target),
    }
    generate_options = {"unconstrained": {}, "unconstrained, lookup": {"prompt_lookup_num_tokens": 5}}
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in [*drafts, *generate_options, "constrained"]}
    for n in keys:
        grammar = gg.Grammar.from_lark(grammar_text(n), name=f"json-{n}-keys")
        prompt = PROMPT.format(n=n)
        for trial in range(trials):
            for name, (method_draft, method_target) in drafts.items():
                t0 = time.perf_counter()
                error = None
                try:
                    result = gg.guide(
                        method_draft,
                        grammar,
                        prompt,
                        target=method_target,
                        lookahead=LOOKAHEAD,
                        max_corrections=100,
                        max_draft_calls=200,
                        max_new_tokens=4096,
                        stop=["```"],
                    )
                except GuideExhausted as exc:
                    result, error = exc.result, str(exc)
                seconds = time.perf_counter() - t0
                out[name].append(
                    {
                        "n": n,
                        "trial": trial,
                        "text": result.text,
                        "seconds": seconds,
                        "error": error,
                        "corrections": result.stats.corrections,
                        "draft_calls": result.stats.draft_calls,
                        "target_tokens": result.stats.target_tokens,
                    }
                )

            ids = lm.prompt_ids(prompt)
            for name, options in generate_options.items():
                t0 = time.perf_counter()
                with torch.inference_mode():
                    generated = lm.model.generate(
                        torch.tensor([ids]),
                        attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                        max_new_tokens=16 * n + 64,
                        do_sample=False,
                        stop_strings=["```"],
                        tokenizer=lm.tokenizer,
                        pad_token_id=lm.tokenizer.eos_token_id,
                        **options,
                    )
                seconds = time.perf_counter() - t0
                new = generated[0, len(ids) :].tolist()
                text = lm.tokenizer.decode(new, skip_special_tokens=True)
                out[name].append(
                    {
                        "n": n,
                        "trial": trial,
                        "text": text,
                        "seconds": seconds,
                        "error": None,
                        "corrections": 0,
                        "generated_tokens": len(new),
                    }
                )

            t0 = time.perf_counter()
            cont = target.continue_text(prompt, "", grammar, max_new_tokens=16 * n + 64, finish=True)
            seconds = time.perf_counter() - t0
            out["constrained"].append(
                {
                    "n": n,
                    "trial": trial,
                    "text": cont.text,
                    "seconds": seconds,
                    "error": None,
                    "corrections": 0,
                    "sampled_tokens": cont.sampled_tokens,
                    "forced_tokens": cont.forced_tokens,
                }
            )
            print(
                f"[{NAME}] n={n} trial={trial}: "
                + ", ".join(f"{name} {runs[-1]['seconds']:.1f}s" for name, runs in out.items()),
                file=sys.stderr,
                flush=True,
            )
    return out, target


# -- the reference project ---------------------------------------------------------------------


def run_gg0011(mode: str, keys: list[int], trials: int, format_prompt: Callable[[str], str]) -> list[dict[str, Any]]:
    from benchmarks import baseline_env

    request = {
        "mode": mode,
        "model": str(baseline_env.compat_model_folder()),
        "stop_at": GG_STOP_AT,
        "lookahead": LOOKAHEAD,
        "max_corrections": GG_MAX_CORRECTIONS,
        "runs": [
            {"n": n, "trial": t, "grammar": grammar_text(n), "prompt": format_prompt(PROMPT.format(n=n))}
            for n in keys
            for t in range(trials)
        ],
    }
    rows: list[dict[str, Any]] = baseline_env.run_worker(request, timeout=3 * 3600)["rows"]
    return rows


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.json_keys", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n in {10, 20}, 1 trial")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--keys", type=int, nargs="+", default=None)
    parser.add_argument("--no-baseline", action="store_true", help="skip grammar-guide 0.0.11")
    parser.add_argument(
        "--baseline-keys", type=int, nargs="+", default=None, help="n for grammar-guide 0.0.11 (default: all of --keys)"
    )
    parser.add_argument("--baseline-trials", type=int, default=None, help="trials for grammar-guide 0.0.11")
    parser.add_argument("--results-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    keys = args.keys or ([10, 20] if args.quick else [10, 20, 30, 40])
    trials = args.trials or (1 if args.quick else 3)
    baseline_keys = [n for n in (args.baseline_keys or keys) if n in keys]
    baseline_trials = args.baseline_trials or trials
    info = machine()

    rows, target = run_ours_side(keys, trials)
    notes: dict[str, str] = {}
    if not args.no_baseline:
        for mode, name in (("json_transformers", "gg-0.0.11 transformers"), ("json_generic", "gg-0.0.11 generic")):
            print(f"[{NAME}] {name} ...", file=sys.stderr, flush=True)
            try:
                rows[name] = run_gg0011(mode, baseline_keys, baseline_trials, target.lm.format_prompt)
            except Exception as exc:  # reported, never faked
                notes[name] = f"{type(exc).__name__}: {exc}"
                print(f"[{NAME}] {name} failed: {notes[name]}", file=sys.stderr, flush=True)

    count = target.lm.count_tokens
    summary: dict[str, dict[int, dict[str, Any]]] = {}
    table_rows = []
    for method, method_rows in rows.items():
        summary[method] = {}
        for n in keys:
            runs = [r for r in method_rows if r["n"] == n]
            if not runs:
                continue  # the baseline was not run at this n
            for r in runs:
                r["tokens"] = r.get("generated_tokens") or count(r["text"] or "")
                r["valid"] = is_valid(r["text"], n)
            seconds = [r["seconds"] for r in runs]
            tps = [r["tokens"] / r["seconds"] for r in runs if r["seconds"] > 0]
            corrections = [r["corrections"] for r in runs if r.get("corrections") is not None]
            s: dict[str, Any] = {
                "tokens_per_s": statistics.mean(tps) if tps else 0.0,
                "valid": sum(r["valid"] for r in runs) / len(runs) if runs else 0.0,
                "corrections": statistics.mean(corrections) if corrections else None,
                "seconds": statistics.mean(seconds) if seconds else 0.0,
                "errors": sorted({r["error"].splitlines()[-1][:200] for r in runs if r.get("error")}),
            }
            summary[method][n] = s
            table_rows.append(
                [
                    n,
                    method,
                    s["tokens_per_s"],
                    f"{100 * s['valid']:.0f}%",
                    "-" if s["corrections"] is None else s["corrections"],
                    s["seconds"],
                ]
            )
    table_rows.sort(key=lambda r: (r[0], list(rows).index(r[1])))
    table = markdown_table(["n", "method", "tokens/s", "valid", "corrections", "wall s"], table_rows)

    targets = {}
    if "ours" in summary:
        for n in keys:
            ours = summary["ours"][n]
            gg = summary.get("gg-0.0.11 transformers", {}).get(n)
            un = summary["unconstrained"][n]
            targets[n] = {
                "ours >= 2x gg-0.0.11 transformers tokens/s": None
                if gg is None
                else ours["tokens_per_s"] >= 2 * gg["tokens_per_s"],
                "ours >= unconstrained tokens/s": ours["tokens_per_s"] >= un["tokens_per_s"],
                "ours >= unconstrained with lookup tokens/s": ours["tokens_per_s"]
                >= summary["unconstrained, lookup"][n]["tokens_per_s"],
                "ours 100% valid": ours["valid"] == 1.0,
            }
    print(
        f"\nJSON with exactly n string keys: SmolLM2-135M-Instruct draft and target, lookahead {LOOKAHEAD}, greedy, "
        f"{trials} trial(s). Machine: {machine_line(info)}\n"
    )
    print(table)
    print("\nTargets met:")
    for n, t in targets.items():
        print(f"  n={n}: " + ", ".join(f"{k}: {'n/a' if v is None else ('yes' if v else 'NO')}" for k, v in t.items()))
    for name, note in notes.items():
        print(f"\n{name}: {note}")
    payload = {
        "benchmark": NAME,
        "machine": info,
        "settings": {
            "keys": keys,
            "trials": trials,
            "baseline_keys": baseline_keys,
            "baseline_trials": baseline_trials,
            "lookahead": LOOKAHEAD,
            "prompt": PROMPT,
            "gg_stop_at": GG_STOP_AT,
            "gg_max_grammar_corrections": GG_MAX_CORRECTIONS,
        },
        "summary": {m: {str(n): s for n, s in per.items()} for m, per in summary.items()},
        "targets": {str(n): t for n, t in targets.items()},
        "notes": notes,
        "table": table,
        "rows": rows,
    }
    path = write_results(NAME, payload, args.results_dir)
    print(f"\nwrote {path}", file=sys.stderr)
    return payload


if __name__ == "__main__":
    main()
