"""A batch job against a real API server (the local test server over HTTP): a 429 with
``Retry-After`` slows the whole job, and a provider that keeps failing is an error row."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import grammar_guide as gg
from grammar_guide._batch import RowResult
from tests.support.llm_server import Fault, LLMServer, fast_retry, get_server, make_draft

pytestmark = pytest.mark.model

ANSWER = '{"a": 1}'


@pytest.fixture(scope="module")
def server() -> LLMServer:
    return get_server()


def run(draft: Any, rows: int, concurrency: int) -> list[RowResult]:
    async def main() -> list[RowResult]:
        try:
            prompts = [f"Row {i}: answer in JSON." for i in range(rows)]
            return [r async for r in gg.guide_many(draft, "json", prompts, False, concurrency=concurrency)]
        finally:
            await draft.aclose()

    return asyncio.run(main())


def test_a_429_with_retry_after_pauses_every_row(server: LLMServer) -> None:
    wait = 1.0
    script = server.script([Fault("status", status=429, retry_after=wait)], answer=ANSWER)
    draft = make_draft("http-chat", server, script=script)
    started = time.monotonic()
    results = run(draft, rows=6, concurrency=2)
    assert [r.error for r in results] == [None] * 6 and all(r.result and r.result.text == ANSWER for r in results)
    records = sorted(server.records_for(script), key=lambda r: r.started)
    limited = next(r for r in records if r.status == 429)
    # Only the request already on its way beside the one that met the 429 may start before the
    # gate opens; every later request, of any row, waits for Retry-After.
    early = [r for r in records if r is not limited and r.started < limited.started + wait - 0.02]
    assert len(early) <= 1, [round(r.started - limited.started, 3) for r in records]
    assert len(records) >= 7  # six answers and the 429
    assert time.monotonic() - started >= wait


def test_a_provider_that_keeps_failing_is_an_error_row(server: LLMServer) -> None:
    script = server.script([Fault("status", status=500)] * 2, answer=ANSWER)
    draft = make_draft("http-chat", server, script=script, retry=fast_retry(max_attempts=2))
    (failed, ok) = sorted(run(draft, rows=2, concurrency=1), key=lambda r: r.error is None)
    assert failed.error is not None and failed.error.kind == "ServerError" and "HTTP 500" in failed.error.message
    assert isinstance(failed.exception, gg.ServerError)
    assert ok.error is None and ok.result is not None and ok.result.text == ANSWER
