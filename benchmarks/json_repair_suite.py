"""Broken LLM JSON, repaired: grammar-guide beside json_repair on json_repair's own test suite.

The cases are json_repair's (https://github.com/mangiucugna/json_repair, ``tests/test_*.py``): each
``assert repair_json(BROKEN) == EXPECTED`` (or with ``return_objects=True``) whose arguments are
literals, read with ``ast`` from a local clone named on the command line (see benchmarks/README.md
for the commit); nothing of them is vendored here. Calls with other options (a schema, strict mode,
``skip_json_loads``, ...) are left out. The expected value is ``json.loads(EXPECTED)`` (or the
object itself); an expected ``""`` (json_repair finds no JSON at all) is its own category.

Each broken text is replayed as a black-box draft (a function returning the whole text) through

- ``ours``: ``grammar_guide.guide(draft, "json", prompt, target=False)``;
- ``ours+target``: the same with the default SmolLM2 target (``--target N``: on the first N cases
  of each split only, beside every method on the same cases; seconds a case on a CPU);
- ``json_repair``: ``json_repair.loads(text)`` from the package index (its own expected values, so
  it agrees with itself nearly everywhere: the column shows how far the suite is its own reading);
- ``jsonrepair``: the npm package, run with node (``--jsonrepair DIR``, a folder where
  ``npm install jsonrepair@3.14.1`` was run; ``benchmarks/jsonrepair_peer.mjs``).

Reported per category (the test file) and over all: valid (a JSON text came back: for ours a
complete result), valid where JSON is expected (the same, leaving out the cases where json_repair
finds no JSON: there a refusal is the expected answer), valid or rightly refused (valid, or ours
refused for a reason the guide checks, ``no answer`` or ``needs invention``, where the expected
value has no JSON of the draft's own text either: none expected, or a value with a word or digit
the broken text lacks, ``0`` for ``-``; ``valid`` itself is not redefined), exhausted (ours raised
GuideExhausted without a target; each collection's refusals are also printed by
``GuideExhausted.reason``, and how many of them rightly), agrees (its value equals the
expected one), agrees where the peers agree (on the cases where json_repair and jsonrepair give the
same value; their count in brackets), invented (the mean count of words in the output that are
nowhere in the broken text), seconds per case (the best of ``--repeat`` runs, 3 by default: the
machine is shared). The cases are split by a hash of the broken text into a development half
(``dev``: its failures were read while the JSON rewrites were tuned) and a held-out half
(``held-out``: only counted), reported separately.

A second source, ``--jsonrepair-suite CLONE``: jsonrepair's own tests (josdejong/jsonrepair,
``src/index.test.ts``, read by ``benchmarks/jsonrepair_tests.py``; the expected value is
``json.loads`` of the text jsonrepair's maintainers expect, and a case they expect to throw is a
"no JSON" case). Its cases are split by the same hash into ``jsonrepair-suite dev`` and
``jsonrepair-suite held-out``, so ``--split`` and ``--show`` pick the same half of each source.
How many pairs were read, and why the others could not be, is printed and written with the results.

A third source, ``--dirty-json-suite CLONE``: dirty-json's own tests (RyanMarcus/dirty-json,
commit d5c0a39, version 0.10.2; ``test/parser_test.js`` and the valid texts of ``test/nst``, read by
``benchmarks/dirty_json_tests.py``; the expected value is ``json.loads`` of the JSON text its
maintainers expect, a case they expect to throw is a "no JSON" case). An input that is also an
input of json_repair's or jsonrepair's suite, when those clones are named in the same run, is left
out (the count is printed). Split by the same hash into ``dirty-json-suite dev`` and
``dirty-json-suite held-out``. Nobody tunes on it: ``--show`` never prints its cases; look at its
totals only.

A fourth, held out in the same way, ``--best-effort-suite CLONE``: best-effort-json-parser's own
tests (beenotung/best-effort-json-parser, commit e83e71e, version 1.5.1: JSON cut short while an LLM
streams it; ``src/parse.spec.ts``, read by ``benchmarks/best_effort_json_tests.py``: the expected
value is ``JSON.stringify`` of the JavaScript value its maintainers expect, so a key cut before its
value is no member). It drops the inputs of every source read before it, dirty-json's included.

Run: ``python -m benchmarks.json_repair_suite [CLONE] [--jsonrepair-suite CLONE] [--dirty-json-suite CLONE]
[--jsonrepair DIR]
[--target N] [--repeat N] [--limit N] [--show dev|held-out] [--split dev|held-out] [--totals]``
(``--split dev`` while tuning: the held-out cases of either source are then neither run nor
printed; ``--totals``:
only each collection's overall rows are printed).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import best_effort_json_tests, dirty_json_tests  # noqa: E402
from benchmarks._common import machine, machine_line, markdown_table, write_results  # noqa: E402
from benchmarks.jsonrepair_tests import Reading, read_pairs  # noqa: E402

NAME = "json_repair_suite"
PROMPT = "Answer with one JSON value."
SPLITS = ("dev", "held-out")
UNSEEN = "jsonrepair-suite"  # jsonrepair's own tests, split by the same hash as json_repair's
DIRTY = "dirty-json-suite"  # dirty-json's own tests, held out from tuning; split by the same hash
BEST = "best-effort-suite"  # best-effort-json-parser's own tests, held out from tuning; the same hash
SHOWN = ("json_repair", UNSEEN)  # the sources whose disagreements --show prints (the held-out ones: never)
COLLECTIONS = (*SPLITS, *(f"{source} {split}" for source in (UNSEEN, DIRTY, BEST) for split in SPLITS))
JSONREPAIR_TESTS = "src/index.test.ts"
DIRTY_JSON_COMMIT = "d5c0a392ce9a3665937ef436e06fd2cf35a8ce4d"  # 0.10.2, 2024-06-01
BEST_EFFORT_COMMIT = "e83e71e0ab8bc04bb456c0bd262f500ca5420b20"  # 1.5.1, 2026-06-26
NO_JSON = object()  # json_repair's expected "" (no JSON found)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Case:
    category: str
    broken: str
    expected: Any
    split: str  # "dev" or "held-out"
    source: str = "json_repair"  # whose test suite: "json_repair", UNSEEN (jsonrepair's), DIRTY or BEST

    @property
    def collection(self) -> str:
        """The half of its source the case is counted in: ``dev``, ``held-out`` (json_repair's
        suite), or ``SOURCE dev`` / ``SOURCE held-out`` for another source (``jsonrepair-suite``,
        ``dirty-json-suite``, ``best-effort-suite``)."""
        return self.split if self.source == "json_repair" else f"{self.source} {self.split}"


@dataclass(frozen=True)
class Outcome:
    valid: bool
    agrees: bool
    invented: int
    seconds: float
    text: str
    exhausted: bool = False  # ours: GuideExhausted without a target
    expects_json: bool = True  # the suite expects a value (not json_repair's "" for no JSON)
    reason: str = ""  # ours, exhausted: GuideExhausted.reason ("no answer", "needs invention", ...)
    rightly_refused: bool = False  # exhausted for a checked reason where the expected value has
    # no JSON from the draft's own text either (see ``rightly_refused``)


#: The refusals whose reason the guide checks: nothing of the draft was kept, or no close of marks
#: alone ends what was kept (a budget that cut the draft is no such reason).
CHECKED_REASONS = frozenset({"no answer", "needs invention"})


Method = Callable[[str], "str | tuple[str | None, str] | None"]


def read_cases(clone: Path) -> list[Case]:
    """Every literal ``repair_json``/``loads`` assertion of the clone's tests, deduplicated."""
    seen: set[str] = set()
    cases = []
    for path in sorted((clone / "tests").glob("test_*.py")):
        for broken, expected in _assertions(ast.parse(path.read_text(encoding="utf-8"))):
            if broken in seen:
                continue
            seen.add(broken)
            category = path.stem.removeprefix("test_") + (" (no JSON)" if expected is NO_JSON else "")
            cases.append(Case(category, broken, expected, half(broken)))
    return cases


def read_jsonrepair_cases(clone: Path) -> tuple[list[Case], dict[str, Any]]:
    """jsonrepair's own cases (``src/index.test.ts``), deduplicated, and what the reading found:
    the pairs read, the distinct inputs kept, and the look-alike cases not read, by reason."""
    return pair_cases(read_pairs((clone / JSONREPAIR_TESTS).read_text(encoding="utf-8")), UNSEEN)


def read_dirty_json_cases(clone: Path, elsewhere: Set[str] = frozenset()) -> tuple[list[Case], dict[str, Any]]:
    """dirty-json's own cases (``test/parser_test.js``, ``test/nst/*.json``), deduplicated, less
    the inputs ``elsewhere`` (the other sources' broken texts read in the same run), and what the
    reading found (as ``read_jsonrepair_cases``, and how many inputs were dropped as ``elsewhere``)."""
    return pair_cases(dirty_json_tests.read_clone(clone), DIRTY, elsewhere)


def read_best_effort_cases(clone: Path, elsewhere: Set[str] = frozenset()) -> tuple[list[Case], dict[str, Any]]:
    """best-effort-json-parser's own cases (``src/parse.spec.ts``), as ``read_dirty_json_cases``."""
    text = (clone / best_effort_json_tests.TESTS).read_text(encoding="utf-8")
    return pair_cases(best_effort_json_tests.read_pairs(text), BEST, elsewhere)


def pair_cases(reading: Reading, source: str, elsewhere: Set[str] = frozenset()) -> tuple[list[Case], dict[str, Any]]:
    """A test suite's (input, expected text) pairs as cases of ``source``: each input once, those in
    ``elsewhere`` left out; the expected value is ``json.loads`` of the expected text (None: no JSON)."""
    unread = dict(reading.unread)
    seen: set[str] = set()
    cases, overlap = [], 0
    for pair in reading.pairs:
        if pair.input in seen:
            continue
        seen.add(pair.input)
        if pair.input in elsewhere:
            overlap += 1
            continue
        try:
            expected = NO_JSON if pair.expected is None else json.loads(pair.expected)
        except ValueError:
            unread["the expected text is not JSON"] = unread.get("the expected text is not JSON", 0) + 1
            continue
        category = pair.category + (" (no JSON)" if expected is NO_JSON else "")
        cases.append(Case(category, pair.input, expected, half(pair.input), source))
    read = {"pairs": len(reading.pairs), "distinct": len(cases), "unread": unread}
    return cases, read | ({"in_other_sources": overlap} if elsewhere else {})


def _assertions(tree: ast.AST) -> Iterator[tuple[str, Any]]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
            continue
        call, want = node.left, node.comparators[0]
        if not (isinstance(call, ast.Call) and _name(call.func) in ("repair_json", "loads") and call.args):
            continue
        options = {k.arg: k.value for k in call.keywords}
        if set(options) - {"return_objects"} or len(call.args) != 1:
            continue
        try:
            broken, expected = ast.literal_eval(call.args[0]), ast.literal_eval(want)
        except ValueError:
            continue
        if not isinstance(broken, str):
            continue
        flag = options.get("return_objects")
        as_objects = _name(call.func) == "loads" or (isinstance(flag, ast.Constant) and flag.value is True)
        value = _expected_value(expected, as_objects)
        if value is not None:
            yield broken, value[0]


def _expected_value(expected: Any, as_objects: bool) -> tuple[Any] | None:
    if as_objects:
        return (NO_JSON,) if expected == "" else (expected,)
    if not isinstance(expected, str):
        return None
    if expected == "":
        return (NO_JSON,)
    try:
        return (json.loads(expected),)
    except ValueError:
        return None


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def half(text: str) -> str:
    """``dev`` or ``held-out``: the half of its source a broken text is counted in (both sources)."""
    return "dev" if hashlib.sha1(text.encode("utf-8")).digest()[0] < 128 else "held-out"


def invented_words(output: str, broken: str) -> int:
    have = {w.lower() for w in _WORD.findall(broken)}
    return sum(1 for w in _WORD.findall(output) if w.lower() not in have)


def outcome(case: Case, text: str | None, seconds: float, reason: str = "") -> Outcome:
    """How ``text`` (``None``: no JSON came back) scores on ``case``; ``reason``: ours refused
    it (GuideExhausted), and why."""
    expects = case.expected is not NO_JSON
    if text is None:
        right = reason in CHECKED_REASONS and not from_draft_text(case)
        return Outcome(False, not expects, 0, seconds, "", bool(reason), expects, reason, right)
    try:
        value = json.loads(text)
    except ValueError:
        return Outcome(False, False, invented_words(text, case.broken), seconds, text, expects_json=expects)
    agrees = expects and value == case.expected and type(value) is type(case.expected)
    return Outcome(True, agrees, invented_words(text, case.broken), seconds, text, expects_json=expects)


def from_draft_text(case: Case) -> bool:
    """Whether the expected value is JSON made of the draft's own text alone: there is one, and
    every word or digit of it is in the broken text (``"hello world"`` from ``hello world``; not
    ``0`` from ``-``, which needs a digit nobody wrote)."""
    return case.expected is not NO_JSON and not invented_words(json.dumps(case.expected), case.broken)


def run_case(case: Case, method: Method, repeat: int = 1) -> Outcome:
    """``method`` on the case; its time is the best of ``repeat`` runs (a shared machine)."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = method(case.broken)
        times.append(time.perf_counter() - started)
    text, reason = answer if isinstance(answer, tuple) else (answer, "")
    return outcome(case, text, min(times), reason)


def ours(target: Any) -> Method:
    """grammar-guide on the builtin ``json`` grammar, the broken text replayed as the draft: the
    text of a complete result; ``(None, reason)`` for GuideExhausted (its ``reason``)."""
    import grammar_guide as gg

    grammar = gg.Grammar.builtin("json")

    def method(broken: str) -> tuple[str | None, str]:
        try:
            result = gg.guide(lambda prompt: broken, grammar, PROMPT, target)
        except gg.GuideExhausted as exc:
            return None, exc.reason
        return (result.text if result.complete else None), ""

    return method


def json_repair_method() -> Method:
    import json_repair

    def method(broken: str) -> str | None:
        try:
            value = json_repair.loads(broken)
        except Exception:  # a peer that fails is counted as invalid, not a crash of the run
            return None
        return None if value == "" else json.dumps(value)

    return method


def jsonrepair_outcomes(cases: list[Case], install: Path, repeat: int) -> list[Outcome]:
    """jsonrepair (npm) on every case, in one node process (``jsonrepair_peer.mjs``); its own
    timing, best of ``repeat``."""
    script = Path(__file__).with_name("jsonrepair_peer.mjs")
    run = subprocess.run(
        ["node", str(script), str(install), str(repeat)],
        input=json.dumps([c.broken for c in cases]),
        capture_output=True,
        text=True,
        check=True,
    )
    return [outcome(c, text, seconds) for c, (text, seconds) in zip(cases, json.loads(run.stdout), strict=True)]


def peers_agree(cases: list[Case], outcomes: dict[str, list[Outcome]]) -> list[bool]:
    """Per case: whether json_repair and jsonrepair give the same value (both some JSON)."""
    if "jsonrepair" not in outcomes:
        return [False] * len(cases)
    pairs = zip(outcomes["json_repair"], outcomes["jsonrepair"], strict=True)
    return [a.valid and b.valid and json.loads(a.text) == json.loads(b.text) for a, b in pairs]


def summarise(outcomes: list[Outcome], agreed: list[bool]) -> dict[str, float]:
    n = len(outcomes) or 1
    where = [o for o, a in zip(outcomes, agreed, strict=True) if a]
    expecting = [o for o in outcomes if o.expects_json]
    return {
        "cases": len(outcomes),
        "valid": sum(o.valid for o in outcomes) / n,
        "valid_where_json_expected": sum(o.valid for o in expecting) / (len(expecting) or 1),
        "valid_or_rightly_refused": sum(o.valid or o.rightly_refused for o in outcomes) / n,
        "exhausted": sum(o.exhausted for o in outcomes) / n,
        "agrees": sum(o.agrees for o in outcomes) / n,
        "agrees_where_peers_agree": sum(o.agrees for o in where) / (len(where) or 1),
        "peers_agree_cases": len(where),
        "invented": sum(o.invented for o in outcomes) / n,
        "seconds": sum(o.seconds for o in outcomes) / n,
    }


HEADER = [
    "category",
    "method",
    "cases",
    "valid",
    "valid where JSON is expected",
    "valid or rightly refused",
    "exhausted",
    "agrees",
    "agrees where peers agree (n)",
    "invented",
    "s/case",
]


def row(category: str, name: str, s: dict[str, float]) -> list[Any]:
    where = f"{s['agrees_where_peers_agree']:.3g} ({s['peers_agree_cases']})"
    valid, expected = s["valid"], s["valid_where_json_expected"]
    return [
        category,
        name,
        s["cases"],
        valid,
        expected,
        s["valid_or_rightly_refused"],
        s["exhausted"],
        s["agrees"],
        where,
        s["invented"],
        s["seconds"],
    ]


def by_reason(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Ours' refusals by ``GuideExhausted.reason``: how many, and how many of them rightly."""
    counts: dict[str, dict[str, int]] = {}
    for o in outcomes:
        if o.exhausted:
            count = counts.setdefault(o.reason, {"cases": 0, "rightly": 0})
            count["cases"] += 1
            count["rightly"] += o.rightly_refused
    return counts


def reason_line(counts: dict[str, dict[str, int]]) -> str:
    """``by_reason`` in a sentence: ``no answer 4 (2 rightly), needs invention 1 (1 rightly)``."""
    parts = [f"{reason} {c['cases']} ({c['rightly']} rightly)" for reason, c in sorted(counts.items())]
    return ", ".join(parts) or "none"


def reading_line(read: dict[str, Any], whose: str = "jsonrepair's") -> str:
    """What was read of a library's tests, in a sentence."""
    unread = "; ".join(f"{reason}: {n}" for reason, n in sorted(read["unread"].items())) or "none"
    overlap = read.get("in_other_sources")
    dropped = "" if overlap is None else f", {overlap} inputs of the other sources dropped"
    return (
        f"{whose} tests: {read['pairs']} pairs read, {read['distinct']} distinct inputs kept{dropped}; "
        f"not read: {sum(read['unread'].values())} ({unread})"
    )


HELD_OUT = (  # sources nobody tunes on: (option, reader, whose tests); each drops the inputs read before it
    ("dirty_json_suite", read_dirty_json_cases, "dirty-json's"),
    ("best_effort_suite", read_best_effort_cases, "best-effort-json-parser's"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clone", type=Path, nargs="?", help="a clone of mangiucugna/json_repair")
    parser.add_argument(
        "--jsonrepair-suite", type=Path, metavar="CLONE", help="a clone of josdejong/jsonrepair: its tests as cases"
    )
    parser.add_argument(
        "--dirty-json-suite",
        type=Path,
        metavar="CLONE",
        help=f"a clone of RyanMarcus/dirty-json (commit {DIRTY_JSON_COMMIT}): its tests as cases nobody tunes on",
    )
    parser.add_argument(
        "--best-effort-suite",
        type=Path,
        metavar="CLONE",
        help=f"a clone of beenotung/best-effort-json-parser (commit {BEST_EFFORT_COMMIT}): its tests, as above",
    )
    parser.add_argument("--jsonrepair", type=Path, help="a folder with node_modules/jsonrepair (npm), run with node")
    parser.add_argument(
        "--target",
        type=int,
        metavar="N",
        default=0,
        help="also run ours with the default target on N cases of each split",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="each case's time: the best of this many runs (not the target's)"
    )
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--show", choices=SPLITS, help="print that half's disagreements (ours), of each source but dirty-json's"
    )
    parser.add_argument(
        "--split", choices=SPLITS, help="run that split's cases only (the other is neither run nor printed)"
    )
    parser.add_argument("--totals", action="store_true", help="print only each collection's overall rows")
    args = parser.parse_args(argv)
    if not (args.clone or args.jsonrepair_suite or args.dirty_json_suite or args.best_effort_suite):
        parser.error("name a clone of json_repair or of another library (--jsonrepair-suite, ...)")
    payload: dict[str, Any] = {"machine": machine(), "splits": {}, "target_sample": {}}
    cases = read_sources(args, payload)
    outcomes = {
        "ours": [run_case(c, ours(False), args.repeat) for c in cases],
        "json_repair": [run_case(c, json_repair_method(), args.repeat) for c in cases],
    }
    if args.jsonrepair:
        outcomes["jsonrepair"] = jsonrepair_outcomes(cases, args.jsonrepair, args.repeat)
    agreed = peers_agree(cases, outcomes)
    for split in [s for s in COLLECTIONS if any(c.collection == s for c in cases)]:
        chosen = [i for i, c in enumerate(cases) if c.collection == split]
        categories = sorted({cases[i].category for i in chosen})
        rows, table = [], {}
        for category in [*categories, "all"]:
            picked = [i for i in chosen if category in ("all", cases[i].category)]
            for name, outs in outcomes.items():
                s = summarise([outs[i] for i in picked], [agreed[i] for i in picked])
                table[f"{category}/{name}"] = s
                if category == "all" or not args.totals:
                    rows.append(row(category, name, s))
        payload["splits"][split] = table
        reasons = by_reason([outcomes["ours"][i] for i in chosen])
        payload.setdefault("exhausted_by_reason", {})[split] = reasons
        print(f"\n### {split} ({len(chosen)} cases)\n")
        print(markdown_table(HEADER, rows))
        print(f"\nours, exhausted by reason: {reason_line(reasons)}")
    if args.target:
        payload["target_sample"] = target_sample(cases, outcomes, agreed, args.target)
    print(f"\n{machine_line(payload['machine'])}")
    if args.show:
        for i, c in enumerate(cases):
            o = outcomes["ours"][i]
            if c.split == args.show and c.source in SHOWN and not o.agrees:  # the same half of each source
                want = json.dumps(c.expected) if c.expected is not NO_JSON else "(none)"
                print(f"{c.broken!r}\n    ours {o.text!r}\n    want {want}")
    write_results(NAME, payload)
    return 0


def read_sources(args: argparse.Namespace, payload: dict[str, Any]) -> list[Case]:
    """The cases of every source named on the command line (``--split``, ``--limit`` applied); what
    was read of the other libraries' tests is printed and put in ``payload``."""
    cases: list[Case] = []
    inputs: set[str] = set()  # every source's inputs, read so far: the held-out sources drop them

    def keep(read: list[Case]) -> None:
        inputs.update(c.broken for c in read)
        cases.extend([c for c in read if args.split in (None, c.split)][: args.limit])

    if args.clone:
        keep(read_cases(args.clone))
    if args.jsonrepair_suite:
        unseen, payload["jsonrepair_suite_read"] = read_jsonrepair_cases(args.jsonrepair_suite)
        keep(unseen)
        print(reading_line(payload["jsonrepair_suite_read"]))
    for option, reader, whose in HELD_OUT:
        if getattr(args, option):
            held_out, payload[f"{option}_read"] = reader(getattr(args, option), inputs)
            keep(held_out)
            print(reading_line(payload[f"{option}_read"], whose))
    return cases


def target_sample(cases: list[Case], outcomes: dict[str, list[Outcome]], agreed: list[bool], n: int) -> dict[str, Any]:
    """Ours with the default target (SmolLM2 on a CPU: seconds a case) on the first ``n`` cases of
    each split, beside every method on the same cases."""
    with_target = ours(None)
    table: dict[str, Any] = {}
    for split in sorted({c.collection for c in cases}, key=COLLECTIONS.index):
        picked = [i for i, c in enumerate(cases) if c.collection == split][:n]
        sample = {name: [outs[i] for i in picked] for name, outs in outcomes.items()}
        sample["ours+target"] = [run_case(cases[i], with_target) for i in picked]
        rows = []
        for name, outs in sample.items():
            s = summarise(outs, [agreed[i] for i in picked])
            table[f"{split}/{name}"] = s
            rows.append(row(split, name, s))
        print(f"\n### target sample: the first {len(picked)} {split} cases\n")
        print(markdown_table(HEADER, rows))
    return table


if __name__ == "__main__":
    raise SystemExit(main())
