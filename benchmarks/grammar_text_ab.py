"""Interleaved A/B of compiled grammars on sympy's LaTeX test strings (package_grammar_bench's texts).

Each argument is a file holding a grammar in llguidance's dialect (``Grammar.llguidance_grammar``
written out, e.g. by main's code and by a branch's); each is fed, in turn and ``--repeat`` times,
the strings of sympy's ``test_latex_lark.py`` that every grammar accepts whole, as the checker
feeds (validate, then consume, ``--chunk`` bytes at a time). Turns are interleaved, so a machine
shared with other jobs slows each grammar alike; medians are printed, microseconds per byte.

``python -m benchmarks.grammar_text_ab A.lark B.lark ... [--repeat 5] [--chunk 16] [--sympy DIR]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.package_grammar_bench import sympy_files
from grammar_guide.compiler.matcher import ByteMatcherFactory


def feed(factory: ByteMatcherFactory, data: bytes, chunk: int) -> bool:
    matcher = factory.new()
    for i in range(0, len(data), chunk):
        tokens = list(data[i : i + chunk])
        n = matcher.validate_tokens(tokens)
        matcher.consume_tokens(tokens[:n])
        if n < len(tokens):
            return False
    return bool(matcher.is_accepting())


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("grammars", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--sympy", type=Path, default=None, help="an unpacked sympy 1.14.0 source archive")
    args = ap.parse_args(argv)
    from tests.support.package_grammars import module_strings

    _, tests_path = sympy_files(args.sympy)
    factories = {str(p): ByteMatcherFactory(p.read_text(encoding="utf-8"), p.name) for p in args.grammars}
    texts = [t.encode() for t in module_strings(tests_path)]
    texts = [t for t in texts if all(feed(f, t, args.chunk) for f in factories.values())]
    size = sum(len(t) for t in texts)
    runs: dict[str, list[float]] = {name: [] for name in factories}
    for _ in range(args.repeat):
        for name, factory in factories.items():
            elapsed = 0.0
            for data in texts:
                started = time.perf_counter()
                feed(factory, data, args.chunk)
                elapsed += time.perf_counter() - started
            runs[name].append(elapsed / size * 1e6)
    print(f"{len(texts)} texts, {size:,} bytes, chunks of {args.chunk}, {args.repeat} interleaved turns")
    for name, values in runs.items():
        print(f"{name}: median {statistics.median(values):.1f} µs/byte ({', '.join(f'{v:.0f}' for v in values)})")
    return {name: statistics.median(values) for name, values in runs.items()}


if __name__ == "__main__":
    main()
