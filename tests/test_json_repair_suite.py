"""benchmarks/json_repair_suite.py's parts on a small clone written here, in the shape of
json_repair's tests."""

from __future__ import annotations

from pathlib import Path

from benchmarks.json_repair_suite import NO_JSON, invented_words, json_repair_method, ours, read_cases, run_case

TESTS = """
from src.json_repair.json_repair import repair_json, loads

def test_things():
    assert repair_json("[1, 2, 3,") == "[1, 2, 3]"
    assert repair_json("{'a': True}", return_objects=True) == {"a": True}
    assert repair_json("nothing here") == ""
    assert repair_json("[1]", skip_json_loads=True) == "[1]"
    assert loads('{"a": 1') == {"a": 1}
    assert repair_json("[1, 2, 3,") == "[1, 2, 3]"
"""


def clone(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_parse_things.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def test_reads_the_literal_assertions_once_each(tmp_path: Path) -> None:
    cases = read_cases(clone(tmp_path))
    assert [(c.broken, c.expected) for c in cases if c.expected is not NO_JSON] == [
        ("[1, 2, 3,", [1, 2, 3]),
        ("{'a': True}", {"a": True}),
        ('{"a": 1', {"a": 1}),
    ]
    (no_json,) = [c for c in cases if c.expected is NO_JSON]  # skip_json_loads: left out
    assert no_json.category == "parse_things (no JSON)"
    assert {c.split for c in cases} <= {"dev", "held-out"}


def test_methods_are_scored_by_value(tmp_path: Path) -> None:
    cases = read_cases(clone(tmp_path))
    for method in (ours(False), json_repair_method()):
        outcome = run_case(cases[0], method)
        assert outcome.valid and outcome.agrees and outcome.invented == 0
    assert invented_words('["a", "zebra"]', "[a]") == 1
