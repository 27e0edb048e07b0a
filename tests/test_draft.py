"""The draft interface's function wrapper: the shapes it accepts, and misuse found at the first call."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import grammar_guide as gg
from grammar_guide import DraftCall, DraftRequest, FunctionDraft, _draft


def drain(draft: FunctionDraft) -> list[str]:
    async def main() -> list[str]:
        return [chunk async for chunk in draft.stream(DraftCall(DraftRequest(prompt="Q: ")))]

    return asyncio.run(main())


@pytest.mark.parametrize(
    "returned, shown",
    [
        ({"text": "SELECT 1"}, "dict {'text': 'SELECT 1'}"),
        (None, "None"),
        (42, "int 42"),
        (b"SELECT 1", "bytes b'SELECT 1'"),
    ],
    ids=["dict", "None", "int", "bytes"],
)
def test_a_function_returning_no_text_is_a_type_error_at_the_first_call(returned, shown):
    draft = FunctionDraft(lambda prompt: returned, name="generate")
    with pytest.raises(TypeError, match="draft function generate must return str or yield str") as caught:
        drain(draft)
    assert f"it returned {shown}" in str(caught.value)


@pytest.mark.parametrize("returned", [{"text": "x"}, None, 7, b"x"], ids=["dict", "None", "int", "bytes"])
def test_guide_reports_the_misuse_before_any_text(returned, small_sql):
    calls = []

    def generate(prompt):
        calls.append(prompt)
        return returned

    with pytest.raises(TypeError, match="must return str or yield str"):
        gg.guide(generate, small_sql, "q", target=False)
    assert len(calls) == 1


def test_an_async_function_returning_a_dict_is_a_type_error():
    async def generate(prompt):
        return {"text": "SELECT 1"}

    with pytest.raises(TypeError, match="must return str or yield str, but it returned dict"):
        drain(FunctionDraft(generate))


@pytest.mark.parametrize("bad", [b"name", 3, None], ids=["bytes", "int", "None"])
def test_a_generator_yielding_no_text_is_a_type_error(bad):
    def generate(prompt):
        yield "SELECT "
        yield bad

    with pytest.raises(TypeError, match="draft function generate must yield str chunks, but it yielded"):
        drain(FunctionDraft(generate))


def test_an_async_generator_yielding_bytes_is_a_type_error():
    async def generate(prompt):
        yield b"SELECT"

    with pytest.raises(TypeError, match="must yield str chunks, but it yielded bytes b'SELECT'"):
        drain(FunctionDraft(generate))


def test_a_function_that_takes_no_prompt_is_refused_when_wrapped():
    with pytest.raises(TypeError, match="takes no positional argument: it must take the prompt"):
        FunctionDraft(lambda: "SELECT 1")


def test_text_shapes_still_work():
    assert drain(FunctionDraft(lambda prompt: "SELECT 1")) == ["SELECT 1"]
    assert drain(FunctionDraft(lambda prompt: iter(["SELECT", "", " 1"]))) == ["SELECT", " 1"]
    assert drain(FunctionDraft(lambda prompt: ["a", "b"])) == ["a", "b"]
    assert drain(FunctionDraft(lambda *args: "x")) == ["x"]
    assert drain(FunctionDraft(lambda prompt: "")) == []


def test_a_long_repr_is_shortened():
    with pytest.raises(TypeError) as caught:
        drain(FunctionDraft(lambda prompt: {"k": "v" * 500}))
    assert len(str(caught.value)) < 200


def test_a_function_draft_runs_its_calls_on_a_thread_kept_between_calls():
    threads = []

    def generate(prompt: str) -> str:
        threads.append(threading.current_thread())
        return "SELECT 1"

    draft = FunctionDraft(generate)
    drain(draft)
    drain(draft)
    assert threads[0] is threads[1]  # not a thread started for each call


def test_an_idle_worker_ends_and_one_whose_call_runs_on_is_not_kept(monkeypatch):
    monkeypatch.setattr(_draft, "_IDLE_SECONDS", 0.05)
    idle = _draft.Worker("test-idle")
    call = idle.submit(int)
    call.result()
    idle.give_back(call)
    assert idle in _draft._IDLE
    release = threading.Event()
    busy = _draft.Worker("test-busy")
    running = busy.submit(release.wait)
    busy.give_back(running)  # abandoned while it runs: it ends after its call
    assert busy not in _draft._IDLE
    release.set()
    deadline = time.monotonic() + 1.0
    while ended := {"test-idle", "test-busy"} & {t.name for t in threading.enumerate()}:
        assert time.monotonic() < deadline, f"still running: {ended}"
        time.sleep(0.01)
    assert idle not in _draft._IDLE
