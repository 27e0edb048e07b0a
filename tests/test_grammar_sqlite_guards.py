"""The lean SQLite grammar (grammars/sqlite.lark), checked against SQLite's own parser.

Same language as grammars/sqlite.lark, built from the same source by tools/build_sqlite_grammar.py:
keywords are plain literals with ignored whitespace, and word boundaries are enforced by guards
that the matcher's greedy lexer honours (see the build's docstring).
"""

from __future__ import annotations

import random
import re

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.extra.lark import from_lark

from grammar_guide import Grammar
from tests.support import sqlite_oracle
from tests.support.sql_corpus import CorpusStatement, load_corpus
from tools.build_sqlite_grammar import SCRIPT_TARGET, TARGET, build

SAMPLE = 300  # statements per class; benchmarks/sqlite_grammar_compare.py runs the whole corpus
SEED = 8
SEPARATOR_BYTES = frozenset(b" \t\n\f\r-/")


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    # The statement-list grammar (many cases below are scripts); ``sqlite`` is the same
    # language one statement at a time (tests/test_grammar_sqlite.py).
    return Grammar.builtin("sqlite_script")


@pytest.fixture(scope="module")
def corpus() -> list[CorpusStatement]:
    return load_corpus()


def test_shipped_grammar_is_built_from_its_source() -> None:
    assert SCRIPT_TARGET.read_text(encoding="utf-8") == build(name="sqlite_script")


def test_no_rule_blows_up_into_many_alternatives() -> None:
    # The matcher's cost per byte grows with the Earley items it carries; Lark expands each
    # optional part of an alternative into copies of it (2**k). The build writes optional and
    # grouped parts as rules of their own, so every rule stays small.
    parser = lark.Lark(TARGET.read_text(encoding="utf-8"), parser="earley", lexer="dynamic")
    counts: dict[str, int] = {}
    for rule in parser.rules:
        counts[rule.origin.name] = counts.get(rule.origin.name, 0) + 1
    names = {str(name): n for name, n in counts.items()}
    # As written in the source (in plain Lark: 65, 128 and 54 alternatives).
    assert names["oneselect"] == 2 and names["update_stmt"] == 1 and names["eq_expr"] == 6
    # Each keyword adds one rule and one terminal for its glued-word guard (SELECTa); the three
    # restricted expression forms (constant, no leading UNBOUNDED, no HEX_MIN under a minus) add
    # about 70 copied rules; a table's one primary key (columns and table constraints, with and
    # without it) about 30.
    assert sum(counts.values()) < 1450
    assert len(parser.terminals) < 400


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE c(x) AS MATERIALIZED (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<10) SELECT x FROM c",
        "WITH a AS NOT MATERIALIZED (SELECT 1) SELECT DISTINCT * FROM a INTERSECT SELECT 2 EXCEPT SELECT 3",
        "SELECT count(DISTINCT a) FILTER (WHERE b > 0), count(a) FILTER (WHERE b > 0) OVER (PARTITION BY c ORDER BY d ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t",
        "SELECT sum(a) OVER w FROM t WINDOW w AS (ORDER BY b GROUPS UNBOUNDED PRECEDING EXCLUDE TIES)",
        "SELECT * FROM a NATURAL LEFT OUTER JOIN b CROSS JOIN c INNER JOIN d USING (x) RIGHT JOIN e ON 1 FULL JOIN f, json_each(a.j)",
        "SELECT a FROM t WHERE b NOT LIKE 'x%' ESCAPE '\\' AND c IS NOT DISTINCT FROM d AND e NOT BETWEEN 1 AND 2",
        "SELECT a GLOB 'x', b NOT REGEXP 'y', c MATCH 'z', d NOT IN (1, 2), e IN (SELECT 1), f IN t, g NOT IN json_each('[1]')",
        "SELECT NOT EXISTS (SELECT 1), - + ~ 1, 1 << 2 | 3 & 4, 'a' || 'b', 5 % 3, a ISNULL, b NOTNULL, c NOT NULL",
        "SELECT x'00ff', 0x1F, 1.5e3, .5, ?, ?12, :name, @v, $x, \"quoted\", [bracket], `tick`, s.t.c, TRUE, FALSE FROM t",
        "SELECT CAST(a AS INTEGER), CASE WHEN a THEN 1 ELSE 2 END, a -> '$.x', a ->> 'y', a COLLATE nocase, CURRENT_TIMESTAMP FROM t",
        "SELECT * FROM t ORDER BY a COLLATE nocase DESC NULLS LAST, b ASC NULLS FIRST LIMIT 10, 20",
        "SELECT a FROM t GROUP BY a HAVING count(*) > 1; VALUES (1, 2), (3, 4)",
        "INSERT OR REPLACE INTO t(a, b) VALUES (1, 2), (3, 4) ON CONFLICT (a) DO UPDATE SET b = excluded.b WHERE 1 RETURNING *",
        "INSERT INTO t DEFAULT VALUES; REPLACE INTO t SELECT * FROM u; INSERT OR IGNORE INTO t VALUES (1) ON CONFLICT DO NOTHING",
        "UPDATE OR IGNORE t SET (a, b) = (1, 2) FROM u WHERE t.id = u.id ORDER BY a LIMIT 5 OFFSET 1",
        "DELETE FROM t WHERE a IN (SELECT b FROM u) RETURNING a",
        "CREATE TABLE IF NOT EXISTS main.t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL DEFAULT 'x' COLLATE nocase, g AS (v || 'x') STORED, FOREIGN KEY (v) REFERENCES u(w) ON DELETE CASCADE) WITHOUT ROWID, STRICT",
        "CREATE TEMP TABLE t2 AS SELECT 1; CREATE TABLE c (a INT GENERATED ALWAYS AS (1) VIRTUAL, CHECK (a > 0), UNIQUE (a))",
        "CREATE TRIGGER tr AFTER UPDATE OF a ON t FOR EACH ROW WHEN new.a > 0 BEGIN SELECT RAISE(ABORT, 'no'); DELETE FROM u; END",
        "CREATE UNIQUE INDEX i ON t(a DESC, b COLLATE binary) WHERE a > 0; CREATE VIEW v(a) AS SELECT 1; DROP VIEW IF EXISTS v",
        "CREATE VIRTUAL TABLE f USING fts5(a, b, tokenize = 'porter')",
        "ALTER TABLE t RENAME COLUMN a TO b; ALTER TABLE t ADD COLUMN c INT; ALTER TABLE t DROP COLUMN c; PRAGMA main.cache_size = -2000",
        "EXPLAIN QUERY PLAN SELECT 1; EXPLAIN SELECT 2",
        "BEGIN IMMEDIATE; SAVEPOINT s; RELEASE s; ROLLBACK TO s; COMMIT; ATTACH 'x.db' AS x; DETACH x; VACUUM; ANALYZE; REINDEX",
        "/* lead */ SELECT 1 -- trailing",
        # A keyword glued to a following non-word character is fine for SQLite, and here.
        "SELECT(1)FROM t WHERE(a)AND'b'",
        # An identifier that starts with a keyword is just an identifier; a hex literal ends at
        # its last hex digit (0x1Fg is 0x1F AS g), a decimal one may not touch a letter.
        "SELECT fromx FROM t AS selecty WHERE wherez = 1 AND NOTa",
        "SELECT 0x1Fg",
        # The restricted forms: a temporary table qualified with temp, a constant DEFAULT, a
        # frame bound that begins with a quoted "unbounded" or a longer word, and the smallest
        # 64-bit hex literal where no minus applies to it alone.
        'CREATE TEMP TABLE temp.x (a); CREATE TEMP VIEW "TEMP".v AS SELECT 1; CREATE TEMP TABLE [temp].y (a)',
        "CREATE TABLE t (a DEFAULT (abs(-1) + 2 || 'x'), b DEFAULT (CASE WHEN TRUE THEN x'00' END), c DEFAULT (1 IN (1, 2)), "
        "d DEFAULT (CAST(1 AS TEXT) COLLATE nocase), e DEFAULT (count(*)), f DEFAULT (false), g DEFAULT x)",
        'SELECT sum(x) OVER (ROWS BETWEEN "unbounded"(1) PRECEDING AND unboundedx FOLLOWING) FROM t',
        "SELECT 0x8000000000000000, 1 - 0x8000000000000000, -(+0x8000000000000000), 0x0000ffffffffffffffff",
    ],
)
def test_accepts_the_documented_language(grammar: Grammar, sql: str) -> None:
    assert sqlite_oracle.check_script(sql).label is not sqlite_oracle.Label.INVALID
    assert grammar.is_complete(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECTx",
        "SELECTa FROM t",
        "SELECT * FROMt",
        "SELECT 1 ORDER BYx",
        "SELECT 1 LIMIT 5OFFSET 2",
        "SELECT 1 LIMIT 5 OFFSET2",
        "SELECT 1.5e3x",
        "SELECT a FROM t WHERE a ISNOT NULL",
        "SELECT a FROM t WHERE a NOTNULLx",
        "SELECT count(DISTINCT a) OVER () FROM t",
        "SELECT 1 FROM a LEFT SEMI JOIN b ON 1",
        "SELECT 1 FROM a OUTER JOIN b ON 1",
        "SELECT cast(1), current_date(1)",
        "INSERTINTO t VALUES (1)",
        "SELECT (1--x)",
        "SELECT 1 AS from",
        "SELECT a like",
        "SELECT 1 ORDER BY 1 UNION SELECT 2",
        "SELECT 1e",
        "",
        "CREATE TEMP TABLE main.x (a)",
        "CREATE TEMP VIEW main.v AS SELECT 1",
        "CREATE TEMP TRIGGER temp.tr AFTER INSERT ON t BEGIN SELECT 1; END",
        "CREATE TABLE t (a DEFAULT (a))",
        "CREATE TABLE t (a DEFAULT (abs(b)))",
        'CREATE TABLE t (a DEFAULT ("quoted"))',
        "CREATE TABLE t (a DEFAULT ((SELECT 1)))",
        "CREATE TABLE t (a DEFAULT (?))",
        "CREATE TABLE t (a DEFAULT (1 IN u))",
        "CREATE TABLE t (a DEFAULT (count(1) FILTER (WHERE 1)))",
        "CREATE TABLE t (a DEFAULT (abs(1) OVER ()))",
        "SELECT sum(x) OVER (ROWS BETWEEN unbounded(1) PRECEDING AND CURRENT ROW) FROM t",
        "SELECT sum(x) OVER (ROWS unbounded + 1 PRECEDING) FROM t",
        "SELECT -0x8000000000000000",
        "SELECT - (0x08000000000000000)",
        "SELECT 0x10000000000000000",
        "SELECT 0x1234567890abcdefa",
    ],
)
def test_rejects_what_sqlite_rejects(grammar: Grammar, sql: str) -> None:
    assert sqlite_oracle.check_script(sql).label is sqlite_oracle.Label.INVALID
    assert not grammar.is_complete(sql)


def test_a_guard_word_is_a_dead_end_only_separators_may_follow(grammar: Grammar) -> None:
    # The guard leads nowhere, but the matcher only learns so when the next token starts: the
    # glued word and the separators after it are reported as a valid prefix. What may follow is
    # only separators (whitespace, and '-'/'/' that may open a comment), never a token: a guide can
    # recognise the dead end by that and back off to before the word.
    for prefix, word_start in [("SELECTa ", 0), ("SELECT 1 LIMIT 5OFFSET ", 15), ("SELECT 1 ORDER BYx\n", 15)]:
        checker = grammar.checker()
        assert checker.feed(prefix) == len(prefix)
        assert not checker.is_complete
        assert checker.allowed_bytes() <= SEPARATOR_BYTES
        assert checker.feed("x") == 0
        # Just before the glued word the same prefix is alive: a token may follow.
        alive = grammar.checker()
        alive.feed(prefix[:word_start])
        assert not alive.allowed_bytes() <= SEPARATOR_BYTES


def test_lark_reference_parser_splits_glued_words(grammar: Grammar) -> None:
    # Lark's Earley parser (dynamic lexer) tries every split, so it reads SELECTa as SELECT a: for
    # glued words the matcher, not Grammar.parse, is the reference of this grammar.
    tree = grammar.parse("SELECTa FROM t")
    assert isinstance(tree, lark.Tree)
    assert not grammar.is_complete("SELECTa FROM t")
    assert sqlite_oracle.check("SELECTa FROM t").label is sqlite_oracle.Label.INVALID


def test_keywords_are_literal_terminals_for_repairs(grammar: Grammar) -> None:
    # Repairs pick the nearest expected literal (ILIKE -> LIKE): keywords must be literals. The
    # guards show up as the private terminals _WORD and _NEVER, never as literals.
    checker = grammar.checker()
    checker.feed("SELECT a FROM t WHERE a ")
    expected = {t.name: t for t in checker.expected()}
    literals = {t.literal.lower() for t in expected.values() if t.literal is not None}
    assert {"like", "glob", "between", "in", "is", "not", "order", "limit"} <= literals
    assert {name for name, t in expected.items() if t.literal is None} <= {"_WORD", "_NEVER", "_NUMWORD"}


def _sample(corpus: list[CorpusStatement], label: str) -> list[CorpusStatement]:
    pool = [s for s in corpus if s.label == label]
    return random.Random(SEED).sample(pool, min(SAMPLE, len(pool)))


def test_recall_on_sqlite_valid_corpus(grammar: Grammar, corpus: list[CorpusStatement]) -> None:
    sample = _sample(corpus, "valid")
    accepted = sum(grammar.is_complete(s.sql) for s in sample)
    assert accepted / len(sample) >= 0.95


def test_recall_and_precision_on_the_whole_corpus(grammar: Grammar, corpus: list[CorpusStatement]) -> None:
    # Every labelled statement (about 42,000; 20 s): the figures of grammars/README.md.
    missed = [s.sql for s in corpus if s.label == "valid" and not grammar.is_complete(s.sql)]
    wrongly = [s.sql for s in corpus if s.label == "invalid" and grammar.is_complete(s.sql)]
    valid = sum(s.label == "valid" for s in corpus)
    assert valid > 15_000 and 1 - len(missed) / valid >= 0.95
    assert wrongly == []


_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[A-Za-z_][A-Za-z0-9_$]*|[0-9]+(?:\.[0-9]*)?|\S")


def mutations(sql: str, rng: random.Random, n: int) -> list[str]:
    """Token-level mutations of ``sql``: delete, duplicate, swap with the next, or glue to the next."""
    spans = [m.span() for m in _TOKEN.finditer(sql)]
    out = []
    for _ in range(n):
        if len(spans) < 2:
            break
        k = rng.randrange(len(spans))
        a, b = spans[k]
        kind = rng.choice(["delete", "duplicate", "swap", "glue"])
        if kind == "delete":
            out.append(sql[:a] + sql[b:])
        elif kind == "duplicate":
            out.append(sql[:b] + " " + sql[a:b] + sql[b:])
        elif k + 1 < len(spans):
            c, d = spans[k + 1]
            if kind == "swap":
                out.append(sql[:a] + sql[c:d] + sql[b:c] + sql[a:b] + sql[d:])
            else:
                out.append(sql[:b] + sql[c:])
    return out


def test_precision_on_mutations(grammar: Grammar, corpus: list[CorpusStatement]) -> None:
    rng = random.Random(SEED)
    base = [s.sql for s in _sample(corpus, "valid")[:150]]
    checked = 0
    for sql in base:
        for mutant in mutations(sql, rng, 3):
            if grammar.is_complete(mutant):
                checked += 1
                assert sqlite_oracle.check_script(mutant).label is not sqlite_oracle.Label.INVALID, mutant
    assert checked > 0


# Strings generated from the guard-free form (hypothesis cannot draw from a terminal that matches
# nothing); they may glue words, which the guarded grammar must then reject.
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=from_lark(lark.Lark(build(guards=False), parser="earley", lexer="dynamic")))
def test_precision_on_generated_strings(data: str) -> None:
    grammar = Grammar.builtin("sqlite")
    if grammar.is_complete(data):
        assert sqlite_oracle.check_script(data).label is not sqlite_oracle.Label.INVALID, data
