"""The guide loop facing infrastructure faults and misuse (scripted drafts, no model): a provider
error surfaces at once with the partial result, a broken stream is resumed or ends the run with
its error, never taken as the answer; misuse is a clear error before any draft call.

The same faults through the real SDKs over HTTP are in test_providers_guide.py and the soak test.
"""

from __future__ import annotations

import pytest

import grammar_guide as gg
from grammar_guide import FunctionDraft


def run(draft, grammar, **options):
    return gg.guide(draft, grammar, "Write the query.", target=False, **options)


def test_a_provider_error_before_any_text_ends_the_run_at_once(small_sql):
    # The provider's own retries are spent when it raises before its first chunk: the loop does
    # not call it again (before: 8 calls, then GuideExhausted "the draft stopped adding text").
    calls = []

    def failing(prompt, prefix):
        calls.append(prefix)
        if len(calls) == 1:
            yield "SELECT name FROM"  # a first call that went well
            return
        raise gg.ServerError("The server had an error.", provider="test", status_code=500)
        yield  # pragma: no cover

    with pytest.raises(gg.ServerError) as caught:
        run(FunctionDraft(failing, continues_prefix=True), small_sql)
    assert calls == ["", "SELECT name FROM"]
    partial = caught.value.result
    assert partial.text == "SELECT name FROM" and not partial.complete


def test_a_refused_connection_is_not_budget_exhaustion(small_sql):
    def refused(prompt):
        raise gg.ProviderConnectionError("ConnectError: connection refused", provider="test")

    with pytest.raises(gg.ProviderConnectionError) as caught:
        run(refused, small_sql)
    assert caught.value.result.text == "" and caught.value.result.stats.draft_calls == 1


def test_broken_streams_are_resumed_twice_in_a_row_then_the_error_ends_the_run(small_sql):
    calls = []

    def breaking(prompt, prefix):
        calls.append(prefix)
        yield ["SELECT", " name", " FROM"][len(calls) - 1] if len(calls) <= 3 else " users"
        raise gg.ProviderConnectionError("the stream ended without [DONE]", provider="test")

    with pytest.raises(gg.ProviderConnectionError, match="ended without") as caught:
        run(FunctionDraft(breaking, continues_prefix=True), small_sql)
    assert calls == ["", "SELECT", "SELECT name"]
    assert caught.value.result.text == "SELECT name FROM" and not caught.value.result.complete

    # A call that ends properly resets the count: breaks that are not in a row are resumed.
    calls.clear()
    answers = iter(
        [("SELECT", True), (" name", True), (" FROM", False), (" users", True), (" WHERE", True), (" a = 1", False)]
    )

    def sometimes(prompt, prefix):
        calls.append(prefix)
        text, breaks = next(answers)
        yield text
        if breaks:
            raise gg.ProviderConnectionError("connection reset", provider="test")

    result = run(FunctionDraft(sometimes, continues_prefix=True), small_sql)
    assert result.text == "SELECT name FROM users WHERE a = 1" and result.complete


def test_a_stream_broken_where_the_text_is_complete_is_resumed(small_sql):
    calls = []

    def cut_short(prompt, prefix):
        calls.append(prefix)
        if not prefix:
            yield "SELECT name FROM users"  # complete, but the answer went on
            raise gg.ProviderConnectionError("the stream ended without [DONE]", provider="test")
        yield " WHERE age > 30"

    result = run(FunctionDraft(cut_short, continues_prefix=True), small_sql)
    assert result.text == "SELECT name FROM users WHERE age > 30"
    assert calls == ["", "SELECT name FROM users"]


def test_no_budget_left_to_resume_a_broken_stream_is_its_error_not_a_quiet_result(small_sql):
    def cut_short(prompt, prefix):
        yield "SELECT name FROM users"
        raise gg.ProviderConnectionError("the stream ended without [DONE]", provider="test")

    with pytest.raises(gg.ProviderConnectionError) as caught:
        run(FunctionDraft(cut_short, continues_prefix=True), small_sql, max_draft_calls=1)
    partial = caught.value.result
    assert partial.text == "SELECT name FROM users" and not partial.complete  # valid, but maybe cut


def test_a_provider_error_is_raised_before_the_target_writes(small_sql):
    class Target:
        """A target the loop must never reach: the provider's error comes first."""

        async def acontinue_text(self, *args, **kwargs):
            raise AssertionError("the target was asked to write")

        def count_tokens(self, text):
            return len(text.split())

    def failing(prompt):
        raise gg.ServerError("overloaded", provider="test", status_code=503)

    with pytest.raises(gg.ServerError):
        gg.guide(failing, small_sql, "q", Target())


# -- misuse ----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [True, "smollm2", 1])
def test_a_target_that_is_not_a_model_is_a_clear_error_before_any_draft_call(target, small_sql):
    calls = []

    def draft(prompt):
        calls.append(prompt)
        return "SELECT name FROM users"

    with pytest.raises(TypeError, match=r"target must be a TargetModel .*None for the default model.*False"):
        gg.guide(draft, small_sql, "q", target)
    assert calls == []


@pytest.mark.parametrize(
    "draft",
    [
        lambda prompt: {"sql": "SELECT 1"},
        lambda prompt: (_ for _ in ()).throw(gg.ServerError("down", provider="test", status_code=500)),
    ],
    ids=["misuse", "provider-error"],
)
def test_errors_from_guide_carry_no_event_loop_context(draft, small_sql):
    with pytest.raises((TypeError, gg.ProviderError)) as caught:
        run(draft, small_sql)
    chain = []
    error: BaseException | None = caught.value
    while error is not None:
        chain.append(repr(error))
        error = error.__cause__ or error.__context__
    assert not any("no running event loop" in link for link in chain), chain


# -- budgets inside a draft call -------------------------------------------------------------


def big_json(records: int) -> str:
    return "[" + ", ".join(f'{{"id": {i}, "name": "user-{i}"}}' for i in range(records)) + "]"


@pytest.mark.parametrize("shape", ["one string", "chunks"])
def test_max_new_tokens_bounds_a_single_draft_call(shape, json_grammar):
    # Before: a 1.27 MB draft with max_new_tokens=100 gave 589 KB of text; the budget was only
    # checked between calls.
    text = big_json(40_000)
    assert len(text) > 1_000_000
    draft = (
        (lambda prompt: text)
        if shape == "one string"
        else (lambda prompt: (text[i : i + 64] for i in range(0, len(text), 64)))
    )
    partial = run(draft, json_grammar, max_new_tokens=100)
    assert not partial.complete
    (cut,) = [e for e in partial.events if isinstance(e, gg.Cut) and e.reason == "budget"]
    assert "max_new_tokens (100) reached" in cut.detail
    # 100 tokens of 4 characters read; then closed (issue 25: a budget is never a quiet close)
    assert 0 < cut.offset <= 400 and text.startswith(partial.text.rstrip('"]}'))  # a dangling key dropped
    assert json_grammar.is_complete(partial.text) and len(partial.text) < cut.offset + 8
    assert partial.stats.draft_calls == 1


def test_timeout_abandons_a_blocking_sync_draft(small_sql):
    import threading
    import time

    release = threading.Event()

    def blocking(prompt):
        release.wait(30)  # a synchronous SDK call that hangs
        return "SELECT name FROM users"

    started = time.monotonic()
    try:
        with pytest.raises(gg.GuideExhausted, match="timeout"):
            run(blocking, small_sql, timeout=0.5)
        waited = time.monotonic() - started
    finally:
        release.set()
    assert waited < 10  # not the 30 s of the call: the worker thread is abandoned, not joined


class _MatcherFails:
    """A target whose token matcher fails wherever it is asked to write (llguidance's ``Too many
    items (limit 500000; mask)``, which a real grammar meets only on long texts)."""

    def __init__(self):
        self.asked = 0

    async def acontinue_text(self, *args, **kwargs):
        self.asked += 1
        raise gg.TokenMatcherError("the token matcher failed: Too many items (limit 500000; mask)")

    async def alog_likelihoods(self, prompt, texts):
        return [0.0 for _ in texts]

    def count_tokens(self, text):
        return len(text.split())


@pytest.mark.parametrize("draft", ["I do not know.", "SELECT"])  # the target is asked to write
def test_a_target_whose_matcher_fails_is_a_target_that_could_not_write(draft, small_sql):
    target = _MatcherFails()
    try:
        result = gg.guide(lambda prompt: draft, small_sql, "q", target, max_draft_calls=2)
    except gg.GuideExhausted as exhausted:  # the loop's usual refusal, with its reason
        assert exhausted.reason and not exhausted.result.complete
    else:
        assert result.complete and not result.faithful
    assert target.asked


def test_the_rest_of_the_draft_is_cut_and_counted_where_the_target_writes_nothing(small_sql):
    # The text is complete at the violation, no edit fixes ``1].b`` and the target writes nothing
    # there: the rest was left out unrecorded and the result called faithful.
    result = gg.guide(lambda prompt: "SELECT name FROM users 1].b", small_sql, "q", _MatcherFails())
    assert result.text.strip() == "SELECT name FROM users"
    assert [e.text for e in result.events if isinstance(e, gg.Cut) and e.reason == "unrepaired"] == ["1].b"]
    assert not result.faithful and result.changes.dropped == 1
