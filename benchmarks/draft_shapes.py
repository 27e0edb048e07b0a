"""What a model wrote, read from its SQL alone: the shapes that ``real_sql_repair`` totals its
unfaithful answers by, so that a failure of ours is told apart from an answer nothing could keep.

- ``no query``: no SELECT, or under 4 lexemes (``sql placeholder``): nothing to keep;
- ``repeats itself``: a run of ``LOOP_RUN`` lexemes written 3 or more times (a decoding loop, mostly
  cut by the model's budget);
- ``cut off``: a bracket left open, or a last lexeme that needs more: with nothing to invent, it
  cannot come back whole;
- ``no SQLite form``: a construct of another dialect that SQLite 3.40 has no form for, exact or not
  (``NO_SQLITE_FORM``; ``grammars/README.md`` lists the rewrites of those it has): it cannot come
  back faithful;
- ``query``: the rest.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["LOOP_RUN", "NO_SQLITE_FORM", "draft_shape", "no_sqlite_form"]

_LEXEME = re.compile(r"\w+|'[^']*'|\"[^\"]*\"|[^\w\s]")
#: Last lexemes that need more after them: the model's query was cut off there.
_OPEN_ENDS = frozenset({"=", "<>", "<", ">", ",", ".", "(", "and", "or", "not", "in", "like"})
_OPEN_ENDS |= {"where", "from", "select", "on", "join", "by", "as"}
LOOP_RUN = 6  # lexemes in a run that, written 3 or more times, is a decoding loop

#: Constructs SQLite 3.40 has no form for (matched outside strings, case ignored): each is a syntax
#: error there, so no output keeps it. Where a rewrite keeps a construct's meaning in some uses
#: (``= ANY (ARRAY[…])``, ``PERCENTILE_CONT(p) WITHIN GROUP``), those uses are not matched. A call
#: of a function SQLite lacks (``unnest(…)``, ``string_to_array(…)``) is valid syntax, kept as
#: written, and fails only when it runs: it is no construct here.
NO_SQLITE_FORM: dict[str, str] = {
    "LATERAL": r"\blateral\b",
    "DISTINCT ON": r"\bdistinct\s+on\s*\(",
    "EXCEPT ALL, INTERSECT ALL": r"\b(?:except|intersect)\s+all\b",
    "an aggregate's own ORDER BY": (  # at the call's own depth: brackets inside it, two deep, skipped
        r"\b(?:group_concat|string_agg|array_agg|json_arrayagg|listagg)\s*\("
        r"(?:[^()]|\((?:[^()]|\([^()]*\))*\))*?\border\s+by\b"
    ),
    "an ordered-set aggregate other than PERCENTILE_CONT/DISC": (
        r"\b(?!percentile_(?:cont|disc)\b)\w+\s*\([^()]*\)\s*within\s+group\b"
    ),
    "KEEP (DENSE_RANK …)": r"\bkeep\s*\(\s*dense_rank\b",
    "MATCH_RECOGNIZE": r"\bmatch_recognize\b",
    "PIVOT, UNPIVOT": r"\b(?:un)?pivot\s*\(",
    "ARRAY[…]": r"\barray\s*\[",
    "MATCH … AGAINST": r"\bagainst\s*\(",
    "SELECT … INTO a variable": r"\binto\s+@",
    "CONNECT BY": r"\bconnect\s+by\b",
    "a row's count (COUNT(t.*))": r"\bcount\s*\(\s*\w+\s*\.\s*\*\s*\)",
}
_NO_FORM = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in NO_SQLITE_FORM.items()}
_STRING = re.compile(r"'(?:[^']|'')*'")
#: Uses a rewrite keeps (``grammars/README.md``): PostgreSQL's ``x = ANY (ARRAY[a, b])``.
_REWRITTEN = re.compile(r"\b(?:any|some|all)\s*\(\s*array\s*\[", re.IGNORECASE)


def draft_shape(sql: str) -> str:
    """The shape of the model's SQL (the module's docstring): ``no query``, ``repeats itself``,
    ``cut off``, ``no SQLite form`` or ``query``, the first that holds."""
    lexemes = [x.lower() for x in _LEXEME.findall(sql)]
    if len(lexemes) < 4 or "select" not in lexemes:
        return "no query"
    runs = Counter(tuple(lexemes[i : i + LOOP_RUN]) for i in range(len(lexemes) - LOOP_RUN + 1))
    if runs and runs.most_common(1)[0][1] >= 3:
        return "repeats itself"
    if lexemes.count("(") > lexemes.count(")") or lexemes[-1] in _OPEN_ENDS:
        return "cut off"
    if no_sqlite_form(sql):
        return "no SQLite form"
    return "query"


def no_sqlite_form(sql: str) -> list[str]:
    """The constructs of ``NO_SQLITE_FORM`` that ``sql`` uses, outside its strings."""
    code = _REWRITTEN.sub("IN (", _STRING.sub("''", sql))
    return [name for name, pattern in _NO_FORM.items() if pattern.search(code)]
