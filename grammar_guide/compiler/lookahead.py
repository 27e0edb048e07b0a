"""Terminals that end in a look-ahead of one character (or begin with a look-behind of one), read
as lark's lexers match them.

lark matches a terminal with ``re.match(text, pos)`` on the whole text (the dynamic Earley lexer
and the LALR lexers alike), so a look-ahead sees the characters after the lexeme, ignored text
included, and the text's end: there ``(?=[ (])`` fails and ``(?![a-z])`` holds. A terminal whose
top-level alternatives each end in such a look-ahead (or in none), where a match goes on to a
longer one only with a character its look-ahead forbids (``[a-z]+(?![a-z])``; without a look-ahead:
no match is a prefix of another), matches at most one lexeme at a position, whatever order ``re``
tries its paths in; it matches there exactly when the condition of the alternative the lexeme
belongs to holds on what follows. A word boundary ``\\b`` at an alternative's end is such a
look-ahead where every match ends in a word character (``(?!\\w)``, the text's end allowed) or
every match ends in another (``(?=\\w)``).
That condition is what the character-level reading's watchers say (``compile``): the text after
the lexeme may begin only with ``Lookahead.allowed``, and may end there only if ``Lookahead.end_ok``.

The mirror: a look-behind of one character at an alternative's start (``(?<=[...])``,
``(?<![...])``), or a ``\\b`` there where every match begins with a word character (``(?<!\\w)``,
the text's start allowed) or every match begins with another (``(?<=\\w)``), looks at the
character before ``pos``: the previous lexeme's last one or ignored text's, none at the text's
start. It decides whether the terminal matches at ``pos`` at all, not which lexeme: the reading
keeps it as ``LookaheadPart.behind``, and the character-level reading remembers the class of the
last character read (``compile``).

Whole words joined by a non-word separator (``A(?:sA)*``, lark's writing of
``IDENTIFIER ("." IDENTIFIER)*``) are read too: ``re.match`` returns the longest match whose
look-ahead holds (``LookaheadPart.longest``), which a watcher of the text after it says.

``lookahead_reading`` gives that reading, ``None`` for a regex without a look-ahead, or the
reason no exact reading is given (a look-behind elsewhere, a look-ahead inside the lexeme, one of
more than one character, lexemes that are prefixes of one another), as a phrase
for ``uses``, then what to write instead after ``"; "``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from .._errors import GrammarError
from .automaton import Dfa, dfa_of, minimal_dfa, ranges_of, share_a_prefix, split_ranges
from .charclass import Ranges, category, char_set, complement, normalise
from .exact import first_chars, greedy_regex_of
from .regex import count_anchors, count_ops, regex_features
from .regex import sre_constants as _c
from .regex import sre_parse as _sre_parse

__all__ = [
    "Lookahead",
    "LookaheadPart",
    "LookaheadReading",
    "has_lookaround",
    "lookahead_reading",
    "restricted",
    "without_words",
]


@dataclass(frozen=True)
class Lookahead:
    """What may follow a lexeme: a character of ``allowed``, or the text's end if ``end_ok``."""

    allowed: tuple[tuple[int, int], ...]
    end_ok: bool

    @property
    def forbidden(self) -> Ranges:
        """The characters that may not follow the lexeme."""
        return complement(list(self.allowed))


@dataclass(frozen=True)
class LookaheadPart:
    """The lexemes of some of the terminal's alternatives (``regex``, Python ``re``, without the
    look-ahead), and what may follow them (``None``: anything). ``within``: a look-ahead inside
    the lexeme after a fixed number of characters (lark.lark's ``REGEXP``, ``\\/(?!\\/)...``),
    as that offset and the characters the lexeme may have there. ``behind``: what may come right
    before the lexeme (a look-behind of one character or a ``\\b`` at the start): a character of
    its ``allowed``, or the text's start if its ``end_ok`` (``None``: anything). ``excluded``: the
    words a look-ahead at the start keeps from being lexemes (``(?!(?:if|else)\\b)[a-z]+\\b``,
    a regex; ``regex`` is the lexemes with them). ``longest``: matches may be prefixes of one
    another, and ``re.match`` takes the longest whose look-ahead holds (see ``_joined_words``)."""

    regex: str
    lookahead: Lookahead | None
    within: tuple[int, tuple[tuple[int, int], ...]] | None = None
    behind: Lookahead | None = None
    excluded: str | None = None
    longest: bool = False


@dataclass(frozen=True)
class LookaheadReading:
    """A terminal's lexemes split by what may follow them: no lexeme is in two parts, none is a
    prefix of another."""

    parts: tuple[LookaheadPart, ...]

    @property
    def body(self) -> str:
        """The terminal's lexemes, whatever follows (a regex without look-ahead)."""
        return "|".join(f"(?:{p.regex})" for p in self.parts)


_WHAT_INSTEAD = (
    "; write the terminal without it: exclude characters with a class ([^...]) and keywords with the "
    "grammar's rules, or end the terminal with a look-ahead of one character ((?=[...]), (?![...]))"
)


_START_BOUNDARY = (
    "a word boundary (\\b) at the start of a terminal whose matches may begin with a word character "
    "and with a non-word character (or match empty text), so that it says (?<!\\w) before some and "
    "(?<=\\w) before others; write it as two terminals, or begin it with (?<!\\w) or (?<=\\w)"
)
_NESTED = (
    "a look-around or a word boundary (\\b) inside a group or a repeat of the lexeme (a terminal used in "
    'another brings its look-arounds along: lark writes IDENTIFIER ("." IDENTIFIER)* as one regex); '
    'write the repetition as a rule of the grammar (dotted: IDENTIFIER ("." IDENTIFIER)*), or the terminal '
    "without it"
)
_MIXED_BOUNDARY = (
    "a word boundary (\\b) at the end of a terminal whose matches may end in a word character and in "
    "a non-word character (or match empty text), so that it says (?!\\w) after some and (?=\\w) after "
    "others; write it as two terminals, or end it with (?!\\w) or (?=\\w)"
)
_ASCII_WORD: Ranges = [(48, 57), (65, 90), (95, 95), (97, 122)]


def has_lookaround(regex: str) -> bool:
    """Whether ``regex`` has a look-ahead, a look-behind or a word boundary (``\\b``)."""
    return _has_lookaround_items(list(_sre_parse.parse(regex, 0)))


def lookahead_reading(regex: str, word: Ranges | None = None) -> LookaheadReading | str | None:
    """The reading of ``regex`` (see the module), ``None`` if it has no look-around, or why it
    has no exact reading (a phrase that follows ``uses``). ``word``: the characters a ``\\b``
    looks at (the ``regex`` module's ``\\w`` under lark's ``regex=True``; default Python's)."""
    if not has_lookaround(regex):
        return None
    parsed = _sre_parse.parse(regex, 0)
    items, flags = _unwrapped(list(parsed), parsed.state.flags)
    inner = _inner_lookahead(regex, items, flags)
    if inner is not None:
        return inner
    joined = _joined_words(items, flags, word)
    if joined is not None:
        return LookaheadReading((joined,))
    grouped: dict[tuple[Lookahead | None, Lookahead | None, str | None], list[str]] = {}
    for alternative, local in _alternatives(items, flags):
        read = _alternative_reading(alternative, local, word)
        if isinstance(read, str):
            return read
        written, ahead, behind, excluded = read
        grouped.setdefault((ahead, behind, excluded), []).append(written)
    parts = tuple(
        LookaheadPart("|".join(f"(?:{r})" for r in rs), ahead, behind=before, excluded=words)
        for (ahead, before, words), rs in grouped.items()
    )
    if len(parts) == 1 and parts[0].lookahead is None:
        return LookaheadReading(parts)  # a look-behind only: where it may begin, a terminal as any other
    dfas = [dfa_of(p.regex) for p in parts]
    one_each = all(_one_match_holds(d, p.lookahead) for d, p in zip(dfas, parts, strict=True))
    if not one_each or any(share_a_prefix(a, b) for a, b in itertools.combinations(dfas, 2)):
        return _refusal(
            "a look-ahead on a terminal one of whose matches is a prefix of another that the "
            "look-ahead lets go on (lark's re.match then takes a match that depends on how Python's "
            "re backtracks)"
        )
    return LookaheadReading(parts)


def _alternative_reading(
    alternative: list[Any], flags: int, word: Ranges | None
) -> tuple[str, Lookahead | None, Lookahead | None, str | None] | str:
    """A top-level alternative's lexemes (a regex without look-around), what may follow them,
    what may come before them (``None``: anything) and the words excluded from them (see
    ``_excluded_words``), or why it has no exact reading."""
    behind = _leading_lookbehind(alternative, flags)
    if isinstance(behind, str):
        return behind
    last = None
    if alternative and (alternative[-1] == (_c.AT, _c.AT_BOUNDARY) or alternative[-1][0] in (_c.ASSERT, _c.ASSERT_NOT)):
        last = alternative.pop()
    excluded = _excluded_words(alternative, flags, word)
    alternative[:] = _settled_boundaries(alternative, flags, word)
    problem = _inside_problem(alternative)
    if problem:
        return problem
    ahead: Lookahead | str | None = None
    if last == (_c.AT, _c.AT_BOUNDARY):
        ahead = _boundary_condition(alternative, flags, word)
    elif last is not None:
        op, (direction, sub) = last
        ahead = _condition(op is _c.ASSERT_NOT, direction, list(sub), flags)
    if isinstance(ahead, str):
        return ahead
    try:
        written = greedy_regex_of(alternative, flags)
    except GrammarError:
        return _refusal("a look-ahead on a terminal with an anchor or a back-reference")
    problem, _lazy = regex_features(written)
    if problem:
        return problem
    if behind is _BOUNDARY_BEFORE:
        behind = _start_boundary_condition(written, flags, word)
        if isinstance(behind, str):
            return behind
    if excluded is not None and not _whole_words(written, ahead, flags, word):
        return _refusal(
            "a look-ahead of more than one character at the start of the lexeme, where the lexemes are not "
            "whole words (word characters only, then \\b or (?!\\w)), so that it may look past the lexeme"
        )
    return written, ahead, behind, excluded


def _joined_words(items: list[Any], flags: int, word: Ranges | None) -> LookaheadPart | None:
    """The reading of whole words joined by a separator, ``A(?:sA)*`` (blark's
    ``DOTTED_IDENTIFIER``, ``IDENTIFIER ("." IDENTIFIER)*``), each ``A`` a group read as whole words
    (``_whole_words``; its ``\\b`` before, its keywords out), ``s`` one non-word character: each
    ``A`` matches the run of word characters there or fails, so ``re.match``'s greedy repeat goes
    on while ``s`` and a word of ``A`` follow, and its match is the longest whose look-ahead holds
    (``longest``). ``None`` where the regex is not so."""
    word = _word(flags, word)
    if len(items) < 2 or items[-1][0] is not _c.MAX_REPEAT or items[-1][1][:2] != (0, _c.MAXREPEAT):
        return None
    body = list(items[-1][1][2])
    sep = char_set(body[:1], flags) if len(body) >= 2 else None
    if sep is None or _meet(sep, word):
        return None
    head, tail = _word_group(items[:-1], flags, word), _word_group(body[1:], flags, word)
    if head is None or tail is None or head[1] != tail[1]:
        return None
    (w0, ahead, behind, k0), (w1, _, after_sep, k1) = head, tail
    if after_sep is not None and not _within(sep, list(after_sep.allowed)):
        return None
    s = greedy_regex_of(body[:1], flags)
    more = f"(?:{s}(?:{w1}))*"
    bad = ([f"(?:{k0}){more}"] if k0 else []) + ([f"(?:{w0}){more}{s}(?:{k1}){more}"] if k1 else [])
    excluded = "|".join(f"(?:{b})" for b in bad) or None
    return LookaheadPart(f"(?:{w0}){more}", ahead, behind=behind, excluded=excluded, longest=True)


def _word_group(
    items: list[Any], flags: int, word: Ranges
) -> tuple[str, Lookahead | None, Lookahead | None, str | None] | None:
    """The reading of items (or of the flags group they are) whose lexemes are whole words
    (``_whole_words``), else ``None``."""
    items, local = _unwrapped(items, flags)
    if not _has_lookaround_items(items):
        return None
    read = _alternative_reading(list(items), local, word)
    if isinstance(read, str) or not _whole_words(read[0], read[1], local, word):
        return None
    return read


def _excluded_words(alternative: list[Any], flags: int, word: Ranges | None) -> str | None:
    """The words ``K`` of a look-ahead ``(?!K\\b)`` at the start of ``alternative`` (taken out of
    it), ``K``'s matches being words (word characters only); ``None`` where it begins otherwise.
    Before lexemes that are whole words (``_whole_words``), ``K\\b`` holds exactly where the
    lexeme is a match of ``K`` (a shorter match of ``K`` is followed by a word character, a
    longer one would need the character after the lexeme to be one), so the look-ahead takes
    the matches of ``K`` out of the lexemes (blark's ``IDENTIFIER`` and its keywords)."""
    if not alternative or alternative[0][0] is not _c.ASSERT_NOT or alternative[0][1][0] < 0:
        return None
    body = list(alternative[0][1][1])
    if not body or body[-1] != (_c.AT, _c.AT_BOUNDARY) or _has_lookaround_items(body[:-1]):
        return None
    try:
        words = greedy_regex_of(body[:-1], flags)
        dfa = dfa_of(words)
    except GrammarError:
        return None
    if dfa.empty or dfa.start in dfa.accepting or not _within(_all_chars(dfa), _word(flags, word)):
        return None
    alternative.pop(0)
    return words


def _whole_words(written: str, ahead: Lookahead | None, flags: int, word: Ranges | None) -> bool:
    """Whether every match of ``written`` is a word (word characters only, not empty) that
    ``ahead`` keeps a word character from following."""
    word = _word(flags, word)
    dfa = dfa_of(written)
    return (
        ahead is not None
        and not _meet(list(ahead.allowed), word)
        and not dfa.empty
        and dfa.start not in dfa.accepting
        and _within(_all_chars(dfa), word)
    )


def _all_chars(dfa: Dfa) -> Ranges:
    return normalise([(lo, hi) for edges in dfa.edges for lo, hi, _ in edges])


def _has_lookaround_items(items: list[Any]) -> bool:
    """Whether parsed items have a look-around or a ``\\b``, nested ones included."""
    return count_ops(items, _c.ASSERT) + count_ops(items, _c.ASSERT_NOT) + count_anchors(items, _c.AT_BOUNDARY) > 0


def _settled_boundaries(alternative: list[Any], flags: int, word: Ranges | None) -> list[Any]:
    """``alternative`` without the ``\\b`` between its items that always hold: every match of
    the items before it ends in a word character and every match of those after begins with
    another, or the other way round (blark's ``\\bPOINTER\\b\\s+\\bTO\\b``). ``\\b`` nested in
    groups is left as it is."""
    word = _word(flags, word)
    kept: list[Any] = []
    for i, item in enumerate(alternative):
        if item != (_c.AT, _c.AT_BOUNDARY) or not kept or i == len(alternative) - 1:
            kept.append(item)
            continue
        rest = [x for x in alternative[i + 1 :] if x != (_c.AT, _c.AT_BOUNDARY)]
        if _has_lookaround_items(kept) or _has_lookaround_items(rest):
            kept.append(item)
            continue
        try:
            before = dfa_of(greedy_regex_of(kept, flags))
            first, empty = first_chars(greedy_regex_of(rest, flags))
        except GrammarError:
            kept.append(item)
            continue
        last = normalise([(lo, hi) for edges in before.edges for lo, hi, t in edges if t in before.accepting])
        if before.start in before.accepting or empty or not last or not first:
            kept.append(item)
            continue
        if (_within(last, word) and not _meet(first, word)) or (not _meet(last, word) and _within(first, word)):
            continue  # it always holds
        kept.append(item)
    return kept


def _inside_problem(alternative: list[Any]) -> str | None:
    """Why a look-around or ``\\b`` inside the lexeme (between its first and last character) has
    no reading, or ``None`` where there is none."""
    if any(op in (_c.ASSERT, _c.ASSERT_NOT) and av[0] < 0 for op, av in alternative):
        return _refusal(
            "a look-around that looks behind ((?<=...), (?<!...)), whose match depends on the text before the lexeme"
        )
    if any(op not in (_c.ASSERT, _c.ASSERT_NOT, _c.AT) and _has_lookaround_items([(op, av)]) for op, av in alternative):
        return _NESTED
    if count_ops(alternative, _c.ASSERT) + count_ops(alternative, _c.ASSERT_NOT):
        return _refusal(
            "a look-around inside the lexeme (a look-ahead is read at the end of the terminal, or "
            "after its first characters where the lexeme goes on)"
        )
    if count_anchors(alternative, _c.AT_BOUNDARY):
        return _refusal("a word boundary (\\b) inside the lexeme (a \\b is read at the end of the terminal)")
    if count_ops(alternative, _c.MIN_REPEAT):
        return _refusal("a look-ahead on a terminal with a lazy quantifier")
    return None


def _alternatives(items: list[Any], flags: int) -> list[tuple[list[Any], int]]:
    """The top-level alternatives of parsed items, those of alternations nested in groups that
    are a whole alternative included (lark writes ``/a\\b/i | /b\\b/i`` as
    ``(?:(?i:a\\b)|(?i:b\\b))``), each with the flags in force there."""
    items, flags = _unwrapped(items, flags)
    if len(items) != 1 or items[0][0] is not _c.BRANCH:
        return [(items, flags)]
    return [found for a in items[0][1][1] for found in _alternatives(list(a), flags)]


def _one_match_holds(dfa: Dfa, ahead: Lookahead | None) -> bool:
    """Whether the look-ahead holds after at most one match at a position: where a match goes on
    to a longer one, the look-ahead forbids the character it goes on with (``[a-z]+(?![a-z])``:
    the repeat reads on as far as it can). Then ``re.match`` finds that one, whatever order it
    tries its paths in."""
    forbidden = ahead.forbidden if ahead is not None else []
    return all(_within(ranges_of(dfa.edges[s]), forbidden) for s in dfa.accepting)


def _within(ranges: Ranges, outer: Ranges) -> bool:
    """Whether every code point of ``ranges`` is in ``outer`` (both sorted and disjoint)."""
    return not _meet(ranges, complement(outer))


def _meet(a: Ranges, b: Ranges) -> bool:
    """Whether two lists of ranges share a code point (one pass over both, sorted)."""
    a, b = normalise(list(a)), normalise(list(b))
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def _boundary_condition(alternative: list[Any], flags: int, word: Ranges | None) -> Lookahead | str:
    """What a ``\\b`` at the end of ``alternative`` says of the character after its lexeme: after
    a word character, that it is none ((?!\\w)); after another, that it is one ((?=\\w)). Python's
    ``re``'s ``\\w`` (Unicode, or ASCII under the a flag), as lark matches, unless ``word`` says."""
    try:
        dfa = dfa_of(greedy_regex_of(alternative, flags))
    except GrammarError:
        return _refusal("a look-ahead on a terminal with an anchor or a back-reference")
    if dfa.empty or dfa.start in dfa.accepting:
        return _MIXED_BOUNDARY
    last = normalise([(lo, hi) for edges in dfa.edges for lo, hi, t in edges if t in dfa.accepting])
    word = _word(flags, word)
    if _within(last, word):
        return Lookahead(tuple(complement(word)), True)
    if not _meet(last, word):
        return Lookahead(tuple(word), False)
    return _MIXED_BOUNDARY


def _inner_lookahead(regex: str, items: list[Any], flags: int) -> LookaheadReading | str | None:
    """The reading of a regex whose one look-ahead follows a run of one-character items and
    precedes more (``\\/(?!\\/)(...)*?\\/``): ``re.match`` fails there or reads on as without it,
    whatever path it takes after, so its matches are the regex's without the look-ahead whose
    character at that offset the look-ahead allows. ``None`` where the look-ahead is not so."""
    at = next((i for i, (op, _) in enumerate(items) if op in (_c.ASSERT, _c.ASSERT_NOT)), None)
    if at is None or at == len(items) - 1 or any(char_set([item], flags) is None for item in items[:at]):
        return None
    op, (direction, sub) = items[at]
    if direction < 0:
        return None
    chars = char_set(list(sub), flags)
    rest = items[at + 1 :]
    if chars is None or count_ops(rest, _c.ASSERT) + count_ops(rest, _c.ASSERT_NOT):
        return None
    without = _without_first_lookahead(regex)
    if without is None or _sre_parse.parse(without, 0).getwidth()[0] <= at or has_lookaround(without):
        return None  # a lexeme may end at the look-ahead: it looks past the lexeme
    allowed = complement(chars) if op is _c.ASSERT_NOT else normalise(chars)
    return LookaheadReading((LookaheadPart(without, None, (at, tuple(allowed))),))


def _without_first_lookahead(regex: str) -> str | None:
    """``regex`` with the text of its first ``(?=...)`` or ``(?!...)`` taken out."""
    i, depth, in_class, start = 0, 0, False, None
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 2 if regex.startswith(("[^]", "[]"), i) else 1
            continue
        elif ch == "(":
            if start is None and regex.startswith(("(?=", "(?!"), i):
                start, depth = i, 0
            depth += 1
        elif ch == ")":
            depth -= 1
            if start is not None and depth == 0:
                return regex[:start] + regex[i + 1 :]
        i += 1
    return None


def restricted(dfa: Dfa, within: tuple[int, tuple[tuple[int, int], ...]]) -> Dfa:
    """The matches of ``dfa`` longer than the offset whose character there is an allowed one."""
    at, allowed = within
    ids = {(dfa.start, 0): 0}
    order = [(dfa.start, 0)]
    edges: list[list[tuple[int, int, int]]] = []
    while len(edges) < len(order):
        d, i = order[len(edges)]
        out = []
        for lo, hi, t in () if dfa.empty else dfa.edges[d]:
            pieces = [(lo, hi)] if i != at else [(max(lo, a), min(hi, b)) for a, b in allowed if a <= hi and lo <= b]
            nxt = (t, min(i + 1, at + 1))
            if nxt not in ids:
                ids[nxt] = len(order)
                order.append(nxt)
            out += [(a, b, ids[nxt]) for a, b in pieces]
        edges.append(out)
    accepting = frozenset(n for (d, i), n in ids.items() if d in dfa.accepting and i > at)
    return minimal_dfa(0, accepting, edges)


#: A ``\\b`` at an alternative's start, read once the alternative's first characters are known.
_BOUNDARY_BEFORE = Lookahead((), False)


def _leading_lookbehind(alternative: list[Any], flags: int) -> Lookahead | str | None:
    """What a look-behind of one character or a ``\\b`` at the start of ``alternative`` (taken out
    of it) says of the character before the lexeme (``_BOUNDARY_BEFORE`` for a ``\\b``: read by
    ``_start_boundary_condition``), ``None`` where it begins with neither, or why it is not read.
    lark's ``re.match(text, pos)`` sees the text before ``pos``: the previous lexeme or ignored
    text; at the text's start a look-behind ``(?<=...)`` fails and ``(?<!...)`` holds."""
    if not alternative:
        return None
    if alternative[0] == (_c.AT, _c.AT_BOUNDARY):
        alternative.pop(0)
        return _BOUNDARY_BEFORE
    op, av = alternative[0]
    if op not in (_c.ASSERT, _c.ASSERT_NOT) or av[0] >= 0:
        return None
    alternative.pop(0)
    chars = char_set(list(av[1]), flags)
    if chars is None:
        return _refusal("a look-behind that reads more than one character, or one that is not a class")
    if op is _c.ASSERT_NOT:
        return Lookahead(tuple(complement(chars)), True)
    return Lookahead(tuple(normalise(chars)), False)


def _start_boundary_condition(written: str, flags: int, word: Ranges | None) -> Lookahead | str:
    """What a ``\\b`` at the start of the lexemes ``written`` says of the character before them:
    before a word character, that it is none (or the text's start: ``(?<!\\w)``); before another,
    that it is one (``(?<=\\w)``, so not at the text's start)."""
    first, empty = first_chars(written)
    word = _word(flags, word)
    if not empty and first and _within(first, word):
        return Lookahead(tuple(complement(word)), True)
    if not empty and first and not _meet(first, word):
        return Lookahead(tuple(word), False)
    return _START_BOUNDARY


def _word(flags: int, word: Ranges | None) -> Ranges:
    """The characters a ``\\b`` reads as word characters (``word``, else Python ``re``'s ``\\w``)."""
    if word is None:
        word = _ASCII_WORD if flags & _c.SRE_FLAG_ASCII else category(_c.CATEGORY_WORD)
    return normalise(word)


def without_words(dfa: Dfa, words: str) -> Dfa:
    """The matches of ``dfa`` that are not matches of the regex ``words``."""
    other = dfa_of(words)
    ids = {(dfa.start, None if other.empty else other.start): 0}
    order = list(ids)
    edges: list[list[tuple[int, int, int]]] = []
    while len(edges) < len(order):
        d, o = order[len(edges)]
        out = []
        for lo, hi, (t, u) in split_ranges([() if dfa.empty else dfa.edges[d], () if o is None else other.edges[o]]):
            if t is None:
                continue
            n = ids.setdefault((t, u), len(ids))
            if n == len(order):
                order.append((t, u))
            out.append((lo, hi, n))
        edges.append(out)
    accepting = frozenset(n for (d, o), n in ids.items() if d in dfa.accepting and o not in other.accepting)
    return minimal_dfa(0, accepting, edges)


def _refusal(what: str) -> str:
    return what + _WHAT_INSTEAD


def _unwrapped(items: list[Any], flags: int) -> tuple[list[Any], int]:
    """The items inside a flags-only group that is the whole regex (lark writes ``/.../i`` as
    ``(?i:...)``), with the flags in force there."""
    while len(items) == 1 and items[0][0] is _c.SUBPATTERN and items[0][1][0] is None:
        _group, add, remove, sub = items[0][1]
        items, flags = list(sub), (flags | add) & ~remove
    return items, flags


def _condition(negative: bool, direction: int, body: list[Any], flags: int) -> Lookahead | str:
    """The condition a trailing look-ahead puts on what follows, or why it is not read."""
    if direction < 0:
        return _refusal("a look-around that looks behind at the end of the terminal")
    alternatives = [list(a) for a in body[0][1][1]] if len(body) == 1 and body[0][0] is _c.BRANCH else [body]
    chars: Ranges = []
    end = newline_end = False
    for alternative in alternatives:
        if len(alternative) == 1 and alternative[0][0] is _c.AT:
            code = alternative[0][1]
            if code is _c.AT_END_STRING:
                end = True
                continue
            if code is _c.AT_END:  # $: the end, or a final newline ( any newline with m)
                end = True
                if flags & _c.SRE_FLAG_MULTILINE:
                    chars.append((10, 10))
                else:
                    newline_end = True
                continue
        one = char_set(alternative, flags)
        if one is None:
            return _refusal("a look-around that reads more than one character, or one that is not a class")
        chars += one
    chars = normalise(chars)
    if newline_end and not any(lo <= 10 <= hi for lo, hi in chars):
        return _refusal("a look-ahead with $ that holds before a final newline (use \\Z, or add \\n to its class)")
    if negative:
        return Lookahead(tuple(complement(chars)), not end)
    return Lookahead(tuple(chars), end)
