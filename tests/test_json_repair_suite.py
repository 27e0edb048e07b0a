"""benchmarks/json_repair_suite.py's parts on a small clone written here, in the shape of
json_repair's tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import _common, json_repair_suite
from benchmarks.json_repair_suite import (
    NO_JSON,
    Case,
    invented_words,
    json_repair_method,
    ours,
    outcome,
    peers_agree,
    read_cases,
    run_case,
    summarise,
)

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


def test_guide_exhausted_is_recorded_as_such(tmp_path: Path) -> None:
    case = Case("c", "nothing here", NO_JSON, "dev")
    got = run_case(case, ours(False))
    assert got.exhausted and not got.valid and got.agrees  # no JSON, as json_repair reads it


def test_agreement_is_also_counted_where_the_peers_agree() -> None:
    cases = [Case("c", "[1,", [1], "dev"), Case("c", "{a", {"a": None}, "dev")]
    peer = [outcome(cases[0], "[1]", 0.0), outcome(cases[1], '{"a": null}', 0.0)]
    other = [outcome(cases[0], "[1]", 0.0), outcome(cases[1], '{"a": ""}', 0.0)]
    agreed = peers_agree(cases, {"json_repair": peer, "jsonrepair": other})
    assert agreed == [True, False]
    mine = [outcome(cases[0], "[1]", 0.0), outcome(cases[1], "{}", 0.0, exhausted=False)]
    summary = summarise(mine, agreed)
    assert summary["agrees"] == 0.5 and summary["agrees_where_peers_agree"] == 1.0
    # A refusal where json_repair finds no JSON is left out of validity where JSON is expected.
    none = Case("c", "]", NO_JSON, "dev")
    summary = summarise([*mine, outcome(none, None, 0.0, exhausted=True)], [*agreed, False])
    assert summary["valid"] == 2 / 3 and summary["valid_where_json_expected"] == 1.0
    assert summary["peers_agree_cases"] == 1


def test_one_split_is_run_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # --split dev: the held-out cases are neither run nor printed (tuning on dev leaves them unread).
    monkeypatch.setattr(_common, "RESULTS", tmp_path / "results")
    cases = read_cases(clone(tmp_path))
    assert json_repair_suite.main([str(tmp_path), "--split", "dev", "--repeat", "1"]) == 0
    printed = capsys.readouterr().out
    assert "### dev" in printed and "held-out" not in printed
    written = json.loads((tmp_path / "results" / "json_repair_suite.json").read_text(encoding="utf-8"))
    assert list(written["splits"]) == ["dev"]
    dev = sum(c.split == "dev" for c in cases)
    assert written["splits"]["dev"]["all/ours"]["cases"] == dev
