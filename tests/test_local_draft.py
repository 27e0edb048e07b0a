"""The local draft: streaming, KV-cache crop after a correction (with the prefill it saves), stop
strings matched on text, and closing early."""

from __future__ import annotations

import asyncio

import pytest

from grammar_guide import DraftCall, DraftRequest, SyncDraft, TargetModel
from grammar_guide.providers.transformers import TransformersDraft
from tests.support.conftest_models import one_torch_thread, smollm2, tiny_model


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_torch_thread():
        yield


PROMPT = "Table users(id, name, age). Write one SQL query: the names of users older than 30."


def _run(
    draft: TransformersDraft, accepted: str = "", n: int = 12, stop: tuple[str, ...] = ()
) -> tuple[list[str], DraftCall]:
    call = DraftCall(DraftRequest(PROMPT, accepted, n, stop))
    return list(draft.stream_sync(call)), call


def test_is_a_sync_draft_that_continues_the_prefix():
    draft = TransformersDraft(tiny_model())
    assert isinstance(draft, SyncDraft)
    assert draft.continues_prefix is True
    assert "tiny-random-llama" in draft.name


@pytest.mark.model
def test_streams_token_by_token_within_the_budget():
    draft = TransformersDraft(smollm2())
    chunks, call = _run(draft, "", 12)
    assert len(chunks) >= 4 and all(chunks)
    assert call.tokens_out == 12 and call.finish_reason == "length"
    assert call.tokens_in == len(smollm2().prompt_ids(PROMPT))
    assert call.prefill_tokens_saved == 0


@pytest.mark.model
def test_after_a_correction_only_the_new_bytes_are_fed_and_the_output_matches_a_fresh_run():
    lm = smollm2()
    draft = TransformersDraft(lm)
    first = "".join(_run(draft, "", 16)[0])
    # The guide loop kept part of the draft and a correction replaced the rest.
    accepted = first[: len(first) // 2] + " age"
    chunks, call = _run(draft, accepted, 10)
    n_prompt = len(lm.prompt_ids(PROMPT))
    assert call.prefill_tokens_saved >= n_prompt
    assert call.tokens_in <= len(lm.text_ids(" age")) + 2  # the boundary token and the new bytes
    assert call.tokens_in + call.prefill_tokens_saved >= n_prompt + len(lm.partial_ids(accepted.encode())[0])
    fresh_chunks, fresh_call = _run(TransformersDraft(lm), accepted, 10)
    assert "".join(chunks) == "".join(fresh_chunks)  # reusing the cache changes nothing
    assert fresh_call.prefill_tokens_saved == 0


def test_continuing_the_drafts_own_text_feeds_nothing_again():
    lm = tiny_model()
    draft = TransformersDraft(lm)
    first, _ = _run(draft, "SELECT", 6)
    second, call = _run(draft, "SELECT" + "".join(first), 6)
    assert call.tokens_in == 1  # only the last generated token, never fed before
    assert call.prefill_tokens_saved == len(lm.prompt_ids(PROMPT)) + len(draft.answer_ids) - 6 - 1
    assert second and call.tokens_out == 6


def test_a_healed_boundary_is_rewritten_not_repeated():
    lm = tiny_model()
    draft = TransformersDraft(lm)
    text = "SELECT na"
    kept, healed = lm.partial_ids(text.encode())
    assert healed
    chunks, _ = _run(draft, text, 5)
    ids = list(draft.answer_ids)
    assert ids[: len(kept)] == kept
    produced = lm.ll_tokenizer.decode_bytes(ids)
    assert produced.startswith(text.encode())
    assert produced[len(text.encode()) :].decode("utf-8", errors="ignore").startswith("".join(chunks))


@pytest.mark.model
def test_stop_strings_are_matched_on_text():
    draft = TransformersDraft(smollm2())
    full = "".join(_run(draft, "SELECT", 12)[0])
    assert " FROM" in full, full
    # " FR" + "OM" or " FROM" as one token: the stop string is found in the text either way.
    chunks, call = _run(draft, "SELECT", 12, stop=("ROM",))
    assert "".join(chunks) == full[: full.index("ROM")]
    assert call.finish_reason == "stop"
    assert call.tokens_out < 12


def test_closing_the_generator_stops_generation():
    draft = TransformersDraft(tiny_model())
    call = DraftCall(DraftRequest(PROMPT, "", 200))
    stream = draft.stream_sync(call)
    next(stream)
    stream.close()
    assert call.finish_reason == "closed"
    assert call.tokens_out is not None and call.tokens_out < 10


def test_async_stream_and_aclose():
    draft = TransformersDraft(tiny_model())
    call = DraftCall(DraftRequest(PROMPT, "", 200))

    async def take_two():
        stream = draft.stream(call)
        out = [await stream.__anext__(), await stream.__anext__()]
        await stream.aclose()
        return out

    assert len(asyncio.run(take_two())) == 2
    assert call.finish_reason == "closed" and call.tokens_out < 20


@pytest.mark.model
def test_shares_the_targets_model_and_cache():
    from grammar_guide import Grammar

    target = TargetModel.load()
    draft = TransformersDraft.from_target(target)
    assert draft.lm is target.lm and draft.kv_cache is target.kv_cache
    chunks, call = _run(draft, "SELECT name", 4)
    assert call.tokens_out == 4 and chunks
    # The target continues the draft's text from the shared cache: only the tokens after the
    # common prefix are fed, and the result is what a target with a cache of its own writes.
    grammar = Grammar.from_lark('start: "SELECT" NAME "FROM" NAME\nNAME: /[a-z_]+/\n%ignore " "\n')
    text = "SELECT name" + "".join(chunks).split(" FROM")[0]
    before = target.prefill_tokens
    shared = target.continue_text(PROMPT, text, grammar, max_new_tokens=6)
    assert target.prefill_tokens - before < 6
    alone = TargetModel(target.lm).continue_text(PROMPT, text, grammar, max_new_tokens=6)
    assert shared.text == alone.text


JSON_PROMPT = "Here is a JSON object, with 12 keys, using only string values:\n\n```json\n"


@pytest.mark.model
def test_lookup_writes_the_same_tokens_in_fewer_forward_passes():
    lm = smollm2()
    plain, guessing = TransformersDraft(lm, lookup=0), TransformersDraft(lm)
    outputs = []
    for draft in (plain, guessing):
        call = DraftCall(DraftRequest(JSON_PROMPT, "", 60, ()))
        outputs.append(("".join(draft.stream_sync(call)), list(draft.answer_ids), call.tokens_out))
        if draft is plain:
            assert draft.kv_cache.forward_passes == 60 and draft.lookup is None
    assert outputs[0] == outputs[1]  # greedy: a guess is kept only where the model agrees
    assert guessing.lookup.right >= 15
    assert guessing.kv_cache.forward_passes <= 60 - guessing.lookup.right
    # After a correction, guessing goes on from the accepted text, still token for token.
    accepted = outputs[0][0][:40] + '"name": "'
    again = ["".join(d.stream_sync(DraftCall(DraftRequest(JSON_PROMPT, accepted, 30, ())))) for d in (plain, guessing)]
    assert again[0] == again[1]


@pytest.mark.model
def test_a_guess_made_at_the_end_of_a_call_serves_the_next_call():
    lm = smollm2()
    whole = TransformersDraft(lm)
    text = "".join(whole.stream_sync(DraftCall(DraftRequest(JSON_PROMPT, "", 60, ()))))
    resumed = TransformersDraft(lm)
    accepted = ""
    for _ in range(4):  # as the guide resumes a draft that stopped at its lookahead
        accepted += "".join(resumed.stream_sync(DraftCall(DraftRequest(JSON_PROMPT, accepted, 15, ()))))
    assert accepted == text
    assert resumed.lookup.right == whole.lookup.right > 0
    assert resumed.kv_cache.forward_passes == whole.kv_cache.forward_passes


@pytest.mark.model
def test_sampling_with_guesses_writes_what_it_writes_without():
    lm = smollm2()
    texts = []
    for lookup in (0, 4):
        draft = TransformersDraft(lm, temperature=0.7, seed=5, lookup=lookup)
        texts.append("".join(draft.stream_sync(DraftCall(DraftRequest(JSON_PROMPT, "", 40, ())))))
    assert texts[0] == texts[1]
    assert draft.lookup.guessed > 0
    with pytest.raises(ValueError):
        TransformersDraft(lm, lookup=-1)


@pytest.mark.model
def test_a_local_spec_shares_the_targets_model_and_cache():
    from grammar_guide.providers import draft_from_spec

    target = TargetModel.load()
    draft = draft_from_spec("local", target=target)
    assert isinstance(draft, TransformersDraft)
    assert draft.lm is target.lm and draft.kv_cache is target.kv_cache
    alone = draft_from_spec("local")
    assert alone.lm is target.lm and alone.kv_cache is not target.kv_cache  # one model, its own cache
    with pytest.raises(ValueError, match="unknown draft"):
        draft_from_spec("gopher:thing")


@pytest.mark.model
def test_concurrent_calls_each_keep_a_cache_of_their_own():
    # The rows of a batch job draft at once over the target's model. Each prompt decodes on a
    # cache of its own, so no call crops another's between two steps (one cache for all fed the
    # whole context again at nearly every step: 14 times the tokens, and 3 times slower at 4
    # rows than one by one, on 8 JSON rows). Each writes what it writes alone.
    import concurrent.futures

    lm = smollm2()
    prompts = [f"Write one SQL query over users(id, name, age): {q}" for q in ("the oldest user", "all names")]

    def fed_by(draft: TransformersDraft, target: TargetModel, together: bool) -> tuple[list[str], int]:
        def write(prompt: str) -> str:
            text = ""
            for _ in range(2):  # as the guide resumes a draft
                text += "".join(draft.stream_sync(DraftCall(DraftRequest(prompt, text, 6, ()))))
            return text

        if together:
            with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
                texts = list(pool.map(write, prompts))
        else:
            texts = [write(p) for p in prompts]
        return texts, sum(slot.kv.prefilled_tokens for slot in target.slots)

    runs = []
    for together in (False, True):
        target = TargetModel(lm)
        runs.append(fed_by(TransformersDraft.from_target(target, lookup=0), target, together))
    (alone, fed_alone), (together, fed_together) = runs
    assert together == alone and all(alone)
    assert fed_together == fed_alone
