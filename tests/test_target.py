"""The target model: masked decoding stays in the grammar, token healing yields canonical tokens,
the stop rule, minimal invasiveness, and KV-cache reuse between calls."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from grammar_guide import Alternative, Grammar
from grammar_guide.local.choosing import choose, own_choice
from grammar_guide.local.decoding import Continuation
from grammar_guide.local.sampling import Sampler
from grammar_guide.local.target import TargetModel
from tests.support.conftest_models import greedy_unconstrained, one_torch_thread, smollm2, tiny_model


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with one_torch_thread():
        yield


JSON_SAMPLES = [
    '{"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "alive": false}',
    '[1, -2.5e3, {"k": null}, "x\\n", true]',
    '{"order": {"id": 42, "items": [{"sku": "A-1", "qty": 2}]}, "paid": true}',
]
SQL_SAMPLES = [
    "SELECT name, age FROM users WHERE age > 30 ORDER BY age DESC LIMIT 5;",
    "select count(*) from orders where status = 'open' and total >= 100",
    "SELECT * FROM t WHERE a LIKE 'x%' OR b < 3",
]
PERSON_PROMPT = "Give a JSON object describing a person."
SQL_PROMPT = "Table users(id, name, age). Write one SQL query: the names of users older than 30."


def _prefixes(samples: list[str], rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        sample = rng.choice(samples)
        out.append(sample[: rng.randint(0, len(sample))])
    return out


def _assert_valid(grammar: Grammar, text: str, c: Continuation, max_new_tokens: int) -> None:
    full = text + c.text
    assert grammar.valid_prefix(full) == len(full), (text, c)
    assert c.complete == grammar.is_complete(full) or not c.complete, (text, c)
    if c.complete:
        assert grammar.is_complete(full)
    if c.stop_reason == "eos":
        assert c.complete and grammar.is_complete(full)
    assert c.stop_reason in ("terminal", "complete", "eos", "max_new_tokens")
    assert c.sampled_tokens + c.forced_tokens + c.healed_tokens <= max_new_tokens
    assert text.endswith(c.healed_text)


# -- masked decoding never leaves the grammar ------------------------------------------------------


@pytest.mark.parametrize("which", ["json", "sql"])
def test_sampled_continuations_of_a_random_model_stay_in_the_grammar(which, json_grammar, small_sql):
    """A random model wants garbage; under the mask every one of 100 sampled continuations is valid."""
    grammar, samples = (json_grammar, JSON_SAMPLES) if which == "json" else (small_sql, SQL_SAMPLES)
    target = TargetModel(tiny_model(), temperature=1.0, seed=7)
    rng = random.Random(11)
    reasons = set()
    for text in _prefixes(samples, rng, 100):
        assert grammar.valid_prefix(text) == len(text)
        finish = rng.random() < 0.2
        c = target.continue_text(
            "Write one.", text, grammar, max_new_tokens=12, finish=finish, min_terminals=rng.randint(1, 3)
        )
        _assert_valid(grammar, text, c, 12)
        reasons.add(c.stop_reason)
        # The tokens the target ran are exactly the text it returned (no hidden bytes).
        decoded = target.lm.ll_tokenizer.decode_bytes(list(target.last_token_ids))
        assert decoded.startswith((text + c.text).encode())
    assert {"terminal", "max_new_tokens"} <= reasons


@pytest.mark.model
@pytest.mark.parametrize("which", ["json", "sql"])
def test_sampled_continuations_of_smollm2_stay_in_the_grammar(which, json_grammar, small_sql):
    grammar, samples, prompt = (
        (json_grammar, JSON_SAMPLES, PERSON_PROMPT) if which == "json" else (small_sql, SQL_SAMPLES, SQL_PROMPT)
    )
    target = TargetModel(smollm2(), temperature=1.0, top_p=0.95, seed=3)
    rng = random.Random(5)
    for text in _prefixes(samples, rng, 10):
        c = target.continue_text(prompt, text, grammar, max_new_tokens=10, min_terminals=2)
        _assert_valid(grammar, text, c, 10)


class _AllowedSet:
    """A matcher stand-in for ``own_choice``: the grammar allows exactly these tokens."""

    def __init__(self, allowed: set[int]) -> None:
        self.allowed = allowed

    def validate_tokens(self, tokens: list[int]) -> int:
        return int(tokens[0] in self.allowed)


def test_sampling_the_own_choice_first_draws_from_the_masked_distribution():
    """Rejection sampling: keep an allowed draw from the whole distribution, else draw within the
    mask; the result must have the masked distribution, with the mask needed 1 - p(A) of the time."""
    import torch

    sampler = Sampler(temperature=1.0, seed=123)
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, 1.5])
    allowed = torch.tensor([False, True, True, False, True, False])
    matcher = _AllowedSet({1, 2, 4})
    draws, masked = 20000, 0
    counts = [0] * len(logits)
    for _ in range(draws):
        token = own_choice(logits, 0, matcher, False, sampler)
        if token < 0:
            masked += 1
            token = choose(logits, allowed, sampler)
        counts[token] += 1
    p = torch.softmax(logits, dim=-1)
    expected = (p * allowed) / (p * allowed).sum()
    for token, count in enumerate(counts):
        assert abs(count / draws - float(expected[token])) < 0.012, (token, count / draws, float(expected[token]))
    assert abs(masked / draws - (1 - float((p * allowed).sum()))) < 0.012
    # Complete text whose argmax leaves the grammar: never the own choice (the text ends there).
    assert all(own_choice(logits, 0, matcher, True, sampler) == -1 for _ in range(50))


@pytest.mark.model
def test_sampling_smollm2_needs_the_full_mask_only_where_its_own_draw_is_refused(json_grammar):
    target = TargetModel(smollm2(), temperature=0.8, seed=4)
    texts = []
    for text in ('{"name": "Ada", ', '{"name": "Ada", "born": 18', '{"tags": ["math", '):
        c = target.continue_text(PERSON_PROMPT, text, json_grammar, max_new_tokens=24, finish=True)
        _assert_valid(json_grammar, text, c, 24)
        texts.append(c.text)
    # The first choice of a call computes its mask (it reports alternatives); after that, only
    # refused draws do: a model that writes JSON well needs few.
    assert target.choices >= 30
    assert target.full_masks <= 3 + target.choices // 4
    again = TargetModel(smollm2(), temperature=0.8, seed=4)
    assert [
        again.continue_text(PERSON_PROMPT, t, json_grammar, max_new_tokens=24, finish=True).text
        for t in ('{"name": "Ada", ', '{"name": "Ada", "born": 18', '{"tags": ["math", ')
    ] == texts


@pytest.mark.model
def test_greedy_choice_tries_the_own_token_first_whatever_top_p(json_grammar):
    """Greedy decoding ignores top-p, so setting it must not cost a full mask at every token."""
    runs = []
    for top_p in (1.0, 0.9):
        target = TargetModel(smollm2(), top_p=top_p)
        c = target.continue_text(PERSON_PROMPT, '{"name": "Ada", ', json_grammar, max_new_tokens=20, finish=True)
        runs.append((c.text, target.choices, target.full_masks))
    assert runs[0] == runs[1]
    assert runs[0][2] < runs[0][1]


def test_seeded_sampling_is_reproducible(json_grammar):
    def run(seed):
        target = TargetModel(tiny_model(), temperature=1.0, seed=seed)
        return [target.continue_text("p", t, json_grammar, max_new_tokens=8).text for t in ('{"a": ', "[", "")]

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_regex_grammar_stops_when_complete():
    digits = Grammar.from_regex(r"[0-9]{3}")
    target = TargetModel(tiny_model(), temperature=1.0, seed=0)
    c = target.continue_text("Three digits:", "4", digits, max_new_tokens=10)
    assert len(c.text) == 2 and c.text.isdigit()
    assert c.complete and c.stop_reason in ("complete", "eos")


def test_invalid_prefix_is_refused(json_grammar):
    target = TargetModel(tiny_model())
    with pytest.raises(ValueError):
        target.continue_text("p", '{"a" 1', json_grammar)


# -- the stop rule -----------------------------------------------------------------------------------


@pytest.mark.model
def test_stops_after_whole_terminals_and_finishes_on_request(json_grammar):
    target = TargetModel.load()
    prompt = "Give a JSON array of three prime numbers."
    text = "[2, 3"
    one = target.continue_text(prompt, text, json_grammar, max_new_tokens=30)
    assert one.stop_reason == "terminal"
    assert one.text and not one.complete
    done = target.continue_text(prompt, text, json_grammar, max_new_tokens=40, finish=True)
    assert done.complete and done.stop_reason in ("eos", "complete")
    value = json.loads(text + done.text)
    assert value[:2] == [2, 3] and len(value) >= 3
    assert 1 <= len(done.alternatives) <= 5
    assert all(isinstance(a, Alternative) and 0 < a.probability <= 1 for a in done.alternatives)
    assert abs(sum(a.probability for a in done.alternatives)) <= 1.0 + 1e-5
    assert done.seconds > 0


@pytest.mark.model
def test_eos_only_where_the_grammar_accepts(small_sql):
    """Unconstrained, the model ends its answer early; the mask holds EOS back until the query
    is complete."""
    target = TargetModel.load()
    c = target.continue_text(SQL_PROMPT, "SELECT name FROM users WHERE", small_sql, max_new_tokens=40, finish=True)
    full = "SELECT name FROM users WHERE" + c.text
    assert c.complete and small_sql.is_complete(full)
    assert c.stop_reason in ("eos", "complete")


# -- token healing -----------------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize(
    "text",
    ['{"order', '{"orderI', '{"name": "Bob", "age"', "SELECT na", "SELECT name FROM users WHERE age >"],
)
def test_healed_boundary_gives_canonical_tokens(text, json_grammar, small_sql):
    lm = smollm2()
    if text.startswith("{"):
        grammar = (
            Grammar.from_json_schema(
                {
                    "type": "object",
                    "properties": {"orderId": {"type": "string"}, "orderName": {"type": "string"}},
                    "additionalProperties": False,
                }
            )
            if "order" in text
            else json_grammar
        )
        prompt = PERSON_PROMPT
    else:
        grammar, prompt = small_sql, SQL_PROMPT
    target = TargetModel(lm)
    c = target.continue_text(prompt, text, grammar, max_new_tokens=6)
    full = text + c.text
    assert grammar.valid_prefix(full) == len(full)
    kept, healed = lm.partial_ids(text.encode())
    assert healed and c.healed_text == healed.decode() and c.healed_tokens >= 1
    ids = list(target.last_token_ids)
    assert ids[: len(kept)] == kept
    # The whole answer is tokenized as the tokenizer itself would: no token split at the boundary.
    produced = lm.ll_tokenizer.decode_bytes(ids)
    assert lm.text_ids(produced) == ids, (
        lm.ll_tokenizer.dbg_tokens(ids),
        lm.ll_tokenizer.dbg_tokens(lm.text_ids(produced)),
    )


@pytest.mark.model
@pytest.mark.parametrize("text", ['{"name": "Bob", "age"', "SELECT name FROM us", '{"first_na'])
def test_after_a_healed_boundary_the_model_writes_what_it_would_unconstrained(text, json_grammar, small_sql):
    lm = smollm2()
    grammar, prompt = (json_grammar, PERSON_PROMPT) if text.startswith("{") else (small_sql, SQL_PROMPT)
    kept, healed = lm.partial_ids(text.encode())
    assert healed
    free = greedy_unconstrained(lm, lm.prompt_ids(prompt) + kept, 4)
    free_bytes = lm.ll_tokenizer.decode_bytes(free)
    assert free_bytes.startswith(healed)  # the model's own choice re-writes the healed bytes
    free_text = free_bytes[len(healed) :].decode("utf-8", errors="ignore")
    assert grammar.valid_prefix(text + free_text) == len(text + free_text)  # and is valid here
    target = TargetModel(lm)
    c = target.continue_text(prompt, text, grammar, max_new_tokens=4, min_terminals=100)
    assert list(target.last_token_ids[len(kept) :]) == free
    assert c.text == free_text


# -- minimal invasiveness ----------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize(
    ("prompt", "text", "which"),
    [
        (PERSON_PROMPT, '{"name": "', "json"),
        ("List three prime numbers as a JSON array.", "[2, 3,", "json"),
        (SQL_PROMPT, "SELECT name FROM users WHERE", "sql"),
    ],
)
def test_constrained_greedy_equals_unconstrained_while_that_is_valid(prompt, text, which, json_grammar, small_sql):
    grammar = json_grammar if which == "json" else small_sql
    lm = smollm2()
    kept, healed = lm.partial_ids(text.encode())
    free = greedy_unconstrained(lm, lm.prompt_ids(prompt) + kept, 20)
    # The longest run of the model's own tokens that keeps the text valid.
    valid = 0
    for i in range(1, len(free) + 1):
        piece = lm.ll_tokenizer.decode_bytes(free[:i])
        if not piece.startswith(healed) or free[i - 1] in lm.eos_token_ids:
            break
        body = piece[len(healed) :].decode("utf-8", errors="ignore")
        if grammar.valid_prefix(text + body) != len(text + body):
            break
        valid = i
    assert valid >= 6, lm.ll_tokenizer.dbg_tokens(free)
    ends = valid < len(free) and free[valid] in lm.eos_token_ids
    target = TargetModel(lm)
    c = target.continue_text(prompt, text, grammar, max_new_tokens=valid + ends, min_terminals=10**6)
    assert list(target.last_token_ids[len(kept) :]) == free[:valid]
    if ends:  # the model ended a complete text: so does the target
        assert c.stop_reason == "eos" and c.complete


# -- KV cache across calls -------------------------------------------------------------------------


@pytest.mark.model
def test_later_calls_reuse_the_kv_cache(json_grammar):
    lm = smollm2()
    target = TargetModel(lm)
    text = '{"name": "Bob"'
    first = target.continue_text(PERSON_PROMPT, text, json_grammar, max_new_tokens=8)
    saved_before = target.prefill_tokens_saved
    fed_before = target.prefill_tokens
    # The guide loop accepted the continuation plus a draft's text: only the new tail is fed.
    longer = text + first.text + ' "age": 3'
    second = target.continue_text(PERSON_PROMPT, longer, json_grammar, max_new_tokens=8)
    assert target.prefill_tokens_saved - saved_before >= len(lm.prompt_ids(PERSON_PROMPT)) + 4
    assert target.prefill_tokens - fed_before <= 8
    fresh = TargetModel(lm).continue_text(PERSON_PROMPT, longer, json_grammar, max_new_tokens=8)
    assert second.text == fresh.text


@pytest.mark.model
def test_guessed_tokens_change_nothing_but_the_forward_passes():
    lm = smollm2()
    pairs = ' ("," STRING ":" STRING)~11'
    grammar = Grammar.from_lark(
        f'start: "{{" STRING ":" STRING{pairs} "}}"\n%import common.ESCAPED_STRING -> STRING\n'
        "%import common.WS\n%ignore WS\n"
    )
    prompt = "Here is a JSON object, with 12 keys, using only string values:\n\n```json\n"
    plain, guessing = TargetModel(lm, lookup=0), TargetModel(lm)
    out = [t.continue_text(prompt, "", grammar, max_new_tokens=200, finish=True) for t in (plain, guessing)]
    assert out[0].text == out[1].text and out[1].complete
    assert out[0].sampled_tokens == out[1].sampled_tokens
    assert plain.lookup is None and guessing.lookup.right >= 20
    assert guessing.kv_cache.forward_passes <= plain.kv_cache.forward_passes - guessing.lookup.right
    with pytest.raises(ValueError):
        TargetModel(lm, lookup=-1)


@pytest.mark.model
def test_async_calls_run_one_at_a_time(json_grammar, small_sql):
    target = TargetModel.load()

    async def both():
        return await asyncio.gather(
            target.acontinue_text(PERSON_PROMPT, '{"a": ', json_grammar, max_new_tokens=6),
            target.acontinue_text(SQL_PROMPT, "SELECT name", small_sql, max_new_tokens=6),
        )

    a, b = asyncio.run(both())
    assert json_grammar.valid_prefix('{"a": ' + a.text) == len('{"a": ' + a.text)
    assert small_sql.valid_prefix("SELECT name" + b.text) == len("SELECT name" + b.text)
    assert target.count_tokens("SELECT name FROM users") == smollm2().count_tokens("SELECT name FROM users")


# -- progress --------------------------------------------------------------------------------------


@pytest.mark.model
def test_the_text_is_reported_as_it_is_written(json_grammar):
    target = TargetModel(smollm2())
    text = '{"name": "Ad'  # a healed boundary: "Ad" is re-written, never reported again
    pieces: list[str] = []
    c = target.continue_text(PERSON_PROMPT, text, json_grammar, max_new_tokens=40, finish=True, on_text=pieces.append)
    assert c.healed_text and c.text and len(pieces) > 1
    assert "".join(pieces) == c.text

    async def streamed() -> tuple[Continuation, list[tuple[str, bool]]]:
        loop = asyncio.get_running_loop()
        seen: list[tuple[str, bool]] = []

        def on_text(piece: str) -> None:
            # Called on the event loop's thread, not the target's worker.
            seen.append((piece, asyncio.get_running_loop() is loop))

        return await target.acontinue_text(
            PERSON_PROMPT, text, json_grammar, max_new_tokens=40, finish=True, on_text=on_text
        ), seen

    again, seen = asyncio.run(streamed())
    assert again.text == c.text and "".join(p for p, _ in seen) == c.text and all(ok for _, ok in seen)


def test_log_likelihoods_score_every_text_in_one_batched_pass():
    """The batched pass over the texts' tails gives what one forward pass per text gives, less
    the part they share (the same for each), and calls the model once for the tails."""
    import torch

    target = TargetModel(tiny_model())
    texts = ["SELECT name FROM users WHERE age > 30", "SELECT name FROM users WHERE age < 30", "SELECT 1"]
    passes = target.kv_cache.forward_passes
    scores = target.log_likelihoods(SQL_PROMPT, texts)
    assert target.kv_cache.forward_passes - passes <= 2  # the shared context (if not cached), the tails
    lm = target.lm
    prompt = lm.prompt_ids(SQL_PROMPT)
    full = []
    for text in texts:
        ids = prompt + lm.text_ids(text)
        with torch.inference_mode():
            logits = lm.model(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)
        full.append(sum(float(logits[i - 1, ids[i]]) for i in range(len(prompt), len(ids))))
    shared = full[0] - scores[0]
    assert all(abs(f - s - shared) < 1e-3 for f, s in zip(full, scores, strict=True))
    assert target.log_likelihoods(SQL_PROMPT, texts[:1]) == [0.0]  # one text: all of it is shared


def test_a_number_or_a_name_the_target_runs_on_is_ended():
    # "> 50" became "> 500000001000000100…" with a target looping on digits: a run of digits
    # (or of word characters) longer than any value the draft wrote is ended where the grammar
    # allows something else.
    grammar = Grammar.from_lark('start: "x = " NUMBER ";"?\nNUMBER: /[0-9]+/')
    target = TargetModel(smollm2(), temperature=0)
    prompt = "Write x = followed by a one and sixty zeros."
    c = target.continue_text(prompt, "x = 10000000000", grammar, max_new_tokens=40, finish=True)
    assert grammar.is_complete("x = 10000000000" + c.text)
    assert c.text.rstrip(";").isdigit() and len("10000000000" + c.text.rstrip(";")) <= 20
    unbounded = Grammar.from_lark('start: "x = " NUMBER\nNUMBER: /[0-9]+/')
    # Where nothing else is allowed the run goes on: the cap never leaves the grammar.
    c = target.continue_text(prompt, "x = 1", unbounded, max_new_tokens=30, min_terminals=10**6)
    assert c.text.isdigit()
