"""Repairs on other users' grammars: slips in their own texts, judged by lark (issue 28's last goal).

Issue 28 asks, for grammars other than SQL and JSON: 0 edits that change a word into an operator,
and 0 GuideExhausted with a target. This measures both on real users' grammars and texts: the
package grammars the differential suite reads (``tests/test_differential.py``: ``PACKAGE_SUITES``,
``load_suite``, ``suite_texts``; pinned versions from the package index, cached by
``tests/support/package_grammars.py``), each with the texts of the package's own tests that lark,
read as the package reads the grammar, parses (the first ``--texts`` of them).

The i-th text of a grammar gets slip ``SLIPS[i % len(SLIPS)]``, a slip a model makes, drawn with a
``random.Random`` seeded by the grammar's name and the index (the same on every run):

- ``cut``: the answer cut off at 60-90% of its length;
- ``token dropped``: one lexeme (word, literal, operator, mark) left out;
- ``keyword misspelt``: one of the grammar's keywords in the text (any word of three letters or
  more where it has none) with one letter dropped, doubled or swapped with the next;
- ``prose around``: a line of prose before the text and one after it;
- ``stray bracket``: a ``)``, ``]`` or ``(`` put between two lexemes.

Each slipped text is replayed as a black-box draft (``_replay_draft.ReplayDraft``) through
``grammar_guide.guide`` with ``target=False`` (and with ``--target N``, the SmolLM2 target on the
first N texts of each grammar: a target needs token masks, which an LALR reading has none of, so
with a target an LALR grammar is read by lark's Earley parser, and judged by it; a grammar that
needs its package's postlexer, or whose Earley reading the compiler refuses with a ``GrammarError``,
has no target run: it is said under the table and in the results' ``no_target_run``, with why).
Columns, per grammar:

- ``valid``: lark's own parser (the package's reading) parses the output;
- ``exhausted``: ``GuideExhausted`` was raised (its reasons are listed under the table);
- ``crash``: another exception (the target's token matcher's limits), recorded and counted, the
  run going on;
- ``word→op``: repairs that replace a draft word with an operator or mark, or one of the grammar's
  keywords with another (``grammar_guide._lexemes.word_becomes_other``; the grammar's keywords are
  its literal terminals that are words, read from lark);
- ``split op``: repairs that take away or write inside part of a multi-character operator
  (``_lexemes.splits_operator`` on the output before the repair, what it took away, and the
  output after it);
- ``num ext``: text written by anyone but the draft straight after a digit that begins with a
  digit or ``.`` (``1`` finished as ``10``);
- ``prose kept``: texts with the prose slip whose output has words that align (``difflib`` over
  lexemes) with words of the added prose lines: prose made into the text (issue 28 item 2);
- ``faithful``: ``GuideResult.faithful``; ``faithful, lost``: of those, texts where a word, number
  or string of the draft's answer (the prose lines aside) aligns with nothing of the output;
- ``edits``: ``stats.corrections``; ``s/text``: mean wall seconds.

Run: ``python -m benchmarks.other_grammar_repairs [--texts 10] [--grammars a,b] [--target N]
[--results-dir DIR]``.
"""

from __future__ import annotations

import argparse
import difflib
import random
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

__all__ = ["SLIPS", "judge_edits", "main", "slipped", "target_reading"]

NAME = "other_grammar_repairs"
PROMPT = "Write a text in the {name} grammar's language."
_WORD = re.compile(r"[A-Za-z_]\w*")
MIN_LEXEMES = 3  # shorter texts (a lone name or number) leave a slip nothing to slip on


def _lexeme_spans(text: str) -> list[tuple[int, int]]:
    from grammar_guide._lexemes import LEXEME

    return [m.span() for m in LEXEME.finditer(text)]


def _cut(text: str, rng: random.Random, keywords: frozenset[str]) -> str:
    return text[: int(len(text) * rng.uniform(0.6, 0.9))]


def _token_dropped(text: str, rng: random.Random, keywords: frozenset[str]) -> str:
    spans = _lexeme_spans(text)
    if not spans:
        return text
    start, end = rng.choice(spans)
    return text[:start] + text[end:]


def _misspelt(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word) - 1)
    how = rng.choice(("drop", "double", "swap"))
    if how == "drop":
        return word[:i] + word[i + 1 :]
    if how == "double":
        return word[: i + 1] + word[i] + word[i + 1 :]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _keyword_misspelt(text: str, rng: random.Random, keywords: frozenset[str]) -> str:
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= 3]
    chosen = [m for m in words if m.group().lower() in keywords] or words
    if not chosen:
        return text
    m = rng.choice(chosen)
    return text[: m.start()] + _misspelt(m.group(), rng) + text[m.end() :]


def _prose_around(text: str, rng: random.Random, keywords: frozenset[str]) -> str:
    before = rng.choice(("Here is the text you asked for:", "Sure! This should work:", "The answer is below."))
    after = rng.choice(("This parses under the grammar.", "Let me know if you need changes.", "Hope this helps!"))
    return f"{before}\n{text.rstrip()}\n{after}\n"


def _stray_bracket(text: str, rng: random.Random, keywords: frozenset[str]) -> str:
    spans = _lexeme_spans(text)
    at = rng.choice([end for _, end in spans[:-1]] or [len(text)])
    return text[:at] + rng.choice((")", "]", "(")) + text[at:]


Slip = Callable[[str, random.Random, frozenset[str]], str]
SLIPS: tuple[tuple[str, Slip], ...] = (
    ("cut", _cut),
    ("token dropped", _token_dropped),
    ("keyword misspelt", _keyword_misspelt),
    ("prose around", _prose_around),
    ("stray bracket", _stray_bracket),
)


def slipped(grammar_name: str, index: int, text: str, keywords: frozenset[str]) -> tuple[str, str]:
    """The slip of the ``index``-th text of ``grammar_name`` and the slipped text (deterministic)."""
    slip, make = SLIPS[index % len(SLIPS)]
    return slip, make(text, random.Random(f"{grammar_name}:{index}"), keywords)


def keywords_from_lark(parser: Any) -> frozenset[str]:
    """The grammar's keywords: its literal terminals that are words, lower case (read from lark)."""
    import lark

    from grammar_guide._lexemes import keywords_of

    return keywords_of(t.pattern.value for t in parser.terminals if isinstance(t.pattern, lark.lexer.PatternStr))


def judge_edits(events: list[Any], text: str, keywords: frozenset[str]) -> dict[str, list[str]]:
    """What the result's repairs did to the draft's lexemes: a word made an operator or another
    keyword, a multi-character operator split, a number extended (excerpts of each)."""
    from grammar_guide import Correction
    from grammar_guide._lexemes import LEXEME, is_word, splits_operator, word_becomes_other

    found: dict[str, list[str]] = {"word_to_operator": [], "splits_operator": [], "number_extended": []}
    for e in events:
        if not isinstance(e, Correction) or e.offset > len(text):
            continue
        before, inserted = text[: e.offset], e.text
        excerpt = f"{before[-24:]!r} -{e.removed!r} +{inserted!r} ({e.source})"
        if e.source == "repair":
            removed_words = [w for w in LEXEME.findall(e.removed) if is_word(w)]
            written = LEXEME.findall(inserted)
            kept = {w.lower() for w in written}
            if any(
                word_becomes_other(w, lit, keywords) and lit.lower() != w.lower()
                for w in removed_words
                if w.lower() not in kept
                for lit in written
            ):
                found["word_to_operator"].append(excerpt)
            after = text[e.offset + len(inserted) : e.offset + len(inserted) + 8]
            if e.removed and splits_operator(before + e.removed, len(before), len(before) + len(e.removed), after):
                found["splits_operator"].append(excerpt)
        if e.source != "healed" and before[-1:].isdigit() and inserted[:1] in set("0123456789."):
            found["number_extended"].append(excerpt)
    return found


def _aligned(draft_text: str, output: str) -> tuple[list[tuple[str, int]], set[int]]:
    """The draft's lexemes (with offsets) and the indexes of those that align with the output's
    (``difflib`` over lexemes, case ignored)."""
    from grammar_guide._lexemes import LEXEME

    drafted = [(m.group(), m.start()) for m in LEXEME.finditer(draft_text)]
    written = [m.group().lower() for m in LEXEME.finditer(output)]
    matcher = difflib.SequenceMatcher(None, [w.lower() for w, _ in drafted], written, False)
    return drafted, {b.a + k for b in matcher.get_matching_blocks() for k in range(b.size)}


def _in_prose_lines(draft_text: str, start: int) -> bool:
    """Whether ``start`` is in the draft's first or last line (the prose slip's lines)."""
    return start < draft_text.find("\n") + 1 or start > draft_text.rstrip("\n").rfind("\n")


def prose_kept(draft_text: str, output: str) -> list[str]:
    """Words of the output that align with the words of the prose lines the slip put around the
    text (the draft's first and last lines): prose made into the text (``Hope this helps``)."""
    from grammar_guide._lexemes import is_word

    drafted, aligned = _aligned(draft_text, output)
    return [
        w for i, (w, start) in enumerate(drafted) if i in aligned and is_word(w) and _in_prose_lines(draft_text, start)
    ]


def lost(draft_text: str, output: str, prose: bool) -> list[str]:
    """The draft's words, numbers and strings (of the prose lines' none, for the prose slip) that
    align with nothing of the output: what of the draft's answer the output does not have."""
    drafted, aligned = _aligned(draft_text, output)
    return [
        w
        for i, (w, start) in enumerate(drafted)
        if i not in aligned
        and (w[0].isalnum() or w[0] in "_'\"")
        and not (prose and _in_prose_lines(draft_text, start))
    ]


def guide_one(
    grammar: Any, oracle: Any, name: str, draft_text: str, target: Any, keywords: frozenset[str]
) -> dict[str, Any]:
    import grammar_guide as gg

    replay = ReplayDraft(draft_text)
    draft = gg.FunctionDraft(lambda prompt, prefix: replay.continue_from(prefix), name="replay", continues_prefix=True)
    t0 = time.perf_counter()
    try:
        result = gg.guide(
            draft, grammar, PROMPT.format(name=name), target, max_corrections=16, max_draft_calls=16, timeout=120
        )
    except gg.GuideExhausted as exc:
        return _scored(exc.result, oracle, keywords, time.perf_counter() - t0, exhausted=exc)
    except Exception as exc:  # a crash (the target's token matcher): recorded, the run goes on
        crash = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return {**_NOTHING, "crash": crash, "error": crash, "seconds": time.perf_counter() - t0}
    return _scored(result, oracle, keywords, time.perf_counter() - t0)


_NOTHING: dict[str, Any] = {
    "text": "",
    "valid": False,
    "exhausted": False,
    "exhausted_reason": None,
    "crash": None,
    "faithful": False,
    "edits": 0,
    "word_to_operator": [],
    "splits_operator": [],
    "number_extended": [],
}


def _scored(
    result: Any, oracle: Any, keywords: frozenset[str], seconds: float, exhausted: Any = None
) -> dict[str, Any]:
    from tests.test_differential import lark_failure

    return {
        **_NOTHING,
        "text": result.text,
        "valid": exhausted is None and lark_failure(oracle, result.text) is None,
        "exhausted": exhausted is not None,
        "exhausted_reason": getattr(exhausted, "reason", None),
        "error": str(exhausted) if exhausted is not None else None,
        "faithful": result.faithful,
        "edits": result.stats.corrections,
        "seconds": seconds,
        **judge_edits(list(result.events), result.text, keywords),
    }


def real_texts(name: str, oracle: Any, limit: int) -> list[str]:
    """The package's own test texts that lark parses, of ``MIN_LEXEMES`` lexemes or more, the
    first ``limit``."""
    from tests.test_differential import lark_failure, suite_texts

    parsed = []
    for text in suite_texts(name):
        try:
            ok = lark_failure(oracle, text) is None
        except Exception:  # lark's own Earley crashes on a few of sympy's (multiple start items)
            ok = False
        if ok and len(_lexeme_spans(text)) >= MIN_LEXEMES:
            parsed.append(text)
    return parsed[:limit]


def earley_reading(name: str) -> Any:
    """The suite's grammar read by lark's Earley parser (a target needs token masks, which an
    LALR reading has none of), ``None`` where the package's reading needs its postlexer."""
    import grammar_guide as gg
    from tests.support.package_grammars import grammar_file, python_string
    from tests.test_differential import PACKAGE_SUITES

    suite = PACKAGE_SUITES[name]
    if suite.parser == "earley" or suite.postlex is not None:
        return None
    if ":" in suite.grammar:
        module, variable = suite.grammar.split(":")
        text = python_string(suite.package, suite.version, module, variable, sdist=suite.sdist)
        return gg.Grammar.from_lark(text, suite.start, name=f"{name} (earley)")
    path = grammar_file(suite.package, suite.version, suite.grammar, sdist=suite.sdist)
    return gg.Grammar.from_file(path, suite.start, regex=suite.regex)


def target_reading(name: str, grammar: Any) -> tuple[Any, str | None]:
    """The grammar a target run reads (as the package reads it, or lark's Earley reading of it),
    or ``None`` and why there is none: the reading needs the package's postlexer, or the compiler
    refuses it with a ``GrammarError`` (cel's lazy ``STRING_LIT``, whose match depends on the text
    after it: nothing exact can read it a character at a time)."""
    import grammar_guide as gg
    from tests.test_differential import PACKAGE_SUITES

    if PACKAGE_SUITES[name].parser == "earley":
        return grammar, None
    try:
        targeted = earley_reading(name)
    except gg.GrammarError as exc:
        return None, f"its Earley reading is refused: {exc}"
    return targeted, None if targeted is not None else "its reading needs the package's postlexer"


def run_grammar(name: str, limit: int, target: Any, target_texts: int, refused: dict[str, str]) -> list[dict[str, Any]]:
    """The grammar's rows; where a target was asked for and there is no target run, why, in ``refused``."""
    from tests.test_differential import load_suite

    grammar = load_suite(name)
    oracle = grammar.lark_parser
    keywords = keywords_from_lark(oracle)
    targeted = None
    if target is not None:
        targeted, why = target_reading(name, grammar)
        if why is not None:
            refused[name] = why
            print(f"[{NAME}] {name}: no target run, {why}", file=sys.stderr)
    rows = []
    for i, text in enumerate(real_texts(name, oracle, limit)):
        slip, draft_text = slipped(name, i, text, keywords)
        row: dict[str, Any] = {"grammar": name, "index": i, "slip": slip, "original": text, "draft": draft_text}
        row["target=False"] = guide_one(grammar, oracle, name, draft_text, False, keywords)
        if targeted is not None and i < target_texts:
            row["target"] = guide_one(targeted, targeted.lark_parser, name, draft_text, target, keywords)
        for method in ("target=False", "target"):
            if method in row:
                row[method]["lost"] = lost(draft_text, row[method]["text"], slip == "prose around")
            if method in row and slip == "prose around":
                row[method]["prose_kept"] = prose_kept(draft_text, row[method]["text"])
        print(f"[{NAME}] {name} #{i} {slip}: {_cells(row['target=False'])}", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def _cells(r: dict[str, Any]) -> str:
    flags = [k for k in ("valid", "exhausted", "crash", "faithful") if r[k]]
    flags += [f"{k}={len(r[k])}" for k in ("word_to_operator", "splits_operator", "number_extended") if r[k]]
    return f"{' '.join(flags)} edits={r['edits']} {r['seconds']:.2f}s"


COLUMNS = [
    "grammar",
    "method",
    "texts",
    "valid",
    "exhausted",
    "crash",
    "word→op",
    "split op",
    "num ext",
    "prose kept",
    "faithful",
    "faithful, lost",
    "edits",
]


def summary_row(label: str, method: str, rs: list[dict[str, Any]]) -> list[Any]:
    return [
        label,
        method,
        len(rs),
        sum(r["valid"] for r in rs),
        sum(r["exhausted"] for r in rs),
        sum(bool(r["crash"]) for r in rs),
        sum(len(r["word_to_operator"]) for r in rs),
        sum(len(r["splits_operator"]) for r in rs),
        sum(len(r["number_extended"]) for r in rs),
        sum(bool(r.get("prose_kept")) for r in rs),
        sum(r["faithful"] for r in rs),
        sum(r["faithful"] and bool(r.get("lost")) for r in rs),
        sum(r["edits"] for r in rs),
        round(sum(r["seconds"] for r in rs) / max(len(rs), 1), 3),
    ]


def summary(rows: list[dict[str, Any]]) -> list[list[Any]]:
    out = []
    for method in ("target=False", "target"):
        for name in dict.fromkeys(r["grammar"] for r in rows):
            rs = [r[method] for r in rows if r["grammar"] == name and method in r]
            if rs:
                out.append(summary_row(name, method, rs))
        every = [r[method] for r in rows if method in r]
        if every:
            out.append(summary_row("**total**", method, every))
    return out


def findings(rows: list[dict[str, Any]]) -> list[str]:
    """One line per exhaustion and per flagged edit: grammar, text, slip, what happened."""
    lines = []
    for row in rows:
        for method in ("target=False", "target"):
            r = row.get(method)
            if r is None:
                continue
            where = f"{row['grammar']} #{row['index']} ({row['slip']}, {method})"
            if r["crash"]:
                lines.append(f"{where}: crash {r['crash'][:100]} draft {row['draft'][:60]!r}")
            if r["exhausted"]:
                lines.append(f"{where}: GuideExhausted [{r['exhausted_reason']}] draft {row['draft'][:60]!r}")
            for kind in ("word_to_operator", "splits_operator", "number_extended"):
                lines += [f"{where}: {kind} {excerpt}" for excerpt in r[kind]]
            if r["faithful"] and r.get("lost"):
                lines.append(f"{where}: faithful, but lost {r['lost'][:8]}: {r['text'][-60:]!r}")
            if r.get("prose_kept"):
                lines.append(f"{where}: prose kept {r['prose_kept']} in {r['text'][-60:]!r}")
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from tests.test_differential import PACKAGE_SUITES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=10, help="texts per grammar (default 10: two of each slip)")
    parser.add_argument("--grammars", default=",".join(PACKAGE_SUITES), help="comma-separated PACKAGE_SUITES names")
    parser.add_argument("--target", type=int, default=0, metavar="N", help="also the SmolLM2 target on N texts each")
    parser.add_argument("--results-dir", type=Path, default=None)
    parser.add_argument("--name", default=NAME, help="results file name")
    args = parser.parse_args(argv)
    target = None
    if args.target:
        import grammar_guide as gg

        target = gg.TargetModel.load()
    cpu0 = time.process_time()
    rows = []
    refused: dict[str, str] = {}
    for name in args.grammars.split(","):
        rows += run_grammar(name, args.texts, target, args.target, refused)
    info = machine()
    table = summary(rows)
    print(machine_line(info))
    print(markdown_table([*COLUMNS, "s / text"], table))
    lines = findings(rows)
    print("\n".join(lines) if lines else "no exhaustion and no flagged edit")
    for name, why in refused.items():
        print(f"{name}: no target run, {why.splitlines()[0]}")
    print(f"CPU seconds: {time.process_time() - cpu0:.1f}")
    payload = {
        "machine": info,
        "texts": args.texts,
        "summary": table,
        "findings": lines,
        "no_target_run": refused,
        "rows": rows,
    }
    print(f"results: {write_results(args.name, payload, args.results_dir)}")
    return payload


if __name__ == "__main__":
    main()
