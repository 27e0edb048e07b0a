"""A pytest plugin: a test whose requests made the local LLM server raise fails with that
exception and its traceback, not with the dropped connection or HTTP 500 its client saw, far from
the cause. ``tests/conftest.py`` registers it; ``-p tests.support.server_failures`` does elsewhere."""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest


def running_server() -> Any:
    """The test session's LLM server, if one has started. A session that never imported the
    server (the core tests of ``make floors``, without uvicorn) has none."""
    module = sys.modules.get("tests.support.llm_server")
    return module.running_server() if module is not None else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    server = running_server()
    mark = len(server.failures) if server is not None else 0
    try:
        return (yield)
    finally:
        server = running_server()
        failures = server.failures_since(mark) if server is not None else []
        if failures:
            raise failures[0]
