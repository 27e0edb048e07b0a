"""Violation cost: what one invalid byte in a long draft costs the guide loop, by text size.

A draft streams a JSON array of records (about 1 KB, 100 KB and 1 MB, in one run) in chunks of 64
characters, as an API streams tokens, and continues its text truly after a repair. Two drafts per
size: the valid text, and the same text with one extra comma (``},,{``) nine tenths of the way in.
``guide(..., target=False)`` runs each (the grammar's own repair drops the comma; the result is
checked to be the valid text). The violation's cost is the difference of the two wall times: the
diagnostics of one violation (expected terminals, line and column), the repair, and the second
draft call. Flat in the text's size is the goal (issue 15, item 3): the same at 1 KB and 1 MB.
Streaming a long text varies by more than that from run to run on a busy machine, so the time
from the last draft text the loop reads before the repair to the repair's ``Correction`` event
(the violation's handling: its diagnostics and the repair, with nothing streamed in between) is
measured too.

``python -m benchmarks.violation_bench [--sizes 1000 100000 1000000] [--repeat 3] [--before FILE]``
prints a table and writes ``benchmarks/results/violation_bench.json``. Each figure is the best of
``--repeat``, each repeat on its own text (records numbered apart), so that nothing one run
computed (a cached parse) serves the next. ``--before`` puts the figures of a results file
written just before (by another version of grammar-guide) in the table beside these.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grammar_guide as gg
from benchmarks._common import machine, machine_line, markdown_table, write_results

NAME = "violation_bench"
CHUNK = 64


def records(size: int, first: int = 0) -> str:
    """A JSON array of small records, about ``size`` characters long, numbered from ``first``."""
    parts: list[str] = []
    total = 2
    i = first
    while total < size or not parts:
        part = f'{{"id": {i}, "name": "user-{i}", "tags": ["a", "b"], "score": {i % 97 / 10}}}'
        parts.append(part)
        total += len(part) + 2
        i += 1
    return "[" + ", ".join(parts) + "]"


def with_extra_comma(text: str) -> str:
    """``text`` with one comma doubled nine tenths of the way in (after a record)."""
    at = text.index("}, ", len(text) * 9 // 10) + 1
    return text[:at] + "," + text[at:]


class ContinuingDraft:
    """Streams ``first`` on the first call; later calls continue ``clean`` from the accepted text."""

    def __init__(self, first: str, clean: str) -> None:
        self.first = first
        self.clean = clean
        self.calls = 0
        self.last_text_at = 0.0  # when the loop last read draft text
        self.handling: float | None = None  # from then to the first correction

    def read(self, chunk: str) -> None:
        self.last_text_at = time.perf_counter()

    def event(self, event: gg.Event) -> None:
        if isinstance(event, gg.Correction) and self.handling is None:
            self.handling = time.perf_counter() - self.last_text_at

    def __call__(self, prompt: str, prefix: str) -> Iterator[str]:
        self.calls += 1
        if self.calls == 1:
            text = self.first
        else:
            assert self.clean.startswith(prefix), "the accepted text left the clean text"
            text = self.clean[len(prefix) :]
        for i in range(0, len(text), CHUNK):
            yield text[i : i + CHUNK]


def run_once(grammar: gg.Grammar, first: str, clean: str) -> dict[str, Any]:
    function = ContinuingDraft(first, clean)
    draft = gg.FunctionDraft(function, continues_prefix=True)
    started = time.perf_counter()
    result = gg.guide(
        draft,
        grammar,
        "",
        target=False,
        max_new_tokens=10**9,
        max_draft_calls=8,
        lookahead=10**6,
        on_draft_text=function.read,
        on_event=function.event,
    )
    seconds = time.perf_counter() - started
    if result.text != clean:
        raise AssertionError(f"the result is not the valid text (length {len(result.text)} vs {len(clean)})")
    return {
        "seconds": seconds,
        "corrections": result.stats.corrections,
        "draft_calls": result.stats.draft_calls,
        "check_seconds": result.stats.check_seconds,
        "handling_seconds": function.handling,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, help="a results file of this benchmark, for the 'before' columns")
    args = ap.parse_args(argv)
    before = {}
    if args.before is not None:
        before = {r["size"]: r for r in json.loads(args.before.read_text(encoding="utf-8"))["rows"]}
    grammar = gg.Grammar.builtin("json")
    info = machine()
    rows = []
    for size in args.sizes:
        valids, runs = [], []
        for repeat in range(args.repeat):
            clean = records(size, first=repeat * 1000)
            valids.append(run_once(grammar, clean, clean))
            runs.append(run_once(grammar, with_extra_comma(clean), clean))
        valid = min(valids, key=lambda r: r["seconds"])
        broken = min(runs, key=lambda r: r["seconds"])
        if any(r["corrections"] != 1 for r in runs):
            raise AssertionError(f"expected one correction, got {[r['corrections'] for r in runs]}")
        clean = records(size)
        rows.append(
            {
                "size": size,
                "size_chars": len(clean),
                "valid_seconds": valid["seconds"],
                "one_violation_seconds": broken["seconds"],
                "violation_cost_seconds": broken["seconds"] - valid["seconds"],
                "handling_seconds": min(r["handling_seconds"] or 0.0 for r in runs),
                "draft_calls": broken["draft_calls"],
            }
        )
        print(
            f"  {len(clean):>9,} chars: valid {valid['seconds']:.3f} s, one violation {broken['seconds']:.3f} s, "
            f"handling {rows[-1]['handling_seconds']:.4f} s",
            flush=True,
        )
    print(f"\nviolation cost, JSON, target=False ({machine_line(info)}), best of {args.repeat}:\n")
    header = ["text", "valid draft (s)", "one extra comma (s)", "violation cost (s)", "handling (s)"]
    if before:
        header = [header[0], *(f"before: {h}" for h in header[1:]), *(f"after: {h}" for h in header[1:])]

    def columns(r: dict[str, Any] | None) -> list[Any]:
        keys = ["valid_seconds", "one_violation_seconds", "violation_cost_seconds", "handling_seconds"]
        return ["" if r is None or r.get(k) is None else r[k] for k in keys]

    table = [
        (f"{r['size_chars']:,} chars", *(columns(before.get(r["size"])) if before else []), *columns(r)) for r in rows
    ]
    print(markdown_table(header, table))
    payload: dict[str, Any] = {"machine": info, "chunk": CHUNK, "repeat": args.repeat, "rows": rows}
    if before:
        payload["before"] = list(before.values())
    write_results(NAME, payload)
    return payload


if __name__ == "__main__":
    main()
