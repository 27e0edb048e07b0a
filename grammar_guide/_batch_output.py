"""A batch job's output: one JSON line a row, appended, each written whole or not at all.

A row's line is encoded first and written with one ``write`` and a flush, so a job killed at any
moment leaves whole lines and at most one torn last line (a line without its newline), which
``ResultLog.open`` cuts away. Flushed lines survive the process being killed; ``fsync`` (at most
once every ``sync_seconds``, and at the end) makes them survive the machine going down too.

Every line carries the job's ``config`` digest: a log written under another configuration is
refused, so rows made with another grammar, draft, target or options never mix. A job holds an
exclusive lock on its output file (``flock``, where the system has it): a second job on the same
file is refused rather than doing the same rows again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ._batch import RowResult
from ._batch_input import row_key
from ._errors import BatchOutputError

__all__ = ["ResultLog", "read_records", "row_record"]


def row_record(outcome: RowResult, config: str) -> dict[str, Any]:
    """The JSON object of one row's line. ``faithful`` (``GuideResult.faithful``) is ``None``
    where the row has no valid text."""
    result, error = outcome.result, outcome.error
    stats = result.stats if result is not None else None
    billed = None
    if stats is not None and (stats.draft_tokens_in is not None or stats.draft_tokens_out is not None):
        billed = (stats.draft_tokens_in or 0) + (stats.draft_tokens_out or 0)
    return {
        "id": outcome.row.id,
        "line": outcome.row.line,
        "text": result.text if result is not None else None,
        "valid": outcome.valid,
        "faithful": result.faithful if result is not None and outcome.valid else None,
        "error": {"kind": error.kind, "message": error.message} if error is not None else None,
        "stats": {
            "draft_calls": stats.draft_calls if stats is not None else 0,
            "corrections": stats.corrections if stats is not None else 0,
            "billed_tokens": billed,
            "seconds": round(outcome.seconds, 3),
        },
        "config": config,
    }


class ResultLog:
    """The output file of a job, open for appending. ``done`` maps each row key already written
    (see ``row_key``) to whether its last line was an error."""

    def __init__(self, path: Path, stream: IO[bytes], done: dict[str, bool], sync_seconds: float) -> None:
        self.path = path
        self.done = done
        self.sync_seconds = sync_seconds
        self._stream = stream
        self._synced = time.monotonic()

    @classmethod
    def open(cls, path: Path, config: str, *, sync_seconds: float = 1.0) -> ResultLog:
        """Open ``path`` for a job with ``config`` (a new file, or one to resume): a torn last
        line is cut away; a line of another configuration, or one that is not a row, raises
        ``BatchOutputError``."""
        done: dict[str, bool] = {}
        stream = path.open("ab")
        try:
            _lock(stream, path)
            remedy = "Give another output file, or the same options as the run that wrote it."
            for record in _records(_cut_torn_tail(path), path, config, remedy):
                done[row_key(record.get("id"), record.get("line"))] = record.get("error") is not None
        except BaseException:
            stream.close()
            raise
        return cls(path, stream, done, sync_seconds)

    def append(self, record: dict[str, Any]) -> None:
        """Write one row's line whole: one write, then a flush (and an fsync when due)."""
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        self._stream.write(data)
        self._stream.flush()
        self.done[row_key(record["id"], record["line"])] = record["error"] is not None
        if time.monotonic() - self._synced >= self.sync_seconds:
            self.sync()

    def sync(self) -> None:
        os.fsync(self._stream.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        if not self._stream.closed:
            self.sync()
            self._stream.close()


def read_records(folder: Path, config: str) -> dict[str, dict[str, Any]]:
    """The rows written to the ``*.jsonl`` files of ``folder`` (several writers' logs, as the Ray
    stage's actors leave them), by row key: the last line of each. Whole lines only (a file
    another writer is still appending to is read, never cut); a line of another configuration
    raises ``BatchOutputError``, as ``ResultLog.open`` does."""
    records: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        data = path.read_bytes()
        for record in _records(data[: _whole_end(data)], path, config, "Give another folder."):
            records[row_key(record.get("id"), record.get("line"))] = record
    return records


def _records(whole: bytes, path: Path, config: str, remedy: str) -> Iterator[dict[str, Any]]:
    """The rows of ``whole`` (whole lines of ``path``); a line that is not a row, or one written
    under another configuration than ``config``, raises ``BatchOutputError`` (``remedy`` says
    what to do)."""
    for number, line in enumerate(whole.splitlines(), 1):
        record = _record_of(line, path, number)
        if record.get("config") != config:
            raise BatchOutputError(
                f"{path} was written under another configuration (line {number}: config "
                f"{record.get('config')!r}, this job's is {config!r}): the grammar, draft, "
                f"target or options differ. {remedy}",
                path=str(path),
                line=number,
            )
        yield record


def _whole_end(data: bytes) -> int:
    """Where the whole lines of ``data`` end (after its last newline)."""
    return data.rfind(b"\n") + 1


def _lock(stream: IO[bytes], path: Path) -> None:
    """Hold an exclusive lock on the open output file until it is closed (no-op without fcntl)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise BatchOutputError(
            f"{path} is being written by another job: wait for it to end, or give another output file",
            path=str(path),
        ) from None


def _cut_torn_tail(path: Path) -> bytes:
    """The file's whole lines; a last line without its newline (a write the job was killed in)
    is truncated away."""
    data = path.read_bytes()
    end = _whole_end(data)
    if end < len(data):
        with path.open("r+b") as stream:
            stream.truncate(end)
            os.fsync(stream.fileno())
    return data[:end]


def _record_of(line: bytes, path: Path, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if not isinstance(record, dict) or "config" not in record or "id" not in record:
        raise BatchOutputError(
            f"{path} line {number} is not a row of a batch job's output: give another output file",
            path=str(path),
            line=number,
        )
    return record
