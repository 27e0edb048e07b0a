"""``guide_many`` and the batch job over files (``_batch``, ``_batch_input``, ``_batch_output``,
``_batch_job``), without the command line; ``test_cli_batch`` runs the command itself."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import grammar_guide as gg
from grammar_guide._batch import BatchRow, RowResult
from grammar_guide._batch_input import read_rows
from grammar_guide._batch_job import JobCounts, config_digest, run_job
from grammar_guide._batch_output import ResultLog

JSON = gg.Grammar.builtin("json")
SETTINGS: dict[str, Any] = {"draft": "test", "target": False, "options": {}}


def collect(*args: Any, **kwargs: Any) -> list[RowResult]:
    async def main() -> list[RowResult]:
        return [r async for r in gg.guide_many(*args, **kwargs)]

    return asyncio.run(main())


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def read_out(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def answer(prompt: str) -> str:
    """A draft that answers every prompt with a small JSON object, after a short wait."""
    await asyncio.sleep(0.01)
    if "fail" in prompt:
        raise RuntimeError(f"the draft failed on {prompt.strip()!r}")
    return '{"q": "ok"}'


# -- guide_many ------------------------------------------------------------------------------


def test_concurrency_bound_is_honoured() -> None:
    in_flight, most = 0, 0

    async def draft(prompt: str) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return "[1]"

    results = collect(draft, JSON, [f"p{i}" for i in range(12)], False, concurrency=3)
    assert len(results) == 12 and all(r.valid for r in results)
    assert most == 3


def test_results_come_in_completion_order_with_their_ids() -> None:
    async def draft(prompt: str) -> str:
        await asyncio.sleep(0.3 if prompt.startswith("slow") else 0.01)
        return "[1]"

    rows = ["slow", {"id": "b", "prompt": "quick"}, BatchRow("c", "quick")]
    results = collect(draft, JSON, rows, False, concurrency=3)
    assert [r.row.id for r in results][-1] == 0
    assert {r.row.id for r in results} == {0, "b", "c"}


def test_errors_are_rows_and_the_job_goes_on() -> None:
    results = collect(answer, JSON, ["a", "fail here", "b", "c"], False, concurrency=2)
    by_id = {r.row.id: r for r in results}
    assert len(results) == 4
    failed = by_id[1]
    assert not failed.valid and failed.result is None
    assert failed.error == gg.RowError("RuntimeError", "the draft failed on 'fail here'")
    assert isinstance(failed.exception, RuntimeError)
    assert all(by_id[i].valid and by_id[i].result is not None for i in (0, 2, 3))


def test_a_budget_that_runs_out_is_a_row_that_is_not_valid_with_the_closed_text() -> None:
    # The budget is reached with a dangling key: it is dropped and the text closed, not completed.
    results = collect(lambda p: '{"a": ', JSON, ["x"], False, max_draft_calls=1)
    (only,) = results
    assert only.error is None and not only.valid
    assert only.result is not None and only.result.text == "{}" and only.result.complete is False
    assert only.result.faithful is False and only.result.changes.dropped == 1


def test_a_text_nothing_but_invention_could_finish_is_an_error_row_with_the_partial_result() -> None:
    results = collect(lambda p: "So the number is nine", JSON, ["x"], False)
    (only,) = results
    assert only.error is not None and only.error.kind == "GuideExhausted"
    assert only.result is not None and not only.valid


# -- input -----------------------------------------------------------------------------------


def test_input_lines_that_are_not_rows_are_rows_with_a_problem(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "in.jsonl",
        [{"prompt": "a"}, "{not json", "", {"id": "x", "prompt": "b"}, [1, 2], {"id": "x", "prompt": "c"},
         {"id": 1.5, "prompt": "d"}, {"id": "y"}],
    )  # fmt: skip
    rows = list(read_rows(path))
    assert [(r.id, r.line) for r in rows] == [(1, 1), (None, 2), ("x", 4), (None, 5), (None, 6), (None, 7), ("y", 8)]
    problems = {r.line: r.problem for r in rows if r.problem}
    assert problems[2] is not None and problems[2].startswith("line 2: not JSON")
    assert problems[5] == "line 5: not a JSON object but list"
    assert problems[6] == 'line 6: id "x" is already taken by an earlier line'
    assert problems[7] == "line 7: 'id' must be a string or an integer, not 1.5"
    assert problems[8] == "line 8: no 'prompt' string"


# -- output and resume -----------------------------------------------------------------------


def job(tmp_path: Path, draft: Any = answer, **kwargs: Any) -> JobCounts:
    kwargs.setdefault("settings", SETTINGS)
    return asyncio.run(run_job(tmp_path / "in.jsonl", tmp_path / "out.jsonl", draft, JSON, False, **kwargs))


def test_a_job_writes_one_line_a_row_and_errors_are_rows(tmp_path: Path) -> None:
    write_lines(tmp_path / "in.jsonl", [{"prompt": "a"}, "oops", {"id": "k", "prompt": "fail"}])
    counts = job(tmp_path, concurrency=2)
    assert (counts.done, counts.valid, counts.errors) == (3, 1, 2)
    rows = {json.dumps(r["id"]) + str(r["line"]): r for r in read_out(tmp_path / "out.jsonl")}
    ok = rows["11"]
    assert ok["text"] == '{"q": "ok"}' and ok["valid"] is True and ok["error"] is None and ok["faithful"] is True
    assert ok["stats"]["draft_calls"] >= 1 and ok["stats"]["corrections"] == 0 and ok["stats"]["billed_tokens"] is None
    assert ok["config"] == config_digest(JSON, SETTINGS)
    assert rows["null2"]["error"]["kind"] == "InputError" and "line 2" in rows["null2"]["error"]["message"]
    assert rows['"k"3']["error"] == {"kind": "RuntimeError", "message": "the draft failed on 'fail'"}


def test_resume_skips_rows_done_and_retry_errors_redoes_the_failed(tmp_path: Path) -> None:
    write_lines(tmp_path / "in.jsonl", [{"prompt": f"p{i}"} for i in range(5)] + [{"id": "f", "prompt": "fail"}])
    job(tmp_path)
    calls: list[str] = []

    async def counting(prompt: str) -> str:
        calls.append(prompt)
        return await answer(prompt)

    again = job(tmp_path, counting)
    assert (again.skipped, again.done, calls) == (6, 0, [])
    retried = job(tmp_path, counting, retry_errors=True)
    assert (retried.skipped, retried.done) == (5, 1) and [c.strip() for c in calls] == ["fail"]
    ids = [r["id"] for r in read_out(tmp_path / "out.jsonl")]
    assert sorted(map(str, ids)) == sorted(["1", "2", "3", "4", "5", "f", "f"])  # the last line of f is its result


def test_a_torn_last_line_is_cut_away_and_its_row_redone(tmp_path: Path) -> None:
    write_lines(tmp_path / "in.jsonl", [{"prompt": "a"}, {"prompt": "b"}])
    job(tmp_path)
    out = tmp_path / "out.jsonl"
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])  # killed in the middle of the second write
    counts = job(tmp_path)
    assert (counts.skipped, counts.done) == (1, 1)
    rows = read_out(out)
    assert sorted(r["id"] for r in rows) == [1, 2]


def test_another_configuration_is_refused(tmp_path: Path) -> None:
    write_lines(tmp_path / "in.jsonl", [{"prompt": "a"}])
    job(tmp_path)
    before = (tmp_path / "out.jsonl").read_bytes()
    with pytest.raises(gg.BatchOutputError, match="another configuration") as caught:
        job(tmp_path, settings={**SETTINGS, "options": {"lookahead": 8}})
    assert caught.value.line == 1
    with pytest.raises(gg.BatchOutputError, match="another configuration"):
        asyncio.run(run_job(tmp_path / "in.jsonl", tmp_path / "out.jsonl", answer, gg.Grammar.builtin("sqlite"),
                            False, settings=SETTINGS))  # fmt: skip
    assert (tmp_path / "out.jsonl").read_bytes() == before


def test_a_file_that_is_not_a_job_output_is_refused(tmp_path: Path) -> None:
    write_lines(tmp_path / "out.jsonl", ["some notes", '{"id": 1, "config": "x"}'])
    with pytest.raises(gg.BatchOutputError, match="line 1 is not a row"):
        ResultLog.open(tmp_path / "out.jsonl", "x")


def test_cancelling_a_job_writes_only_whole_rows(tmp_path: Path) -> None:
    write_lines(tmp_path / "in.jsonl", [{"prompt": f"p{i}"} for i in range(40)])

    async def slow(prompt: str) -> str:
        await asyncio.sleep(0.05)
        return "[1]"

    async def main() -> None:
        task = asyncio.create_task(
            run_job(tmp_path / "in.jsonl", tmp_path / "out.jsonl", slow, JSON, False, settings=SETTINGS, concurrency=4)
        )
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    data = (tmp_path / "out.jsonl").read_bytes()
    assert data.endswith(b"\n")
    first = [r["id"] for r in read_out(tmp_path / "out.jsonl")]
    assert 0 < len(first) < 40
    job(tmp_path, slow, concurrency=8)
    ids = [r["id"] for r in read_out(tmp_path / "out.jsonl")]
    assert sorted(ids) == list(range(1, 41))


# -- the rate gate ---------------------------------------------------------------------------


def test_a_rate_gate_holds_every_waiter_until_it_opens() -> None:
    async def main() -> list[float]:
        gate = gg.RateGate()
        start = time.monotonic()
        gate.hold(0.3)
        gate.hold(0.1)  # a shorter hold does not open it sooner

        async def waiter() -> float:
            await gate.wait()
            return time.monotonic() - start

        return list(await asyncio.gather(*(waiter() for _ in range(3))))

    assert all(t >= 0.29 for t in asyncio.run(main()))


def test_a_second_job_on_the_same_output_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    first = ResultLog.open(tmp_path / "out.jsonl", "x")
    try:
        with pytest.raises(gg.BatchOutputError, match="being written by another job"):
            ResultLog.open(tmp_path / "out.jsonl", "x")
    finally:
        first.close()
    ResultLog.open(tmp_path / "out.jsonl", "x").close()


def test_the_configuration_digest_is_the_same_in_every_process() -> None:
    # The compiled form of this Lark grammar differs with the hash seed; the digest must not.
    code = (
        "from grammar_guide import Grammar\nfrom grammar_guide._batch_job import config_digest\n"
        "from tests.conftest import SMALL_SQL\nprint(config_digest(Grammar.from_lark(SMALL_SQL), {'draft': 'x'}))"
    )
    root = Path(__file__).resolve().parent.parent
    digests = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
            env={**os.environ, "PYTHONHASHSEED": str(seed)}, timeout=120,
        ).stdout.strip()
        for seed in (1, 2, 3)
    }  # fmt: skip
    assert len(digests) == 1


def test_rows_done_before_are_counted_before_the_job_starts(tmp_path: Path) -> None:
    prompts = ["fail 1", "a", "b", "fail 2", "c", "d"]
    write_lines(tmp_path / "in.jsonl", [{"prompt": p} for p in prompts])
    job(tmp_path)
    seen: list[tuple[int, int]] = []
    job(tmp_path, retry_errors=True, concurrency=1, on_row=lambda c, _: seen.append((c.skipped, c.done)))
    assert seen == [(4, 1), (4, 2)]  # the ETA knows from the first row that one row is left


def test_cancelling_the_reader_cancels_the_rows_in_flight_and_leaves_no_task() -> None:
    started, finished = [], []

    async def draft(prompt: str) -> str:
        started.append(prompt)
        await asyncio.sleep(0.01 if prompt == "p0" else 5)
        finished.append(prompt)
        return "[1]"

    async def main() -> list[Any]:
        got: list[Any] = []

        async def read() -> None:
            async for result in gg.guide_many(draft, JSON, [f"p{i}" for i in range(8)], False, concurrency=3):
                got.append(result.row.id)

        reader = asyncio.create_task(read())
        await asyncio.sleep(0.2)
        reader.cancel()  # Ctrl-C: the reader waits for the next row
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await asyncio.sleep(0.05)
        return [got, len(asyncio.all_tasks())]

    assert asyncio.run(main()) == [[0], 1]  # only main itself is left
    assert finished == ["p0"] and len(started) == 4


def test_a_draft_function_that_raises_a_rate_limit_pauses_every_row() -> None:
    starts: dict[str, float] = {}
    limited_at: list[float] = []

    async def draft(prompt: str) -> str:
        starts.setdefault(prompt, time.monotonic())
        if prompt == "p0":
            limited_at.append(time.monotonic())
            error = gg.RateLimitError("slow down", provider="mine", status_code=429)
            error.retry_after = 0.5
            raise error
        await asyncio.sleep(0.01)
        return "[1]"

    results = collect(draft, JSON, [f"p{i}" for i in range(6)], False, concurrency=2)
    assert [r.error.kind for r in results if r.error] == ["RateLimitError"]
    later = [t - limited_at[0] for p, t in starts.items() if p not in ("p0", "p1")]
    assert len(later) == 4 and min(later) >= 0.49
