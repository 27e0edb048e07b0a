"""Checker speed on a character-level grammar: sympy's LaTeX grammar on sympy's own test strings
(issue 27 item 6: within 5x of the greedy reading).

sympy 1.14.0's ``sympy/parsing/latex/lark/grammar/latex.lark`` (start ``latex_string``), read as
sympy reads it (``parser="earley"``, the dynamic lexer), is one a greedy lexer would read
differently from lark, so the checker reads it at the character level. The texts are the string
literals of sympy's ``sympy/parsing/tests/test_latex_lark.py`` that lark parses and both readings
below accept whole. The sdist is fetched from the package index, pinned (as the differential
suite does, ``tests/support/package_grammars.py``), or read from ``--sympy DIR`` (an unpacked
sympy 1.14.0 source archive).

In one run on one machine, best of ``--repeat`` for each, microseconds per byte over all texts:

- ``checker (exact)``: a fresh ``Grammar.from_file(latex.lark, "latex_string").checker()`` per
  text, fed the text in chunks of ``--chunk`` bytes (the checker's creation is not timed);
- ``checker whole``: the same, fed the text in one call;
- ``checker (greedy)``: the same with ``lexer="greedy"`` (terminals read as a tokenizer reads,
  contextual longest match: not lark's language, the reference for speed);
- ``lark Earley``: ``lark.Lark(latex.lark, parser="earley", lexer="dynamic").parse(text)``.

``python -m benchmarks.package_grammar_bench [--sympy DIR] [--chunk 16] [--repeat 5]`` prints a
table and writes ``benchmarks/results/package_grammar_bench.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lark

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import machine, machine_line, markdown_table, write_results
from grammar_guide import Grammar

NAME = "package_grammar_bench"
SYMPY = ("sympy", "1.14.0")
GRAMMAR = "sympy/parsing/latex/lark/grammar/latex.lark"
TESTS = "sympy/parsing/tests/test_latex_lark.py"
START = "latex_string"
#: sympy 1.14.0's grammar within 5x of the greedy reading, and at most 50 µs a byte (issue 27).
TARGET_RATIO, TARGET_US = 5.0, 50.0


def sympy_files(root: Path | None) -> tuple[Path, Path]:
    """The grammar file and the test module, from ``root`` or from the package index."""
    if root is not None:
        return root / GRAMMAR, root / TESTS
    from tests.support.package_grammars import grammar_file, package_files

    grammar = grammar_file(*SYMPY, GRAMMAR, sdist=True)
    (tests,) = package_files(*SYMPY, TESTS, sdist=True)
    return grammar, tests


def time_checker(grammar: Grammar, texts: list[str], chunk: int | None) -> float:
    total = 0.0
    for text in texts:
        checker = grammar.checker()
        data = text.encode()
        step = chunk or len(data)
        pieces = [data[i : i + step] for i in range(0, len(data), step)]
        start = time.perf_counter()
        for piece in pieces:
            checker.feed(piece)
        total += time.perf_counter() - start
        if not checker.is_complete:
            raise RuntimeError(f"{grammar.name} ({grammar.lexer}) refuses {text!r}: {checker.violation}")
    return total


def time_lark(parser: lark.Lark, texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        parser.parse(text)
    return time.perf_counter() - start


def accepted(grammar: Grammar, text: str) -> bool:
    checker = grammar.checker()
    return checker.feed(text) == len(text) and checker.is_complete


def lark_parses(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except (lark.exceptions.LarkError, RuntimeError):  # lark 1.3.1 raises RuntimeError on some
        return False
    return True


def best_of(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sympy", type=Path, default=None, help="an unpacked sympy 1.14.0 source archive")
    ap.add_argument("--chunk", type=int, default=16, help="bytes per fed chunk (default 16)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args(argv)

    from tests.support.package_grammars import module_strings

    grammar_path, tests_path = sympy_files(args.sympy)
    loads: dict[str, float] = {}
    started = time.perf_counter()
    exact = Grammar.from_file(grammar_path, START)
    loads["exact"] = time.perf_counter() - started
    started = time.perf_counter()
    greedy = Grammar.from_file(grammar_path, START, lexer="greedy")
    loads["greedy"] = time.perf_counter() - started
    parser = lark.Lark(
        grammar_path.read_text(encoding="utf-8"),
        start=START,
        parser="earley",
        lexer="dynamic",
        import_paths=[grammar_path.parent],
    )
    candidates = module_strings(tests_path)
    texts = [t for t in candidates if lark_parses(parser, t) and accepted(exact, t) and accepted(greedy, t)]
    size = sum(len(t.encode()) for t in texts)
    print(f"sympy {SYMPY[1]} latex.lark: {len(texts)} of {len(candidates)} test strings, {size:,} bytes", flush=True)

    runs: dict[str, Callable[[], float]] = {
        "checker (exact)": lambda: time_checker(exact, texts, args.chunk),
        "checker whole (exact)": lambda: time_checker(exact, texts, None),
        "checker (greedy)": lambda: time_checker(greedy, texts, args.chunk),
        "checker whole (greedy)": lambda: time_checker(greedy, texts, None),
        "lark Earley": lambda: time_lark(parser, texts),
    }
    us = {name: best_of(args.repeat, run) / size * 1e6 for name, run in runs.items()}
    ratio = us["checker (exact)"] / us["checker (greedy)"]
    table = markdown_table(
        ["reading", "µs / byte", "x greedy checker"],
        [[name, value, value / us["checker (greedy)"]] for name, value in us.items()],
    )
    info = machine()
    print(f"\n{machine_line(info)}; chunks of {args.chunk} bytes; best of {args.repeat}")
    print(table)
    print(
        f"\ngrammar load: exact {loads['exact']:.1f} s, greedy {loads['greedy']:.1f} s"
        f"\ntargets: exact within {TARGET_RATIO:g}x greedy: {'met' if ratio <= TARGET_RATIO else 'NOT met'}"
        f" ({ratio:.1f}x); at most {TARGET_US:g} µs/byte: "
        f"{'met' if us['checker (exact)'] <= TARGET_US else 'NOT met'}"
    )
    payload = {
        "benchmark": NAME,
        "machine": info,
        "package": {"name": SYMPY[0], "version": SYMPY[1], "grammar": GRAMMAR, "texts": TESTS},
        "settings": {"chunk": args.chunk, "repeat": args.repeat},
        "texts": len(texts),
        "bytes": size,
        "load_s": loads,
        "us_per_byte": us,
        "exact_over_greedy": ratio,
        "table": table,
    }
    path = write_results(NAME, payload, args.results_dir)
    print(f"results: {path}")
    return payload


if __name__ == "__main__":
    main()
