"""The character-level rules reshaped for the matcher (``compiler.rule_shape``): same language, fewer items."""

from __future__ import annotations

import pytest

from grammar_guide.compiler.rule_shape import Rules, for_matcher, plain_alternatives, reshaped, size, written

A, B, C, D = "/[a]/", "/[b]/", "/[c]/", "/[\\-]/"


def language(rules: Rules, start: str, longest: int) -> set[tuple[str, ...]]:
    """The lexeme sequences of up to ``longest`` lexemes that ``start`` derives (list rules only)."""
    found: dict[str, set[tuple[str, ...]]] = {n: set() for n in rules}
    changed = True
    while changed:
        changed = False
        for name, alternatives in rules.items():
            assert not isinstance(alternatives, str)
            for alt in alternatives:
                texts: set[tuple[str, ...]] = {()}
                for symbol in alt:
                    theirs = found[symbol] if symbol in rules else {(symbol,)}
                    texts = {t + u for t in texts for u in theirs if len(t + u) <= longest}
                if not texts <= found[name]:
                    found[name] |= texts
                    changed = True
    return found[start]


CASES: dict[str, Rules] = {
    "chain": {"start": [["s"]], "s": [["h", C]], "h": [[A, "k"]], "k": [[B]]},
    "shared prefixes": {"start": [["s"]], "s": [[A, B], [A], [], [A, B, C], [B, "s"], [A, "s", C]]},
    "left recursion": {"start": [["e"]], "e": [["e", D, "t"], ["t"]], "t": [[A], [A, B], ["p"]], "p": [[C, "e", C]]},
    "empty rule inlined": {"start": [["s"]], "s": [["n", A, "n"], ["n"]], "n": [[]]},
    "used twice": {"start": [["s"]], "s": [["x", "x"], ["x", A]], "x": [[B, C]]},
    "a helper's name taken": {"start": [["s"], ["s_f0"]], "s": [[A, B], [A, C]], "s_f0": [[C], [C, A]]},
}


@pytest.mark.parametrize("name", CASES)
def test_reshaping_keeps_the_language(name: str) -> None:
    rules = CASES[name]
    after = reshaped(rules, {"start"}, ["start"])
    assert language(after, "start", 7) == language(rules, "start", 7)


def test_a_rule_of_one_plain_alternative_is_written_where_it_is_used() -> None:
    after = reshaped(CASES["chain"], {"start"}, ["start"])
    assert after == {"start": [[A, B, C]]}


def test_alternatives_that_begin_alike_share_their_beginning() -> None:
    after = reshaped({"start": [["s"], [C]], "s": [[A, B], [A, C], [A], [B]]}, {"start"}, ["start"])
    assert after["start"] == [["s"], [C]]
    assert after["s"] == [[A, "s_f0"], [B]]
    assert after["s_f0"] == [[B], [C], []]


def test_a_helper_is_named_apart_from_the_rules_there_are() -> None:
    after = reshaped(CASES["a helper's name taken"], {"start"}, ["start"])
    assert after["s_f0"] == [[C, "s_f0_f0"]]
    assert after["s"] == [[A, "s_f1"]] and after["s_f1"] == [[B], [C]]


def test_kept_rules_and_rules_that_text_bodies_use_stay() -> None:
    rules: Rules = {"start": [["t"], ["u"]], "t": [[A, "u"]], "u": [[B]], "w": "/[c]/* u"}
    assert set(reshaped(rules, {"start", "t"}, ["start"])) == {"start", "t"}
    assert set(reshaped({**rules, "start": [["t"], ["w"]]}, {"start", "t"}, ["start"])) == {"start", "t", "w", "u"}


@pytest.mark.parametrize(
    ("body", "alternatives"),
    [
        ("a | /[\\x41-\\x5a]/ b |", [["a"], ["/[\\x41-\\x5a]/", "b"], []]),
        ("", [[]]),
        ("(/[a]/)+", None),
        ("/[a]/* b", None),
        ('""', None),
    ],
)
def test_only_plain_bodies_are_read_as_alternatives(body: str, alternatives: list[list[str]] | None) -> None:
    assert plain_alternatives(body) == alternatives


def test_an_empty_alternative_is_written_as_a_trailing_bar() -> None:
    assert written("s", [[A], [], [B]]) == f"s: {A} | {B} |"
    assert written("s", [[]]) == "s:"


def test_terminals_stay_rules_where_inlining_them_would_grow_the_grammar_past_its_bound() -> None:
    word = [[f"/[\\x{0x61 + i:02x}]/" for i in range(10)]]
    uses = [[f"u{i}"] for i in range(20)]
    rules: Rules = {
        "start": uses,
        "w": word,
        **{f"u{i}": [["w", f"/[\\x{0x30 + i % 10:02x}]/"], ["w"]] for i in range(20)},
    }
    assert "w" not in reshaped(rules, {"start"}, ["start"])  # inlined everywhere: 20 times its 10 lexemes
    shaped = for_matcher(rules, {"start"}, ["start"], {"w"})
    assert "w" in shaped
    assert size(shaped) <= 2 * size(rules)
    assert language(shaped, "start", 11) == language(rules, "start", 11)
