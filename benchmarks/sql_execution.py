"""Run a query on a public SQLite database and compare its rows with the gold query's.

Spider's databases are SQLite files; a query runs read-only, with a time limit (SQLite's progress
handler interrupts it), through Python's ``sqlite3``, which, like a user's ``cursor.execute``,
refuses a text of more than one statement. Rows compare as a multiset (order ignored) unless the
gold query's outermost SELECT has an ORDER BY; then as a list. Values compare as SQLite returns
them, numbers as floats rounded to 6 decimals (``1`` and ``1.0`` are one value).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Rows", "error_class", "gold_is_ordered", "run_query", "same_rows"]

TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Rows:
    """A query's rows, or the error that stopped it."""

    rows: tuple[tuple[Any, ...], ...] | None
    error: str | None = None


def _value(v: Any) -> Any:
    if isinstance(v, bool | int | float):
        return round(float(v), 6)
    return v


def run_query(database: Path, sql: str, timeout_s: float = TIMEOUT_S) -> Rows:
    """The rows of ``sql`` on ``database`` (opened read-only), or the error (no text is one)."""
    if not sql.strip():
        return Rows(None, "EmptyText: no statement")
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    deadline = time.perf_counter() + timeout_s
    conn.set_progress_handler(lambda: time.perf_counter() > deadline, 10_000)
    try:
        rows = conn.execute(sql).fetchall()
    except (sqlite3.Error, sqlite3.Warning, ValueError) as exc:  # ValueError: a NUL in the text
        message = "timeout" if isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc) else str(exc)
        return Rows(None, f"{type(exc).__name__}: {message}")
    finally:
        conn.close()
    return Rows(tuple(tuple(_value(v) for v in row) for row in rows))


#: The classes of SQLite's (and ``sqlite3``'s) errors, each a label and a pattern of its message,
#: first match taken: a report names an error by its class, never by the names in it, which come
#: from answers a held-out report must not show.
_ERROR_CLASSES = (
    ("timeout", r"^timeout$"),
    ("no statement", r"^no statement$"),
    ("syntax error", r"syntax error|unrecognized token|incomplete input"),
    ("more than one statement", r"one statement at a time"),
    ("a clause out of its place", r"should come after"),
    ("DISTINCT in a window function", r"DISTINCT is not supported for window functions"),
    ("no such column", r"^no such column"),
    ("no such table", r"^no such table"),
    ("no such function", r"^no such function"),
    ("ambiguous column name", r"^ambiguous column name"),
    ("misuse of an aggregate", r"^misuse of aggregate"),
    ("misuse of a window function", r"^misuse of window function"),
    ("row value misused", r"^row value misused"),
    ("a table called as a function", r"is not a function$"),
    ("an aggregate in GROUP BY", r"aggregate functions are not allowed in the GROUP BY clause"),
    ("HAVING without an aggregate", r"HAVING clause on a non-aggregate query"),
    ("a subquery of several columns", r"sub-select returns \d+ columns"),
    ("a set operation's sides differ in columns", r"do not have the same number of result columns"),
    ("VALUES rows differ from the columns", r"has \d+ values for \d+ columns"),
    ("a function out of its context", r"^unable to use function"),
    ("wrong number of arguments", r"^wrong number of arguments"),
    ("parameters without values", r"^Incorrect number of bindings"),
)


def error_class(error: str | None) -> str | None:
    """The class of a ``Rows.error`` (``"no such column"``), with no name from the query in it;
    ``"other"`` for a message none of the classes has; None for no error."""
    if error is None:
        return None
    message = error.split(": ", 1)[-1]
    return next((label for label, pattern in _ERROR_CLASSES if re.search(pattern, message)), "other")


def gold_is_ordered(gold_sql: str) -> bool:
    """Whether the gold query's outermost SELECT orders its rows (an ORDER BY outside brackets)."""
    import sqlglot

    try:
        return sqlglot.parse_one(gold_sql, read="sqlite").args.get("order") is not None
    except sqlglot.errors.SqlglotError:
        depth, text = 0, []
        for c in gold_sql:  # the text outside brackets
            depth += c == "("
            text.append(" " if depth else c)
            depth -= c == ")" and depth > 0
        return re.search(r"\bORDER\s+BY\b", "".join(text), re.IGNORECASE) is not None


def same_rows(gold: Rows, got: Rows, ordered: bool) -> bool:
    """Whether ``got`` returned the gold rows (a list if ``ordered``, else a multiset)."""
    if gold.rows is None or got.rows is None:
        return False
    if ordered:
        return gold.rows == got.rows
    return Counter(gold.rows) == Counter(got.rows)
