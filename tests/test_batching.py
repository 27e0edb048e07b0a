"""Batched forward passes (``grammar_guide.local.batching``): which steps share a pass, a pass of
several caches gives each row what its own pass gives, and concurrent target calls write what
each writes alone."""

from __future__ import annotations

import asyncio

import pytest
import torch

from grammar_guide.local import KVCache, TargetModel
from grammar_guide.local.batching import (
    CPU_PASS_COST,
    GPU_PASS_COST,
    Step,
    batched_forward,
    model_forward,
    model_score,
    passes_for,
)
from tests.support.conftest_models import one_torch_thread, smollm2


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_torch_thread():
        yield


def lengths(groups: list[list[Step]]) -> list[list[int]]:
    return [[len(s.new) for s in group] for group in groups]


def test_passes_for_puts_a_long_guess_apart_on_a_cpu_and_all_together_on_a_gpu():
    steps = [Step(object(), 10 + i, [1] * n, 1) for i, n in enumerate([1, 6, 1, 1, 1, 1, 1, 1])]
    # On a CPU: 7 one-token rows and the 6-token one cost 8 + 7 + 8 + 6 apart, 8 + 8 * 6 together.
    assert lengths(passes_for(steps, CPU_PASS_COST)) == [[1] * 7, [6]]
    assert lengths(passes_for(steps, GPU_PASS_COST)) == [[1, 1, 1, 1, 1, 1, 1, 6]]
    # A cold prefill (no cache yet) runs on its own.
    cold = Step(None, 0, [1, 2, 3], 1)
    assert passes_for([*steps[:2], cold], GPU_PASS_COST) == [steps[:2], [cold]]
    # So does a step whose cache cannot be stacked (a sliding window, say).
    odd = Step(object(), 5, [1], 1, alone=True)
    assert passes_for([*steps[:2], odd], GPU_PASS_COST) == [steps[:2], [odd]]
    assert passes_for([], CPU_PASS_COST) == []


@pytest.mark.model
def test_a_batched_pass_gives_each_row_the_logits_and_cache_of_its_own_pass():
    lm = smollm2()
    texts = ['{"a": 1', '{"name": "Ada", "born": 18', "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11"]
    contexts = [lm.prompt_ids("Write JSON.") + lm.text_ids(t) for t in texts]
    news = [[lm.text_ids(",")[0]], lm.text_ids("15, "), lm.text_ids(", 12")]  # rows of 1, 2-3 tokens
    alone, together = [], []
    for ids, new in zip(contexts, news, strict=True):
        _, cache = model_forward(lm, None, 0, ids, 1)
        alone.append(model_forward(lm, cache, len(ids), new, len(new)))
        _, cache = model_forward(lm, None, 0, ids, 1)
        together.append(Step(cache, len(ids), new, len(new)))
    batched_forward(lm, together)
    for (rows, cache), step, ids, new in zip(alone, together, contexts, news, strict=True):
        assert step.rows.shape == rows.shape == (len(new), lm.n_vocab)
        assert torch.equal(step.rows.argmax(-1), rows.argmax(-1))
        assert float((step.rows - rows).abs().max()) < 1e-3
        assert step.out_cache.get_seq_length() == cache.get_seq_length() == len(ids) + len(new)
        # The cache cut out of the batch goes on like the row's own.
        after = lm.text_ids(" ")
        a, _ = model_forward(lm, cache, len(ids) + len(new), after, 1)
        b, _ = model_forward(lm, step.out_cache, len(ids) + len(new), after, 1)
        assert int(a.argmax()) == int(b.argmax()) and float((a - b).abs().max()) < 1e-3


@pytest.mark.model
def test_concurrent_calls_write_what_each_writes_alone_in_shared_passes(json_grammar):
    lm = smollm2()
    target = TargetModel(lm)
    calls = [
        ("Describe a cat as JSON.", '{"name": "'),
        ("Describe a city as JSON.", '{"city": "Paris", "population": '),
        ("List three colours as JSON.", '["red", "'),
        ("Describe a book as JSON.", '{"title": "Dune", "author": "'),
    ]
    alone = [target.continue_text(p, t, json_grammar, max_new_tokens=12, finish=True).text for p, t in calls]
    passes, steps = target.batcher.passes, target.batcher.steps

    async def together() -> list[str]:
        continuations = await asyncio.gather(
            *(target.acontinue_text(p, t, json_grammar, max_new_tokens=12, finish=True) for p, t in calls)
        )
        return [c.text for c in continuations]

    assert asyncio.run(together()) == alone
    passes, steps = target.batcher.passes - passes, target.batcher.steps - steps
    assert steps > passes * 2  # most passes ran several calls' steps
    # Each concurrent call had a KV cache of its own; one at a time, the first cache serves again.
    assert len(target.slots) == len(calls)
    again = target.continue_text(*calls[1], json_grammar, max_new_tokens=12, finish=True)
    assert again.text == alone[1]


@pytest.mark.model
def test_batch_1_runs_concurrent_calls_one_at_a_time(json_grammar):
    target = TargetModel(smollm2(), batch=1)
    call = ("Describe a cat as JSON.", '{"name": "')

    async def together() -> list[str]:
        continuations = await asyncio.gather(
            *(target.acontinue_text(*call, json_grammar, max_new_tokens=6) for _ in range(3))
        )
        return [c.text for c in continuations]

    texts = asyncio.run(together())
    assert len(set(texts)) == 1 and texts[0]
    assert target.batcher.passes == target.batcher.steps and len(target.slots) == 1
    assert isinstance(target.kv_cache, KVCache) and target.kv_cache.ids


@pytest.mark.model
def test_callers_that_are_not_members_share_passes_when_their_steps_come_a_moment_apart():
    """Two threads stepping without ``member()`` (as local drafts do): each pass waits a moment
    for the other's step, so they share passes (without the wait, each ran alone, in turn)."""
    import threading

    from grammar_guide.local import ForwardBatcher

    lm = smollm2()
    batcher = ForwardBatcher(lm)
    ids = lm.prompt_ids("Count to twenty.")
    token = lm.text_ids(" 1")[0]
    steps_each = 20

    def caller() -> None:
        _, cache = batcher.run(None, 0, ids, 1)
        for past in range(len(ids), len(ids) + steps_each):
            _, cache = batcher.run(cache, past, [token], 1)

    threads = [threading.Thread(target=caller) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert batcher.steps == 2 * (steps_each + 1)
    assert batcher.steps >= 1.5 * batcher.passes


def test_scoring_rows_run_in_the_batchers_passes_give_what_their_own_pass_gives_and_leave_the_cache():
    from grammar_guide.local import ForwardBatcher
    from tests.support.conftest_models import tiny_model

    lm = tiny_model()
    batcher = ForwardBatcher(lm)
    ids = lm.prompt_ids("Write SQL.")
    _, cache = batcher.run(None, 0, ids, 1)
    news = [lm.text_ids("SELECT 1"), lm.text_ids(" FROM users WHERE age > 30"), lm.text_ids("x")]
    for rows in ([news], [news[1:2]]):  # several rows share a pass; one row runs alone
        for got, own in zip(
            batcher.score(cache, len(ids), *rows), model_score(lm, cache, len(ids), *rows), strict=True
        ):
            assert got.shape == own.shape
            assert float((got - own).abs().max()) < 1e-4
        assert cache.get_seq_length() == len(ids)  # the shared cache is left as it was
    assert batcher.steps == 1 + len(news) + 1
    # A scoring's rows are one caller's: a batcher of one caller a batch runs them in one pass.
    single = ForwardBatcher(lm, max_batch=1)
    passes = single.passes
    single.score(cache, len(ids), [lm.text_ids(" 1, 2"), lm.text_ids(" 3, 4")])
    assert single.passes - passes == 1


def test_a_failing_step_raises_in_its_caller_and_the_batcher_goes_on():
    from grammar_guide.local import ForwardBatcher
    from tests.support.conftest_models import tiny_model

    lm = tiny_model()
    batcher = ForwardBatcher(lm)
    with pytest.raises(IndexError):
        batcher.run(None, 0, [10**9], 1)  # no such token
    rows, cache = batcher.run(None, 0, [1, 2, 3], 2)
    assert rows.shape == (2, lm.n_vocab) and cache.get_seq_length() == 3
    assert batcher.passes == batcher.steps == 2


def test_batch_must_be_at_least_1():
    from tests.support.conftest_models import tiny_model

    with pytest.raises(ValueError, match="batch"):
        TargetModel(tiny_model(), batch=0)


def full_log_prob(lm, prompt: str, text: str) -> float:
    """The log-probability of ``text``'s tokens after ``prompt``, from one pass with no cache."""
    prompt_ids = lm.prompt_ids(prompt)
    ids = prompt_ids + lm.text_ids(text)
    rows, _ = model_forward(lm, None, 0, ids, len(ids))
    log_probs = rows.log_softmax(-1)
    return sum(float(log_probs[i - 1, ids[i]]) for i in range(len(prompt_ids), len(ids)))


@pytest.mark.model
def test_likelihood_scoring_shares_the_passes_of_a_concurrent_call_and_scores_as_alone(json_grammar):
    """Scoring (tied edits) runs its texts as rows of the batcher's passes, with a decoding call's
    steps; each score is what the target gives alone (on the old target the texts ran in a pass
    of their own beside the batcher, which never saw them)."""
    lm = smollm2()
    prompt = "Describe a cat as JSON."
    texts = ['{"name": "Tom"}', '{"title": "Tom"}', '{"label": "Tom"}']
    call = ("Describe a city as JSON.", '{"city": "')
    alone = TargetModel(lm, lookup=0)
    scores = alone.log_likelihoods(prompt, texts)
    assert alone.batcher.steps == 1 + len(texts)  # the shared context, then each text's row
    written = alone.continue_text(*call, json_grammar, max_new_tokens=12, finish=True).text
    full = [full_log_prob(lm, prompt, t) for t in texts]
    assert all(abs((f - full[0]) - (s - scores[0])) < 1e-3 for f, s in zip(full, scores, strict=True))

    target = TargetModel(lm, lookup=0)

    async def together() -> tuple[str, list[float]]:
        writing = target.acontinue_text(*call, json_grammar, max_new_tokens=12, finish=True)
        continuation, together_scores = await asyncio.gather(writing, target.alog_likelihoods(prompt, texts))
        return continuation.text, together_scores

    text, together_scores = asyncio.run(together())
    assert text == written
    assert together_scores == pytest.approx(scores, abs=1e-3)
    assert target.batcher.steps == alone.batcher.steps
    assert target.batcher.passes < alone.batcher.passes  # the texts' rows joined the call's passes
