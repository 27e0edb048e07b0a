"""Resynchronisation: where no edit fixes a violation and no model may write there, the least span
of the draft's text to drop after which its own text goes on parsing (the panic mode of
error-correcting parsers, costed as CPCT+ does: by the lexemes dropped).

Without it the rest of the draft is cut at the violation: ``SUM(a = 1 THEN x) - SUM(b = 2 THEN
y) FROM t`` would end at the first ``THEN``. With it ``THEN x`` is dropped, recorded, and the
draft's ``) - SUM(…`` read on. A drop writes nothing: it never makes a word an operator or
invents a value. It drops whole lexemes from the violation on, at most ``_MAX_DROP``, and only
words, names, literals, a qualifier's ``.``, a cast's ``::`` and whole brackets the span itself
opens (``OVER (…)``): never an operator or a separator the rest would then be read across
(``"b": x, "c": 3`` is not ``"b": 3``), nor the close of a bracket opened before it (the draft's
brackets keep their pairs). What it reads on to must read as code (prose is cut, never kept), and
must not repeat the complete answer before it (a model looping is cut, not joined on).
"""

from __future__ import annotations

import re

from ._checker import Checker
from ._edit_search import Edit, conclusive, try_edit, whole_words
from ._lexemes import LEXEME, is_operator, is_word
from ._reader import reads_as_code, string_past_code_end
from ._text import is_word_char

__all__ = ["resync"]

_MAX_DROP = 8  # the most lexemes a resynchronisation drops
_MIN_READ = 3  # lexemes of the draft's text after the drop that must then parse
#: One lexeme as a drop counts it: a name in backticks or brackets is one, as a string is.
_DROP_LEXEME = re.compile(r"`[^`\n]*`|\[[A-Za-z_][^\]\n]*\]|" + LEXEME.pattern)
_DROPPABLE_MARKS = frozenset({".", "::"})
_DEPTH = {"(": 1, ")": -1}


def resync(checker: Checker, moved: str, *, final: bool) -> Edit | None:
    """The edit that drops the fewest lexemes at the start of ``moved`` (the rejected text, after
    ``checker``'s text; the checker is not modified) after which the rest of the draft's text reads
    on conclusively: ``_MIN_READ`` lexemes, or all of a finished answer's text to a complete text.
    ``None`` where no such span is found."""
    text = checker.text
    keywords = checker.grammar.keywords
    if text.rstrip()[-1:] in (".", ":"):
        return None  # (never from within a qualified name: ``r.`` of ``r.t``)
    depth = 0
    for count, lexeme in enumerate(_DROP_LEXEME.finditer(moved), 1):
        depth += _DEPTH.get(lexeme.group(), 0)
        if count > _MAX_DROP or depth < 0 or not _droppable(lexeme.group(), moved, lexeme.start()):
            return None
        if depth:
            continue  # a bracket the span opened is dropped whole or not at all
        rest = moved[lexeme.end() :]
        kept = rest.lstrip()
        if not kept:
            return None  # nothing after it: the cut stays
        # One of the draft's white spaces stays between the text and what it reads on to.
        gap = "" if not text or text[-1].isspace() else _leading_space(moved) or _leading_space(rest)
        if _joins_on(text + gap, kept) or not reads_as_code(kept, keywords):
            continue
        edit = _reads_on(checker, gap, moved[: len(moved) - len(kept)], kept, final)
        if edit is not None:
            return edit
    return None


def _leading_space(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _droppable(lexeme: str, moved: str, start: int) -> bool:
    """Whether a drop may take ``lexeme``: a word, a literal, a quoted name, a bracket, a
    qualifier's point, a cast; not an operator or a separator, nor a fence (```` ``` ````)."""
    if moved.startswith("```", start):
        return False
    return (
        is_word(lexeme)
        or (lexeme[0] in "'\"`[" and len(lexeme) > 1)
        or lexeme[0].isdigit()
        or lexeme in _DEPTH
        or lexeme in _DROPPABLE_MARKS
    )


def _joins_on(text: str, kept: str) -> bool:
    """Whether the draft's ``kept`` text, read right after ``text``, would join on to its end as
    it did not: a word glued to a word, an operator or a qualifier's point given another operand
    (``SUM(l.amount WHERE x = 199`` is not ``SUM(l.amount = 199``), a name made a call (``COUNT
    THEN (x)`` is not ``COUNT(x)``)."""
    head = LEXEME.match(kept)
    first = head.group() if head else ""
    if is_operator(first) or first in (".", ":", "::"):
        return True
    return (is_word_char(text[-1:]) and is_word_char(kept[:1])) or (is_word_char(text.rstrip()[-1:]) and first == "(")


def _reads_on(checker: Checker, gap: str, dropped: str, kept: str, final: bool) -> Edit | None:
    """The drop of ``dropped`` (``gap``, its white space, written in its place) where the draft's
    ``kept`` text after it then reads on conclusively."""
    tried = try_edit(checker, len(checker.text), gap, kept)
    if tried is None:
        return None
    accepted, complete = tried
    opened = string_past_code_end(kept[:accepted])
    if opened is not None:  # (prose is never made a string literal)
        accepted, complete = opened, False
    read = whole_words(kept, accepted)
    if not read or not conclusive(kept, read, final, complete and read == accepted, _MIN_READ):
        return None
    description = f"dropped {dropped.strip()!r} (no edit fixed the violation; the draft's text reads on after it)"
    return Edit(len(checker.text), gap, kept[:read], dropped, description, kept[read:], rule="resync")
