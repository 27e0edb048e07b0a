"""jsonrepair's own tests (josdejong/jsonrepair, ``src/index.test.ts``) read as (input, expected) pairs.

The file is vitest TypeScript. It is not run: a small tokenizer reads its string literals (single,
double and backtick quotes with JavaScript's escapes, ``String.raw`` templates) and finds

- ``expect(jsonrepair(X)).toBe(Y)`` (or ``toEqual``/``toStrictEqual``): the input ``X`` and the text
  ``Y`` jsonrepair's maintainers expect; ``X`` may also be a ``const`` bound to ``jsonrepair(...)``;
- ``assertRepair(X)``: the file's helper, ``X`` repaired to itself;
- ``expect(() => ... jsonrepair(X) ...).toThrow(...)``: ``X`` has no JSON to give (``expected`` None).

A string expression is a literal, a ``const`` bound to one in an enclosing block, or a ``+`` of
those. Helper functions' bodies are not read as tests. ``describe`` titles give each pair its
category (the innermost one; ``$name`` in a ``describe.each`` title is ``regular``: the table runs
each test over the regular and the streaming implementation, and the regular one is read). What
looks like a case but cannot be read is counted by reason in ``Reading.unread``.

The tokenizer and the token walk (``TokenReader``, ``BindingReader``) also read the other
libraries' JavaScript tests (``dirty_json_tests.py``, ``best_effort_json_tests.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

MATCHERS = frozenset({"toBe", "toEqual", "toStrictEqual"})
THROWS = frozenset({"toThrow", "toThrowError"})
IMPLEMENTATION = "regular"
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"\d[\w.]*")
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v"}
_LINE_BREAKS = ("\r\n", "\n", "\r", "\u2028", "\u2029")
_HEX = frozenset("0123456789abcdefABCDEF")


class Unreadable(ValueError):
    """A literal or an expression that cannot be read: ``args[0]`` says why."""


@dataclass(frozen=True)
class Token:
    kind: str  # "str", "name", "punct" or "num"
    text: str  # a name, a mark or a number as written; for "str", the literal's decoded value
    raw: str = ""  # a template's raw text (``String.raw``)
    error: str = ""  # why a string literal cannot be decoded ("" when it can)


@dataclass(frozen=True)
class Pair:
    category: str
    input: str
    expected: str | None  # the text jsonrepair is expected to return; None: it is expected to throw


@dataclass
class Reading:
    pairs: list[Pair] = field(default_factory=list)
    unread: Counter[str] = field(default_factory=Counter)  # reason -> how many look-alike cases


@dataclass(frozen=True)
class _Call:
    """``jsonrepair(input)``, bound to a ``const``."""

    input: str


def decode_string(body: str, *, template: bool = False) -> str:
    """The value of a JavaScript string literal's ``body`` (between its quotes), as UTF-16 code
    units joined into text: ``\\ud83d\\ude00`` is one character; a lone surrogate is Unreadable."""
    units: list[int] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            i = _escape(body, i + 1, units)
            continue
        if not template and char in "\n\r":
            raise Unreadable("a line break inside a quoted string")
        if template and body.startswith("\r\n", i):
            char, i = "\n", i + 1
        elif template and char == "\r":
            char = "\n"
        _append(units, ord(char))
        i += 1
    text = "".join(map(chr, units))
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise Unreadable("a lone UTF-16 surrogate (no UTF-8 text)") from None


def _escape(body: str, i: int, units: list[int]) -> int:
    """Append the escape that begins at ``body[i]`` (just after the backslash); the index after it."""
    if i >= len(body):
        raise Unreadable("a string ending in a backslash")
    char = body[i]
    for brk in _LINE_BREAKS:  # a line continuation: nothing
        if body.startswith(brk, i):
            return i + len(brk)
    if char in _SIMPLE:
        units.append(ord(_SIMPLE[char]))
        return i + 1
    if char == "0" and not body[i + 1 : i + 2].isdigit():
        units.append(0)
        return i + 1
    if char.isdigit():
        raise Unreadable("a legacy octal escape")
    if char == "x":
        return _hex(body, i + 1, 2, units)
    if char == "u" and body.startswith("{", i + 1):
        end = body.find("}", i + 2)
        digits = body[i + 2 : end] if end > 0 else ""
        if not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
            raise Unreadable("a bad \\u{...} escape")
        _append(units, int(digits, 16))
        return end + 1
    if char == "u":
        return _hex(body, i + 1, 4, units)
    _append(units, ord(char))  # \' \" \\ \/ \a ...: the character itself
    return i + 1


def _hex(body: str, i: int, width: int, units: list[int]) -> int:
    digits = body[i : i + width]
    if len(digits) != width or not set(digits) <= _HEX:
        raise Unreadable("a bad \\x or \\u escape")
    units.append(int(digits, 16))
    return i + width


def _append(units: list[int], code: int) -> None:
    """A code point as UTF-16 code units."""
    if code > 0xFFFF:
        code -= 0x10000
        units.extend((0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
    else:
        units.append(code)


def tokenize(source: str) -> list[Token]:
    """JavaScript/TypeScript tokens, comments left out (no regular-expression literals)."""
    tokens: list[Token] = []
    i = 0
    while i < len(source):
        char = source[i]
        if char.isspace():
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = len(source) if end < 0 else end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            i = len(source) if end < 0 else end + 2
        elif char in "'\"`":
            token, i = _string_token(source, i)
            tokens.append(token)
        elif match := _NAME.match(source, i):
            tokens.append(Token("name", match.group()))
            i = match.end()
        elif match := _NUMBER.match(source, i):
            tokens.append(Token("num", match.group()))
            i = match.end()
        else:
            mark = "=>" if source.startswith("=>", i) else char
            tokens.append(Token("punct", mark))
            i += len(mark)
    return tokens


def _string_token(source: str, start: int) -> tuple[Token, int]:
    """The string literal opening at ``source[start]``, and the index after its closing quote."""
    quote, i = source[start], start + 1
    while i < len(source) and source[i] != quote:
        if source[i] == "\\":
            i += 1
        elif quote == "`" and source.startswith("${", i):
            return Token("str", "", error="a template with ${...} substitutions"), _template_end(source, i)
        i += 1
    if i >= len(source):
        return Token("str", "", error="a string literal left open"), i
    body = source[start + 1 : i]
    raw = body.replace("\r\n", "\n").replace("\r", "\n")
    try:
        return Token("str", decode_string(body, template=quote == "`"), raw=raw), i + 1
    except Unreadable as why:
        return Token("str", "", raw=raw, error=str(why)), i + 1


def _template_end(source: str, i: int) -> int:
    """The index after the template literal that ``source[i]`` (a ``${``) is inside."""
    depth = 0
    while i < len(source):
        if source[i] == "{":
            depth += 1
        elif source[i] == "}":
            depth -= 1
        elif source[i] == "`" and depth == 0:
            return i + 1
        elif source[i] == "\\":
            i += 1
        i += 1
    return i


def read_pairs(source: str) -> Reading:
    """Every ``jsonrepair`` case of a vitest file's text (see the module's docstring)."""
    return _Reader(tokenize(source)).read()


class TokenReader:
    """A walk over a JavaScript test file's tokens that collects (input, expected) pairs: a
    subclass says what each token does (``visit``); ``describes`` holds the enclosing ``describe``
    titles."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.match = matching_brackets(tokens)
        self.describes: list[tuple[str, int]] = []  # (title, index of its call's closing paren)
        self.reading = Reading()

    def read(self) -> Reading:
        i = 0
        while i < len(self.tokens):
            i = self.visit(i)
        return self.reading

    def visit(self, i: int) -> int:
        """Act on token ``i``; the index of the next token to visit."""
        raise NotImplementedError

    def is_punct(self, i: int, mark: str) -> bool:
        return 0 <= i < len(self.tokens) and self.tokens[i].kind == "punct" and self.tokens[i].text == mark

    def is_name(self, i: int, name: str) -> bool:
        return 0 <= i < len(self.tokens) and self.tokens[i].kind == "name" and self.tokens[i].text == name

    def category(self) -> str:
        title = self.describes[-1][0] if self.describes else "(top level)"
        return title.replace("$name", IMPLEMENTATION)

    def record(self, read: Callable[[], Pair | None]) -> None:
        """Run ``read``: its pair, if any, is kept; an Unreadable is counted by its reason."""
        try:
            pair = read()
        except Unreadable as why:
            self.reading.unread[str(why)] += 1
            return
        if pair is not None:
            self.reading.pairs.append(pair)

    def after_function(self, i: int) -> int:
        """A helper function's declaration: its body is not read as tests."""
        j = i + 1
        while j < len(self.tokens) and not self.is_punct(j, "{"):
            j = self.match.get(j, j) + 1
        return self.match.get(j, j) + 1


class BindingReader(TokenReader):
    """A TokenReader whose strings may be ``const``/``let`` names bound to string expressions (the
    last binding read, whatever the block: enough for files that bind a name again in each test)."""

    def __init__(self, tokens: list[Token]) -> None:
        super().__init__(tokens)
        self.bound: dict[str, str] = {}

    def enter(self, i: int) -> None:
        """What token ``i`` does before a subclass's ``visit`` reads it: the ``describe`` calls that
        ended are left; a binding is read."""
        while self.describes and self.describes[-1][1] < i:
            self.describes.pop()
        if self.tokens[i].text in ("const", "let") and self.is_punct(i + 2, "="):
            self.bind(i)

    def bind(self, i: int) -> None:
        """``const NAME = X`` or ``let NAME = X`` at ``i``: NAME is X from here on (when X is a string
        expression; else NAME is no longer bound)."""
        end = i + 3
        while end < len(self.tokens) and not (self.is_punct(end, ";") or self.tokens[end].text in ("let", "const")):
            if self.tokens[end].kind == "name" and self.is_punct(end + 1, "("):
                break  # the next statement (no semicolons in this file's style)
            end = self.match.get(end, end) + 1
        try:
            self.bound[self.tokens[i + 1].text] = self.string(i + 3, end)
        except Unreadable:
            self.bound.pop(self.tokens[i + 1].text, None)

    def string(self, start: int, end: int) -> str:
        """A string literal, a bound name, or a ``+`` of them, filling tokens ``start:end``."""
        parts, i = [], start
        while True:
            token = self.tokens[i]
            if token.kind == "name" and token.text in self.bound:
                parts.append(self.bound[token.text])
            elif token.kind != "str":
                raise Unreadable("an argument that is not a string literal or a const bound to one")
            elif token.error:
                raise Unreadable(token.error)
            else:
                parts.append(token.text)
            if i + 1 == end:
                return "".join(parts)
            if not self.is_punct(i + 1, "+"):
                raise Unreadable("an argument that is not a string literal or a const bound to one")
            i += 2


class _Reader(TokenReader):
    def __init__(self, tokens: list[Token]) -> None:
        super().__init__(tokens)
        self.scopes: list[dict[str, str | _Call]] = [{}]

    def visit(self, i: int) -> int:
        """Act on token ``i``; the index of the next token to visit."""
        token = self.tokens[i]
        if token.kind == "punct" and token.text == "{":
            self.scopes.append({})
        elif token.kind == "punct" and token.text == "}" and len(self.scopes) > 1:
            self.scopes.pop()
        while self.describes and self.describes[-1][1] == i:
            self.describes.pop()
        if token.kind != "name" or (i > 0 and self.is_punct(i - 1, ".")):
            return i + 1
        if token.text == "function":
            return self.after_function(i)
        if token.text == "describe":
            self.describe(i)
        elif token.text in ("const", "let", "var"):
            self.bind(i)
        elif token.text == "expect" and self.is_punct(i + 1, "("):
            self.expect(i)
        elif token.text == "assertRepair" and self.is_punct(i + 1, "("):
            self.record(lambda: self.assert_repair(i))
        return i + 1

    def describe(self, i: int) -> None:
        j = i + 1
        if self.is_punct(j, ".") and self.is_name(j + 1, "each") and self.is_punct(j + 2, "("):
            j = self.match[j + 2] + 1
        if self.is_punct(j, "(") and j + 1 < len(self.tokens) and self.tokens[j + 1].kind == "str":
            self.describes.append((self.tokens[j + 1].text, self.match[j]))

    def bind(self, i: int) -> None:
        """``const NAME = EXPR``: NAME is bound in the block where it is declared (when EXPR is a
        string expression or a ``jsonrepair`` call)."""
        if not (i + 2 < len(self.tokens) and self.tokens[i + 1].kind == "name" and self.is_punct(i + 2, "=")):
            return
        try:
            if self.is_name(i + 3, "jsonrepair") and self.is_punct(i + 4, "("):
                value: str | _Call = _Call(self.call_input(i + 3))
            else:
                value, _ = self.string_expr(i + 3)
        except Unreadable:
            return  # not a string: not bound (a use of it is counted where it is read)
        self.scopes[-1][self.tokens[i + 1].text] = value

    def lookup(self, name: str) -> str | _Call | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def string_expr(self, i: int) -> tuple[str, int]:
        """The string expression at ``i`` (literals, bound names, ``+``); the index after it."""
        value, i = self.string_primary(i)
        while self.is_punct(i, "+"):
            more, i = self.string_primary(i + 1)
            value += more
        return value, i

    def string_primary(self, i: int) -> tuple[str, int]:
        token = self.tokens[i] if i < len(self.tokens) else Token("punct", "")
        if token.kind == "str":
            if token.error:
                raise Unreadable(token.error)
            return token.text, i + 1
        if self.is_name(i, "String") and self.is_punct(i + 1, ".") and self.is_name(i + 2, "raw"):
            raw = self.tokens[i + 3] if i + 3 < len(self.tokens) else token
            if raw.kind != "str" or raw.error:
                raise Unreadable(raw.error or "String.raw without a template")
            return raw.raw, i + 4
        if self.is_punct(i, "("):
            value, j = self.string_expr(i + 1)
            if self.is_punct(j, ")"):
                return value, j + 1
        bound = self.lookup(token.text) if token.kind == "name" else None
        if isinstance(bound, str):
            return bound, i + 1
        raise Unreadable("an argument that is not a string literal or a const bound to one")

    def call_input(self, i: int) -> str:
        """The input of ``jsonrepair(X)`` at ``i``."""
        value, j = self.string_expr(i + 2)
        if not self.is_punct(j, ")"):
            raise Unreadable("jsonrepair() called with more than a string")
        return value

    def subject(self, i: int) -> str | None:
        """The input of ``expect``'s first argument at ``i`` when it is a jsonrepair call (or a
        name bound to one); None when it is something else (not a jsonrepair case)."""
        if self.is_name(i, "jsonrepair") and self.is_punct(i + 1, "("):
            return self.call_input(i)
        bound = self.lookup(self.tokens[i].text) if self.tokens[i].kind == "name" else None
        if isinstance(bound, _Call) and (self.is_punct(i + 1, ")") or self.is_punct(i + 1, ",")):
            return bound.input
        return None

    def expect(self, i: int) -> None:
        close = self.match[i + 1]
        if self.is_punct(i + 2, "(") and self.is_punct(self.match.get(i + 2, i + 2) + 1, "=>"):
            self.record(lambda: self.expect_throw(i, close))
        else:
            self.record(lambda: self.expect_value(i, close))

    def expect_throw(self, i: int, close: int) -> Pair | None:
        calls = [j for j in range(i + 2, close) if self.is_name(j, "jsonrepair") and self.is_punct(j + 1, "(")]
        if not calls:
            return None
        matcher = self.tokens[close + 2] if self.is_punct(close + 1, ".") else Token("punct", "")
        if matcher.text not in THROWS:
            raise Unreadable("a function passed to expect() with another matcher than toThrow")
        return Pair(self.category(), self.call_input(calls[0]), None)

    def expect_value(self, i: int, close: int) -> Pair | None:
        try:
            given = self.subject(i + 2)
        except Unreadable:
            if not any(self.is_name(j, "jsonrepair") for j in range(i + 2, close)):
                return None
            raise
        if given is None:
            return None
        if not self.is_punct(close + 1, "."):
            raise Unreadable("expect() with a message and no matcher (the test asserts nothing)")
        matcher = self.tokens[close + 2] if close + 2 < len(self.tokens) else Token("punct", "")
        if matcher.text not in MATCHERS or not self.is_punct(close + 3, "("):
            raise Unreadable(f"a matcher other than toBe/toEqual ({matcher.text})")
        expected, j = self.string_expr(close + 4)
        if not self.is_punct(j, ")"):
            raise Unreadable("an expected value that is not a string expression")
        return Pair(self.category(), given, expected)

    def assert_repair(self, i: int) -> Pair:
        text, j = self.string_expr(i + 2)
        if not self.is_punct(j, ")"):
            raise Unreadable("assertRepair() called with more than a string")
        return Pair(self.category(), text, text)


def matching_brackets(tokens: list[Token]) -> dict[int, int]:
    """Index of each opening bracket -> index of its closing one (unbalanced ones left out)."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[int] = []
    match: dict[int, int] = {}
    for i, token in enumerate(tokens):
        if token.kind != "punct":
            continue
        if token.text in ("(", "[", "{"):
            stack.append(i)
        elif token.text in pairs and stack and tokens[stack[-1]].text == pairs[token.text]:
            match[stack.pop()] = i
    return match
