"""Deterministic drafts for the command-line tests, reached with ``--draft python:cli_drafts:NAME``
(tests/test_cli.py puts ``tests/support`` on ``PYTHONPATH``).

They stand in for a model the way a user's own ``generate(prompt)`` function would.
"""

from __future__ import annotations

from grammar_guide import FunctionDraft


def sql_with_typo(prompt: str) -> str:
    """A restating draft that misspells a keyword, for the small SQL grammar."""
    return "SELECT name FROM users ORDER BY age DESC LIMT 5;"


def chatty_sql(prompt: str) -> list[str]:
    """Streams its answer in chunks, with prose before and after it and a dropped comma."""
    return ["Sure! Here is the query:\n", "SELECT name age FROM users ", "WHERE age > 30;", "\nThis lists them."]


def _json_with_prose_value(prompt: str, prefix: str) -> str:
    if not prefix:
        return '{"name": Ada Lovelace, "born": 1815}'
    if '"born"' in prefix:
        return "}"
    return ' "born": 1815}' if prefix.rstrip().endswith(",") else ', "born": 1815}'


#: A JSON answer whose value is unquoted prose (the json grammar's rewrites quote it). The draft
#: truly continues the accepted text, as a completion endpoint would.
json_with_prose_value = FunctionDraft(_json_with_prose_value, name="json_with_prose_value", continues_prefix=True)


def silent(prompt: str) -> str:
    """A draft that never writes anything."""
    return ""


def hostile(prompt: str) -> str:
    """A draft that tries to drive the terminal with escape sequences."""
    return '{"a": 1}' + "\x1b]0;pwned\x07\x1b[2J"


#: A ``Draft`` object is used as is (here: a function that truly continues the accepted text).
continuing = FunctionDraft(
    lambda prompt, prefix: '{"a": [1, 2, 3]}'[len(prefix) :], name="continuing", continues_prefix=True
)


def returns_a_dict(prompt: str) -> dict[str, str]:
    """A user's function that returns its API's response object instead of its text."""
    return {"choices": "SELECT name FROM users"}


def takes_no_prompt() -> str:
    """A user's mistake: a generate function that takes no prompt (a usage error, exit 2)."""
    return "SELECT 1"


async def slow_json(prompt: str) -> str:
    """A draft that takes a tenth of a second per answer (an API's latency), for batch jobs;
    it fails on prompts that ask it to."""
    import asyncio

    await asyncio.sleep(0.1)
    if "fail" in prompt:
        raise RuntimeError("the draft failed")
    return '{"answer": "ok"}'


def explained_sql(prompt: str) -> str:
    """A complete statement, then a note after it (BIRD mini-dev's mixtral answers)."""
    return 'SELECT name FROM users;\n\nNote: The "users" table is assumed to exist.'
