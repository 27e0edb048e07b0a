"""Regex analysis: which Python regexes the matcher can honour exactly, and in what shape.

lark matches terminals with Python's ``re``; the matcher compiles them to automata. This module reads
a regex with CPython's own parser (``re._parser``, the one place the package touches it) to find
constructs an automaton cannot express (look-around, back-references, anchors), lazy quantifiers
(read by ``lazy``) and alternations where Python's first match is not the longest.
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = [
    "count_anchors",
    "count_ops",
    "is_regex_error",
    "regex_features",
    "sre_constants",
    "sre_parse",
    "strip_verbose",
]


def strip_verbose(value: str) -> str:
    """Rewrite a verbose-mode (``x`` flag) regex without insignificant whitespace and comments."""
    out: list[str] = []
    i, n, in_class = 0, len(value), False
    while i < n:
        ch = value[i]
        if ch == "\\" and i + 1 < n:
            out.append(value[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            if value.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
            out.append(ch)
        elif ch in " \t\n\r\v\f":
            pass
        elif ch == "#":
            while i < n and value[i] != "\n":
                i += 1
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def is_regex_error(exc: BaseException) -> bool:
    return isinstance(exc, re.error) or (type(exc).__name__ == "error" and type(exc).__module__.startswith("regex"))


if sys.version_info >= (3, 11):
    from re import _constants, _parser
else:  # pragma: no cover - Python 3.10
    import sre_constants as _constants
    import sre_parse as _parser

#: CPython's regex parser and its constants, for the modules that read a regex's structure. Typed
#: ``Any``: their parse trees are tuples of tagged values that typeshed's ``sre_parse`` describes
#: only in part (a ``SubPattern`` is iterable; 3.11's ``ATOMIC_GROUP`` is missing for 3.10).
sre_parse: Any = _parser
sre_constants: Any = _constants
_sre_c, _sre_parse = sre_constants, sre_parse


def regex_features(regex: str) -> tuple[str | None, bool]:
    """(a construct the matcher cannot honour exactly, or None; whether the regex has a lazy
    quantifier, which ``lazy`` reads as ``re.match`` does, or refuses)."""
    parsed = _sre_parse.parse(regex, 0)
    problem = _first_unsupported(parsed) or _shadowed_alternative(parsed)
    if problem:
        return problem, False
    return None, count_ops(parsed, _sre_c.MIN_REPEAT) > 0


def _shadowed_alternative(parsed: Any) -> str | None:
    """A final alternation whose earlier literal alternative is a prefix of a later one.

    ``re.match`` takes the first alternative that matches, so in ``/a|ab/`` the later ``ab`` is
    never a whole lexeme, while the matcher's automaton takes the longest. (lark itself sorts
    the alternatives of ``"<" | "<="`` longest first, so only hand-written regexes hit this.)
    """
    items = list(parsed)
    while items:
        op, av = items[-1]
        if op is _sre_c.SUBPATTERN:
            items = list(av[-1])
            continue
        if op is not _sre_c.BRANCH:
            return None
        words: list[str | None] = []
        for alt in av[1]:
            if not all(o is _sre_c.LITERAL for o, _ in alt):
                words.append(None)
                continue
            words.append("".join(chr(v) for _, v in alt))
        for i, first in enumerate(words):
            for later in words[i + 1 :]:
                if first is not None and later is not None and len(later) > len(first) and later.startswith(first):
                    return (
                        "an alternation whose earlier alternative is a prefix of a later one "
                        "(Python's re takes the first that matches, the matcher the longest; "
                        "put the longer alternative first)"
                    )
        return None
    return None


_INSTEAD = "; write the terminal without it"


def _first_unsupported(parsed: Any) -> str | None:
    c = _sre_c
    for op, av in parsed:
        if op in (c.ASSERT, c.ASSERT_NOT):
            return (
                "a look-around assertion ((?=...), (?!...), (?<=...), (?<!...)), whose match depends on "
                "the text around the lexeme" + _INSTEAD + ": exclude characters with a class ([^...]) and "
                "keywords with the grammar's rules"
            )
        if op is c.GROUPREF:
            return "a back-reference (\\1, (?P=name)), which no context-free grammar can say" + _INSTEAD
        if op is c.GROUPREF_EXISTS:
            return "a conditional group ((?(1)...))" + _INSTEAD + ", as an alternation"
        if op is c.AT:
            return _ANCHORS.get(av, _ANCHORS[c.AT_BEGINNING])
        if getattr(c, "ATOMIC_GROUP", None) is not None and op is c.ATOMIC_GROUP:
            return "an atomic group ((?>...))" + _INSTEAD
        if getattr(c, "POSSESSIVE_REPEAT", None) is not None and op is c.POSSESSIVE_REPEAT:
            return "a possessive quantifier (*+, ++, ?+)" + _INSTEAD
        for sub in _children(op, av):
            problem = _first_unsupported(sub)
            if problem:
                return problem
    return None


_BEGINNING = (
    "an anchor ({}): lark matches a terminal with re.match at each position of the text, where {} "
    "holds only at the start of the text{}, so the terminal's meaning depends on where it stands"
    + _INSTEAD
    + " (%ignore /\\n/ for a newline), and say in the grammar's rules where it may come"
)
_END = (
    "an anchor ({}): it holds only at the end of the text{}, so the terminal's meaning depends on "
    "the text after it" + _INSTEAD + ", and say in the grammar's rules where it may come"
)
_ANCHORS = {
    _sre_c.AT_BEGINNING: _BEGINNING.format("^", "^", " (with the m flag, also after a newline)"),
    _sre_c.AT_BEGINNING_STRING: _BEGINNING.format("\\A", "\\A", ""),
    _sre_c.AT_END: _END.format("$", " or before its final newline (with the m flag, before any newline)"),
    _sre_c.AT_END_STRING: _END.format("\\Z", ""),
    _sre_c.AT_BOUNDARY: (
        "a word boundary (\\b), whose meaning depends on the characters before and after the lexeme"
        + _INSTEAD
        + ": the grammar's rules say what may come before and after it"
    ),
    _sre_c.AT_NON_BOUNDARY: (
        "a non-boundary (\\B), whose meaning depends on the characters before and after the lexeme"
        + _INSTEAD
        + ": the grammar's rules say what may come before and after it"
    ),
}


def _children(op: Any, av: Any) -> list[Any]:
    c = _sre_c
    if op is c.BRANCH:
        return list(av[1])
    if op is c.SUBPATTERN:
        return [av[-1]]
    if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
        return [av[2]]
    if op in (c.ASSERT, c.ASSERT_NOT):
        return [av[1]]
    if op is getattr(c, "ATOMIC_GROUP", None):
        return [av]
    if op is c.GROUPREF_EXISTS:
        return [x for x in av[1:] if x is not None]
    return []


def count_ops(parsed: Any, wanted: Any) -> int:
    """How many items of a parsed regex (``sre_parse``), nested ones included, have op ``wanted``."""
    return sum((op is wanted) + sum(count_ops(s, wanted) for s in _children(op, av)) for op, av in parsed)


def count_anchors(parsed: Any, code: Any) -> int:
    """How many anchors ``code`` (``AT_BOUNDARY``, ...) a parsed regex has, nested ones included."""
    return sum(
        (op is _sre_c.AT and av is code) + sum(count_anchors(s, code) for s in _children(op, av)) for op, av in parsed
    )
