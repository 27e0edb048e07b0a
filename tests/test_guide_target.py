"""The guide loop with the real target model (SmolLM2-135M-Instruct): repairs the draft's evidence
cannot decide, finishing when budgets run out, and local draft + target end to end."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3

import pytest

import grammar_guide as gg
from grammar_guide import Correction, Cut, GrammarViolation, GuideLimits

pytestmark = pytest.mark.model

SCHEMA_PROMPT = "Table users(id, name, age). Write one SQLite query: names of users older than 30, oldest first."


@pytest.fixture(scope="module")
def target():
    return gg.TargetModel.load()


def by_kind(result, cls, **fields):
    return [e for e in result.events if isinstance(e, cls) and all(getattr(e, k) == v for k, v in fields.items())]


def test_target_repairs_what_the_evidence_cannot_decide(small_sql, target):
    """PostgreSQL's ``~~`` (LIKE) has no near keyword and no small edit lets the draft's text
    parse on: the target chooses at that point, and the prefix-continuing draft then goes on from
    the corrected text."""
    intent = "SELECT name FROM users WHERE name ~~ 'A%' ORDER BY age DESC;"
    calls = []

    def draft(prompt, prefix):
        calls.append(prefix)
        if not prefix:
            return intent
        # After the repair, go on with the intended query: its value if the target wrote an
        # operator, then the ORDER BY.
        if prefix.rstrip().upper().endswith(("=", "<", ">", "LIKE")):
            return " 'A%' ORDER BY age DESC;"
        return " ORDER BY age DESC;"

    result = gg.guide(gg.FunctionDraft(draft, continues_prefix=True), small_sql, SCHEMA_PROMPT, target)
    assert small_sql.is_complete(result.text)
    assert result.text.startswith("SELECT name FROM users WHERE name ")
    assert result.text.endswith("ORDER BY age DESC;")
    (violation,) = by_kind(result, GrammarViolation)
    assert violation.rejected.startswith("~~")
    repairs = by_kind(result, Correction, source="target")
    assert len(repairs) == 1 and repairs[0].text.strip()
    assert repairs[0].alternatives and 0 < repairs[0].alternatives[0].probability <= 1
    assert result.stats.corrections == 1
    assert result.stats.target_tokens >= 1
    assert len(calls) == 2


def test_target_finishes_when_the_draft_budget_runs_out(small_sql, target):
    # The draft began nothing a close or its own last words taken back can end: the target writes.
    result = gg.guide(
        lambda prompt, prefix: "SELECT" if not prefix else "", small_sql, SCHEMA_PROMPT, target, max_draft_calls=2
    )
    assert small_sql.is_complete(result.text)
    assert result.text.startswith("SELECT ")
    finish = [c for c in by_kind(result, Correction) if c.reason.startswith("finish")]
    assert finish and finish[-1].source in ("target", "forced", "completion")
    assert result.stats.target_tokens > 0 and result.changes.invented
    assert result.stats.draft_calls == 2


def test_the_finish_takes_back_a_dangling_clause_before_the_target_invents_one(small_sql, target):
    # Issue 28: the finish invents no value the draft did not start.
    result = gg.guide(
        lambda prompt, prefix: "SELECT name, age FROM users WHERE" if not prefix else "",
        small_sql,
        SCHEMA_PROMPT,
        target,
        max_draft_calls=2,
    )
    assert result.text == "SELECT name, age FROM users"
    assert [c.text for c in by_kind(result, Cut) if c.reason == "unfinished"] == [" WHERE"]
    assert result.stats.target_tokens == 0
    assert result.changes.dropped == 1 and not result.changes.invented


def test_target_token_limit_too_small_is_closed_by_the_grammar(small_sql, target):
    """With a target the finish always completes: what its budget leaves open, the grammar's
    shortest completion closes (issue 18: before, ``GuideExhausted``)."""
    limits = GuideLimits(max_draft_calls=1, finish_tokens=1)
    result = gg.guide(lambda prompt: "SELECT name FROM", small_sql, SCHEMA_PROMPT, target, limits=limits)
    assert result.text.startswith("SELECT name FROM") and small_sql.is_complete(result.text)
    assert by_kind(result, Correction)[-1].source in ("completion", "target")


@pytest.mark.parametrize(
    ("grammar", "draft", "options"),
    [
        ("json", '{"x": "unterminated}', {}),
        ("json", "[1, 2, three, 4]", {}),
        ("sqlite", "", {}),
        ("json", '{"a": [1, 2,, 3], "b": tru "c"}', {"max_corrections": 0}),
    ],
)
def test_with_a_target_the_finish_always_completes(target, grammar, draft, options):
    result = gg.guide(lambda prompt: draft, grammar, "Any value.", target, **options)
    assert gg.Grammar.builtin(grammar).is_complete(result.text)
    # A budget reached (max_corrections=0) is closed but not complete, and says so (issue 25).
    budget_cuts = [c for c in by_kind(result, Cut) if c.reason == "budget"]
    assert result.complete is not bool(options) and bool(budget_cuts) is bool(options)
    reasons = [c.detail for c in by_kind(result, Correction)]
    assert not any("no target" in reason for reason in reasons)


def test_local_draft_and_target_write_valid_json(json_grammar, target):
    from grammar_guide.providers.transformers import TransformersDraft

    draft = TransformersDraft.from_target(target)
    prompt = "Here is a JSON object, with 3 keys, using only string values:\n\n```json\n"
    result = gg.guide(draft, json_grammar, prompt, target, lookahead=20, max_new_tokens=120)
    value = json.loads(result.text)
    assert isinstance(value, dict)
    assert result.stats.draft_calls >= 1
    assert result.stats.draft_tokens_out and result.stats.draft_tokens_out > 0


def test_concurrent_guided_runs_share_the_target_and_write_what_each_writes_alone(json_grammar, target):
    """Runs at once over one target: each call decodes with its own KV cache, their steps share
    forward passes, and every text is valid and the same as the run's alone (greedy)."""
    # Empty drafts: the target writes each answer whole, in calls long enough to overlap (a text
    # the draft began is finished a terminal at a time, in calls too short to share many passes).
    work = [(f"Describe a {thing} as a JSON object with three keys.", "") for thing in ("cat", "city", "book", "car")]
    limits = GuideLimits(max_draft_calls=1, finish_tokens=16)

    async def run(prompt: str, start: str) -> str:
        result = await gg.aguide(
            lambda p, prefix: start if not prefix else "", json_grammar, prompt, target, limits=limits
        )
        return result.text

    async def together() -> list[str]:
        return list(await asyncio.gather(*(run(p, s) for p, s in work)))

    alone = [asyncio.run(run(p, s)) for p, s in work]
    passes, steps = target.batcher.passes, target.batcher.steps
    texts = asyncio.run(together())
    assert texts == alone
    assert all(json_grammar.is_complete(t) for t in texts)
    assert target.batcher.steps - steps > 2 * (target.batcher.passes - passes)


def test_concurrent_finishes_of_begun_texts_write_what_each_writes_alone(target):
    """Finishing a text the draft began goes a terminal at a time (``_write_to_close``): at once,
    the runs' short calls interleave, and each still writes what it writes alone (greedy). (SQL:
    a begun JSON text is now closed by the grammar's rewrites and marks alone, issue 25.)"""
    grammar = gg.Grammar.builtin("sqlite")
    # (Begun texts whose own words taken back end nowhere: the target must write.)
    work = [("Names of all users.", "SELECT "), ("Users older than 30.", "SELECT DISTINCT ")]
    limits = GuideLimits(max_draft_calls=1, finish_tokens=16)

    async def run(prompt: str, start: str) -> str:
        result = await gg.aguide(lambda p, prefix: start if not prefix else "", grammar, prompt, target, limits=limits)
        return result.text

    async def together() -> list[str]:
        return list(await asyncio.gather(*(run(p, s) for p, s in work)))

    alone = [asyncio.run(run(p, s)) for p, s in work]
    assert asyncio.run(together()) == alone
    assert all(grammar.is_complete(t) and t.startswith(s) for t, (_, s) in zip(alone, work, strict=True))


def test_concurrent_local_drafts_sharing_the_targets_cache_write_valid_json(json_grammar, target):
    """Drafts made ``from_target`` share its first KV cache with its calls: the cache's lock lets
    one user at a time decode with it (the runs take turns on it), and nothing deadlocks."""
    from grammar_guide.providers.transformers import TransformersDraft

    prompts = [
        "Here is a JSON object, with 3 keys, using only string values:\n\n```json\n",
        "Here is a JSON object about a car, with 3 keys, using only string values:\n\n```json\n",
    ]

    async def together() -> list[str]:
        results = await asyncio.gather(
            *(
                gg.aguide(
                    TransformersDraft.from_target(target), json_grammar, p, target, lookahead=20, max_new_tokens=120
                )
                for p in prompts
            )
        )
        return [r.text for r in results]

    for text in asyncio.run(together()):
        assert isinstance(json.loads(text), dict)


def test_restating_chat_draft_with_target_completes(json_grammar, target):
    """A chat draft that repeats the same broken answer on every call: after each repair its
    restatement is aligned with the corrected text, so the text grows instead of looping."""
    calls = []

    def chat(prompt, prefix):
        calls.append(prefix)
        return '{"name": Ada Lovelace, "born": 1815}'

    result = gg.guide(chat, json_grammar, "Describe Ada Lovelace as JSON.", target, max_draft_calls=6)
    value = json.loads(result.text)
    assert value["born"] == 1815
    assert "Ada Lovelace" in value["name"]
    assert result.stats.draft_calls <= 3


def test_the_target_breaks_a_tie_between_equally_good_edits(small_sql, target):
    """A missing operator: every operator lets the draft's text parse at the same cost, so the
    evidence cannot choose; the target's likelihood of the candidates (one batched pass) does.
    Without a target the first in the grammar's order is taken."""
    draft = "SELECT name FROM users WHERE age 30 ORDER BY age DESC"
    result = gg.guide(lambda prompt: draft, "sqlite", SCHEMA_PROMPT, target=target)
    assert result.text == "SELECT name FROM users WHERE age > 30 ORDER BY age DESC"
    (correction,) = by_kind(result, Correction, source="repair")
    assert correction.detail.startswith("inserted '>' (the target's likeliest of ")
    assert result.stats.target_tokens == 0  # it scored; it wrote nothing
    without = gg.guide(lambda prompt: draft, "sqlite", SCHEMA_PROMPT, target=False)
    assert without.text != result.text and without.text.endswith("30 ORDER BY age DESC")


def test_a_cut_answer_is_finished_with_no_more_than_a_close_needs(target):
    """An answer cut short mid-subquery (as real ones are, at a length limit): the target writes a
    terminal at a time and stops at the first point a few closing marks end the text. It used
    to write on until its budget ran out, repeating the draft's pattern or itself (``adm_adm``).
    (Cut where taking back its last words ends it nowhere: with ``… = 'SME') - (`` the finish
    now takes back `` - (`` and the target writes nothing.)"""
    draft = "SELECT\n  (SELECT AVG("
    taken_back = gg.guide(lambda prompt: draft + "Consumption) FROM t) - (\n", "sqlite", SCHEMA_PROMPT, target)
    assert taken_back.text == "SELECT\n  (SELECT AVG(Consumption) FROM t)" and taken_back.stats.target_tokens == 0
    result = gg.guide(lambda prompt: draft, "sqlite", SCHEMA_PROMPT, target)
    assert result.complete and result.text.startswith(draft)
    written = result.text[len(draft) :]
    assert len(written) <= 48, written
    close = by_kind(result, Correction)[-1]
    assert close.source == "completion" and set(close.text) <= set(")] \n"), close


def test_the_target_does_not_repeat_itself_without_end():
    from grammar_guide.local.token_guards import repeats

    table = [b"", b"BODY", b"_", b"0", b" ", b"1"]
    assert not repeats([1, 2, 1, 2, 1, 2, 1, 2], 3, table)
    assert repeats([1, 2, 1, 2, 1, 2, 1, 2, 1], 2, table)  # BODY_ a fifth time
    assert not repeats([5, 3, 3, 3, 3, 3], 3, table)  # 1000000: six zeros
    assert repeats([5, 3, 3, 3, 3, 3, 3], 3, table)
    assert not repeats([4] * 20, 4, table)  # white space (indentation) may repeat
    assert repeats([1, 2, 3] * 4 + [1, 2], 3, table)  # a unit of three tokens a fifth time


def test_a_text_whose_construct_is_still_open_is_completed_from_its_end(target):
    """``CASE a | b | c | d |`` needs ``WHEN … THEN … END``. The terminal search ranked an operator
    then a number cheapest (its own rule's cost) and wrote ``0 & 0 & …`` to its depth, at every
    one of 8 points the last resort took the text back to (50 s, ``| d |`` and more dropped).
    Ranked by the chart, it writes the CASE's rest from the text's end, in the draft's capitals,
    never glued to the word before it, and the result says it is not the model's answer."""
    draft = "SELECT CASE a | b | c | d |"
    result = gg.guide(lambda prompt: draft, "sqlite", SCHEMA_PROMPT, target, limits=GuideLimits(finish_tokens=1))
    assert result.complete and gg.Grammar.builtin("sqlite").is_complete(result.text)
    assert result.text.startswith(draft) and not result.faithful
    assert re.fullmatch(r" ?\w+ WHEN \w+ THEN \w+ END", result.text[len(draft) :])
    assert not [e for e in result.events if isinstance(e, Cut) and e.reason == "unrepaired"]
    assert not re.search(r"CASE\w", result.text)


def test_a_hundred_open_calls_are_closed_as_deep_as_sqlite_takes_them():
    """A real answer (Llama-3-8B asked for MySQL) nests SUBSTRING_INDEX( 130 times and stops: the
    finish closes every bracket, a close that invents nothing (beyond its search's reach before:
    GuideExhausted with the target loaded). SQLite's parser stack takes about 30 nested calls, so
    the text is then taken back to where closing brackets end it and SQLite takes it: a ``limit``
    cut that names SQLite's message, and the result says it is not the draft's whole answer."""
    grammar = gg.Grammar.builtin("sqlite")
    text = "SELECT " + "SUBSTRING_INDEX(" * 130
    result = gg.guide(lambda prompt: text, grammar, SCHEMA_PROMPT, target=False, max_new_tokens=4096)
    kept = result.text.rstrip(")")
    assert text.startswith(kept) and result.text == kept + ")" * kept.count("(")
    assert grammar.is_complete(result.text) and grammar.engine_limit is not None
    assert grammar.engine_limit(result.text) is None  # SQLite prepares it
    assert grammar.engine_limit(text + ")" * 130) == "parser stack overflow"
    assert 20 <= kept.count("(") < 130
    (cut,) = [e for e in result.events if isinstance(e, Cut) and e.reason == "limit"]
    assert "parser stack overflow" in cut.detail and not result.faithful


def test_a_loop_of_subqueries_that_wants_a_value_at_every_point_is_kept_as_deep_as_sqlite_takes_it(target):
    """A model looping ``(SELECT (SELECT …`` until its budget ran out (held-out 3 has one of 256):
    with the target, the finish completes it (``0`` and a close for each), and SQLite's parser
    stack overflows. No point of it is ended by closing brackets alone, so it was left so (a
    result SQLite refuses). With a target a value may be invented: the text is taken back to the
    deepest nesting SQLite takes, and completed there; the value is counted as invented."""
    grammar = gg.Grammar.builtin("sqlite")
    text = "SELECT " + "(SELECT " * 40
    result = gg.guide(lambda prompt: text, grammar, SCHEMA_PROMPT, target, limits=GuideLimits(finish_tokens=1))
    assert result.complete and grammar.is_complete(result.text)
    assert grammar.engine_limit(result.text) is None and grammar.engine_limit(text + "0" + ")" * 40) is not None
    kept = result.text.rstrip(")")
    assert re.fullmatch(r"SELECT(?: \(SELECT)+ 0", kept) and 8 <= kept.count("(") < 40, result.text
    assert result.text == kept + ")" * kept.count("(")
    (cut,) = by_kind(result, Cut, reason="limit")
    assert "parser stack overflow" in cut.detail
    assert result.changes.invented >= 1 and not result.faithful
    with sqlite3.connect(":memory:") as db:
        assert db.execute(result.text).fetchall() == [(0,)]


# A calendar language in the style of SMCalFlow's Lispress (written for this test): every call's
# head is one literal with its bracket, zero-argument calls are bracketed, and most calls need
# arguments, so a few closing marks rarely end a text and the grammar's completion is long.
CALENDAR = r"""
start: call
call: "(Yield" event ")"
event: "(CreateEvent" constraint ")"
constraint: "(&" constraint constraint ")"
    | "(Event.subject_? (?=" ESCAPED_STRING "))"
    | "(Event.start_? (?=" datetime "))"
    | "(Event.attendees_?" person ")"
datetime: "(DateAtTimeWithDefaults" date time ")"
date: DAY | "(NextDOW" date ")" | "(Date.dayOfWeek" date ")"
time: "(NumberPM" NUMBER ")" | "(Noon)" | "(Morning)"
person: "(FindManager" person ")" | "(toRecipient (CurrentUser))"
DAY: "(Monday)" | "(Tuesday)" | "(Wednesday)" | "(Thursday)" | "(Friday)" | "(Today)" | "(Tomorrow)"
%import common.ESCAPED_STRING
%import common.NUMBER
%import common.WS
%ignore WS
"""


@pytest.mark.parametrize(
    "draft",
    [
        # A zero-argument call written bare: no edit the draft's text supports fixes it.
        "(Yield (CreateEvent (& (Event.start_? (?= (DateAtTimeWithDefaults (NextDOW Thursday) (Noon)))) "
        "(Event.attendees_? (FindManager (toRecipient (CurrentUser)))))))",
        # The answer cut short inside a name: the completion needs arguments, not only closers.
        '(Yield (CreateEvent (& (Event.subject_? (?= "lunch")) (Event.start_? (?= (DateAtTimeWithDefaults (NextDOW ',
    ],
)
def test_with_a_target_a_lispress_answer_is_finished_not_exhausted(target, draft):
    """Issue 28 item 6: with the target loaded, a grammar that allows a completion gets one (Grammar
    Prompting's SMCalFlow programs ended in ``GuideExhausted``: the target's steps stopped inside
    ``(Monday)``, counting the white space before it as a terminal, and the completion search never
    reached the end of a call that needs arguments)."""
    import lark

    grammar = gg.Grammar.from_lark(CALENDAR, name="calendar")
    result = gg.guide(lambda prompt, prefix: draft if not prefix else "", grammar, "Lunch with my boss", target)
    lark.Lark(CALENDAR).parse(result.text)  # lark, the grammar's own parser, accepts the output
    assert result.text.startswith("(Yield (CreateEvent (& (Event.")


def test_a_word_the_target_stops_inside_is_ended_as_the_grammar_forces(target):
    """dev 6's ``CASE WHEN … = 'Merged')`` (the draft left out ``THEN … END``): the target's first
    token re-wrote the string's close, which counted as the one terminal it was to write, and its
    second was `` TH``. It stopped there, inside the word, and the rest of the answer was left to
    go on from ``TH``. Only ``THEN`` begins so: its ``EN`` is written, as forced text."""
    grammar = gg.Grammar.builtin("sqlite")
    # A SUM's CASE: a COUNT's is rewritten now, COUNT(*) FILTER (WHERE …), with no target.
    answer = "SELECT CAST(SUM(CASE WHEN DOC = '54' AND StatusType = 'Merged') AS REAL) FROM schools"

    def draft(prompt, prefix):
        return "" if prefix else answer

    result = gg.guide(gg.FunctionDraft(draft, continues_prefix=True), grammar, "q", target)
    assert result.complete and grammar.is_complete(result.text)
    repair = [c for c in by_kind(result, Correction, reason="violation") if c.source != "healed"]
    written = "".join(c.text for c in repair)
    assert re.search(r"\bTHEN$", written), written
    assert [c.text for c in repair if c.source == "forced"] == ["EN"]


def test_forced_letters_end_a_keyword_in_its_case_and_choose_nothing():
    from grammar_guide._target_steps import forced_letters

    grammar = gg.Grammar.builtin("sqlite")
    for text, letters in [
        ("SELECT CASE WHEN a = 1 TH", "EN"),
        ("select case when a = 1 th", "en"),
        ("SELECT a FR", ""),
    ]:
        checker = grammar.checker()
        assert checker.feed(text) == len(text)
        assert forced_letters(checker) == letters and checker.text == text
