"""The target's token masks and forced tokens follow lark's language (issue 19), tried on issue
19's minimal cases and typical grammars read at the character level, at SmolLM2's real 49k-token
vocabulary.

After a valid prefix, a token is lark-valid when ``prefix + token`` is a valid prefix by lark's
Earley parser (the oracle of ``tests/test_differential.py``). The mask must allow exactly the
lark-valid tokens, with one narrowing that llguidance makes on purpose: where the grammar forces
the next bytes, the mask holds only tokens of those bytes' canonical tokenization (after
``listen`` under ``"list" | "listen"`` then ``"ed"``, the token ``ed``, not ``e``). Forced text
(``Checker.forced_text`` and the target's fast-forward tokens) must begin every lark-valid
continuation.

The lark-valid tokens are found by walking the vocabulary's characters as a trie (valid prefixes
are prefix-closed, so one lark verdict per trie node reached). A token that ends inside a UTF-8
character (byte-level BPE pieces such as ``\\xd9``, the start of an Arabic-Indic digit) is
lark-valid when some completion of that character is: the mask allowing one must have a
completion lark accepts (found by following the byte checker, then confirmed by lark); the mask
refusing one must have none among a sample of completions.
"""

from __future__ import annotations

import functools
import random

import llguidance as llg
import pytest

from grammar_guide import Checker, Grammar
from grammar_guide.local.target import TargetModel
from grammar_guide.local.token_mask import STEP_MAX_ITEMS, token_mask
from tests.support.conftest_models import tiny_model
from tests.test_differential import COMMON_IMPORTS, FIXTURES, ISSUE_19, PROBE, Reference

# Grammar (from issue 19's minimal cases) -> valid prefixes to take the mask after.
CASES = {
    "stem-suffix": ["", "list", "liste", "listen"],
    "spaced-literals": ["", "(Yield", "(Yield (", "(Yield (Create", "(Yield (size foo"],
    "int-range-float": ["", "1", "1.", "12.", "1..", "1..5"],
    "literal-under-ignore": ["", "a", "a;", "a; ;", "a;b"],
    "newline-under-ignore": ["", "ab", "ab\n", "ab\ncd\n  "],
    "keyword-glued": ["", "print", "printx", "x =", "x = y; "],
    "tsv": ["", "ada", "ada\t", "ada\t36\n"],
    "unicode-classes": ["", "ab", "ab ", "x²"],
    # Typical grammars read at the character level: comments under %ignore, newlines.
    "c-like": ["int x", "int x = 1; //", "int x = 1; /* a */ ret", "if (x) {"],
    "config": ["[db]\n", "[db]\nport = 5", "[db]\nport = 5 # x\n"],
    "expressions": ["let x = ", "print", "let x = 1; # c\n"],
}
GRAMMARS = {**ISSUE_19, **COMMON_IMPORTS, **FIXTURES}
# Where the mask holds more than SAMPLE tokens (names, \w, TSV cells), a fixed sample of SAMPLE
# tokens of the vocabulary and SAMPLE of the allowed ones is compared instead of all 49k.
SAMPLE = 1000


@functools.cache
def target() -> TargetModel:
    return TargetModel(tiny_model(), lookup=0)


@functools.cache
def oracle(name: str, prefix: str) -> TokenOracle:
    return TokenOracle(reference(name), prefix)


@functools.cache
def reference(name: str) -> Reference:
    return Reference.of(Grammar.from_lark(GRAMMARS[name], name=name))


def lark_valid(ref: Reference, text: str) -> bool:
    return ref.status(text) in ("complete", "prefix")


class TokenOracle:
    """lark's verdict on each token after one prefix."""

    def __init__(self, ref: Reference, prefix: str) -> None:
        self.ref, self.prefix = ref, prefix
        self._valid: dict[str, bool] = {"": True}

    def valid_text(self, text: str) -> bool:
        """Whether ``prefix + text`` is a valid prefix, deciding each shorter one first."""
        if text not in self._valid:
            self._valid[text] = self.valid_text(text[:-1]) and lark_valid(self.ref, self.prefix + text)
        return self._valid[text]

    def token(self, data: bytes, allowed: bool) -> bool:
        """lark's verdict on a token's bytes (see the module docstring for partial characters)."""
        split = _split_partial(data)
        if split is None:
            return False  # not the beginning of UTF-8 text
        head, tail = split
        if not self.valid_text(head):
            return False
        if not tail:
            return True
        if allowed:
            return any(self.valid_text(head + c) for c in self._checker_completions(head, tail))
        rng = random.Random(data)
        return any(self.valid_text(head + c) for c in _random_completions(tail, rng, 48))

    def _checker_completions(self, head: str, tail: bytes, limit: int = 16) -> list[str]:
        """Up to ``limit`` whole characters beginning with ``tail`` that the byte checker accepts."""
        checker = self.ref.grammar.checker()
        checker.feed(self.prefix + head)
        found: list[str] = []

        def walk(c: Checker, data: bytes) -> None:
            if len(found) >= limit:
                return
            try:
                found.append(data.decode("utf-8"))
                return
            except UnicodeDecodeError:
                pass
            for b in sorted(c.allowed_bytes()):
                if 0x80 <= b <= 0xBF:
                    nxt = c.copy()
                    if nxt.feed(bytes([b])) == 1:
                        walk(nxt, data + bytes([b]))

        if checker.feed(tail) == len(tail):
            walk(checker, tail)
        return found


def _split_partial(data: bytes) -> tuple[str, bytes] | None:
    """The whole characters of ``data`` and the bytes of its unfinished last character (``None``
    when ``data`` is not the beginning of any UTF-8 text)."""
    for cut in range(len(data), max(-1, len(data) - 4), -1):
        try:
            head = data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        tail = data[cut:]
        return (head, tail) if not tail or _completions_exist(tail) else None
    return None


def _completions_exist(tail: bytes) -> bool:
    """Whether some character's UTF-8 bytes begin with ``tail`` (a lead byte, continuation bytes)."""
    for last in range(0x80, 0xC0):
        for more in (b"", b"\x80", b"\x80\x80", b"\xbf", b"\xbf\xbf"):
            try:
                (tail + bytes([last]) + more).decode("utf-8")
                return True
            except UnicodeDecodeError:
                continue
    return False


def _random_completions(tail: bytes, rng: random.Random, n: int) -> list[str]:
    lead = tail[0]
    length = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    out = []
    for _ in range(64 * n):
        if len(out) == n:
            break
        data = tail + bytes(rng.randint(0x80, 0xBF) for _ in range(length - len(tail)))
        try:
            out.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            continue  # an overlong form or a surrogate: no character
    return out


def matcher_after(grammar: Grammar, prefix: str, captured: bool) -> llg.LLMatcher:
    """The target's matcher for ``grammar`` (captured: with terminal captures, as it decodes
    grammars loaded from Lark) after the prefix's tokens."""
    tm = target()
    if captured:
        matcher, _ = tm.matchers.matcher(grammar)
    else:
        limits = llg.LLParserLimits(step_max_items=STEP_MAX_ITEMS)
        matcher = llg.LLMatcher(tm.lm.ll_tokenizer, grammar.llguidance_grammar, log_level=0, limits=limits)
    assert matcher.consume_tokens(tm.lm.text_ids(prefix)), (prefix, matcher.get_error())
    return matcher


@pytest.mark.parametrize("captured", [True, False], ids=["captured", "plain"])
@pytest.mark.parametrize(
    "name, prefix", [pytest.param(n, p, id=f"{n}:{p!r}") for n, prefixes in CASES.items() for p in prefixes]
)
def test_mask_is_larks_language(name: str, prefix: str, captured: bool) -> None:
    ref = reference(name)
    grammar = ref.grammar
    # All but TSV are read at the character level; TSV only needs Python's
    # control characters written exactly (the matcher's own lexer reads it).
    character_level = grammar.llguidance_grammar.startswith("start: gg_start__")
    assert character_level == (name != "tsv"), name
    assert lark_valid(ref, prefix), prefix
    tm = target()
    token_bytes = tm.lm.token_bytes
    eos = tm.lm.eos_token_ids
    matcher = matcher_after(grammar, prefix, captured)
    mask = token_mask(tm.lm, matcher)
    allowed = {int(i) for i in mask.nonzero().flatten().tolist()}
    checker = grammar.checker()
    assert checker.feed(prefix) == len(prefix)
    forced = checker.forced_bytes()

    ids = [i for i in range(tm.lm.n_vocab) if token_bytes[i]]
    sampled = len(allowed) > SAMPLE
    if sampled:
        rng = random.Random(prefix)
        ids = sorted(set(rng.sample(ids, SAMPLE)) | set(rng.sample(sorted(allowed - eos), SAMPLE)))
    verdicts = oracle(name, prefix)
    wrong_allowed, wrong_refused = [], []
    for i in ids:
        valid = verdicts.token(token_bytes[i], i in allowed)
        if i in allowed and not valid:
            wrong_allowed.append(token_bytes[i])
        elif valid and i not in allowed:
            # The one narrowing: a token of forced bytes, but not their canonical first token.
            data = token_bytes[i]
            if not (forced and (forced.startswith(data) or data.startswith(forced))):
                wrong_refused.append(data)
    assert not wrong_allowed, f"allowed, lark rejects: {wrong_allowed[:10]} ({len(wrong_allowed)})"
    assert not wrong_refused, f"refused, lark accepts: {wrong_refused[:10]} ({len(wrong_refused)})"
    assert sampled or not (allowed - set(ids) - eos), "a token with no bytes allowed"
    assert bool(allowed & eos) == (ref.status(prefix) == "complete")
    if forced:
        assert allowed, "bytes are forced, yet no token allowed"
        assert all(token_bytes[i].startswith(forced) or forced.startswith(token_bytes[i]) for i in allowed - eos)


@pytest.mark.parametrize(
    "name, prefix", [pytest.param(n, p, id=f"{n}:{p!r}") for n, prefixes in CASES.items() for p in prefixes]
)
def test_forced_text_begins_every_continuation(name: str, prefix: str) -> None:
    ref = reference(name)
    checker = ref.grammar.checker()
    assert checker.feed(prefix) == len(prefix)
    forced = checker.forced_text()
    assert lark_valid(ref, prefix + forced), (prefix, forced)
    for k in range(len(forced)):
        here = prefix + forced[:k]
        assert ref.status(here) != "complete", f"{here!r} is complete, yet {forced[k:]!r} is forced"
        others = [c for c in PROBE if c != forced[k] and lark_valid(ref, here + c)]
        assert not others, f"after {here!r} lark also accepts {others}, yet {forced[k:]!r} is forced"
    tm = target()
    for captured in (True, False):
        ff = matcher_after(ref.grammar, prefix, captured).compute_ff_tokens()
        data = b"".join(tm.lm.token_bytes[t] for t in ff)
        assert forced.encode().startswith(data), (prefix, forced, data)


def test_forced_text_and_mask_after_a_prefix_of_a_longer_literal() -> None:
    # The case that makes the narrowing visible: after "listen" the grammar forces "ed" (lark:
    # "listened" is the only way on); the mask holds the token "ed", and "e" is left out.
    ref = reference("stem-suffix")
    checker = ref.grammar.checker()
    checker.feed("listen")
    assert checker.forced_text() == "ed"
    tm = target()
    matcher = matcher_after(ref.grammar, "listen", captured=True)
    allowed = [tm.lm.token_bytes[int(i)] for i in token_mask(tm.lm, matcher).nonzero().flatten().tolist()]
    assert allowed == [b"ed"]
    assert [tm.lm.token_bytes[t] for t in matcher.compute_ff_tokens()] == [b"ed"]


def test_target_finishes_text_in_a_character_level_grammar() -> None:
    # At llguidance's default item limit (50,000) the mask after "let x = " failed and allowed
    # only EOS, so the target stopped with an incomplete text as if the model had chosen to end
    # (with that limit, this test fails: the target now raises when the matcher fails).
    grammar = reference("expressions").grammar
    c = target().continue_text("Write one statement.", "let x = ", grammar, max_new_tokens=40, finish=True)
    text = "let x = " + c.text
    assert grammar.valid_prefix(text) == len(text), text
    assert c.stop_reason != "eos" or (c.complete and grammar.is_complete(text)), (c.stop_reason, text)
    assert c.sampled_tokens + c.forced_tokens > 0
