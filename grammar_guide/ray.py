"""A Ray Data stage: guided generation over a dataset, spread over a cluster's actors.

    import ray
    from grammar_guide.ray import GuideStage

    ds = ray.data.read_json("questions.jsonl")          # rows with "id" and "prompt"
    out = ds.map_batches(
        GuideStage,
        fn_constructor_kwargs=dict(grammar="sqlite", draft="openai:gpt-4o-mini", target=False,
                                   output="s3-mounted/or/shared/dir"),
        compute=ray.data.ActorPoolStrategy(size=8, max_concurrent_calls_per_actor=4),
        num_gpus=1,                                      # where the target should run on a GPU
        batch_size=32,
    )

Each actor builds its stage once: the grammar (compiled once), the draft (a spec as the CLI's
``--draft`` takes it, or a ``Draft``/function) and the target (``False`` for none, ``None`` for
the default model, a model name or path to load, or a ``TargetModel``). A batch's rows run
concurrently against the API (``guide_many``, ``concurrency`` at once) and come back in the
batch's order with the batch job's columns: ``id``, ``text``, ``valid``, ``faithful``,
``status`` (``guided``, ``error`` or ``resumed``), ``error_kind``, ``error_message``,
``draft_calls``, ``corrections``, ``billed_tokens``, ``seconds``. A row's failure is its columns,
never an exception.

With ``output`` (a directory every actor can write), each actor appends each finished row to its
own JSONL file there (``part-<id>.jsonl``), written whole or not at all as ``grammar-guide batch``
writes. A stage built again on the same directory under the same configuration (grammar, draft,
target, options) reads those files and returns the rows already done from them (``resumed``)
instead of guiding them again; ``retry_errors`` guides again the rows that ended in an error.

This module needs no Ray to be used or tested: the stage is a plain class with an async generator
``__call__`` (what Ray Data runs on an actor's event loop). Install Ray with the ``ray`` extra.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._batch import BatchRow, RowResult, guide_many
from ._batch_input import row_key
from ._batch_job import config_digest
from ._batch_output import ResultLog, read_records, row_record
from ._draft import Draft
from ._grammar import Grammar
from .cli import load_grammar, make_draft

if TYPE_CHECKING:
    from .local.target import TargetModel

__all__ = ["COLUMNS", "GuideStage", "run_stage"]

#: The columns of a stage's output batch, in order.
COLUMNS = (
    "id",
    "text",
    "valid",
    "faithful",
    "status",
    "error_kind",
    "error_message",
    "draft_calls",
    "corrections",
    "billed_tokens",
    "seconds",
)


class GuideStage:
    """``ds.map_batches(GuideStage, fn_constructor_kwargs=...)``: see the module's docstring."""

    def __init__(
        self,
        grammar: str | Grammar,
        draft: str | Draft | Callable[..., Any],
        target: TargetModel | str | Literal[False] | None = False,
        *,
        concurrency: int = 8,
        output: str | Path | None = None,
        retry_errors: bool = False,
        **options: Any,
    ) -> None:
        self.grammar = grammar if isinstance(grammar, Grammar) else load_grammar(grammar)
        self.target = _load_target(target)
        self.draft = make_draft(draft, target=self.target or None) if isinstance(draft, str) else draft
        self.concurrency = concurrency
        self.retry_errors = retry_errors
        self.options = options
        settings = {"draft": _described(draft), "target": _described(target), **options}
        self.config = config_digest(self.grammar, settings)
        self.output = Path(output) if output is not None else None
        self.log: ResultLog | None = None
        self.done: dict[str, dict[str, Any]] = {}
        if self.output is not None:
            self.output.mkdir(parents=True, exist_ok=True)
            self.done = read_records(self.output, self.config)
            self.log = ResultLog.open(self.output / f"part-{uuid.uuid4().hex}.jsonl", self.config)

    async def __call__(self, batch: Mapping[str, Any]) -> AsyncIterator[dict[str, list[Any]]]:
        """Guide the batch's rows (columns ``id`` and ``prompt``); yield the output batch."""
        rows = [BatchRow(_plain(i), str(p)) for i, p in zip(batch["id"], batch["prompt"], strict=True)]
        records: dict[str, dict[str, Any]] = {}
        todo = []
        for row in rows:
            key = row_key(row.id, None)
            before = self.done.get(key)
            if before is not None and not (self.retry_errors and before.get("error") is not None):
                records[key] = {**before, "status": "resumed"}
            else:
                todo.append(row)
        async for outcome in guide_many(
            self.draft, self.grammar, todo, self.target, concurrency=self.concurrency, **self.options
        ):
            records[row_key(outcome.row.id, None)] = self._record(outcome)
        yield _columns([records[row_key(row.id, None)] for row in rows])

    def _record(self, outcome: RowResult) -> dict[str, Any]:
        record = row_record(outcome, self.config)
        record["line"] = None
        if self.log is not None:
            self.log.append(record)
            self.done[row_key(record["id"], None)] = record
        return {**record, "status": "error" if record["error"] is not None else "guided"}

    def close(self) -> None:
        """Close the stage's output file (also done when the actor's process ends)."""
        if self.log is not None:
            self.log.close()

    def __del__(self) -> None:
        self.close()


def _load_target(target: TargetModel | str | Literal[False] | None) -> TargetModel | Literal[False]:
    if target is False:
        return False
    if target is None or isinstance(target, str):
        from .local.target import TargetModel

        return TargetModel.load(target) if target else TargetModel.load()
    return target


def _described(part: object) -> str:
    """What names a draft or a target in the configuration: a spec as it is, a function by its
    qualified name, an object by its ``name`` or its class (never by its address)."""
    if isinstance(part, str) or part is None or isinstance(part, bool):
        return repr(part)
    qualname = getattr(part, "__qualname__", None)
    if qualname is not None:
        return f"{getattr(part, '__module__', '')}.{qualname}"
    return str(getattr(part, "name", type(part).__qualname__))


def _plain(value: Any) -> str | int:
    """A row id as JSON has it (Ray gives numpy scalars)."""
    plain = value.item() if hasattr(value, "item") else value
    return plain if isinstance(plain, (str, int)) and not isinstance(plain, bool) else str(plain)


def _columns(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    def column(name: str) -> list[Any]:
        if name in ("error_kind", "error_message"):
            return [(r["error"] or {}).get(name.removeprefix("error_")) for r in records]
        if name in ("draft_calls", "corrections", "billed_tokens", "seconds"):
            return [r["stats"][name] for r in records]
        return [r.get(name) for r in records]

    return {name: column(name) for name in COLUMNS}


def run_stage(stage: GuideStage, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Run ``stage`` on one batch without Ray (a script, a test): its output batch."""

    async def first() -> dict[str, list[Any]]:
        async for out in stage(batch):
            return out
        raise RuntimeError("the stage yielded no batch")

    return asyncio.run(first())
