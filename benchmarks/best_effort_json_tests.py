"""best-effort-json-parser's own tests (beenotung/best-effort-json-parser, ``src/parse.spec.ts``)
read as (input, expected) pairs.

The library parses JSON cut short while an LLM streams it, and slips around it (comments, fences,
quotes of other kinds). Its file is mocha/chai TypeScript. It is not run: its tokens
(``benchmarks/jsonrepair_tests.py``'s tokenizer) are read for

- ``expect(parse(X)).equals(V)`` or ``.deep.equals(V)``: the input ``X`` and the value ``V``;
- ``expect(() => parse(X)).to.throws()``: ``X`` has no JSON to give (``expected`` None);
- ``testIncomplete(S, V)``: the file's helper, every prefix of ``S`` (one character or more)
  parsed to ``V``.

``X`` is a string literal, a ``+`` of them, or a ``let``/``const`` bound to one (the last binding
read). ``V`` is a JavaScript literal: strings, numbers, ``true``, ``false``, ``null``,
``undefined``, arrays and objects (keys bare, quoted or numbers). The expected JSON text is
``JSON.stringify(V)``'s reading: a member whose value is ``undefined`` is left out (a key cut
before its value: ``{"a":"apple","b`` is ``{"a": "apple"}``), an ``undefined`` element is
``null``. Named functions' bodies (the helpers) are not read as tests. The category is the
innermost ``describe``/``context`` title.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.jsonrepair_tests import BindingReader, Pair, Reading, Unreadable, tokenize

TESTS = "src/parse.spec.ts"
MATCHERS = frozenset({"equals", "equal"})
_UNDEFINED = object()
_LITERALS = {"true": True, "false": False, "null": None, "undefined": _UNDEFINED}


def read_pairs(source: str) -> Reading:
    """Every ``parse`` case of a mocha/chai file's text (see the module's docstring)."""
    return _Reader(tokenize(source)).read()


def json_text(value: Any) -> str:
    """``JSON.stringify(value)`` for a JavaScript literal read here (see the module's docstring)."""
    if value is _UNDEFINED:
        raise Unreadable("an expected value that is undefined")
    return json.dumps(_defined(value), ensure_ascii=False)


def _defined(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _defined(v) for k, v in value.items() if v is not _UNDEFINED}
    if isinstance(value, list):
        return [None if v is _UNDEFINED else _defined(v) for v in value]
    return value


class _Reader(BindingReader):
    def visit(self, i: int) -> int:
        self.enter(i)
        token = self.tokens[i]
        if token.kind != "name" or not self.is_punct(i + 1, "(") or self.is_punct(i - 1, "."):
            if self.is_name(i, "function") and self.tokens[i + 1].kind == "name":
                return self.after_function(i)  # a helper's body
            return i + 1
        if token.text in ("describe", "context") and self.tokens[i + 2].kind == "str":
            self.describes.append((self.tokens[i + 2].text, self.match[i + 1]))
        elif token.text == "expect":
            self.record(lambda: self.expect(i))
        elif token.text == "testIncomplete":
            self.incomplete(i)
        return i + 1

    def parse_input(self, i: int) -> str | None:
        """The input of ``parse(X)`` at ``i``; None when token ``i`` begins no ``parse`` call."""
        if not (self.is_name(i, "parse") and self.is_punct(i + 1, "(")):
            return None
        return self.string(i + 2, self.match[i + 1])

    def expect(self, i: int) -> Pair | None:
        close = self.match[i + 1]
        arrow = self.is_punct(i + 2, "(") and self.is_punct(self.match.get(i + 2, i + 2) + 1, "=>")
        given = self.parse_input(self.match[i + 2] + 2) if arrow else self.parse_input(i + 2)
        if given is None:
            return None  # not an assertion on parse()'s value
        chain, j = [], close + 1
        while self.is_punct(j, ".") and self.tokens[j + 1].kind == "name":
            chain.append(self.tokens[j + 1].text)
            j += 2
        if arrow and chain[-1:] == ["throws"]:
            return Pair(self.category(), given, None)
        if not (chain and chain[-1] in MATCHERS and self.is_punct(j, "(")):
            raise Unreadable(f"a matcher other than equals ({'.'.join(chain)})")
        value, end = self.value(j + 1)
        if end + self.is_punct(end, ",") != self.match[j]:  # a trailing comma allowed
            raise Unreadable("an expected value that is not a literal")
        return Pair(self.category(), given, json_text(value))

    def incomplete(self, i: int) -> None:
        """``testIncomplete(S, V)``: every prefix of ``S`` is ``V``."""
        try:
            comma = i + 3
            if not self.is_punct(comma, ","):
                raise Unreadable("testIncomplete() called with more than a string")
            whole, expected = self.string(i + 2, comma), json_text(self.value(comma + 1)[0])
        except Unreadable as why:
            self.reading.unread[str(why)] += 1
            return
        for end in range(len(whole), 0, -1):
            self.reading.pairs.append(Pair(self.category(), whole[:end], expected))

    def value(self, i: int) -> tuple[Any, int]:
        """The JavaScript literal at ``i``, and the index after it."""
        token = self.tokens[i]
        if token.kind == "str" and not token.error:
            return token.text, i + 1
        if token.kind == "num" or (self.is_punct(i, "-") and self.tokens[i + 1].kind == "num"):
            sign, digits = ("-", self.tokens[i + 1].text) if token.kind == "punct" else ("", token.text)
            try:
                return json.loads(sign + digits), i + (2 if sign else 1)
            except ValueError:
                raise Unreadable("a number written otherwise than JSON writes one") from None
        if token.kind == "name" and token.text in _LITERALS:
            return _LITERALS[token.text], i + 1
        if self.is_punct(i, "[") or self.is_punct(i, "{"):
            return self.container(i)
        raise Unreadable("an expected value that is not a literal")

    def container(self, i: int) -> tuple[Any, int]:
        close, j = self.match[i], i + 1
        is_object = self.is_punct(i, "{")
        items: list[Any] = []
        members: dict[str, Any] = {}
        while j < close:
            if is_object:
                key = self.tokens[j]
                if key.kind not in ("name", "str", "num") or key.error or not self.is_punct(j + 1, ":"):
                    raise Unreadable("an object literal's member that is not KEY: VALUE")
                members[key.text], j = self.value(j + 2)
            else:
                item, j = self.value(j)
                items.append(item)
            if self.is_punct(j, ","):
                j += 1
            elif j != close:
                raise Unreadable("an expected value that is not a literal")
        return (members if is_object else items), close + 1
