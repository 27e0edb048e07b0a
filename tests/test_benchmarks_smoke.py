"""The benchmark scripts import and their cheap parts work: the simulated SQL draft, our loop with
target=False and the validate-and-retry baseline. No timings are asserted (benchmarks are scripts)."""

from __future__ import annotations

import importlib

from benchmarks.simulated_draft import MistakeRates, SimulatedSQLDraft, TokenCounter
from benchmarks.sql_api_cost import PROMPT, load_sample, run_ours, run_retry, same_query, score
from grammar_guide import Grammar

NEVER = MistakeRates(0, 0, 0, 0, 0, 0, 0, 0)


def test_simulated_draft_and_baselines_on_real_queries():
    for name in (
        "benchmarks.sql_api_cost",
        "benchmarks.json_keys",
        "benchmarks.baseline_env",
        "benchmarks.native_grammar_cost",
        "benchmarks.concurrent_bench",
    ):
        assert callable(
            getattr(importlib.import_module(name), "main", None) or importlib.import_module(name).ensure_venv
        )
    counter = TokenCounter()  # chars/4: no model file needed

    # Always writing ILIKE for LIKE: our loop repairs the slip from the draft's own text;
    # validate-and-retry never gets a valid answer in 3 attempts.
    intended = "SELECT name FROM users WHERE name LIKE 'A%' ORDER BY age"
    always = MistakeRates(
        dialect=1.0,
        misspelt_keyword=0,
        trailing_comma=0,
        extra_paren=0,
        prose_before=0,
        code_fence=0,
        prose_after=0,
        early_stop=0,
    )
    draft = SimulatedSQLDraft(intended, seed=1, counter=counter, rates=always)
    assert draft.complete("p", "", 256) == intended.replace("LIKE", "ILIKE")
    # A continuation after a repair picks up the intended query where the text left it.
    assert draft.complete("p", "SELECT name FROM users WHERE name LIKE", 256) == " 'A%' ORDER BY age"

    (ours,) = run_ours([intended], counter, always, target=False, lookahead=256, seed=1)
    grammar = Grammar.builtin("sqlite")
    checker = grammar.checker()
    assert checker.feed(ours["text"]) == len(ours["text"])  # never invalid text, even when exhausted
    first = ours["calls"][0]
    # After the first invalid byte, read on as far as asking again would bill (the prompt and
    # the accepted text): the rest of this short answer came whole, and the repair went through
    # it in the same call, giving the intended query.
    assert first.streamed == intended.replace("LIKE", "ILIKE")
    assert same_query(ours["text"], intended) and ours["draft_calls"] == 1
    assert first.tokens_out == len(counter.split(first.streamed)) == len(counter.split(first.planned))
    assert ours["tokens_in"] == sum(
        counter.count(PROMPT.format(request=0)) + counter.count(c.prefix) for c in ours["calls"]
    )

    (retry,) = run_retry([intended], counter, always, lookahead=256, seed=1)
    assert retry["draft_calls"] == 3 and retry["error"] is not None
    summary = score([ours, retry], [intended, intended], counter)
    assert retry["valid"] is False
    assert summary["valid"] == ours["valid"] and summary["tokens_out"] == ours["tokens_out"] + retry["tokens_out"]

    # Two real corpus queries: a draft that makes no mistakes is taken as is, in one call each.
    queries = load_sample(2)
    assert len(queries) == 2
    rows = run_ours(queries, counter, NEVER, target=False, lookahead=512)
    for row, query in zip(rows, queries, strict=True):
        assert grammar.is_complete(row["text"])
        assert same_query(row["text"], query) and row["draft_calls"] == 1
        assert row["tokens_in"] == counter.count(PROMPT.format(request=rows.index(row)))
    retried = run_retry(queries, counter, NEVER, lookahead=512)
    assert [r["draft_calls"] for r in retried] == [1, 1]
    assert score(retried, queries, counter)["exact"] == 2


def test_violation_bench_repairs_its_one_comma():
    from benchmarks.violation_bench import records, run_once, with_extra_comma

    grammar = Grammar.builtin("json")
    clean = records(1_000)
    bad = with_extra_comma(clean)
    assert len(bad) == len(clean) + 1 and ",," in bad and grammar.is_complete(clean)
    assert run_once(grammar, clean, clean)["corrections"] == 0
    broken = run_once(grammar, bad, clean)  # asserts the result is the clean text
    assert broken["corrections"] == 1 and broken["draft_calls"] <= 2


def test_sql_completion_cuts_and_completes_a_query(tmp_path):
    # Its own data is a clone of Spider's evaluation repository: here a file of the same shape.
    from benchmarks.sql_completion import complete, cuts, gold_queries

    (tmp_path / "database").mkdir()
    (tmp_path / "database" / "dev_gold.sql").write_text(
        "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END FROM t\tdb\nSELECT count(*) FROM singer\tconcert_singer\n"
    )
    queries = gold_queries(tmp_path)
    assert queries == ["SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END FROM t", "SELECT count(*) FROM singer"]
    grammar = Grammar.builtin("sqlite")
    prefixes = cuts(queries * 20, 40, 0, grammar)
    assert prefixes and all(any(q.startswith(p) for q in queries) for p in prefixes)
    for prefix in prefixes[:3]:
        row = complete(grammar, prefix, True)
        assert row["found"] and row["sqlite_takes"]
    before = complete(grammar, min(prefixes, key=len), False)  # the ranking before, on the easiest cut
    assert before["found"] and before["sqlite_takes"]
