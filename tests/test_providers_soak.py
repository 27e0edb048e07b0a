"""A bounded soak: many guided generations through the real SDKs and httpx to the local server,
with random faults injected, and what the user gets in each case.

Each run draws a provider stack, a canned answer (the server streams it instantly; one run in 20
is repaired by the real target model instead of target=False) and up to three scripted faults
(5xx, 429, a dropped connection, a stream closed without its end, malformed JSON, an empty
answer), or a refused connection. The outcome must be either a complete valid text equal to what
the same run gives without faults, or a typed ``GrammarGuideError`` carrying a partial result that
is incomplete and a valid prefix. No thread or socket may outlive the runs.

"Equal to the run without faults" holds where the faults were all retried away by the provider
(statuses, a drop or a close before any text). Where a stream broke after some text, the calls
that follow see other text, so the answer may differ, but a broken stream is never the last word:
a run whose last request broke after some text must end in an error, not a result.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import grammar_guide as gg
from grammar_guide import GrammarGuideError, GuideExhausted, ProviderError
from tests.support.llm_server import KINDS, Fault, fast_retry, get_server, make_draft

pytestmark = pytest.mark.model

RUNS = 200
SEED = 15
PROMPT = "Write a SQL query over the users table. Answer with the query only.\n-- answer:\n"
ANSWERS = (
    "SELECT name FROM users WHERE age > 30",
    "SELECT id, name FROM users ORDER BY name DESC LIMIT 5;",
    "SELECT COUNT(*) FROM orders WHERE total >= 100;",
    "Sure! Here is the query:\n\n```sql\nSELECT name FROM users WHERE name LIKE 'A%'\n```\n\n"
    "It lists the users whose names start with A.",
    "SELECT name FORM users WHERE age > 30",  # misspelt keywords the loop repairs
    "SELECT name FROM users WHERE age > 30 LIMT 5",
)
LIMITS = gg.GuideLimits(lookahead=8, max_draft_calls=12, max_new_tokens=200)


def random_fault(rng: random.Random) -> Fault:
    kind = rng.choice(["status", "status", "drop", "truncate", "truncate", "malformed", "empty", "ok"])
    if kind == "status":
        status = rng.choice([500, 502, 503, 429])
        return Fault("status", status=status, retry_after=0.01 if status == 429 else None)
    return Fault(kind, after_tokens=rng.randint(0, 6))


def open_sockets() -> int:
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).startswith("socket:")
    return count


def settled(measure, baseline: int, seconds: float = 10.0) -> int:
    """``measure()`` once it is back at ``baseline`` (connections close asynchronously), or its last value."""
    deadline = time.monotonic() + seconds
    value = measure()
    while value > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
        value = measure()
    return value


BREAKS = ("drop", "truncate", "malformed")


def judge(outcome: object, reference: str, grammar: gg.Grammar, records: list, refused: bool) -> str | None:
    """What is wrong with one run's outcome, or ``None``."""
    broke = [r for r in records if r.fault is not None and r.fault.kind in BREAKS and r.fault_applied and r.text]
    if isinstance(outcome, gg.GuideResult):
        # Never invalid, never a truncated stream taken as the answer.
        if not (outcome.complete and grammar.is_complete(outcome.text)):
            return f"an invalid or incomplete result {outcome.text!r}"
        if records and records[-1] in broke:
            return f"the last stream broke after {records[-1].text!r}, yet the result {outcome.text!r} came back"
        # Retried away by the provider: the run must give what it gives without faults. (An empty
        # answer is the model saying it is done: the text may end there.)
        transparent = not broke and not any(r.fault is not None and r.fault.kind == "empty" for r in records)
        if transparent and outcome.text != reference:
            return f"{outcome.text!r} instead of {reference!r}"
        return None
    if not isinstance(outcome, (ProviderError, GuideExhausted)):
        return f"an untyped failure {outcome!r}"
    partial = outcome.result
    if not isinstance(partial, gg.GuideResult) or partial.complete:
        return f"{type(outcome).__name__} without an incomplete partial result"
    if grammar.valid_prefix(partial.text) != len(partial.text):
        return f"an invalid partial text {partial.text!r}"
    if refused and not isinstance(outcome, gg.ProviderConnectionError):
        return f"{type(outcome).__name__} ({outcome}) for a refused connection"
    return None


@pytest.fixture(scope="module")
def server():
    return get_server()


@pytest.fixture(scope="module")
def target():
    return gg.TargetModel.load()


def test_soak_random_faults(server, small_sql, target):
    rng = random.Random(SEED)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    refused_port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connections are refused

    def run(kind: str, answer: str, steps: list[Fault], use_target: bool, refused: bool = False):
        script = server.script(steps, answer=answer)
        draft = make_draft(kind, server, script=script, retry=fast_retry(3))
        if refused:
            draft = make_draft("http-chat", server, retry=fast_retry(3))
            draft.base_url = draft._url = f"http://127.0.0.1:{refused_port}/v1/chat/completions"
        try:
            return gg.guide(draft, small_sql, PROMPT, target if use_target else False, limits=LIMITS), script
        except GrammarGuideError as error:
            return error, script

    # What each (stack, answer, target) gives without faults: a faulty run that succeeds must match.
    references: dict[tuple[str, str, bool], str] = {}
    threads = threading.active_count()
    sockets = open_sockets()
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    started = time.monotonic()
    for i in range(RUNS):
        kind = rng.choice(KINDS)
        answer = rng.choice(ANSWERS)
        use_target = i % 20 == 7
        refused = rng.random() < 0.04
        steps = [random_fault(rng) for _ in range(rng.randint(0, 3))]
        key = (kind, answer, use_target)
        if key not in references:
            clean, _ = run(kind, answer, [], use_target)
            assert isinstance(clean, gg.GuideResult), f"{key}: {clean!r}"
            references[key] = clean.text
        outcome, script = run(kind, answer, steps, use_target, refused)
        what = f"run {i}: {kind}, {answer[:30]!r}, faults {[(f.kind, f.status, f.after_tokens) for f in steps]}"
        if refused:
            what += ", refused"
        problem = judge(outcome, references[key], small_sql, server.records_for(script), refused)
        if problem:
            problems.append(f"{what}: {problem}")
        outcomes["complete" if isinstance(outcome, gg.GuideResult) else type(outcome).__name__] += 1
    seconds = time.monotonic() - started
    print(f"\n{RUNS} runs in {seconds:.1f} s: {dict(outcomes)}")
    assert not problems, "\n".join(problems)
    assert outcomes["complete"] >= RUNS // 2  # most runs survive their faults
    assert settled(threading.active_count, threads) <= threads
    assert settled(open_sockets, sockets) <= sockets
