"""The main job, offline: a draft answers a question over a small schema in SQL, grammar-guide
keeps it valid SQLite (repairing the draft's slip with the local SmolLM2 target), and SQLite runs it.

    make demo            # or: python examples/demo.py [--draft scripted|local] [--threads N] [--html PATH]

The default draft is scripted, and says so: the answer a chat model typically gives to this
question, with the slips such answers have: a Markdown code fence, the name ``author_id`` escaped
for Markdown as ``author\\_id`` (as in GPT-4's answers on BIRD mini-dev, see benchmarks/README.md),
and a comparison that lost its operator (``b.pages 500``). The grammar undoes the escape and drops
the fence; ten one-mark edits read the draft's ``500`` on equally well (``>``, ``<``, ``=``, …),
and the local SmolLM2 target picks the likeliest of them given the question (``>``): it chooses
between the draft's readings, it does not write the query's values. SmolLM2-135M, the only model
shipped, is too small to answer the question itself;
``--draft local`` lets it try, sharing one model copy and one KV cache with the target.

The same from the command line (the query goes to stdout, so SQLite can run it)::

    grammar-guide "$(python examples/demo.py --prompt)" --grammar sqlite \\
        --draft python:examples.demo:chat_answer --html trace.html | sqlite3 -init examples/books.sql :memory:
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
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import grammar_guide as gg
from grammar_guide.cli import Progress

DATABASE = Path(__file__).with_name("books.sql")
QUESTION = "Which books by French authors have more than 500 pages? Give the title and the author's name."

#: What a chat model typically answers (scripted): the right query in the wrong form for SQLite: a
#: code fence, a name escaped for Markdown (``author\_id``, a slip of GPT-4's BIRD answers), and a
#: comparison without its operator.
CHAT_ANSWER = (
    "```sql\n"
    "SELECT b.title, a.name\n"
    "FROM books AS b\n"
    "JOIN authors AS a ON a.id = b.author\\_id\n"
    "WHERE a.country = 'France' AND b.pages 500;\n"
    "```"
)


def schema() -> str:
    """The CREATE TABLE statements of the demo database."""
    text = DATABASE.read_text(encoding="utf-8")
    return text[: text.index("INSERT")]


def build_prompt(question: str) -> str:
    return (
        "You write SQLite queries. The database has these tables:\n"
        f"{schema()}\n"
        f"Question: {question}\n"
        "Answer with one SQL query and nothing else."
    )


def chat_answer(prompt: str) -> str:
    """The scripted draft: always the same chat answer (the loop aligns what it restates)."""
    return CHAT_ANSWER


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument(
        "--draft",
        choices=("scripted", "local"),
        default="scripted",
        help="scripted: a chat model's typical answer, with its slip (default); local: SmolLM2 drafts",
    )
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for the local model")
    parser.add_argument("--html", default="artifacts/demo_trace.html", help="where to write the HTML trace")
    parser.add_argument("--lookahead", type=int, default=16, help="draft tokens per call")
    parser.add_argument("--prompt", action="store_true", help="print the prompt and exit")
    args = parser.parse_args(argv)
    if args.prompt:
        print(build_prompt(args.question))
        return 0

    from grammar_guide.local import DEFAULT_MODEL
    from grammar_guide.providers import FunctionDraft
    from grammar_guide.providers.transformers import TransformersDraft

    progress = Progress(sys.stderr, sys.stderr.isatty(), gg.Grammar.builtin("sqlite"))
    started = time.perf_counter()
    progress.status(f"loading {DEFAULT_MODEL} (converted once from the GGUF, then cached) …")
    target = gg.TargetModel.load(threads=args.threads)
    import torch

    progress.status(f"loaded in {time.perf_counter() - started:.1f} s; {torch.get_num_threads()} CPU thread(s)")
    if args.draft == "local":
        # One model in memory: the draft reads the target's model and KV cache.
        draft: gg.Draft = TransformersDraft.from_target(target)
        progress.status(f"draft: {DEFAULT_MODEL} itself (a 135M model: expect it to answer another question)")
    else:
        draft = FunctionDraft(chat_answer, name="scripted chat answer")
        progress.status(
            "draft: SCRIPTED, a chat model's typical answer with its slips "
            "(a Markdown fence, author\\_id, a comparison without its operator)"
        )

    grammar = gg.Grammar.builtin("sqlite")
    print(f"\nQuestion: {args.question}\n", file=sys.stderr)
    result = gg.guide(
        draft,
        grammar,
        build_prompt(args.question),
        target=target,
        lookahead=args.lookahead,
        max_new_tokens=160,
        on_event=progress.event,
        on_draft_text=progress.draft_text,
        on_target_text=progress.target_text,
    )
    progress.finished(result)
    stats = result.stats
    print(
        f"{stats.draft_calls} draft calls, {stats.corrections} corrections, "
        f"{stats.target_tokens} target tokens, {stats.prefill_tokens_saved} prefill tokens saved",
        file=sys.stderr,
    )
    print("\nQuery (valid SQLite):")
    print(result.text)

    db = sqlite3.connect(":memory:")
    db.executescript(DATABASE.read_text(encoding="utf-8"))
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
