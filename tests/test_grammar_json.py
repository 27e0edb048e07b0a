"""grammars/json.lark is strict RFC 8259 JSON: checked both ways against ``json.loads``.

The oracle is ``json.loads`` with NaN, Infinity and -Infinity refused (Python accepts them by
default; RFC 8259 section 6 does not). Two deliberate decisions, both where the RFC's grammar and
``json.loads`` agree:

- Lone surrogate escapes (``"\\ud800"``) are accepted: the RFC's ABNF allows any ``\\uXXXX``
  (section 8.2 only warns that such strings behave unpredictably), and ``json.loads`` accepts them.
- Whitespace is exactly ``[ \\t\\n\\r]`` and only around values and structural characters; a raw
  control character (U+0000-U+001F) inside a string is rejected (``json.loads`` in its default
  ``strict=True`` mode rejects it too).

The JSON files of the JSON-Schema test suite come from the ``jsonschema`` sdist, downloaded with
pip into a cache outside the repository (``$GRAMMAR_GUIDE_CACHE``, default
``~/.cache/grammar-guide``) on first use.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammar_guide import Correction, Grammar, guide


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def json_ok(text: str) -> bool:
    """Whether ``text`` is one RFC 8259 JSON text, by ``json.loads`` without NaN/Infinity."""
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return False
    except RecursionError:  # pragma: no cover - our documents are shallow
        return False
    return True


@pytest.fixture(scope="module")
def grammar() -> Grammar:
    return Grammar.builtin("json")


def verdict(grammar: Grammar, text: str) -> tuple[bool, int]:
    checker = grammar.checker()
    n = checker.feed(text)
    return n == len(text) and checker.is_complete, n


@pytest.mark.parametrize(
    "text, ok",
    [
        ("0", True),
        ("-0.0e+0", True),
        ("1E400", True),  # a number out of float range is still JSON
        ('"\\ud800"', True),  # lone surrogate escape: allowed by the ABNF and by json.loads
        ('"\\uD834\\uDd1E"', True),
        (' \t\n\r{"a" : [ 1 , 2 ] }\r\n\t ', True),
        ('"\x7f é \u2028"', True),  # DEL and non-ASCII are not control characters to JSON
        ("01", False),
        ("1.", False),
        (".5", False),
        ("+1", False),
        ("0x10", False),
        ("NaN", False),
        ("Infinity", False),
        ("-Infinity", False),
        ("[1,]", False),
        ('{"a":1,}', False),
        ("{'a':1}", False),
        ('"\x00"', False),
        ('"\x1f"', False),
        ('"a\nb"', False),
        ('"\\x41"', False),
        ('"\\u12"', False),
        ("\ufeff1", False),  # a BOM is not whitespace
        ("\x0c1", False),  # form feed is not JSON whitespace
        ("1 2", False),
        ("", False),
        (" ", False),
        ("True", False),
        ("nul", False),
    ],
)
def test_examples_agree_with_json_loads(grammar: Grammar, text: str, ok: bool):
    assert json_ok(text) == ok
    assert verdict(grammar, text)[0] == ok


def test_incomplete_prefixes_are_prefixes_not_errors(grammar: Grammar):
    for text in ["nul", '{"a": [1, 2', '"abc', "-", "1e", "1e+", "[", '{"a"', '"\\u00']:
        complete, n = verdict(grammar, text)
        assert not complete and n == len(text), text


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8")),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=15,
)
WHITESPACE = [" ", "\t", "\n", "\r", "\r\n  "]


def spread_whitespace(text: str, rng: random.Random) -> str:
    """Insert JSON whitespace around structural characters (outside strings)."""
    out, in_string, escaped = [], False, False
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in "{}[],:" and rng.random() < 0.5:
            out.append(rng.choice(WHITESPACE) + ch + rng.choice(WHITESPACE))
        else:
            out.append(ch)
        in_string = ch == '"'
    return "".join(out)


MUTATION_ALPHABET = [*'{}[],:"\\ \t\n\r0123456789eE.+-tfnulrasNIy/bu', "\x00", "\x1f", "é", "\ufeff"]


def mutate(text: str, rng: random.Random) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(["delete", "insert", "replace", "duplicate"])
        i = rng.randrange(len(chars) + 1)
        if op == "insert" or not chars:
            chars.insert(i, rng.choice(MUTATION_ALPHABET))
        elif i == len(chars):
            continue
        elif op == "delete":
            del chars[i]
        elif op == "replace":
            chars[i] = rng.choice(MUTATION_ALPHABET)
        else:
            chars.insert(i, chars[i])
    return "".join(chars)


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, seed=st.integers(0, 2**32 - 1), ascii_=st.booleans())
def test_generated_and_mutated_documents_agree_with_json_loads(grammar: Grammar, value, seed: int, ascii_: bool):
    rng = random.Random(seed)
    text = spread_whitespace(json.dumps(value, ensure_ascii=ascii_), rng)
    assert json_ok(text)
    assert verdict(grammar, text)[0], text
    for _ in range(4):
        mutated = mutate(text, rng)
        complete, n = verdict(grammar, mutated)
        assert complete == json_ok(mutated), mutated
        if not complete and n < len(mutated):
            # Whatever the checker rejects, no JSON text starts with the accepted text plus the
            # rejected character: closing it any way json.loads would like must fail too.
            assert not json_ok(mutated[: n + 1])


# -- the JSON-Schema test suite -------------------------------------------------------------------


def _cache_dir() -> Path:
    return Path(os.environ.get("GRAMMAR_GUIDE_CACHE") or Path.home() / ".cache" / "grammar-guide")


@pytest.fixture(scope="module")
def schema_suite_files() -> list[tuple[str, str]]:
    """(name, text) of every .json file in the jsonschema sdist (the JSON-Schema test suite)."""
    cache = _cache_dir() / "sdists"
    cache.mkdir(parents=True, exist_ok=True)
    sdists = sorted(cache.glob("jsonschema-*.tar.gz"))
    if not sdists:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "jsonschema",
                "-d",
                str(cache),
            ],
            check=True,
        )
        sdists = sorted(cache.glob("jsonschema-*.tar.gz"))
    files = []
    with tarfile.open(sdists[-1]) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".json") and "/json/" in member.name:
                data = tar.extractfile(member)
                assert data is not None
                files.append((member.name, data.read().decode("utf-8")))
    assert len(files) > 300, "the jsonschema sdist should carry the JSON-Schema test suite"
    return files


def test_json_schema_test_suite_files(grammar: Grammar, schema_suite_files):
    rng = random.Random(8259)
    documents = mutated_total = rejected = 0
    for name, text in schema_suite_files:
        assert json_ok(text), name
        assert verdict(grammar, text)[0], name
        documents += 1
        # Every schema and instance in the file, re-serialised, and mutations of them.
        for group in json.loads(text) if text.lstrip().startswith("[") else [json.loads(text)]:
            parts = [group.get("schema", group)] if isinstance(group, dict) else [group]
            if isinstance(group, dict):
                parts += [test.get("data") for test in group.get("tests", []) if isinstance(test, dict)]
            for part in parts:
                doc = json.dumps(part, ensure_ascii=rng.random() < 0.5)
                assert verdict(grammar, doc)[0], doc
                documents += 1
                mutated = mutate(doc, rng)
                ok = json_ok(mutated)
                assert verdict(grammar, mutated)[0] == ok, mutated
                mutated_total += 1
                rejected += not ok
    # Figures for grammars/README.md (printed with -s).
    print(
        f"\njson.lark vs json.loads: {documents} suite documents accepted, "
        f"{mutated_total} mutations agreed ({rejected} invalid, {mutated_total - rejected} valid)"
    )
    assert documents > 3000 and rejected > 500


# -- a truncated answer under a JSON Schema (issue 25 item 2) -----------------------------------

_REQUIRED = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ('{"name": "Ada"', '{"name": "Ada","age":0}'),  # the required member it lacks
        ('{"name": "Ada", "age', '{"name": "Ada", "age":0}'),  # a required key cut short
    ],
)
def test_a_required_member_a_truncated_answer_lacks_is_written_least_and_recorded_invented(answer: str, text: str):

    result = guide(lambda prompt: answer, Grammar.from_json_schema(_REQUIRED), "p", target=False)
    assert result.complete and result.text == text
    assert result.changes.invented == 1 and not result.faithful
    (completion,) = [e for e in result.events if isinstance(e, Correction) and e.source == "completion"]
    # (After the key cut short, the grammar forces its closing quote: not invented.)
    assert text.endswith(completion.text) and completion.text[0] in ",:" and "JSON Schema requires" in completion.detail
    assert [o.source for o in result.origins if o.start >= len(answer)] in (["completion"], ["forced", "completion"])


def test_a_close_that_the_schema_allows_invents_nothing():

    result = guide(lambda prompt: '{"name": "Ada", "age": 36', Grammar.from_json_schema(_REQUIRED), "p", target=False)
    assert result.text == '{"name": "Ada", "age": 36}'
    assert result.changes.invented == 0 and result.changes.closed == 1
