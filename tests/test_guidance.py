"""Grammar.from_guidance: grammars built with guidance's own nodes. guidance 0.3.1 pins
llguidance==1.5.0, so this runs in ``make floors`` (the venv at the declared floors, where guidance
is installed); the main test venv has llguidance 1.9 and no guidance."""

from __future__ import annotations

import pytest

from grammar_guide import Grammar, GrammarError

guidance = pytest.importorskip("guidance", reason="installed by `make floors` (it pins llguidance 1.5.0)")


def test_a_guidance_grammar_checks_like_any_grammar():
    node = "SELECT " + guidance.select(["name", "age"]) + " FROM " + guidance.regex(r"[a-z_]+")
    grammar = Grammar.from_guidance(node)
    assert grammar.is_complete("SELECT age FROM users")
    assert grammar.valid_prefix("SELECT email FROM users") == len("SELECT ")
    assert not grammar.is_complete("SELECT name FROM")


def test_a_guidance_json_schema_node():
    grammar = Grammar.from_guidance(
        guidance.json(
            schema={
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": ["n"],
                "additionalProperties": False,
            }
        )
    )
    assert grammar.is_complete('{"n": 3}')
    assert not grammar.is_complete('{"n": "3"}')


def test_what_is_not_a_guidance_grammar_is_refused():
    with pytest.raises(TypeError, match="guidance grammar"):
        Grammar.from_guidance("start: a")
    with pytest.raises(GrammarError, match="no Lark form"):
        Grammar.from_guidance(guidance.select(["a", "b"])).to_plain_lark()
