"""The test LLM server itself: an exception raised while it serves fails the test that caused it,
as itself and with its traceback, not as the dropped connection the client sees."""

from __future__ import annotations

import os
import pwd
import textwrap
from pathlib import Path

import pytest

from tests.support.llm_server import get_server

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent

# The inner test breaks the server's model (a fault the real model cannot make), makes one
# request, and puts the model back. Its client sees a dropped connection; the test must fail
# with the model's own exception.
INNER = textwrap.dedent(
    """
    from grammar_guide import DraftRequest
    from tests.support.llm_server import collect, get_server, make_draft

    class BrokenModel:
        def forward(self, input_ids, cache=None, past_key_values=None, use_cache=None):
            raise RuntimeError("the model broke inside the server")

        __call__ = forward

    def test_a_request_that_breaks_the_server():
        server = get_server()
        model = server.model
        server.model = BrokenModel()
        try:
            got = collect(make_draft("openai-chat", server), DraftRequest("Say hi.", max_new_tokens=2))
        finally:
            server.model = model
        assert got.error is not None  # what the client saw
    """
)


def test_a_server_failure_fails_the_test_with_its_own_exception(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    # pytester moves HOME; the converted model is cached under the real one.
    monkeypatch.setenv("HOME", pwd.getpwuid(os.getuid()).pw_dir)
    pytester.makepyfile(test_inner=INNER)
    # In a process of its own: it loads its own server and model.
    result = pytester.runpytest_subprocess("-p", "tests.support.server_failures", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: the model broke inside the server*"])
    # Its traceback ends where the model raised, inside the server's worker thread, and the
    # summary names it, not the client's dropped connection.
    result.stdout.fnmatch_lines(["test_inner.py:*: RuntimeError", "FAILED *RuntimeError*"])


def test_a_scripted_fault_is_no_server_failure() -> None:
    from grammar_guide import DraftRequest
    from tests.support.llm_server import Fault, collect, fast_retry, make_draft

    server = get_server()
    mark = len(server.failures)
    name = server.script([Fault("drop", after_tokens=1)])
    draft = make_draft("openai-chat", server, script=name, retry=fast_retry(max_attempts=1))
    got = collect(draft, DraftRequest("Say hi.", max_new_tokens=4))
    assert got.error is not None and server.records_for(name)[0].fault_applied
    assert server.failures_since(mark) == []
