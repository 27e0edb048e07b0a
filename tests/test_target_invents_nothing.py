"""With a target, a text that closing ends is closed, and a tie is not broken towards dropping
the draft's text: fake targets, no model."""

from __future__ import annotations

import pytest

import grammar_guide as gg


class ShortestIsLikeliest:
    """Scores a text by its length alone (a model's log-likelihood falls with each token), and
    fails the test if it is asked to write."""

    def __init__(self) -> None:
        self.scored: list[list[str]] = []

    async def acontinue_text(self, *args, **kwargs):
        raise AssertionError("the target was asked to write where closing was enough")

    async def alog_likelihoods(self, prompt: str, texts: list[str]) -> list[float]:
        self.scored.append(texts)
        return [-float(len(t)) for t in texts]

    def count_tokens(self, text: str) -> int:
        return len(text.split())


@pytest.mark.parametrize(
    ("draft", "expected"),
    [
        ("[2e+]", "[2]"),  # the target wrote [2e+2, 2e+2]
        ('{"a":2,]', '{"a":2}'),  # the target wrote {"a":2,"":0} after 256 tokens of keys
        ("[1, 2,) ", "[1, 2]"),
        # Comments and an ellipsis one after another, dropped together (grammar data): no one of
        # them alone lets the text read on, so the target wrote an invented member there.
        ('{"x": 1, /* one */ ... /* two */}', '{"x": 1}'),
        ('[\n  "p",\n  // more\n  …\n]', '[\n  "p"\n]'),
    ],
)
def test_marks_no_edit_fixes_at_the_answers_end_are_closed_not_written_over(json_grammar, draft, expected):
    result = gg.guide(lambda prompt: draft, json_grammar, "q", ShortestIsLikeliest())
    assert result.text == expected and result.complete
    assert not result.changes.invented


def test_a_word_no_edit_fixes_is_still_the_targets_to_write_over(json_grammar):
    with pytest.raises(AssertionError, match="asked to write"):
        gg.guide(lambda prompt: '{"a": 1 ]] x', json_grammar, "q", ShortestIsLikeliest())


def test_the_target_breaks_ties_only_among_edits_that_drop_least(json_grammar):
    """Dropping `` carrot"}`` as a key with no value ties with escaping the quote before it; the
    shorter text is likelier to any model, so the target is not asked to choose between them."""
    target = ShortestIsLikeliest()
    result = gg.guide(lambda prompt: '{"key": "apple "bee" carrot"}', json_grammar, "q", target)
    assert result.text == '{"key": "apple \\"bee\\" carrot"}' and result.faithful
    assert all(len(texts) > 1 for texts in target.scored)  # (a tie it is asked about is a real one)
