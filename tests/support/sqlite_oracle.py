"""SQLite's own parser as an oracle: does SQLite accept this SQL text syntactically?

The oracle runs ``sqlite3_prepare_v2`` (without stepping) through ctypes on the very library that
Python's ``sqlite3`` module has loaded, so its answers are those of the SQLite the user runs.
Reading the error of ``EXPLAIN stmt`` is not enough: SQLite raises some semantic errors (no such
table, unknown database, no such collation) from the middle of parsing and stops there, hiding a
later syntax error. So a statement counts as valid only when the parser reached its end: either
``prepare`` succeeds, or it fails with a non-syntax error after consuming the whole statement (the
tail pointer is at the end). When a semantic error stops the parser early, the oracle creates what
the error asks for (a table, a view, a collation, an attached database) and prepares again, a
bounded number of times.
"""

from __future__ import annotations

import ctypes
import enum
import functools
import re
import sqlite3
from dataclasses import dataclass

__all__ = [
    "Label",
    "Verdict",
    "check",
    "check_one_statement",
    "check_script",
    "compile_options",
    "library_path",
    "sqlite_version",
]

SQLITE_OK = 0
_MAX_REPAIRS = 40


class Label(str, enum.Enum):
    VALID = "valid"  # the parser reached the end of the statement
    INVALID = "invalid"  # a syntax error: SQLite rejects the text whatever the schema
    UNDETERMINED = "undetermined"  # a semantic error stopped the parser early and could not be repaired


@dataclass(frozen=True)
class Verdict:
    label: Label
    message: str | None = None  # SQLite's last error message, if any

    @property
    def valid(self) -> bool:
        return self.label is Label.VALID


# Errors that SQLite's parser raises from the text alone: the statement is invalid whatever the
# schema. ("near ...: syntax error", "incomplete input", "unrecognized token" and the messages of
# parser actions that reject a construct.)
_SYNTAX_ERRORS = re.compile(
    r"syntax error|incomplete input|unrecognized token|"
    r"should come after|unknown join type|unsupported frame specification|"
    r"a NATURAL join may not have|a JOIN clause is required before|"
    r"RETURNING clause|not allowed|is not allowed|"
    r"too many terms in compound SELECT|all VALUES must have the same number of terms|"
    r"near \"|"
    r"frame starting offset must be|frame ending offset must be|"
    r"parser stack overflow|variable number must be between|too many SQL variables|"
    r"DISTINCT is not supported for window functions|"
    r"ORDER BY may not be used with non-aggregate|FILTER clause may only be used with|"
    r"qualified table names are not allowed|"
    r"the INDEXED BY clause is not allowed|"
    r"expressions prohibited in PRIMARY KEY and UNIQUE constraints|"
    r"hex literal too big|"
    r"cannot use RETURNING in a trigger|"
    r"AUTOINCREMENT is only allowed on an INTEGER PRIMARY KEY|"
    r"unknown or unsupported join type|"
    r"unknown table option|"
    r"default value of column .* is not constant|"
    r"temporary table name must be unqualified|temporary trigger may not have qualified name|"
    r"set list|"
    r"has more than one primary key",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=1)
def library_path() -> str:
    """The file of the SQLite library that this process's ``sqlite3`` module uses."""
    with sqlite3.connect(":memory:"):
        pass
    candidates = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and re.search(r"libsqlite3[^/]*\.so", parts[-1]):
                candidates.append(parts[-1])
    if candidates:
        return candidates[0]
    # Statically linked into the _sqlite3 extension module.
    import _sqlite3  # type: ignore[import-not-found]

    return _sqlite3.__file__


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(library_path())
    lib.sqlite3_open_v2.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p]
    lib.sqlite3_close_v2.argtypes = [ctypes.c_void_p]
    lib.sqlite3_prepare_v2.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.sqlite3_finalize.argtypes = [ctypes.c_void_p]
    lib.sqlite3_errmsg.argtypes = [ctypes.c_void_p]
    lib.sqlite3_errmsg.restype = ctypes.c_char_p
    lib.sqlite3_exec.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.sqlite3_libversion.restype = ctypes.c_char_p
    lib.sqlite3_compileoption_get.argtypes = [ctypes.c_int]
    lib.sqlite3_compileoption_get.restype = ctypes.c_char_p
    lib.sqlite3_create_collation_v2.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    return lib


_COLLATE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)


@_COLLATE
def _binary_collation(_arg, n1, p1, n2, p2):  # type: ignore[no-untyped-def]
    a = ctypes.string_at(p1, n1)
    b = ctypes.string_at(p2, n2)
    return (a > b) - (a < b)


def sqlite_version() -> str:
    """SQLite's version string, e.g. ``3.40.1``."""
    return _lib().sqlite3_libversion().decode()


def compile_options() -> list[str]:
    """The compile-time options of the library (``PRAGMA compile_options``)."""
    lib = _lib()
    options = []
    i = 0
    while (opt := lib.sqlite3_compileoption_get(i)) is not None:
        options.append(opt.decode())
        i += 1
    return options


class _Connection:
    def __init__(self) -> None:
        self.lib = _lib()
        self.db = ctypes.c_void_p()
        flags = 0x02 | 0x04 | 0x80  # READWRITE | CREATE | MEMORY
        rc = self.lib.sqlite3_open_v2(b":memory:", ctypes.byref(self.db), flags, None)
        if rc != SQLITE_OK:
            raise RuntimeError(f"sqlite3_open_v2 failed with {rc}")
        #: Tables that ``_repair`` created (quoted, schema-qualified where given).
        self.created: list[str] = []

    def close(self) -> None:
        self.lib.sqlite3_close_v2(self.db)

    def execute(self, sql: str) -> bool:
        return self.lib.sqlite3_exec(self.db, sql.encode(), None, None, None) == SQLITE_OK

    def prepare(self, data: bytes) -> tuple[int, int, str | None]:
        """Prepare the first statement of ``data``: (rc, bytes consumed, error message)."""
        buf = ctypes.create_string_buffer(data, len(data) + 1)
        stmt = ctypes.c_void_p()
        tail = ctypes.c_void_p()
        rc = self.lib.sqlite3_prepare_v2(self.db, buf, len(data) + 1, ctypes.byref(stmt), ctypes.byref(tail))
        consumed = (tail.value or ctypes.addressof(buf)) - ctypes.addressof(buf)
        message = None
        if rc != SQLITE_OK:
            message = self.lib.sqlite3_errmsg(self.db).decode("utf-8", "replace")
        if stmt.value:
            self.lib.sqlite3_finalize(stmt)
        return rc, consumed, message


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _split_name(name: str) -> tuple[str | None, str]:
    if "." in name:
        schema, _, table = name.partition(".")
        return schema, table
    return None, name


def _unquote(name: str) -> str:
    """A name as SQLite's messages print it, without the quotes it was written with."""
    name = name.strip()
    for left, right in ('""', "``", "[]"):
        if len(name) >= 2 and name[0] == left and name[-1] == right:
            inner = name[1:-1]
            return inner.replace(left * 2, left) if left == right else inner
    return name


# The placeholder column of the tables ``_repair`` creates, and its new name when a statement
# adds a column of that name (``ALTER TABLE t ADD COLUMN x``).
_PLACEHOLDER = "x"
_PLACEHOLDER_RENAMED = "x placeholder of the oracle"


def _repair(conn: _Connection, message: str) -> bool:
    """Create what a semantic error asks for; ``False`` when the error is not one we can repair."""
    if m := re.match(r"no such table: (.+)$", message):
        schema, table = _split_name(m.group(1))
        target = (f"{_quote(schema)}." if schema else "") + _quote(table)
        created = conn.execute(f"CREATE TABLE {target}({_PLACEHOLDER})") or (
            schema is not None  # the schema is not attached yet: attach it, then create
            and conn.execute(f"ATTACH ':memory:' AS {_quote(schema)}")
            and conn.execute(f"CREATE TABLE {target}({_PLACEHOLDER})")
        )
        if created:
            conn.created.append(target)
        return created
    if m := re.match(r"duplicate column name: (.+)$", message):
        if _unquote(m.group(1)).lower() != _PLACEHOLDER or not conn.created:
            return False
        renamed = [
            conn.execute(f"ALTER TABLE {t} RENAME COLUMN {_PLACEHOLDER} TO {_quote(_PLACEHOLDER_RENAMED)}")
            for t in conn.created
        ]
        return any(renamed)
    if m := re.match(r"unknown database (.+)$", message):
        return conn.execute(f"ATTACH ':memory:' AS {_quote(_unquote(m.group(1)))}")
    if m := re.match(r"no such collation sequence: (.+)$", message):
        name = m.group(1).encode()
        rc = conn.lib.sqlite3_create_collation_v2(
            conn.db, name, 1, None, ctypes.cast(_binary_collation, ctypes.c_void_p), None
        )
        return rc == SQLITE_OK
    if m := re.match(r"cannot create INSTEAD OF trigger on table: (.+)$", message):
        schema, table = _split_name(m.group(1))
        target = (f"{_quote(schema)}." if schema else "") + _quote(table)
        return conn.execute(f"DROP TABLE {target}") and conn.execute(f"CREATE VIEW {target} AS SELECT 1 AS x")
    if m := re.match(r"cannot create (?:BEFORE|AFTER) trigger on view: (.+)$", message):
        schema, table = _split_name(m.group(1))
        target = (f"{_quote(schema)}." if schema else "") + _quote(table)
        return conn.execute(f"DROP VIEW {target}") and conn.execute(f"CREATE TABLE {target}(x)")
    return False


_TRAILER = re.compile(rb"(?:\s|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$))*", re.DOTALL)


def _only_trailer(rest: bytes) -> bool:
    m = _TRAILER.match(rest)
    return m is not None and m.end() == len(rest)


def _check_one(data: bytes) -> tuple[Verdict, int]:
    """Check the first statement of ``data``; return the verdict and the bytes it spans."""
    conn = _Connection()
    try:
        message = None
        for _ in range(_MAX_REPAIRS + 1):
            rc, consumed, message = conn.prepare(data)
            if rc == SQLITE_OK:
                return Verdict(Label.VALID), consumed
            assert message is not None
            if _SYNTAX_ERRORS.search(message):
                return Verdict(Label.INVALID, message), consumed
            # A semantic error: create what it asks for and try again, also when the parser
            # already reached the end (a schema may reveal a text-only error such as a NATURAL
            # join with ON, which SQLite checks only once the tables exist).
            if _repair(conn, message):
                continue
            if _statement_end(data, consumed):
                # The parser consumed the whole statement before the semantic error.
                return Verdict(Label.VALID, message), consumed
            return Verdict(Label.UNDETERMINED, message), consumed
        return Verdict(Label.UNDETERMINED, message), len(data)
    finally:
        conn.close()


def _statement_end(data: bytes, consumed: int) -> bool:
    """Whether the parser stopped at the end of a statement (after its ``;`` or at the end of text)."""
    if _only_trailer(data[consumed:]):
        return True
    return data[:consumed].rstrip().endswith(b";")


def check(sql: str) -> Verdict:
    """The verdict on a text holding one statement (a trailing ``;`` and comments allowed)."""
    return check_script(sql)


def check_one_statement(sql: str) -> Verdict:
    """The verdict on ``sql`` as one statement, what ``cursor.execute`` takes: the first statement
    (optionally ended by ``;``) must be valid and leave no tail but white space and comments. A
    second statement, even a valid one or a lone ``;``, makes it invalid."""
    if "\x00" in sql:
        return Verdict(Label.INVALID, "NUL character")
    data = sql.encode("utf-8")
    if _only_trailer(data):
        return Verdict(Label.INVALID, "no statement")
    verdict, consumed = _check_one(data)
    if verdict.label is Label.INVALID or _only_trailer(data[consumed:]):
        return verdict
    return Verdict(Label.INVALID, "more than one statement")


def check_script(sql: str) -> Verdict:
    """The verdict on a text of one or more statements separated by ``;``.

    Valid only when every statement is valid; each is prepared on its own fresh database.
    """
    if "\x00" in sql:
        return Verdict(Label.INVALID, "NUL character")
    data = sql.encode("utf-8")
    if _only_trailer(data):
        return Verdict(Label.INVALID, "no statement")
    worst = Verdict(Label.VALID)
    pos = 0
    while pos < len(data) and not _only_trailer(data[pos:]):
        verdict, consumed = _check_one(data[pos:])
        if verdict.label is Label.INVALID:
            return verdict
        if verdict.label is Label.UNDETERMINED:
            worst = verdict
        if consumed <= 0:
            return Verdict(Label.INVALID, "parser made no progress")
        pos += consumed
    return worst


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(f"SQLite {sqlite_version()} at {library_path()}")
    print("compile options:", ", ".join(compile_options()))
    for arg in sys.argv[1:]:
        print(repr(arg), check_script(arg))
