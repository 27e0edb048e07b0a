"""SMCalFlow programs under Grammar Prompting's Lispress grammar, with and without the target (issue 28 item 6).

Grammar Prompting (Wang et al. 2023) ships its SMCalFlow grammar and data in berlino/grammar-prompting
(commit b44075586a4f5e1bc195cc50535a85a5cbcbf322): ``grammars/lispress_full_3.lark`` (start rule
``call``, as its ``neural_lark/dataset.py`` loads it) and the compositional split's gold programs,
``data/smcalflow_cs/calflow.orgchart.event_create_v2/source_domain_with_target_num32/test.canonical.outdist.tgt``.
Nothing of it is vendored here: the clone is named on the command line.

The repository holds no model predictions, and the grammar accepts every gold program of the
test and valid files (1,440 of 1,440, checked with lark), so the drafts are made from the gold
programs: the i-th program gets slip ``SLIPS[i % len(SLIPS)]``, slips a chat model makes writing
Lispress (one closing bracket short or too many, a string unquoted or single-quoted, a zero-argument
call written bare, ``Thursday`` for ``(Thursday)``, a near function name from full SMCalFlow that
this grammar lacks, an answer cut at 80% of its length). Each draft is replayed as a black box
(``_replay_draft.ReplayDraft``: the whole draft first, then the rest of it from where the accepted
text left it) through ``grammar_guide.guide`` with ``target=False`` and, with ``--target``, the
SmolLM2 target.

Scored per program, by outside oracles where there is one: valid (lark, the grammar's own parser,
parses the output with start ``call``); GuideExhausted; gold (the output is the gold program, white
space aside); faithful (``GuideResult.faithful``); edits (``stats.corrections``); seconds.

Run: ``python -m benchmarks.smcalflow_target CLONE [--limit N] [--target] [--name NAME]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import machine, machine_line, markdown_table, write_results  # noqa: E402
from benchmarks._replay_draft import ReplayDraft  # noqa: E402

__all__ = ["SLIPS", "main"]

NAME = "smcalflow_target"
GRAMMAR = "grammars/lispress_full_3.lark"
PROGRAMS = (
    "data/smcalflow_cs/calflow.orgchart.event_create_v2/source_domain_with_target_num32/test.canonical.outdist.tgt"
)
PROMPT = "Translate the request into an SMCalFlow (Lispress) program.\nRequest: {utterance}"
_ZERO_ARGUMENT = re.compile(
    r"\((Tomorrow|Today|CurrentUser|Morning|Afternoon|Noon|Lunch|Now|ThisWeek|NextWeekList|Evening"
    r"|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\)"
)
_RENAMES = (
    ("DateAtTimeWithDefaults", "DateAtTime"),
    ("AttendeeListHasRecipient ", "AttendeeListHasRecipients "),
    ("FindManager", "FindManagerOf"),
    ("NumberPM", "NumberPm"),
    ("Event.start_?", "Event.start?"),
    ("PersonName.apply", "PersonName"),
)


def _renamed(program: str) -> str:
    for name, near in _RENAMES:
        if name in program:
            return program.replace(name, near, 1)
    return program


SLIPS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("one ) short", lambda p: p[:-1]),
    ("one ) too many", lambda p: p + ")"),
    ("string unquoted", lambda p: re.sub(r'"([^"]*)"', r"\1", p, count=1)),
    ("bare zero-argument call", lambda p: _ZERO_ARGUMENT.sub(r"\1", p, count=1)),
    ("near function name", _renamed),
    ("cut at 80%", lambda p: p[: int(len(p) * 0.8)]),
    ("single quotes", lambda p: re.sub(r'"([^"]*)"', r"'\1'", p)),
)


def load(clone: Path, limit: int) -> tuple[str, list[tuple[str, str]]]:
    """The grammar's text and (utterance, gold program) pairs, the first ``limit``."""
    grammar = (clone / GRAMMAR).read_text(encoding="utf-8")
    programs = (clone / PROGRAMS).read_text(encoding="utf-8").splitlines()
    utterances = (clone / PROGRAMS.replace(".tgt", ".src")).read_text(encoding="utf-8").splitlines()
    return grammar, list(zip(utterances, programs, strict=True))[:limit]


def guide_one(grammar: Any, oracle: Any, utterance: str, gold: str, draft_text: str, target: Any) -> dict[str, Any]:
    import grammar_guide as gg

    replay = ReplayDraft(draft_text)
    draft = gg.FunctionDraft(lambda prompt, prefix: replay.continue_from(prefix), name="replay", continues_prefix=True)
    t0 = time.perf_counter()
    error = None
    try:
        result = gg.guide(
            draft,
            grammar,
            PROMPT.format(utterance=utterance),
            target,
            max_corrections=16,
            max_draft_calls=16,
            timeout=240,
        )
    except gg.GuideExhausted as exc:
        result, error = exc.result, str(exc)
    seconds = time.perf_counter() - t0
    try:
        oracle.parse(result.text)
        valid = True
    except Exception:
        valid = False
    return {
        "text": result.text,
        "valid": valid,
        "exhausted": error is not None,
        "error": error,
        "gold": " ".join(result.text.split()) == " ".join(gold.split()),
        "faithful": result.faithful,
        "edits": result.stats.corrections,
        "seconds": seconds,
    }


def run(clone: Path, limit: int, with_target: bool) -> dict[str, Any]:
    import lark

    import grammar_guide as gg

    text, pairs = load(clone, limit)
    grammar = gg.Grammar.from_lark(text, start="call", name="lispress_full_3")
    oracle = lark.Lark(text, start="call")
    targets: dict[str, Any] = {"target=False": False}
    if with_target:
        targets["SmolLM2 target"] = gg.TargetModel.load()
    rows = []
    for i, (utterance, gold) in enumerate(pairs):
        slip, make = SLIPS[i % len(SLIPS)]
        draft_text = make(gold)
        row: dict[str, Any] = {"index": i, "slip": slip, "draft": draft_text, "gold_program": gold}
        for name, target in targets.items():
            row[name] = guide_one(grammar, oracle, utterance, gold, draft_text, target)
            print(f"[{NAME}] #{i} {slip} {name}: {_cells(row[name])}", file=sys.stderr, flush=True)
        rows.append(row)
    return {"rows": rows, "methods": list(targets)}


def _cells(r: dict[str, Any]) -> str:
    flags = [k for k in ("valid", "exhausted", "gold", "faithful") if r[k]]
    return f"{' '.join(flags)} edits={r['edits']} {r['seconds']:.1f}s"


def summary(rows: list[dict[str, Any]], methods: list[str]) -> list[list[Any]]:
    out = []
    for m in methods:
        rs = [r[m] for r in rows]
        out.append(
            [
                m,
                len(rs),
                sum(r["valid"] for r in rs),
                sum(r["exhausted"] for r in rs),
                sum(r["gold"] for r in rs),
                sum(r["faithful"] for r in rs),
                sum(r["edits"] for r in rs),
                sum(r["seconds"] for r in rs) / max(len(rs), 1),
            ]
        )
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clone", type=Path, help="a local clone of berlino/grammar-prompting")
    parser.add_argument("--limit", type=int, default=21, help="programs (default 21: three of each slip)")
    parser.add_argument("--target", action="store_true", help="also with the SmolLM2 target (slow on a CPU)")
    parser.add_argument("--name", default=NAME, help="results file name")
    args = parser.parse_args(argv)
    measured = run(args.clone, args.limit, args.target)
    info = machine()
    header = ["method", "programs", "valid (lark)", "GuideExhausted", "gold", "faithful", "edits", "s / program"]
    per_program = [[r["index"], r["slip"]] + [_cells(r[m]) for m in measured["methods"]] for r in measured["rows"]]
    print(machine_line(info))
    print(markdown_table(header, summary(measured["rows"], measured["methods"])))
    print()
    print(markdown_table(["#", "slip", *measured["methods"]], per_program))
    payload = {"machine": info, "clone_commit": "b44075586a4f5e1bc195cc50535a85a5cbcbf322", **measured}
    print(f"results: {write_results(args.name, payload)}")
    return payload


if __name__ == "__main__":
    main()
