"""benchmarks/json_repair_suite.py's parts on small clones written here, in the shape of
json_repair's and jsonrepair's tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import _common, json_repair_suite
from benchmarks.best_effort_json_tests import read_pairs as best_effort_read_pairs
from benchmarks.dirty_json_tests import read_pairs as dirty_json_read_pairs
from benchmarks.json_repair_suite import (
    BEST,
    DIRTY,
    NO_JSON,
    UNSEEN,
    Case,
    half,
    invented_words,
    json_repair_method,
    ours,
    outcome,
    peers_agree,
    read_best_effort_cases,
    read_cases,
    read_dirty_json_cases,
    read_jsonrepair_cases,
    run_case,
    summarise,
)
from benchmarks.jsonrepair_tests import Unreadable, decode_string, read_pairs

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
    assert all(c.split == half(c.broken) for c in cases)


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
    assert got.reason == "no answer" and got.rightly_refused


def test_a_refusal_is_right_only_where_the_expected_value_is_no_json_of_the_draft_text() -> None:
    # Ours refuses; the expected value is the draft's own words as a string: not rightly refused.
    words = outcome(Case("c", "hello world", "hello world", "dev"), None, 0.0, reason="no answer")
    # A digit nobody wrote ('-' read as 0): rightly; a budget's refusal is never counted so.
    digit = outcome(Case("c", "-", 0, "dev"), None, 0.0, reason="needs invention")
    budget = outcome(Case("c", "-", 0, "dev"), None, 0.0, reason="budget reached")
    assert (words.rightly_refused, digit.rightly_refused, budget.rightly_refused) == (False, True, False)
    summary = summarise([words, digit, budget, outcome(Case("c", "[1", [1], "dev"), "[1]", 0.0)], [False] * 4)
    assert summary["valid"] == 0.25 and summary["valid_or_rightly_refused"] == 0.5
    assert json_repair_suite.by_reason([words, digit, budget])["no answer"] == {"cases": 1, "rightly": 0}


def test_agreement_is_also_counted_where_the_peers_agree() -> None:
    cases = [Case("c", "[1,", [1], "dev"), Case("c", "{a", {"a": None}, "dev")]
    peer = [outcome(cases[0], "[1]", 0.0), outcome(cases[1], '{"a": null}', 0.0)]
    other = [outcome(cases[0], "[1]", 0.0), outcome(cases[1], '{"a": ""}', 0.0)]
    agreed = peers_agree(cases, {"json_repair": peer, "jsonrepair": other})
    assert agreed == [True, False]
    mine = [outcome(cases[0], "[1]", 0.0), outcome(cases[1], "{}", 0.0)]
    summary = summarise(mine, agreed)
    assert summary["agrees"] == 0.5 and summary["agrees_where_peers_agree"] == 1.0
    # A refusal where json_repair finds no JSON is left out of validity where JSON is expected.
    none = Case("c", "]", NO_JSON, "dev")
    summary = summarise([*mine, outcome(none, None, 0.0, reason="no answer")], [*agreed, False])
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


# jsonrepair's tests (vitest TypeScript), in the shapes src/index.test.ts writes them.
JSONREPAIR_TESTS = r"""
import { jsonrepair as jsonRepairRegular } from './index'
const implementations = [{ name: 'regular', jsonrepair: jsonRepairRegular }]

describe.each(implementations)('jsonrepair [$name]', ({ jsonrepair }) => {
  describe('parse valid JSON', () => {
    test('object', () => {
      const text = '{"a":2}'
      const parsed = jsonrepair(text)
      expect(parsed).toBe(text)
      assertRepair("[1, \"hi\"]")
    })
  })

  describe('repair invalid JSON', () => {
    test('quotes and escapes', () => {
      expect(jsonrepair('{\'a\':2}')).toBe('{"a":2}')
      expect(jsonrepair("\u2018abc")).toEqual(`"abc"`)
      expect(jsonrepair('"\ud83d\ude00\u{1F600}\x41\
"')).toBe('"😀😀A"')
      expect(jsonrepair(String.raw`"a\tb"`)).toBe('"a\\tb"')
      // expect(jsonrepair('commented out')).toBe('""')
      /* expect(jsonrepair('also commented out')).toBe('""') */
      const doc =
        '{\n' +
        '  a: 1\n' +
        '}'
      expect(jsonrepair(doc)).toBe('{\n  "a": 1\n}')
      expect(jsonrepair('[1 2]'), '[1, 2]')
      expect(jsonrepair(`${'x'}`)).toBe('"x"')
      expect(jsonrepair('"\ud83d"')).toBe('"\ud83d"')
    })
  })

  test('throws', () => {
    expect(() => {
      console.log({ output: jsonrepair('') })
    }).toThrow(new JSONRepairError('Unexpected end of json string', 0))
    expect(() => console.log({ output: jsonrepair('{:2}') })).toThrow()
  })

  function assertRepair(text: string) {
    expect(jsonrepair(text)).toEqual(text)
  }
})
"""


def test_reads_jsonrepair_s_cases_from_its_vitest_file() -> None:
    reading = read_pairs(JSONREPAIR_TESTS)
    assert [(p.category, p.input, p.expected) for p in reading.pairs] == [
        ("parse valid JSON", '{"a":2}', '{"a":2}'),
        ("parse valid JSON", '[1, "hi"]', '[1, "hi"]'),
        ("repair invalid JSON", "{'a':2}", '{"a":2}'),
        ("repair invalid JSON", "\u2018abc", '"abc"'),
        ("repair invalid JSON", '"\U0001f600\U0001f600A"', '"\U0001f600\U0001f600A"'),
        ("repair invalid JSON", '"a\\tb"', '"a\\tb"'),
        ("repair invalid JSON", "{\n  a: 1\n}", '{\n  "a": 1\n}'),
        ("jsonrepair [regular]", "", None),
        ("jsonrepair [regular]", "{:2}", None),
    ]
    assert reading.unread == {
        "expect() with a message and no matcher (the test asserts nothing)": 1,
        "a template with ${...} substitutions": 1,
        "a lone UTF-16 surrogate (no UTF-8 text)": 1,
    }


def test_js_string_literals_decode_as_javascript_does() -> None:
    assert decode_string(r"a\'b\"c\\d\/e\qf\0") == "a'b\"c\\d/eqf\0"
    assert decode_string(r"\x41\u00e9\u{1F600}\ud83d\ude00\v") == "Aé\U0001f600\U0001f600\v"
    assert decode_string("line\\\r\nnext") == "linenext"
    assert decode_string("two\r\nlines", template=True) == "two\nlines"
    for bad, why in [("\\1", "octal"), ("a\nb", "line break"), ("\\u12", "escape"), ("\\udc00", "surrogate")]:
        with pytest.raises(Unreadable, match=why):
            decode_string(bad)


def test_jsonrepair_s_suite_is_its_own_source_halved_as_json_repair_s_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.test.ts").write_text(JSONREPAIR_TESTS, encoding="utf-8")
    cases, read = read_jsonrepair_cases(tmp_path)
    assert read["pairs"] == 9 and read["distinct"] == 9 and sum(read["unread"].values()) == 3
    assert {c.source for c in cases} == {UNSEEN} and {c.split for c in cases} == {"dev", "held-out"}
    assert all(c.split == half(c.broken) for c in cases)  # json_repair's cases are halved by it too
    assert [c.expected for c in cases if c.category.endswith("(no JSON)")] == [NO_JSON, NO_JSON]
    assert cases[2].expected == {"a": 2}
    monkeypatch.setattr(_common, "RESULTS", tmp_path / "results")
    assert json_repair_suite.main(["--jsonrepair-suite", str(tmp_path), "--repeat", "1", "--totals"]) == 0
    printed = capsys.readouterr().out
    assert "9 pairs read, 9 distinct inputs kept; not read: 3" in printed
    assert "parse valid JSON" not in printed  # --totals
    written = json.loads((tmp_path / "results" / "json_repair_suite.json").read_text(encoding="utf-8"))
    assert list(written["splits"]) == [f"{UNSEEN} dev", f"{UNSEEN} held-out"]
    assert sum(s["all/json_repair"]["cases"] for s in written["splits"].values()) == 9
    # --split dev runs only the dev half of jsonrepair's tests too.
    dev = sum(c.split == "dev" for c in cases)
    assert json_repair_suite.main(["--jsonrepair-suite", str(tmp_path), "--split", "dev", "--repeat", "1"]) == 0
    printed = capsys.readouterr().out
    assert f"### {UNSEEN} dev ({dev} cases)" in printed and "held-out" not in printed
    written = json.loads((tmp_path / "results" / "json_repair_suite.json").read_text(encoding="utf-8"))
    assert list(written["splits"]) == [f"{UNSEEN} dev"]


# dirty-json's tests (mocha JavaScript), in the shapes test/parser_test.js writes them (inputs of our own).
DIRTY_JSON_TESTS = r"""
const dJSON = require("../dirty-json");

function compareResultsToValid(invalid, valid, done, config) {
    let result = dJSON.parse(invalid, config);
    done(result);
}

describe("parser", function () {
    describe("valid", function (done) {
        it('keeps it', function (done) {
            compareResults("[7, \"x\"]", done);
        });
        it('reads files', function (done) {
            const str = fs.readFileSync("test/nst/" + f);
            compareResults(str, done);
        });
    });
    describe("invalid", function () {
        it('quotes keys', function(done) {
            compareResultsToValid('{k: 1}', '{"k": 1}', done);
            compareResultsToValid('{k: 1}', '{"k": 1}', done);
            compareResultsToValid('[x,' + "\n" + 'y]', '["x", "y"]', done);
            compareResultsToValid('[2]', '[3]', done);  // an expected value nobody gives
            compareResultsToValid('{"k": 1, "k": 2}', '{"k": {"value": 1}}', done, {"duplicateKeys": true});
        });
        it('reads a whole value', function(done) {
            const s = 'a "b"';
            const r = dJSON.parse('["' + s + '"]');
            assert.equal(r[0], s);
            assert.equal(r.length, 1);
            done();
        });
        it('reads a string', done => {
            const r = dJSON.parse("plain words");
            assert.equal("plain words", r);
            done();
        });
        it('reads parts only', function(done) {
            const r = dJSON.parse('{k: v, n: 2');
            assert.equal(r.k, "v");
            done();
        });
    });
    describe("throws", () => {
        it('on ]]', done => {
            try {
                dJSON.parse(']]');
                done(new Error("Should have thrown exception"));
            } catch (e) {
                done();
            }
        });
    });
});
"""


def test_reads_dirty_json_s_cases_from_its_mocha_file() -> None:
    reading = dirty_json_read_pairs(DIRTY_JSON_TESTS)
    assert [(p.category, p.input, p.expected) for p in reading.pairs] == [
        ("valid", '[7, "x"]', '[7, "x"]'),
        ("invalid", "{k: 1}", '{"k": 1}'),
        ("invalid", "{k: 1}", '{"k": 1}'),
        ("invalid", "[x,\ny]", '["x", "y"]'),
        ("invalid", "[2]", "[3]"),
        ("invalid", '["a "b""]', '["a \\"b\\""]'),
        ("invalid", "plain words", '"plain words"'),
        ("throws", "]]", None),
    ]
    assert reading.unread == {
        "an argument that is not a string literal or a const bound to one": 1,
        "an option of dirty-json's own passed to the test": 1,
        "assertions on parts of the value only (r[0], r.key, r.length)": 1,
    }


def test_dirty_json_s_suite_is_a_third_source_less_the_other_sources_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "test" / "nst" / "disabled").mkdir(parents=True)
    (tmp_path / "test" / "parser_test.js").write_text(DIRTY_JSON_TESTS, encoding="utf-8")
    (tmp_path / "test" / "nst" / "y_one.json").write_text('{"a": [1]}', encoding="utf-8")
    (tmp_path / "test" / "nst" / "disabled" / "y_two.json").write_text("[2]", encoding="utf-8")
    cases, read = read_dirty_json_cases(tmp_path, {"plain words"})
    assert read["pairs"] == 9 and read["distinct"] == 7 and read["in_other_sources"] == 1
    assert [c.expected for c in cases] == [[7, "x"], {"k": 1}, ["x", "y"], [3], ['a "b"'], NO_JSON, {"a": [1]}]
    assert {c.source for c in cases} == {DIRTY} and all(c.split == half(c.broken) for c in cases)
    assert cases[-1].category == "NST (valid JSON files)" and cases[-2].category == "throws (no JSON)"
    monkeypatch.setattr(_common, "RESULTS", tmp_path / "results")
    argv = ["--dirty-json-suite", str(tmp_path), "--repeat", "1", "--split", "dev", "--show", "dev"]
    assert json_repair_suite.main(argv) == 0
    printed = capsys.readouterr().out
    assert "9 pairs read, 8 distinct inputs kept; not read: 3" in printed
    assert "want [3]" not in printed  # --show never prints dirty-json's cases ([2] is a dev case)
    written = json.loads((tmp_path / "results" / "json_repair_suite.json").read_text(encoding="utf-8"))
    assert list(written["splits"]) == [f"{DIRTY} dev"]
    assert written["splits"][f"{DIRTY} dev"]["all/json_repair"]["cases"] == 5


# best-effort-json-parser's tests (mocha/chai TypeScript), in the shapes src/parse.spec.ts writes
# them (inputs of our own).
BEST_EFFORT_TESTS = r"""
describe('parser', function () {
  context('closing', () => {
    function testIncomplete(str: string, val: boolean) {
      for (let i = str.length; i >= 1; i--) {
        expect(parse(str.slice(0, i))).equals(val)
      }
    }
    it('closes', function () {
      expect(parse(`[7,`)).deep.equals([7])
      expect(parse(`{"k":"v","w`)).deep.equals({ k: 'v', w: undefined })
      expect(parse(`{"k":`)).deep.equals({
        'k': undefined,
      })
      expect(parse(`[-2.5, 'x'`)).deep.equals([-2.5, `x`, undefined])
      expect(parse('"a\\nb')).equals(
        'a\nb',
      )
      testIncomplete(`null`, null)
    })
    it('reads bound texts', function () {
      let text = `{ k: 1,
        m: 2 }`
      expect(parse(text)).deep.equals({ k: 1, m: 2 })
      expect(parse(JSON.stringify(o))).deep.equals(o)
      expect(parse(`[1]`)).to.have.lengthOf(1)
    })
  })
  it('throws', function () {
    expect(() => parse(`:x`)).to.throws()
  })
})
"""


def test_reads_best_effort_json_parser_s_cases_from_its_spec_file() -> None:
    reading = best_effort_read_pairs(BEST_EFFORT_TESTS)
    assert [(p.category, p.input, p.expected) for p in reading.pairs] == [
        ("closing", "[7,", "[7]"),
        ("closing", '{"k":"v","w', '{"k": "v"}'),  # JSON.stringify leaves an undefined member out
        ("closing", '{"k":', "{}"),
        ("closing", "[-2.5, 'x'", '[-2.5, "x", null]'),  # and writes an undefined element as null
        ("closing", '"a\\nb', '"a\\nb"'),
        *[("closing", text, "null") for text in ("null", "nul", "nu", "n")],
        ("closing", "{ k: 1,\n        m: 2 }", '{"k": 1, "m": 2}'),
        ("parser", ":x", None),
    ]
    assert reading.unread == {
        "an argument that is not a string literal or a const bound to one": 1,
        "a matcher other than equals (to.have.lengthOf)": 1,
    }


def test_best_effort_json_parser_s_suite_is_a_fourth_source(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "parse.spec.ts").write_text(BEST_EFFORT_TESTS, encoding="utf-8")
    cases, read = read_best_effort_cases(tmp_path, {"n", "[7,"})
    assert read["pairs"] == 11 and read["distinct"] == 9 and read["in_other_sources"] == 2
    assert {c.source for c in cases} == {BEST} and all(c.split == half(c.broken) for c in cases)
    assert cases[0].expected == {"k": "v"} and cases[-1].expected is NO_JSON
    assert cases[-1].collection == f"{BEST} {half(':x')}"
