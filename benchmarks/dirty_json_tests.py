"""dirty-json's own tests (RyanMarcus/dirty-json, ``test/parser_test.js`` and ``test/nst/*.json``)
read as (input, expected) pairs.

The file is mocha JavaScript. It is not run: its tokens (``benchmarks/jsonrepair_tests.py``'s
tokenizer, which decodes JavaScript string literals) are read for

- ``compareResultsToValid(X, Y, done)``: the broken text ``X`` and the JSON text ``Y`` dirty-json's
  maintainers expect (the helper compares ``JSON.stringify`` of both values); with a fourth argument
  (an option of dirty-json's own) the pair is not read;
- ``compareResults(X, done)``: ``X`` (valid JSON) read as itself;
- ``dJSON.parse(X); done(new Error(...))`` in a ``try``: ``X`` has no JSON to give (``expected``
  None);
- ``const r = dJSON.parse(X)`` followed, before the test's ``done()``, by ``assert.equal(r, Y)`` (or
  ``Y, r``) with ``Y`` a string: ``X`` gives the string ``Y``. Assertions on parts of the value
  (``r[0]``, ``r.key``, ``r.length``) say nothing of the rest: such a case is counted as not read.

``X`` and ``Y`` are string literals or a ``+`` of them. Named functions' bodies (the helpers) are not
read as tests. The category is the innermost ``describe`` title. The files ``test/nst/*.json``
(JSONTestSuite's accepted texts, which the file runs through ``compareResults``) are read as
themselves, in the category ``NST``; the ``disabled`` folder is not read, as the file does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.jsonrepair_tests import BindingReader, Pair, Reading, Unreadable, tokenize

TESTS = "test/parser_test.js"
NST = "test/nst"
NST_CATEGORY = "NST (valid JSON files)"
_PART = "assertions on parts of the value only (r[0], r.key, r.length)"


def read_clone(clone: Path) -> Reading:
    """The pairs of a clone's ``test/parser_test.js``, then its ``test/nst/*.json`` files."""
    reading = read_pairs((clone / TESTS).read_text(encoding="utf-8"))
    for path in sorted((clone / NST).glob("*.json")):
        text = path.read_text(encoding="utf-8")
        reading.pairs.append(Pair(NST_CATEGORY, text, text))
    return reading


def read_pairs(source: str) -> Reading:
    """Every dirty-json case of a mocha file's text (see the module's docstring)."""
    return _Reader(tokenize(source)).read()


class _Reader(BindingReader):
    def visit(self, i: int) -> int:
        self.enter(i)
        token = self.tokens[i]
        if token.kind != "name" or not self.is_punct(i + 1, "("):
            if self.is_name(i, "function") and self.tokens[i + 1].kind == "name":
                return self.after_function(i)  # a helper's body
            return i + 1
        if token.text == "describe" and self.tokens[i + 2].kind == "str":
            self.describes.append((self.tokens[i + 2].text, self.match[i + 1]))
        elif token.text == "compareResults":
            self.record(lambda: self.compare(i, 1))
        elif token.text == "compareResultsToValid":
            self.record(lambda: self.compare(i, 2))
        elif token.text == "parse" and self.is_punct(i - 1, ".") and self.is_name(i - 2, "dJSON"):
            self.record(lambda: self.parse_call(i))
        return i + 1

    def arguments(self, i: int) -> list[tuple[int, int]]:
        """The token ranges of the arguments of the call whose ``(`` is at ``i``."""
        close, start, ranges = self.match[i], i + 1, []
        j = start
        while j < close:
            if self.is_punct(j, ","):
                ranges.append((start, j))
                start = j + 1
            j = self.match.get(j, j) + 1
        if start < close:
            ranges.append((start, close))
        return ranges

    def compare(self, i: int, texts: int) -> Pair:
        """``compareResults(X, done)`` (``texts`` 1) or ``compareResultsToValid(X, Y, done)`` (2)."""
        args = self.arguments(i + 1)
        if len(args) > texts + 1:
            raise Unreadable("an option of dirty-json's own passed to the test")
        broken = self.string(*args[0])
        return Pair(self.category(), broken, self.string(*args[1]) if texts == 2 else broken)

    def parse_call(self, i: int) -> Pair:
        """``dJSON.parse(X)`` expected to throw, or bound to a name whose whole value is asserted."""
        args = self.arguments(i + 1)
        if len(args) != 1:
            raise Unreadable("an option of dirty-json's own passed to the test")
        broken, after = self.string(*args[0]), self.match[i + 1] + 1
        if self.is_punct(after, ";") and self.is_name(after + 1, "done") and self.is_name(after + 3, "new"):
            return Pair(self.category(), broken, None)
        if not (self.is_punct(i - 3, "=") and self.tokens[i - 4].kind == "name"):
            raise Unreadable("a parse whose result is not checked")
        return Pair(self.category(), broken, self.whole_value(self.tokens[i - 4].text, after))

    def whole_value(self, name: str, j: int) -> str:
        """The JSON text of the value ``assert.equal`` gives ``name`` (up to the test's ``done()``):
        ``assert.equal(r, Y)``, or an array: ``r[0]`` ... ``r[n-1]`` and ``r.length`` ``n``."""
        items: dict[int, Any] = {}
        length = None
        while j < len(self.tokens) and not (self.is_name(j, "done") and self.is_punct(j + 1, "(")):
            if self.is_name(j, "assert") and self.is_name(j + 2, "equal") and self.is_punct(j + 3, "("):
                args = self.arguments(j + 3)
                if len(args) == 2 and self.is_name(args[0][0], name):
                    subject, value = args[0], self.literal(args[1])
                elif len(args) == 2 and self.is_name(args[1][0], name):
                    subject, value = args[1], self.literal(args[0])
                else:
                    raise Unreadable("an assertion of another shape")
                part = [t.text for t in self.tokens[subject[0] + 1 : subject[1]]]
                if not part:
                    return json.dumps(value, ensure_ascii=False)
                if part == [".", "length"]:
                    length = value
                elif len(part) == 3 and part[0] == "[" and part[1].isdigit() and part[2] == "]":
                    items[int(part[1])] = value
            j += 1
        if length is not None and sorted(items) == list(range(length)):
            return json.dumps([items[k] for k in range(length)], ensure_ascii=False)
        raise Unreadable(_PART)

    def literal(self, span: tuple[int, int]) -> Any:
        """A string expression, a number, ``true``, ``false`` or ``null``."""
        token = self.tokens[span[0]]
        if span[1] - span[0] == 1 and (token.kind == "num" or token.text in ("true", "false", "null")):
            return json.loads(token.text)
        return self.string(*span)
