"""The main job, offline: a local SmolLM2 draft writes SQL for a question over a small schema,
grammar-guide keeps it valid SQLite, and SQLite runs the result.

    make demo            # or: python examples/demo.py [--question "..."] [--html trace.html]

Prints the draft's corrections and the final query, runs it on an in-memory database with the
schema below, and writes an HTML trace of every correction.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import grammar_guide as gg  # noqa: E402

SCHEMA = """\
CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER REFERENCES authors(id),
                    year INTEGER, pages INTEGER);
"""

ROWS = """\
INSERT INTO authors VALUES (1, 'Victor Hugo', 'France'), (2, 'Jane Austen', 'England'),
                           (3, 'Marguerite Duras', 'France'), (4, 'Haruki Murakami', 'Japan');
INSERT INTO books VALUES (1, 'Les Miserables', 1, 1862, 1463), (2, 'Emma', 2, 1815, 474),
                         (3, 'L''Amant', 3, 1984, 148), (4, 'Kafka on the Shore', 4, 2002, 505),
                         (5, '1Q84', 4, 2009, 928), (6, 'Notre-Dame de Paris', 1, 1831, 940);
"""

QUESTION = "Which books by French authors have more than 500 pages? Give the title and the author's name."


def build_prompt(question: str) -> str:
    return (
        "You write SQLite queries. The database has these tables:\n"
        f"{SCHEMA}\n"
        f"Question: {question}\n"
        "Answer with one SQL query and nothing else."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--html", default="artifacts/demo_trace.html", help="where to write the HTML trace")
    parser.add_argument("--lookahead", type=int, default=16, help="draft tokens per call")
    args = parser.parse_args(argv)

    from grammar_guide.providers.transformers import TransformersDraft

    started = time.perf_counter()
    print("Loading SmolLM2-135M-Instruct (converted once from the GGUF, then cached)...", file=sys.stderr)
    target = gg.TargetModel.load()
    draft = TransformersDraft.from_target(target)
    print(f"  loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    grammar = gg.Grammar.builtin("sqlite")
    print(f"\nQuestion: {args.question}\n", file=sys.stderr)

    def show(event: gg.Event) -> None:
        if isinstance(event, gg.GrammarViolation):
            print(f"  violation at {event.line}:{event.column}: draft wrote {event.rejected[:40]!r}", file=sys.stderr)
        elif isinstance(event, gg.Correction):
            what = event.detail or f"{event.text!r}"
            print(f"  {event.source:>6} correction: {what}", file=sys.stderr)
        elif isinstance(event, gg.Cut):
            print(f"  cut ({event.reason}): {event.text[:40]!r}", file=sys.stderr)

    result = gg.guide(
        draft,
        grammar,
        build_prompt(args.question),
        target=target,
        lookahead=args.lookahead,
        max_new_tokens=160,
        on_event=show,
    )
    stats = result.stats
    print(
        f"\n{stats.draft_calls} draft calls, {stats.corrections} corrections, "
        f"{stats.target_tokens} target tokens, {stats.forced_tokens} forced, "
        f"{stats.prefill_tokens_saved} prefill tokens saved, {stats.total_seconds:.1f} s",
        file=sys.stderr,
    )
    print("\nQuery (valid SQLite):")
    print(result.text)

    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA + ROWS)
    try:
        rows = db.execute(result.text.strip().rstrip(";")).fetchall()
    except sqlite3.Error as exc:
        # Valid syntax can still name a column the schema lacks: the grammar knows SQL, not the schema.
        print(f"\nSQLite could not run it: {exc}")
    else:
        print(f"\nSQLite returned {len(rows)} row(s):")
        for row in rows[:10]:
            print("  ", row)

    html_path = Path(args.html)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    result.save_html(html_path)
    print(f"\nHTML trace: {html_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
