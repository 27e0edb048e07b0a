"""Constrain an OpenAI model (or any OpenAI-compatible server) to SQLite: the model writes the
query, grammar-guide keeps it valid under grammars/sqlite.lark, and SQLite runs it.

    OPENAI_API_KEY=sk-... python examples/sql_with_openai.py --model gpt-4o-mini
    python examples/sql_with_openai.py --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
    python examples/sql_with_openai.py --base-url http://localhost:8080/v1 --endpoint completions

The remote model is the draft; the local SmolLM2 target repairs what the grammar rejects (pass
--no-target to repair with the grammar and the draft's own text only). Prints the corrections,
the final query, its rows on an in-memory database with the schema below, and the API usage.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import grammar_guide as gg

SCHEMA = """\
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id),
                     placed_on TEXT, total REAL);
"""

ROWS = """\
INSERT INTO customers VALUES (1, 'Ada', 'London'), (2, 'Grace', 'New York'), (3, 'Linus', 'Helsinki'),
                             (4, 'Margaret', 'Boston');
INSERT INTO orders VALUES (1, 1, '2024-01-05', 120.0), (2, 1, '2024-02-11', 35.5), (3, 2, '2024-02-12', 990.0),
                          (4, 3, '2024-03-01', 15.0), (5, 1, '2024-03-07', 60.0), (6, 4, '2024-03-09', 410.0);
"""

QUESTION = "Which customers have spent more than 200 in total? Give their name and the total, largest first."


def build_prompt(question: str) -> str:
    return (
        "You write SQLite queries. The database has these tables:\n"
        f"{SCHEMA}\n"
        f"Question: {question}\n"
        "Answer with one SQL query and nothing else."
    )


def describe(event: gg.Event) -> str | None:
    if isinstance(event, gg.GrammarViolation):
        expected = ", ".join(event.expected[:6]) or "nothing"
        return f"  line {event.line}:{event.column}  rejected {event.rejected[:40]!r}  (expected {expected})"
    if isinstance(event, gg.Correction):
        return f"  at {event.offset:>4}  {event.source:<7} {event.text!r}  ({event.reason})"
    if isinstance(event, gg.Cut):
        return f"  cut {event.text[:40]!r}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL"), help="an OpenAI-compatible server")
    parser.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY")
    parser.add_argument("--endpoint", choices=("chat", "completions"), default="chat")
    parser.add_argument(
        "--prefill",
        action="store_true",
        help="the server continues a final assistant message (vLLM/SGLang continue_final_message)",
    )
    parser.add_argument("--no-target", action="store_true", help="no local target model")
    parser.add_argument("--lookahead", type=int, default=32, help="draft tokens per call")
    parser.add_argument("--html", default=None, help="write the HTML trace of the corrections here")
    args = parser.parse_args(argv)

    api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key and not args.base_url:
        print("Set OPENAI_API_KEY to use OpenAI, or pass --base-url for another server.", file=sys.stderr)
        return 2

    from grammar_guide.providers.openai import OpenAIDraft

    draft = OpenAIDraft(
        args.model,
        base_url=args.base_url,
        api_key=api_key,
        endpoint=args.endpoint,
        prefill="continue_final_message" if args.prefill else None,
        temperature=0.0,
    )
    print("Compiling the SQLite grammar...", file=sys.stderr)
    grammar = gg.Grammar.builtin("sqlite")
    where = args.base_url or "api.openai.com"
    print(f"Asking {args.model} at {where} ({args.endpoint}): {args.question}\n", file=sys.stderr)

    started = time.perf_counter()
    try:
        result = gg.guide(
            draft,
            grammar,
            build_prompt(args.question),
            target=False if args.no_target else None,
            lookahead=args.lookahead,
            on_draft_text=lambda chunk: print(chunk, end="", file=sys.stderr, flush=True),
        )
    except gg.ProviderError as error:
        print(f"\n\nThe model could not be reached: {error}", file=sys.stderr)
        return 1
    except gg.GuideExhausted as error:
        print(f"\n\nNo complete query: {error}\nLongest valid prefix: {error.result.text!r}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    print("\n", file=sys.stderr)

    lines = [line for line in map(describe, result.events) if line]
    print(f"Corrections ({result.stats.corrections}):" if lines else "No corrections: the draft was valid SQLite.")
    for line in lines:
        print(line)
    print(f"\nQuery:\n  {result.text}\n")

    database = sqlite3.connect(":memory:")
    database.executescript(SCHEMA + ROWS)
    try:
        rows = database.execute(result.text.rstrip().rstrip(";")).fetchall()
    except sqlite3.Error as error:  # valid syntax may still name a column that does not exist
        print(f"SQLite: {error}")
    else:
        print(f"Rows ({len(rows)}):")
        for row in rows:
            print(f"  {row}")

    stats = result.stats
    print(
        f"\n{stats.draft_calls} draft call(s), API tokens in/out: {stats.draft_tokens_in}/{stats.draft_tokens_out}, "
        f"target tokens: {stats.target_tokens}, {seconds:.1f} s"
    )
    if args.html:
        print(f"Trace: {result.save_html(args.html)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
