"""Shared test set-up: offline Hugging Face, and small real grammars used across test modules."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

from grammar_guide import Grammar

# A test whose requests made the local LLM server raise fails with that exception.
from tests.support.server_failures import pytest_runtest_call  # noqa: F401

SMALL_SQL = r"""
start: stmt ";"?
stmt: "SELECT"i cols "FROM"i NAME [where] [order] [limit]
cols: "*" | col ("," col)*
col: NAME | NAME "(" (NAME | "*") ")"
where: "WHERE"i cond
cond: NAME op value | cond "AND"i cond | cond "OR"i cond
op: "=" | "LIKE"i | "<" | ">" | "<=" | ">="
order: "ORDER"i "BY"i NAME ["ASC"i | "DESC"i]
limit: "LIMIT"i NUMBER
value: STRING | NUMBER | NAME
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STRING: /'[^']*'/
NUMBER: /[0-9]+/
%import common.WS
%ignore WS
"""


@pytest.fixture(scope="session")
def small_sql() -> Grammar:
    """A small SQL subset: quick to compile, with keywords, names, strings and numbers."""
    return Grammar.from_lark(SMALL_SQL, name="small-sql")


#: Arithmetic over numbers and names, with '^' for a power (a grammar a new user writes first).
ARITHMETIC = r"""
start: expr
?expr: expr "+" term | expr "-" term | term
?term: term "*" factor | term "/" factor | factor
?factor: atom "^" factor | atom
?atom: NUMBER | NAME | "(" expr ")" | "-" atom
%import common.NUMBER
%import common.CNAME -> NAME
%import common.WS
%ignore WS
"""


@pytest.fixture(scope="session")
def arithmetic() -> Grammar:
    return Grammar.from_lark(ARITHMETIC, name="arithmetic")


@pytest.fixture(scope="session")
def json_grammar() -> Grammar:
    return Grammar.builtin("json")
