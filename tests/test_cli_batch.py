"""``grammar-guide batch``, run as a real subprocess: killed and resumed, interrupted, refused."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.test_cli import COMMAND, TESTS, cli, env, run_with_tty_stderr

ROWS = 40


def inputs(tmp_path: Path, rows: int = ROWS, extra: tuple[str, ...] = ()) -> Path:
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"q{i}", "prompt": f"question {i}"}) for i in range(rows)]
    path.write_text("\n".join([*lines, *extra]) + "\n", encoding="utf-8")
    return path


def batch_args(tmp_path: Path, *more: str) -> list[str]:
    return [
        "batch", str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), "-g", "json",
        "--draft", "python:cli_drafts:slow_json", "--no-target", "--concurrency", "4", *more,
    ]  # fmt: skip


def out_rows(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_and_stop(tmp_path: Path, sig: signal.Signals, after_rows: int = 8) -> tuple[int, str]:
    """Start the job and send ``sig`` once ``after_rows`` lines are written: its exit status
    and standard error. The job gets SIGINT's default handling, as at a terminal: a test run
    started in the background of a shell script ignores SIGINT, and its children inherit that."""
    process = subprocess.Popen(
        [*COMMAND, *batch_args(tmp_path)],
        env=env(),
        cwd=TESTS.parent,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=_default_sigint,
    )
    out = tmp_path / "out.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= after_rows:
            break
        time.sleep(0.01)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=60)
    return process.returncode, stderr.decode("utf-8")


def test_a_killed_job_resumes_and_does_no_row_twice(tmp_path: Path) -> None:
    inputs(tmp_path)
    status, _ = start_and_stop(tmp_path, signal.SIGKILL)
    assert status == -signal.SIGKILL
    first = out_rows(tmp_path)
    assert 8 <= len(first) < ROWS
    done = cli(*batch_args(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"{len(first)} done before, skipped" in done.stderr
    ids = [row["id"] for row in out_rows(tmp_path)]
    assert sorted(ids) == sorted(f"q{i}" for i in range(ROWS))  # each once, none missing
    assert all(row["valid"] and row["text"] == '{"answer": "ok"}' for row in out_rows(tmp_path))


def test_ctrl_c_stops_cleanly_and_the_job_resumes(tmp_path: Path) -> None:
    inputs(tmp_path)
    status, stderr = start_and_stop(tmp_path, signal.SIGINT)
    assert status == 130, stderr
    assert "interrupted" in stderr and "run the same command again to resume" in stderr
    assert "Traceback" not in stderr
    data = (tmp_path / "out.jsonl").read_bytes()
    assert data.endswith(b"\n")
    assert 8 <= len(out_rows(tmp_path)) < ROWS
    assert cli(*batch_args(tmp_path)).returncode == 0
    assert sorted(row["id"] for row in out_rows(tmp_path)) == sorted(f"q{i}" for i in range(ROWS))


def test_errors_are_rows_and_the_summary_counts_them(tmp_path: Path) -> None:
    inputs(tmp_path, rows=3, extra=('{"id": "bad", "prompt": "please fail"}', "{oops"))
    done = cli(*batch_args(tmp_path, "--progress", "always"))
    assert done.returncode == 0, done.stderr
    rows = {row["line"]: row for row in out_rows(tmp_path)}
    assert rows[4]["error"] == {"kind": "RuntimeError", "message": "the draft failed"} and rows[4]["id"] == "bad"
    assert rows[5]["error"]["kind"] == "InputError" and rows[5]["error"]["message"].startswith("line 5: not JSON")
    assert "rows/s" in done.stderr and "ETA" in done.stderr and "billed tokens" in done.stderr
    assert "5 rows this run" in done.stderr and "valid 60.0%" in done.stderr and "2 errors" in done.stderr
    # The draft's answers are kept as written: faithful; an error row has no text to judge.
    assert rows[1]["faithful"] is True and rows[4]["faithful"] is None
    assert "faithful 60.0%" in done.stderr
    again = cli(*batch_args(tmp_path, "--retry-errors"))
    assert "2 rows this run (3 done before, skipped)" in again.stderr


def test_an_output_of_another_configuration_is_refused(tmp_path: Path) -> None:
    inputs(tmp_path, rows=2)
    assert cli(*batch_args(tmp_path)).returncode == 0
    before = (tmp_path / "out.jsonl").read_bytes()
    refused = cli(*batch_args(tmp_path, "--max-corrections", "3"))
    assert refused.returncode == 2
    assert "was written under another configuration" in refused.stderr
    assert (tmp_path / "out.jsonl").read_bytes() == before


def test_progress_shows_on_a_terminal_and_not_on_a_pipe(tmp_path: Path) -> None:
    inputs(tmp_path, rows=6)
    status, _, terminal = run_with_tty_stderr(batch_args(tmp_path))
    assert status == 0, terminal
    assert "\r\x1b[K6/6 rows" in terminal and "rows/s" in terminal and "ETA" in terminal
    (tmp_path / "out.jsonl").unlink()
    piped = cli(*batch_args(tmp_path))
    assert piped.returncode == 0 and "rows/s" not in piped.stderr and "\x1b" not in piped.stderr
    assert "valid 100.0%" in piped.stderr  # the summary still comes
