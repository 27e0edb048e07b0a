"""A target caught in a loop stops where its text would write a unit a fourth time in a row:
fake targets, no model (issue 28 item 4)."""

from __future__ import annotations

from typing import ClassVar

import pytest

import grammar_guide as gg
from grammar_guide._loops import text_repeats
from grammar_guide.local.decoding import Continuation


@pytest.mark.parametrize(
    ("text", "loops"),
    [
        (b'extra == "a" and extra == "a" and extra == "a" and extra == "a" and', True),
        (b'extra == "a" and extra == "a" and extra == "a" and', False),
        (b"// pytket-language-language-language-language-", True),
        (b"// \n// \n// \n// \n", True),  # a unit of two marks, white space aside
        (b"[0, 0, 0, 0, 0, 0,", False),  # data, not a loop
        (b"f(g(h(x)))))))))", False),  # closing, not a loop
        (b"100000000", False),  # a number: its length is bounded elsewhere
    ],
)
def test_a_loop_is_a_unit_of_two_bytes_or_more_written_four_times(text, loops):
    assert text_repeats(text) is loops


class LoopingTarget:
    """Writes the next terminal of ``extra == "a" and`` after the text's end, a step at a time,
    over and over, as a small model caught in a loop does."""

    NEXT: ClassVar[dict[str, str]] = {"extra": " == ", " == ": '"a"', '"a"': " and ", " and ": "extra"}

    def __init__(self) -> None:
        self.calls = 0

    async def acontinue_text(self, prompt, text, grammar, **kwargs) -> Continuation:
        self.calls += 1
        piece = next(after for end, after in self.NEXT.items() if text.endswith(end))
        return Continuation(piece, 1, 0, 0, "", (), False, "terminal", 0.0)

    async def alog_likelihoods(self, prompt: str, texts: list[str]) -> list[float]:
        return [-float(len(t)) for t in texts]

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_the_targets_steps_stop_where_they_would_loop():
    """Each step is a terminal: no step alone repeats a unit, the text they write does. The step
    that would write ``extra == "a" and`` a fourth time is taken back, the target stops, and the
    least text closes."""
    grammar = gg.Grammar.from_lark(
        'start: item (" and " item)* " done"\nitem: NAME " == " STRING\nNAME: /[a-z]+/\nSTRING: /"[a-z]*"/',
        name="loop",
    )
    target = LoopingTarget()
    result = gg.guide(lambda prompt: "extra", grammar, "q", target)
    assert result.text == 'extra == "a" and extra == "a" and extra == "a" and extra == "a" done'
    assert target.calls < 20  # 257 calls before: the finish's budget, then the target to the end
