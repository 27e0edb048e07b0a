"""What a language's own engine rejects in a text its grammar accepts: limits of the engine.

A context-free grammar cannot count. SQLite's parser has a fixed stack (``YYSTACKDEPTH``, 100
entries in the builds Python ships), so a statement nested deeply enough is rejected with
``parser stack overflow`` though the grammar, like SQLite's own ``parse.y``, accepts it. How deep
depends on the construct (each parser state on the stack counts), measured on SQLite 3.40.1:
11 nested ``x IN (SELECT ...)`` pass and 12 fail, 15 nested ``FROM (SELECT ...)`` pass and 16
fail, 18 nested scalar ``(SELECT ...)`` pass and 19 fail, 93 nested brackets ``((1))`` pass and
94 fail. SQLite also limits an expression's depth (1000) and a compound's terms (500).

``ENGINE_LIMITS`` maps a builtin grammar's name to its check: the engine's message where it
rejects a complete text for such a limit, else ``None``. The check never runs the text: SQLite
prepares it under an authorizer that denies every action, so nothing is read, written or
attached. Checks that need a schema (``aggregate functions are not allowed in the GROUP BY
clause``, which depends on the columns a name resolves to) are not made: without the user's
database they cannot be decided.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import closing

__all__ = ["ENGINE_LIMITS", "sqlite_limit"]

_SQLITE_LIMITS = re.compile(
    r"parser stack overflow|Expression tree is too large|too many terms in compound SELECT", re.IGNORECASE
)


def _deny(*_args: object) -> int:
    return sqlite3.SQLITE_DENY


def sqlite_limit(text: str) -> str | None:
    """SQLite's message where its parser or code generator rejects ``text`` (one statement) for
    one of its limits (``parser stack overflow``), else ``None``."""
    with closing(sqlite3.connect(":memory:")) as connection:
        connection.set_authorizer(_deny)
        try:
            connection.execute(text)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            message = str(exc)
            return message if _SQLITE_LIMITS.search(message) else None
        except ValueError:  # text SQLite is never given (a lone surrogate): no verdict of its
            return None
    return None


#: A builtin grammar's name -> its engine's limit check.
ENGINE_LIMITS: dict[str, Callable[[str], str | None]] = {"sqlite": sqlite_limit}
