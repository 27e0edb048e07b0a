"""A batch job over files: rows from a JSONL file, guided by ``guide_many``, each result appended
to a ``ResultLog``; what the command ``grammar-guide batch`` runs.

Running the same job again resumes it: rows already in the output under the same configuration
are skipped (``retry_errors`` redoes those that ended in an error, appending a new line: the
last line of an id is its result). Rows in flight when the job is stopped are not written.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._batch import BatchRow, RowResult, guide_many
from ._batch_input import count_rows, read_rows, row_key
from ._batch_output import ResultLog, row_record
from ._draft import Draft
from ._grammar import Grammar
from ._rate_gate import RateGate

if TYPE_CHECKING:
    from .local.target import TargetModel

__all__ = ["JobCounts", "config_digest", "run_job"]


def config_digest(grammar: Grammar, settings: Mapping[str, Any]) -> str:
    """A short digest of what a row's result depends on: the grammar and ``settings`` (the draft,
    the target, the loop's options), as JSON.

    The grammar counts by its Lark text (with its lexer and rewrites) when it has one: the compiled
    form of some Lark grammars differs from process to process (set order), which would refuse a
    resume of the very same job. Other grammars count by their compiled form. Files a Lark grammar
    ``%import``s do not count.
    """
    described = {
        "grammar": grammar.lark_source if grammar.lark_source is not None else grammar.llguidance_grammar,
        "lexer": grammar.lexer,
        "rewrites": repr(grammar.rewrites),
        "settings": settings,
    }
    text = json.dumps(described, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class JobCounts:
    """A job's progress: ``total`` rows in the input, ``skipped`` (done by an earlier run),
    ``done`` by this run (``valid`` of them, ``faithful`` of those, ``errors``), their corrections and billed tokens."""

    total: int
    skipped: int = 0
    done: int = 0
    valid: int = 0
    faithful: int = 0
    errors: int = 0
    corrections: int = 0
    billed_tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def rows_per_second(self) -> float:
        return self.done / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds until the rows left are done at this run's rate (``None`` before a row is)."""
        left = self.total - self.skipped - self.done
        rate = self.rows_per_second
        return left / rate if rate > 0 else None

    def add(self, outcome: RowResult) -> None:
        self.done += 1
        self.valid += outcome.valid
        self.faithful += bool(outcome.valid and outcome.result is not None and outcome.result.faithful)
        self.errors += outcome.error is not None
        stats = outcome.result.stats if outcome.result is not None else None
        if stats is not None:
            self.corrections += stats.corrections
            self.billed_tokens += (stats.draft_tokens_in or 0) + (stats.draft_tokens_out or 0)


async def run_job(
    in_path: Path,
    out_path: Path,
    draft: Draft | Callable[..., Any],
    grammar: Grammar,
    target: TargetModel | Literal[False] | None,
    *,
    settings: Mapping[str, Any],
    concurrency: int = 4,
    retry_errors: bool = False,
    options: Mapping[str, Any] | None = None,
    on_row: Callable[[JobCounts, RowResult], None] | None = None,
    gate: RateGate | None = None,
) -> JobCounts:
    """Guide every row of ``in_path`` not yet in ``out_path`` and append its line there.

    ``settings`` describe the draft, target and options for the configuration digest (with the
    grammar); ``options`` go to ``aguide``. ``on_row`` is called after each row's line is
    written. Raises ``BatchOutputError`` when ``out_path`` was written under another
    configuration.
    """
    config = config_digest(grammar, settings)
    log = ResultLog.open(out_path, config)
    try:
        counts = JobCounts(count_rows(in_path))
        # Counted before the job starts, for the ETA (the input is read twice: it is only text).
        counts.skipped = counts.total - sum(1 for _ in _rows_to_do(in_path, log.done, retry_errors))
        rows = _rows_to_do(in_path, log.done, retry_errors)
        results = guide_many(draft, grammar, rows, target, concurrency=concurrency, gate=gate, **dict(options or {}))
        try:
            async for outcome in results:
                log.append(row_record(outcome, config))
                counts.add(outcome)
                if on_row is not None:
                    on_row(counts, outcome)
        finally:
            await results.aclose()
        return counts
    finally:
        log.close()


def _rows_to_do(path: Path, done: Mapping[str, bool], retry_errors: bool) -> Iterator[BatchRow]:
    """The rows of ``path`` not in ``done`` (and, with ``retry_errors``, those that failed)."""
    for row in read_rows(path):
        failed = done.get(row_key(row.id, row.line))
        if failed is None or (failed and retry_errors):
            yield row
