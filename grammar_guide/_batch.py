"""``guide_many``: guide many prompts at once, each result yielded as its row finishes.

At most ``concurrency`` rows are in flight. Every row's draft calls wait at one ``RateGate``,
which a rate limit (a 429 with ``Retry-After``) closes for the whole job. A row that fails is a
``RowResult`` with its ``error``, and the job goes on. Closing the iterator (or cancelling the
task that reads it, Ctrl-C) cancels the rows in flight: they yield nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ._draft import Draft, as_draft
from ._errors import GuideExhausted, ProviderError
from ._grammar import Grammar
from ._guide import aguide
from ._rate_gate import RateGate
from ._trace import GuideResult

if TYPE_CHECKING:
    from .local.target import TargetModel

__all__ = ["BatchRow", "RowError", "RowResult", "guide_many"]

RowId = str | int


@dataclass(frozen=True)
class BatchRow:
    """One prompt of a batch. ``id`` names it in the results (and keys resuming a job);
    ``line`` is the input line it came from (1-based), when it came from a file.

    ``problem`` says why an input line is not a row (malformed JSON, no ``prompt``, a duplicate
    ``id``): such a row is not guided, and its result is an error of kind ``"InputError"``."""

    id: RowId | None
    prompt: str
    line: int | None = None
    problem: str | None = None


@dataclass(frozen=True)
class RowError:
    """Why a row failed: ``kind`` is the exception's class name (``"RateLimitError"``,
    ``"GuideExhausted"``, ``"InputError"`` ...), ``message`` its text."""

    kind: str
    message: str


@dataclass(frozen=True)
class RowResult:
    """What one row came to. ``result`` is the guided result; on an error, the partial result
    the error carried (``GuideExhausted``, ``ProviderError``), or ``None``. ``exception`` is the
    error itself (``None`` for an input problem). ``seconds`` is the row's wall time, waits at
    the rate gate included."""

    row: BatchRow
    result: GuideResult | None
    error: RowError | None
    seconds: float
    exception: BaseException | None = None

    @property
    def valid(self) -> bool:
        """The row ended in a complete text, valid under the grammar."""
        return self.error is None and self.result is not None and self.result.complete


def as_row(item: str | BatchRow | Mapping[str, Any], index: int) -> BatchRow:
    """A ``BatchRow`` from a prompt (its ``id`` is ``index``), a row, or a mapping with
    ``prompt`` and an optional ``id``."""
    if isinstance(item, BatchRow):
        return item
    if isinstance(item, str):
        return BatchRow(index, item)
    prompt = item.get("prompt")
    if not isinstance(prompt, str):
        raise TypeError(f"row {index}: 'prompt' must be a string, not {type(prompt).__name__}")
    row_id = item.get("id", index)
    if not isinstance(row_id, (str, int)) or isinstance(row_id, bool):
        raise TypeError(f"row {index}: 'id' must be a string or an integer, not {type(row_id).__name__}")
    return BatchRow(row_id, prompt)


async def guide_many(
    draft: Draft | Callable[..., Any],
    grammar: Grammar | str,
    rows: Iterable[str | BatchRow | Mapping[str, Any]],
    target: TargetModel | Literal[False] | None = None,
    *,
    concurrency: int = 4,
    gate: RateGate | None = None,
    **options: Any,
) -> AsyncGenerator[RowResult, None]:
    """Guide every row's prompt with ``draft`` under ``grammar``; yield each ``RowResult`` as its
    row finishes (completion order, not input order).

    ``rows`` are prompts (their ids are their positions, from 0), ``BatchRow``s, or mappings
    with ``prompt`` and an optional ``id``; they are read lazily, as rows start. ``target`` is
    shared by every row (``None`` loads the default model once, ``False`` means none). At most
    ``concurrency`` rows run at once. ``gate`` is the ``RateGate`` all rows wait at (a new one by
    default). ``options`` go to ``aguide`` for every row (``lookahead``, ``max_corrections`` ...).

    Errors of a row (a provider that failed, budgets that ran out, a draft function that raised)
    become its ``RowResult.error``; nothing a row does stops the others.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    grammar = Grammar.builtin(grammar) if isinstance(grammar, str) else grammar
    the_draft = as_draft(draft)
    if target is None:
        from .local.target import TargetModel

        target = await asyncio.to_thread(TargetModel.load)
    gate = gate or RateGate()
    finished: asyncio.Queue[RowResult] = asyncio.Queue()
    todo = _numbered(rows)

    async def worker() -> None:
        for row in todo:  # one shared iterator: each worker takes the next row
            finished.put_nowait(await _run_row(the_draft, grammar, row, target, options))

    with gate.entered():  # the workers' tasks copy this context: their providers find the gate
        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    getting: asyncio.Future[RowResult] | None = None
    try:
        while True:
            _raise_a_failure(workers)
            if finished.empty() and all(w.done() for w in workers):
                return
            getting = asyncio.ensure_future(finished.get())
            running = [w for w in workers if not w.done()]
            await asyncio.wait([getting, *running], return_when=asyncio.FIRST_COMPLETED)
            if getting.done():
                yield getting.result()
            else:
                getting.cancel()
    finally:
        if getting is not None:
            getting.cancel()
        for w in workers:
            w.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*workers, return_exceptions=True)


def _raise_a_failure(workers: list[asyncio.Task[None]]) -> None:
    """Raise what a worker raised: a bug of ours (a row's own errors are caught in ``_run_row``)."""
    for w in workers:
        if w.done() and not w.cancelled() and (exc := w.exception()) is not None:
            raise exc


def _numbered(rows: Iterable[str | BatchRow | Mapping[str, Any]]) -> Iterator[BatchRow]:
    for index, item in enumerate(rows):
        yield as_row(item, index)


async def _run_row(
    draft: Draft,
    grammar: Grammar,
    row: BatchRow,
    target: TargetModel | Literal[False] | None,
    options: Mapping[str, Any],
) -> RowResult:
    started = time.monotonic()
    if row.problem is not None:
        return RowResult(row, None, RowError("InputError", row.problem), 0.0)
    try:
        result = await aguide(draft, grammar, row.prompt, target, **options)
    except (GuideExhausted, ProviderError) as exc:
        partial = exc.result if isinstance(exc.result, GuideResult) else None
        return RowResult(row, partial, _error_of(exc), time.monotonic() - started, exc)
    except Exception as exc:  # a draft function's own failure is the row's, not the job's
        return RowResult(row, None, _error_of(exc), time.monotonic() - started, exc)
    return RowResult(row, result, None, time.monotonic() - started)


def _error_of(exc: BaseException) -> RowError:
    return RowError(type(exc).__name__, str(exc) or type(exc).__name__)
