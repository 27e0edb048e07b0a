"""The draft's text as lexemes (words, literals, operators): what an edit changes and is costed by.

An edit at a violation changes whole lexemes of the draft: it never splits a multi-character
operator (``2 ** 3`` is not ``2 * 3``), never turns one of the draft's words into an operator or
into another keyword (``answer`` is not ``^``, ``AS`` is not ``IS``), and costs the number of
lexemes it changes, not characters. Pure text functions; the grammar's keywords are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "LEXEME",
    "MULTI_CHAR_OPERATORS",
    "OPERATOR_SYNONYMS",
    "is_operator",
    "is_word",
    "keywords_in_capitals",
    "keywords_of",
    "merges",
    "splits_operator",
    "word_becomes_other",
    "written_as_name",
]

#: Operators of more than one character in the languages drafts write (longest first).
MULTI_CHAR_OPERATORS = (
    "->>",
    "...",
    "**",
    "//",
    "<=",
    ">=",
    "<>",
    "!=",
    "==",
    "||",
    "&&",
    "::",
    "->",
    "=>",
    ":=",
    "<<",
    ">>",
    "+=",
    "-=",
    "*=",
    "/=",
)

#: One lexeme: a quoted string, a number, a word, a multi-character operator or one mark.
LEXEME = re.compile(
    r"'(?:[^'\n]|'')*'|\"(?:[^\"\n]|\"\")*\"|\d+(?:\.\d+)?(?![\w.])|\w+|"
    + "|".join(re.escape(op) for op in MULTI_CHAR_OPERATORS)
    + r"|[^\w\s]"
)

#: Operators other languages write for the same operation (Python's ``**`` for a grammar's ``^``).
OPERATOR_SYNONYMS = {
    "**": ("^",),
    "^": ("**",),
    "==": ("=",),
    "=": ("==",),
    "!=": ("<>",),
    "<>": ("!=",),
}

#: Keywords that only say what the draft's next word is (SQL's ``AS`` before an alias, a type, a
#: common table's body): written where the grammar needs one (``FROM Pets AS outer``, where
#: ``outer`` can be no alias without it), they change no meaning, where a ``,`` would make the
#: word a table of its own.
MARKER_WORDS = frozenset({"as"})

_OPERATOR_CHARS = frozenset("".join(MULTI_CHAR_OPERATORS))
_OPERATOR_MARKS = frozenset("+-*/%^<>=!&|~")


def is_word(lexeme: str) -> bool:
    """Whether ``lexeme`` is a word (letters first): a name or a keyword, not a literal or mark."""
    return bool(lexeme) and (lexeme[0].isalpha() or lexeme[0] == "_")


def is_operator(lexeme: str) -> bool:
    """Whether ``lexeme`` is an operator (``+``, ``>=``, ``**``), not a word, a literal or a mark
    that shapes the text (a bracket, a separator, a quote)."""
    return bool(lexeme) and all(ch in _OPERATOR_MARKS for ch in lexeme)


def keywords_of(literals: Iterable[str]) -> frozenset[str]:
    """The grammar's keywords (its literal terminals that are words), lower case."""
    return frozenset(lit.lower() for lit in literals if is_word(lit))


_WORD_RUN = re.compile(r"[A-Za-z_]+")
_KEYWORDS_READ = 6  # the draft's last keywords whose case says how it writes them


def keywords_in_capitals(text: str, keywords: frozenset[str]) -> bool:
    """Whether ``text`` writes the grammar's keywords in capitals (most of its last six, in its last
    200 characters): a keyword inserted is then written so (``ELSE 0 END`` after ``CASE WHEN``)."""
    words = [w for w in _WORD_RUN.findall(text[-200:]) if w.lower() in keywords][-_KEYWORDS_READ:]
    return bool(words) and sum(w.isupper() for w in words) * 2 > len(words)


def word_becomes_other(word: str, literal: str, keywords: frozenset[str]) -> bool:
    """Whether replacing the draft's ``word`` with ``literal`` would turn a word into an operator
    or mark (``answer`` into ``^``, ``FROM`` into ``,``), one of the grammar's keywords into
    another (``AS`` into ``IS``), or a word written as names are into a keyword (``aCL`` into
    ``ALL``): a change of what the draft wrote, never a repair of a slip."""
    if not is_word(word):
        return False
    if not is_word(literal) or word.lower() in keywords:
        return True
    return literal.lower() in keywords and written_as_name(word)


_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")


def written_as_name(word: str) -> bool:
    """Whether ``word`` is written as names are, never as a keyword: a capital after a small letter
    (``aCL``, ``IgG``, ``userId``; a keyword is written in capitals, in small letters or with a
    capital first)."""
    return _INNER_CAPITAL.search(word) is not None


def splits_operator(before: str, start: int, end: int, after: str = "") -> bool:
    """Whether taking ``before[start:end]`` out of ``before + after`` (or writing at ``start``
    when ``start == end``) cuts into a multi-character operator without taking all of it
    (``**`` to ``*``, ``&&`` to ``&``, ``<=`` to ``<``)."""
    text = before + after
    lo = max(0, start - 3)
    hi = min(len(text), end + 3)
    if not _OPERATOR_CHARS & set(text[lo:hi]):
        return False
    for match in LEXEME.finditer(text, lo, hi):
        if len(match.group()) < 2 or match.group()[0] in "'\"" or is_word(match.group()):
            continue
        m_start, m_end = match.span()
        if m_start < end and start < m_end and not (start <= m_start and m_end <= end):
            return True  # overlaps the operator without covering it
        if start == end and m_start < start < m_end:
            return True  # writes inside it
    return False


def merges(before: str, after: str) -> bool:
    """Whether ``before`` and ``after`` written together make their lexemes at the seam one
    (``b`` and ``title`` into ``btitle``, ``1`` and ``.030`` into the number ``1.030``, ``<`` and
    ``=`` into ``<=``, ``1.0`` and ``Patient`` into ``1``, ``.`` and ``0Patient``): an edit that drops
    the text between them changes the draft's lexemes."""
    if not before or not after or before[-1].isspace() or after[0].isspace():
        return False
    tail = LEXEME.findall(before[-64:])[-1:]
    if not tail:
        return False
    seam = len(tail[0])  # (a lexeme read across the seam: ``1.0Patient`` reads ``1``, ``.``, ``0Patient``)
    return any(m.start() < seam < m.end() for m in LEXEME.finditer(tail[0] + after[:64]))
