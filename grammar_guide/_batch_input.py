"""A batch job's input: one JSON object a line, with ``prompt`` and an optional ``id``.

A line that is not such an object (malformed JSON, no ``prompt``, an ``id`` that is not a string
or an integer, an ``id`` an earlier line took) is still a row: one with a ``problem``, reported
as an error row with its line number. Blank lines are not rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ._batch import BatchRow

__all__ = ["count_rows", "read_rows", "row_key"]


def row_key(row_id: str | int | None, line: int | None) -> str:
    """What keys a row in a job's output: its id as JSON (``3`` and ``"3"`` differ), or its line
    when it has no id (an input line that could not be read)."""
    return json.dumps(row_id) if row_id is not None else f"line {line}"


def read_rows(path: Path) -> Iterator[BatchRow]:
    """The rows of a JSONL file, in order; ids default to the line number (from 1)."""
    seen: set[str] = set()
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            row = _row_of(raw, number)
            key = row_key(row.id, number)
            if row.id is not None and key in seen:
                row = BatchRow(None, row.prompt, number, f"line {number}: id {key} is already taken by an earlier line")
            seen.add(key)
            yield row


def count_rows(path: Path) -> int:
    """How many rows ``read_rows`` will give (the non-blank lines)."""
    with path.open("rb") as lines:
        return sum(1 for raw in lines if raw.strip())


def _row_of(raw: bytes, number: int) -> BatchRow:
    def problem(why: str, row_id: str | int | None = None) -> BatchRow:
        return BatchRow(row_id, "", number, f"line {number}: {why}")

    try:
        data = json.loads(raw)
    except ValueError as exc:  # a UnicodeDecodeError is a ValueError too
        return problem(f"not JSON ({exc})")
    if not isinstance(data, dict):
        return problem(f"not a JSON object but {type(data).__name__}")
    row_id = data.get("id", number)
    if not isinstance(row_id, (str, int)) or isinstance(row_id, bool):
        return problem(f"'id' must be a string or an integer, not {json.dumps(row_id)}")
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        return problem("no 'prompt' string" if prompt is None else "'prompt' is not a string", row_id)
    return BatchRow(row_id, prompt, number)
