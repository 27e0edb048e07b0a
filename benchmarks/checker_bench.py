"""Checker speed: the incremental checker against the lark package re-parsing the text.

For SQL and JSON texts of about 2 KB, 20 KB and 200 KB, in one run on one machine:

- ``checker stream``: a fresh ``Grammar.checker()`` fed the text in chunks of ``--chunk`` bytes
  (16 by default, a few LLM tokens, as a stream arrives), timing the feeds only;
- ``checker whole``: the same text fed in one call;
- ``loop checker stream``: as ``checker stream``, for the guide loop's checker, which from
  ``PROBE_FROM`` bytes on reads with the probe grammar (a violation's diagnostics then cost the
  same at any length of text; issue 15);
- ``lark one parse``: ``lark.Lark(grammar, parser="earley", lexer="dynamic").parse(text)``, once;
- ``lark re-parse``: what a checker without incremental state does as the text arrives: parse
  the whole text received so far again, here after every ``--reparse-chunk`` bytes (1,024 by
  default: a round of about 250 tokens, far fewer re-parses than one per streamed chunk, so the
  figure favours lark; the re-parse cost grows with the square of the text's length).

Targets (issue 2): at most 1 microsecond per byte for the streamed checker, and at least 100
times faster than lark re-parsing the whole text, on 20 KB. The ratio to a single parse of the
finished text is printed too. Each figure is the best of ``--repeat`` runs.

``python -m benchmarks.checker_bench [--sql-grammar mini,sqlite_script] [--chunk 16] [--reparse-chunk 1024]
[--repeat 3]``
prints a table and writes ``benchmarks/results/checker_bench.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
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
from grammar_guide._checker import PROBE_FROM

NAME = "checker_bench"
SIZES = {"2 KB": 2_000, "20 KB": 20_000, "200 KB": 200_000}

# A small SQL grammar (--sql-grammar mini): the checker's speed on a grammar of ordinary size.
# The bundled SQLite grammar is measured too (sqlite_script: the texts are statement lists); it is
# far larger (92 KB).
MINI_SQL = r"""
start: (stmt ";")+
?stmt: select | insert
select: "SELECT"i cols "FROM"i NAME join* where? group? order? limit?
cols: col ("," col)*
col: expr ("AS"i NAME)?
join: "JOIN"i NAME "ON"i expr
where: "WHERE"i expr
group: "GROUP"i "BY"i expr ("," expr)*
order: "ORDER"i "BY"i expr ("ASC"i | "DESC"i)?
limit: "LIMIT"i NUMBER
insert: "INSERT"i "INTO"i NAME "(" NAME ("," NAME)* ")" "VALUES"i "(" expr ("," expr)* ")"
?expr: disj
?disj: conj ("OR"i conj)*
?conj: cmp ("AND"i cmp)*
?cmp: sum (CMP sum)?
?sum: atom (("+" | "-" | "*" | "/") atom)*
?atom: NUMBER | STRING | qname | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"
qname: NAME ("." NAME)?
CMP: "<=" | ">=" | "<>" | "!=" | "=" | "<" | ">"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /'[^']*'/
%import common.WS
%ignore WS
"""


def sql_text(size: int, seed: int = 0) -> str:
    """Deterministic SQL statements (valid SQLite and valid for MINI_SQL), about ``size`` bytes."""
    rng = random.Random(seed)
    tables = ["users", "orders", "items", "payments", "events"]
    columns = ["id", "name", "total", "created_at", "status", "user_id", "price", "qty"]
    out: list[str] = []
    length = 0
    while length < size:
        t1, t2 = rng.sample(tables, 2)
        c = rng.sample(columns, 3)
        if rng.random() < 0.7:
            stmt = (
                f"SELECT {t1}.{c[0]}, count({t2}.{c[1]}) AS n, sum({t2}.{c[2]} * 2) AS s\n"
                f"FROM {t1} JOIN {t2} ON {t2}.user_id = {t1}.id\n"
                f"WHERE {t1}.{c[0]} >= {rng.randint(0, 999)} AND {t2}.status = 'paid é'"
                f" OR {t1}.name <> 'x'\n"
                f"GROUP BY {t1}.{c[0]} ORDER BY n DESC LIMIT {rng.randint(1, 100)};\n"
            )
        else:
            stmt = (
                f"INSERT INTO {t1} ({c[0]}, {c[1]}, {c[2]}) VALUES "
                f"({rng.randint(0, 10**6)}, 'value {rng.randint(0, 999)}', {rng.random() * 100:.2f});\n"
            )
        out.append(stmt)
        length += len(stmt.encode())
    return "".join(out)


def json_text(size: int, seed: int = 0) -> str:
    """A deterministic JSON document of about ``size`` bytes (an array of records)."""
    rng = random.Random(seed)
    records: list[Any] = []
    text = "[]"
    while len(text.encode()) < size:
        i = len(records)
        records.append(
            {
                "id": i,
                "name": f"user {i} – é",
                "tags": [rng.choice(["a", "b", "c"]) for _ in range(3)],
                "score": round(rng.random() * 100, 3),
                "active": i % 3 == 0,
                "address": {"city": rng.choice(["Paris", "Oslo", "Lima"]), "zip": None},
            }
        )
        if len(records) % 50 == 0 or len(json.dumps(records)) >= size:
            text = json.dumps(records, indent=1, ensure_ascii=False)
    return text


def best_of(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


def time_checker(grammar: Grammar, data: bytes, chunk: int, probe_from: int | None = None) -> float:
    checker = grammar.checker(probe_from=probe_from)
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    start = time.perf_counter()
    for piece in pieces:
        checker.feed(piece)
    elapsed = time.perf_counter() - start
    if not checker.is_complete or checker.violation is not None:
        raise RuntimeError(f"the benchmark text is not valid for {grammar.name}: {checker.violation}")
    return elapsed


def time_lark_parse(parser: lark.Lark, text: str) -> float:
    start = time.perf_counter()
    parser.parse(text)
    return time.perf_counter() - start


def time_lark_reparse(parser: lark.Lark, text: str, chunk: int) -> float:
    """Parse the text so far after every chunk (chunks in bytes, cut at character boundaries)."""
    data = text.encode()
    cuts = [len(data[:i].decode("utf-8", errors="ignore")) for i in range(chunk, len(data), chunk)] + [len(text)]
    start = time.perf_counter()
    for cut in cuts:
        try:  # noqa: SIM105 - timed: a bare try, not a context manager's calls
            parser.parse(text[:cut])
        except lark.exceptions.UnexpectedInput:
            pass  # an unfinished prefix: what a re-parsing checker sees each round
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sql-grammar",
        default="mini,sqlite_script",
        help="comma-separated builtin grammar names, or 'mini' (default mini,sqlite_script: the texts are "
        "statement lists, which the one-statement sqlite builtin refuses)",
    )
    ap.add_argument("--chunk", type=int, default=16, help="bytes per fed chunk (default 16)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--lark-budget",
        type=float,
        default=60.0,
        help="skip a lark measurement whose estimate exceeds this many seconds",
    )
    ap.add_argument(
        "--reparse-chunk", type=int, default=1024, help="bytes received between two lark re-parses (default 1024)"
    )
    ap.add_argument("--reparse-sizes", default="2 KB,20 KB", help="comma-separated sizes for the re-parse column")
    ap.add_argument(
        "--reparse-budget",
        type=float,
        default=300.0,
        help="skip a re-parse measurement whose estimate exceeds this many seconds",
    )
    ap.add_argument("--results-dir", type=Path, default=None)
    args = ap.parse_args(argv)

    info = machine()
    grammars: list[tuple[str, Grammar, float]] = []
    loads: list[tuple[str, Callable[[], Grammar]]] = [("JSON", lambda: Grammar.builtin("json"))]
    for sql_name in [n.strip() for n in args.sql_grammar.split(",") if n.strip()]:
        if sql_name == "mini":
            loads.append(("SQL", lambda: Grammar.from_lark(MINI_SQL, name="mini-sql")))
        else:
            loads.append(("SQL", lambda sql_name=sql_name: Grammar.builtin(sql_name)))  # type: ignore[misc]
    for label, load in loads:
        start = time.perf_counter()
        grammar = load()
        grammars.append((label, grammar, time.perf_counter() - start))

    reparse_sizes = {s.strip() for s in args.reparse_sizes.split(",")}
    rows: list[dict[str, Any]] = []
    for label, grammar, load_s in grammars:
        parser = grammar.lark_parser
        assert parser is not None
        lark_us_per_byte: float | None = None
        for size_label, size in SIZES.items():
            text = json_text(size) if label == "JSON" else sql_text(size)
            data = text.encode()
            row: dict[str, Any] = {
                "language": label,
                "grammar": grammar.name,
                "size": size_label,
                "bytes": len(data),
                "chunk_bytes": args.chunk,
                "grammar_load_s": round(load_s, 3),
            }
            repeat = 1 if size >= 200_000 else args.repeat
            stream = best_of(repeat, functools.partial(time_checker, grammar, data, args.chunk))
            whole = best_of(repeat, functools.partial(time_checker, grammar, data, len(data)))
            row["checker_stream_s"] = stream
            row["checker_stream_us_per_byte"] = stream / len(data) * 1e6
            loop = best_of(repeat, functools.partial(time_checker, grammar, data, args.chunk, PROBE_FROM))
            row["loop_checker_stream_us_per_byte"] = loop / len(data) * 1e6
            row["checker_whole_s"] = whole
            row["checker_whole_us_per_byte"] = whole / len(data) * 1e6
            estimate = (lark_us_per_byte or 0) * len(data) / 1e6
            if lark_us_per_byte is None or estimate <= args.lark_budget:
                one = best_of(1 if size >= 200_000 else args.repeat, functools.partial(time_lark_parse, parser, text))
                lark_us_per_byte = one / len(data) * 1e6
                row["lark_parse_s"] = one
                row["speedup_vs_lark_parse"] = one / stream
            else:
                row["lark_parse_s"] = None
                row["lark_parse_skipped"] = f"estimated {estimate:.0f} s > budget {args.lark_budget:.0f} s"
            reparse_estimate = (lark_us_per_byte or 0) * len(data) ** 2 / (2 * args.reparse_chunk) / 1e6
            if size_label in reparse_sizes and reparse_estimate > args.reparse_budget:
                row["lark_reparse_skipped"] = f"estimated {reparse_estimate:.0f} s > budget {args.reparse_budget:.0f} s"
            elif size_label in reparse_sizes:
                reparse = time_lark_reparse(parser, text, args.reparse_chunk)
                row["reparse_chunk_bytes"] = args.reparse_chunk
                row["lark_reparses"] = -(-len(data) // args.reparse_chunk)
                row["lark_reparse_s"] = reparse
                row["speedup_vs_lark_reparse"] = reparse / stream
            rows.append(row)
            print(
                f"  {label} ({grammar.name}) {size_label}: checker {row['checker_stream_us_per_byte']:.2f} us/byte",
                flush=True,
            )

    def fmt(value: Any, unit: str = "") -> str:
        if value is None:
            return "not run"
        return f"{value:.3g}{unit}" if value < 100 else f"{value:.0f}{unit}"

    table = markdown_table(
        [
            "text",
            "bytes",
            "checker stream (us/byte)",
            "checker whole (us/byte)",
            "loop checker stream (us/byte)",
            "checker stream (s)",
            "lark one parse (s)",
            "x faster than one parse",
            f"lark re-parse every {args.reparse_chunk} B (s)",
            "x faster than re-parse",
        ],
        [
            [
                f"{r['language']} ({r['grammar']}) {r['size']}",
                r["bytes"],
                fmt(r["checker_stream_us_per_byte"]),
                fmt(r["checker_whole_us_per_byte"]),
                fmt(r["loop_checker_stream_us_per_byte"]),
                fmt(r["checker_stream_s"]),
                fmt(r.get("lark_parse_s")),
                fmt(r.get("speedup_vs_lark_parse")),
                fmt(r.get("lark_reparse_s")),
                fmt(r.get("speedup_vs_lark_reparse")),
            ]
            for r in rows
        ],
    )
    grammars = list(dict.fromkeys(r["grammar"] for r in rows))
    targets: dict[str, Any] = {
        "max_us_per_byte": 1.0,
        "min_speedup_vs_lark_at_20KB": 100.0,
        "met_us_per_byte": {
            g: all(r["checker_stream_us_per_byte"] <= 1.0 for r in rows if r["grammar"] == g) for g in grammars
        },
        "met_speedup_vs_reparse_at_20KB": {
            g: all(
                (r.get("speedup_vs_lark_reparse") or 0) >= 100
                for r in rows
                if r["size"] == "20 KB" and r["grammar"] == g
            )
            for g in grammars
        },
        "met_speedup_vs_one_parse_at_20KB": {
            g: all(
                (r.get("speedup_vs_lark_parse") or 0) >= 100 for r in rows if r["size"] == "20 KB" and r["grammar"] == g
            )
            for g in grammars
        },
    }
    try:
        with open("/proc/loadavg") as f:
            load_average = f.read().split()[:3]
    except OSError:  # pragma: no cover
        load_average = None
    payload = {
        "benchmark": NAME,
        "machine": info,
        "load_average_at_end": load_average,
        "versions": {"lark": lark.__version__, "llguidance": _llguidance_version()},
        "settings": vars(args) | {"results_dir": str(args.results_dir) if args.results_dir else None},
        "rows": rows,
        "targets": targets,
        "table": table,
    }
    path = write_results(NAME, payload, args.results_dir)
    print(
        f"\nChecker vs lark Earley (dynamic lexer), chunks of {args.chunk} bytes; {machine_line(info)};"
        f" load average {load_average}"
    )
    print(table)

    def verdicts(met: dict[str, bool]) -> str:
        return ", ".join(f"{g} {'met' if ok else 'NOT met'}" for g, ok in met.items())

    print(
        f"\ntargets: <= 1 us/byte: {verdicts(targets['met_us_per_byte'])}; "
        f">= 100x lark re-parsing at 20 KB: {verdicts(targets['met_speedup_vs_reparse_at_20KB'])}"
        f" (>= 100x a single lark parse of the finished text: "
        f"{verdicts(targets['met_speedup_vs_one_parse_at_20KB'])})"
    )
    print(f"results: {path}")
    return payload


def _llguidance_version() -> str:
    import llguidance

    return getattr(llguidance, "__version__", None) or llguidance.get_version()


if __name__ == "__main__":
    main()
