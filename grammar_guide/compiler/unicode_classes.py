"""Patterns of ``lark.Lark(..., regex=True)``, read with the ``regex`` module's tables.

With ``regex=True`` lark matches terminals with the ``regex`` module, which knows Unicode
properties (``\\p{XID_Start}``, ``\\P{L}``, ``\\pN``) and POSIX classes (``[[:alpha:]]``), and whose
``\\w``, ``\\d`` and ``\\s`` are not quite Python's. The rest of the grammar layer reads patterns
with Python's ``re``; this module writes each of those classes out as the code points the
``regex`` module itself matches, so that what follows sees Python syntax with the same meaning.
The ``regex`` module is imported only here, and only for such grammars (lark needs it then too).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from .charclass import Ranges, all_chars, matched_code_points, python_class

__all__ = ["case_insensitive_literal", "python_re_of", "word_characters"]

_CLASS_ESCAPES = "wWdDsS"


def python_re_of(pattern: str) -> str:
    """``pattern`` (as the ``regex`` module reads it) with its property, POSIX and ``\\w``-like
    classes written as explicit code points, for Python's ``re``. Raises the ``regex`` module's
    error for a property it does not know."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            item, i = _escape_at(pattern, i)
            out.append(_spelt(item, in_class) if item else pattern[i - 2 : i])
            continue
        if in_class and pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) > 0:
            out.append(_spelt(f"[{pattern[i : end + 2]}]", in_class))
            i = end + 2
            continue
        if not in_class and ch == "[":
            in_class = True
            start = i + 1 + pattern.startswith("[^", i)
            start += pattern.startswith("]", start)  # a leading ] is a member
            out.append(pattern[i:start])
            i = start
            continue
        if in_class and ch == "]":
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


def case_insensitive_literal(text: str) -> str:
    """A Python regex for ``text`` matched case-insensitively by the ``regex`` module (its simple
    case folding, one character at a time; unlike ``re`` it does not match ``ı`` for ``i``)."""
    return "".join(python_class(_code_points(f"(?i:{_escaped(ch)})")) for ch in text)


def word_characters() -> Ranges:
    """The code points of the ``regex`` module's ``\\w``, on which its ``\\b`` looks."""
    return _code_points("\\w")


def _escaped(ch: str) -> str:
    return f"\\U{ord(ch):08x}"


def _escape_at(pattern: str, i: int) -> tuple[str | None, int]:
    """The class an escape at ``i`` stands for (as ``regex`` text), or ``None``; and where the
    escape ends."""
    letter = pattern[i + 1]
    if letter in _CLASS_ESCAPES:
        return "\\" + letter, i + 2
    if letter in "pP":
        if pattern.startswith("{", i + 2) and (end := pattern.find("}", i + 3)) > 0:
            return pattern[i : end + 1], end + 1
        return pattern[i : i + 3], i + 3
    return None, i + 2


def _spelt(item: str, in_class: bool) -> str:
    body = python_class(_code_points(item))
    if in_class:
        return "" if body.startswith("[^") else body[1:-1]
    return body


@functools.lru_cache(maxsize=256)
def _code_points(item: str) -> Ranges:
    """The code points the ``regex`` module matches with the one-character class ``item``."""
    module: Any = importlib.import_module("regex")
    return matched_code_points(module.finditer(f"(?:{item})+", all_chars()))
