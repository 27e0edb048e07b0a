"""Regex analysis: which Python regexes the matcher can honour exactly, and in what shape.

lark matches terminals with Python's ``re``; the matcher compiles them to automata. This module reads
a regex with CPython's own parser (``re._parser``, the one place the package touches it) to find
constructs an automaton cannot express (look-around, back-references, anchors), lazy quantifiers
and alternations where Python's first match is not the longest.
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["is_regex_error", "regex_features", "sre_constants", "sre_parse", "strip_verbose"]


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

_SINGLE_CHAR_OPS = {_sre_c.LITERAL, _sre_c.NOT_LITERAL, _sre_c.IN, _sre_c.ANY}


def regex_features(regex: str) -> tuple[str | None, bool]:
    r"""(a construct the matcher cannot honour exactly, or None; whether the regex is lazy).

    A lazy quantifier is honoured in one shape: fixed single characters, one lazily repeated
    single character, fixed single characters (``/\/\*(.|\n)*?\*\//``). There ``re.match``
    returns the shortest match, which the compiler expresses as an intersection.
    """
    parsed = _sre_parse.parse(regex, 0)
    problem = _first_unsupported(parsed) or _shadowed_alternative(parsed)
    if problem:
        return problem, False
    lazy = _count_ops(parsed, _sre_c.MIN_REPEAT)
    if not lazy:
        return None, False
    items = _flatten(parsed)
    if lazy == 1 and items is not None:
        lazy_items = [i for i, (op, _) in enumerate(items) if op is _sre_c.MIN_REPEAT]
        others_fixed = all(op in _SINGLE_CHAR_OPS for op, _ in items if op is not _sre_c.MIN_REPEAT)
        if len(lazy_items) == 1 and others_fixed:
            body = items[lazy_items[0]][1][2]
            if _is_single_char(body):
                return None, True
    return (
        "a lazy quantifier (*?, +?, ??) in a shape where Python's first match is not the shortest match",
        False,
    )


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


def _first_unsupported(parsed: Any) -> str | None:
    c = _sre_c
    for op, av in parsed:
        if op in (c.ASSERT, c.ASSERT_NOT):
            return "a look-around assertion"
        if op is c.GROUPREF:
            return "a back-reference"
        if op is c.GROUPREF_EXISTS:
            return "a conditional group"
        if op is c.AT:
            return {
                c.AT_BOUNDARY: "a word boundary (\\b)",
                c.AT_NON_BOUNDARY: "a non-boundary (\\B)",
            }.get(av, "an anchor (^, $, \\A, \\Z)")
        if getattr(c, "ATOMIC_GROUP", None) is not None and op is c.ATOMIC_GROUP:
            return "an atomic group"
        if getattr(c, "POSSESSIVE_REPEAT", None) is not None and op is c.POSSESSIVE_REPEAT:
            return "a possessive quantifier"
        for sub in _children(op, av):
            problem = _first_unsupported(sub)
            if problem:
                return problem
    return None


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


def _count_ops(parsed: Any, wanted: Any) -> int:
    return sum((op is wanted) + sum(_count_ops(s, wanted) for s in _children(op, av)) for op, av in parsed)


def _flatten(parsed: Any) -> list[tuple[Any, Any]] | None:
    """The top-level items with plain groups opened; ``None`` if there is a top-level branch."""
    out: list[tuple[Any, Any]] = []
    for op, av in parsed:
        if op is _sre_c.SUBPATTERN:
            inner = _flatten(av[-1])
            if inner is None:
                if not _is_single_char(av[-1]):
                    return None
                out.append((_sre_c.ANY, None))
                continue
            out.extend(inner)
        elif op is _sre_c.BRANCH:
            if not _is_single_char([(op, av)]):
                return None
            out.append((_sre_c.ANY, None))
        else:
            out.append((op, av))
    return out


def _is_single_char(parsed: Any) -> bool:
    """Whether every string the sub-pattern matches is exactly one character."""
    items = list(parsed)
    if len(items) != 1:
        return False
    op, av = items[0]
    if op in _SINGLE_CHAR_OPS:
        return True
    if op is _sre_c.SUBPATTERN:
        return _is_single_char(av[-1])
    if op is _sre_c.BRANCH:
        return all(_is_single_char(alt) for alt in av[1])
    return False
