"""LALR + ``PythonIndenter`` checker speed on CPython's own standard library (issue 27).

For each file (CPython's standard library on this machine, a fixed list; ``--files`` for others),
in one run on one machine, best of ``--repeat``:

- ``lark parse``: ``lark.Lark(python.lark, parser="lalr", postlex=PythonIndenter()).parse(text)``,
  once (the reference: it checks no prefix);
- ``checker whole``: a fresh ``Grammar.checker()`` of ``Grammar.from_lark(..., parser="lalr",
  postlex=PythonIndenter())`` fed the file in one call;
- ``checker stream``: the same fed in chunks of ``--chunk`` characters (16: a few LLM tokens), each
  chunk's end checked as a prefix.

Figures are microseconds per byte; each checker figure is also given as a multiple of lark's
parse. The grammar is lark's ``python.lark`` (inside the lark package). A warm-up feed of the first
file comes first (the lexers' patterns compile on first use).

``python -m benchmarks.postlex_bench [--files json/encoder.py,...] [--chunk 16] [--repeat 3]``
prints a table and writes ``benchmarks/results/postlex_bench.json``.
"""

from __future__ import annotations

import argparse
import functools
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lark
from lark.indenter import PythonIndenter

if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import machine, machine_line, markdown_table, write_results
from grammar_guide import Grammar

FILES = "textwrap.py,json/encoder.py,shlex.py,difflib.py,argparse.py"
PYTHON_LARK = Path(lark.__file__).parent / "grammars" / "python.lark"


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def stream(grammar: Grammar, text: str, chunk: int) -> None:
    checker = grammar.checker()
    for i in range(0, len(text), chunk):
        checker.feed(text[i : i + chunk])
    assert checker.is_complete


def whole(grammar: Grammar, text: str) -> None:
    checker = grammar.checker()
    assert checker.feed(text) == len(text) and checker.is_complete


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default=FILES, help="paths under the standard library, comma-separated")
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    source = PYTHON_LARK.read_text(encoding="utf-8")
    grammar = Grammar.from_lark(source, "file_input", parser="lalr", postlex=PythonIndenter())
    reference = lark.Lark(source, start="file_input", parser="lalr", postlex=PythonIndenter())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = {name: (stdlib / name).read_text(encoding="utf-8") for name in args.files.split(",")}
    whole(grammar, next(iter(texts.values())))  # warm-up
    rows, results = [], []
    for name, text in texts.items():
        size = len(text.encode("utf-8"))
        lark_s = best(functools.partial(reference.parse, text), args.repeat)
        whole_s = best(functools.partial(whole, grammar, text), args.repeat)
        stream_s = best(functools.partial(stream, grammar, text, args.chunk), args.repeat)
        per_byte = [s / size * 1e6 for s in (lark_s, whole_s, stream_s)]
        results.append(
            {"file": name, "bytes": size, "us_per_byte": dict(zip(("lark", "whole", "stream"), per_byte, strict=True))}
        )
        rows.append(
            [
                name,
                f"{size:,}",
                f"{per_byte[0]:.1f}",
                f"{per_byte[1]:.1f} ({whole_s / lark_s:.1f}x)",
                f"{per_byte[2]:.1f} ({stream_s / lark_s:.1f}x)",
            ]
        )
    header = ["file", "bytes", "lark parse µs/B", "checker whole µs/B", f"checker stream ({args.chunk}) µs/B"]
    info = machine()
    print(machine_line(info))
    print(markdown_table(header, rows))
    payload = {"machine": info, "chunk": args.chunk, "repeat": args.repeat, "files": results}
    write_results("postlex_bench", payload)
    return payload


if __name__ == "__main__":
    main()
