"""The least edit at a violation that lets the draft's own text go on parsing, found as data.

``propose_edit`` looks at the violation itself, in a few named steps, each proposing candidate
edits (``Candidate``): drop a stray mark, replace a misspelt keyword, quote a name with spaces,
swap a mark for one of its class, drop a mark before the violation, insert a missing mark, close
brackets, close a quoted literal that swallowed code where its text ends, rewrite a known slip of
another dialect. ``search_edits`` looks further back: one lexeme
inserted, dropped or replaced up to ``_SEARCH_LEXEMES`` lexemes before the violation
(``SELECT (COUNT(*) FROM t`` meant ``SELECT (SELECT COUNT(*) FROM t``).

Every candidate is tried on the checker (and taken back) and ranked by how far into the draft's
text the checker then reads, then by its cost: the draft's lexemes it changes (``_lexemes``:
words, literals, operators), characters only between equal ones. An edit respects lexemes: it
never splits a multi-character operator, never turns a word into an operator or a keyword into
another, and a literal of the draft is its content, not a slip. No reading counts a string
literal that runs on past the end of the code into the prose after it (``6'0" ) ... \\end{code}
Comment: I'm``); the stray quote that would open it may be dropped instead.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from ._checker import Checker
from ._complete import closing_brackets, shortest_close
from ._events import REWRITE_RULES, EditRule
from ._grammar import Rewrite
from ._lexemes import (
    LEXEME,
    MARKER_WORDS,
    OPERATOR_SYNONYMS,
    is_operator,
    is_word,
    keywords_in_capitals,
    merges,
    splits_operator,
    word_becomes_other,
    written_as_name,
)
from ._reader import sentence_start, string_past_code_end
from ._text import QUOTES, is_word_char, run_start
from .compiler.compile import Terminal

__all__ = [
    "Edit",
    "break_swallowing_comment",
    "close_swallowed_at_end",
    "closes_by_marks",
    "conclusive",
    "levenshtein",
    "names_with_spaces",
    "propose_edit",
    "rewrite_at_end",
    "search_edits",
    "try_edit",
    "whole_words",
]

_WORD_HEAD = re.compile(r"^\w+")
_MAX_DELETE = 3
_MAX_INSERT_LEN = 2
_SWAPPABLE = set("'\"`,;:.()[]{}")
TIGHT = set(",;:)]}")  # marks written right after the text before them


@dataclass(frozen=True)
class Edit:
    """Roll the accepted text back to ``start``, write ``text``, then the draft's ``kept`` text.

    ``removed`` is the part of the evidence (and of the accepted text after ``start``) that the edit
    throws away; ``unread`` is the evidence after ``kept`` that is still invalid after the edit;
    ``description`` says what was done, for the trace. ``ties`` are other edits the evidence
    supports exactly as well (they read as far into the draft's text at the same cost): with a
    target model the loop takes the one it finds likeliest, without one this edit.
    """

    start: int
    text: str
    kept: str
    removed: str
    description: str
    unread: str = ""
    at: int = -1  # where the rejected text begins (set by ``decide``)
    ties: tuple[Edit, ...] = ()
    #: ``rewrite``: one of the grammar's known slips, rewritten to what it means (a dialect's
    #: spelling); ``edit``: the least edit the draft's text supports; ``prose``: a sentence left
    #: out where the answer goes, the answer read on after it.
    rule: EditRule = "edit"


# -- the edits at the violation ----------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """An edit to try: roll back to ``start``, write ``insert``, then the draft's ``kept`` text
    (``base`` maps positions in ``kept`` to positions in the evidence)."""

    start: int
    insert: str
    kept: str
    removed: str
    description: str
    cost: int
    base: int = 0
    min_read: int = 2
    rule: EditRule = "edit"
    #: A rewrite whose match ends the statement where a sentence of prose begins (``kept``):
    #: the prose is the evidence of its end, as a finished answer's end is.
    before_sentence: bool = False


@dataclass(frozen=True)
class Violation:
    """The violation at the end of ``checker``'s text, and the word it is in: its accepted part
    and its rejected part (read from the end of the text, as far as each needs: a violation's
    cost does not grow with the text's length)."""

    checker: Checker
    evidence: str
    final: bool
    floor: int
    keywords: frozenset[str]
    word_start: int
    word: str
    after_word: str
    in_word: bool
    #: A rewrite may take back the loop's own earlier rewrites, not text before this (see ``floor``).
    rewrite_floor: int = 0

    @classmethod
    def at_end_of(
        cls, checker: Checker, evidence: str, final: bool, floor: int, rewrite_floor: int | None = None
    ) -> Violation:
        text = checker.text
        tail_start = run_start(text, len(text), is_word_char)
        head = _WORD_HEAD.search(evidence)
        in_word = tail_start < len(text) and head is not None
        word_start = tail_start if in_word else len(text)
        word = text[word_start:] + (head.group() if head else "")
        after_word = evidence[len(head.group()) if head else 0 :]
        keywords = checker.grammar.keywords
        rewrites_from = floor if rewrite_floor is None else min(rewrite_floor, floor)
        return cls(checker, evidence, final, floor, keywords, word_start, word, after_word, in_word, rewrites_from)

    @property
    def text(self) -> str:
        return self.checker.text

    @property
    def word_is_whole(self) -> bool:
        return bool(self.word) and (bool(self.after_word) or self.final)


def propose_edit(
    checker: Checker, evidence: str, *, final: bool, floor: int = 0, rewrite_floor: int | None = None
) -> Edit | None:
    """The best conclusive edit at ``checker``'s violation (with its ties), or ``None``.

    ``checker`` holds the accepted text (not modified); ``evidence`` is the rejected draft text from
    the violation point on; ``final`` says the draft wrote nothing after it (its answer ended), so
    the evidence is complete. The edit never rolls back before ``floor``, a rewrite never before
    ``rewrite_floor`` (where the loop's own earlier rewrites begin: a second WHERE after one
    rewritten is joined with the first, ``WHERE a WHERE b WHERE c``).
    """
    return _best_of(Violation.at_end_of(checker, evidence, final, floor, rewrite_floor), _STEPS)


def propose_rewrite(
    checker: Checker, evidence: str, *, final: bool, floor: int = 0, rewrite_floor: int | None = None
) -> Edit | None:
    """The best conclusive rewrite of a known slip at ``checker``'s violation, or ``None``: what
    ``propose_edit`` would take of the grammar's rewrites alone (before a second answer is cut at a
    word that may be another dialect's: ``FROM t MINUS SELECT`` is a set operation, not the alias
    ``MINUS`` and a second query)."""
    return _best_of(Violation.at_end_of(checker, evidence, final, floor, rewrite_floor), (_rewrite_slips,))


def _best_of(violation: Violation, steps: tuple[Callable[[Violation], Iterator[Candidate]], ...]) -> Edit | None:
    """The best conclusive edit (with its ties) that ``steps`` propose at ``violation``, or ``None``."""
    best = _Best(violation)
    for step in steps:
        for candidate in step(violation):
            best.consider(candidate)
    return best.edit()


class _Best:
    """The best-scored edits so far (with up to ``_MAX_TIES`` ties, one per resulting text)."""

    def __init__(self, violation: Violation) -> None:
        self.violation = violation
        self.was_complete = violation.checker.is_complete
        self.score: tuple[int, int] | None = None
        self.edits: list[Edit] = []
        self.completes: list[bool] = []  # whether each edit leaves the text complete

    def consider(self, c: Candidate) -> None:
        """Score an edit by how far into the evidence the checker reads after it."""
        v = self.violation
        text = v.text
        if _alters_comment(text[: c.start], c.removed, c.insert, c.kept):
            return
        tried = _read_in_code(try_edit(v.checker, c.start, c.insert, c.kept), c.insert, c.kept)
        if tried is None:
            return
        accepted, complete = tried
        read = whole_words(c.kept, accepted)  # what counts as read; the edit keeps all it accepted
        # A rewrite that ends a finished answer (drops a comment after it, quotes ``Tru``; its match
        # is the last of the draft's text, but for closing brackets) and leaves it complete, or to
        # be closed by closing brackets alone (``(SELECT a FROM t WHERE b WHERE c``) or, where it
        # kept nothing, by marks alone, reads nothing, and needs not.
        last = not c.kept.strip().strip(")]}")
        ends = (
            c.rule in REWRITE_RULES
            and ((v.final and last) or c.before_sentence)
            and (
                complete or _closed_by_brackets(v.checker, c) or (not c.kept and _closed_by_marks(v, c.start, c.insert))
            )
        )
        # (A rewrite may open a bracket that a later one or the close ends: ``(1, (2, 3))``.)
        if not (c.insert or read or ends) or (
            c.rule not in REWRITE_RULES and _opens_unclosed(c.insert, c.kept[:accepted])
        ):
            return
        if not (ends or conclusive(c.kept, read, v.final, complete, c.min_read)):
            return
        # After a complete text, drafted text is often an aside (a closing fence, prose): an edit
        # must make all of it part of a complete text, or read words of it, not only punctuation,
        # or the aside is cut instead.
        # (A rewrite that only drops text, a comment, is formatting: no aside is made part of the text.)
        # (Nor is a rewrite certain on its own, min_read 0: the next of several values, its key's
        # quotes the next slip.)
        # (A rewrite's match that takes words of the rejected text reads them: ``SELECT TOP`` is
        # complete, and ``TOP 5 Title FROM t;`` then prose is the statement, not an aside.)
        certain = c.rule in REWRITE_RULES and (not c.insert or c.min_read == 0)
        taken = v.evidence[: max(c.base, 0)] if c.rule in REWRITE_RULES else ""
        aside = not (complete and accepted == len(c.kept)) and not re.search(r"\w", taken + c.kept[:accepted])
        if self.was_complete and aside and not certain:
            return
        if not c.insert and accepted == 0 and not ends:
            return
        score = (c.base + read, -c.cost)
        edit = Edit(c.start, c.insert, c.kept[:accepted], c.removed, c.description, c.kept[accepted:], rule=c.rule)
        done = complete and accepted == len(c.kept)
        if self.score is None or score > self.score:
            self.score, self.edits, self.completes = score, [edit], [done]
        elif score == self.score and len(self.edits) < _MAX_TIES:
            result = _edited(text, edit)
            if all(_edited(text, e) != result for e in self.edits):
                self.edits.append(edit)
                self.completes.append(done)

    def edit(self) -> Edit | None:
        """The first of the best edits, the others its ties; of equal ones after a finished answer,
        one that leaves the text complete comes first (``{"a":{}⏎"b":{}}``: a comma inserted, not
        the ``}`` dropped, which reads as far but leaves a bracket for the close to write)."""
        if not self.edits:
            return None
        order = list(range(len(self.edits)))
        if self.violation.final:
            order.sort(key=lambda i: not self.completes[i])
        edits = [self.edits[i] for i in order]
        return replace(edits[0], ties=tuple(edits[1:]))


def _closed_by_brackets(checker: Checker, c: Candidate) -> bool:
    """Whether closing brackets alone complete the text after candidate ``c`` (a close that
    invents nothing; not a quote, which would end a string the rewrite opened)."""
    with checker.trial() as trial:
        trial.rollback_chars(c.start)
        if trial.feed(c.insert) != len(c.insert):
            return False
        closers = closing_brackets(trial)
        return trial.feed(closers) == len(closers) and trial.is_complete


def _drop_marks(v: Violation) -> Iterator[Candidate]:
    """Drop a few marks at the violation (an extra ``)``), never a word, a quote or part of an
    operator (``2 ** 3`` is not ``2 * 3``, ``a && b`` not the bitwise ``a & b``)."""
    text, evidence = v.text, v.evidence
    for d in range(1, min(_MAX_DELETE, len(evidence)) + 1):
        dropped = evidence[:d]
        if dropped.strip() == "" and d > 1:
            break
        if QUOTES & set(dropped) or (dropped.endswith("\\") and evidence[d : d + 1] in QUOTES):
            break  # an unpaired quote would turn the rest into a string (so would an escaped one, unescaped)
        if any(is_word_char(ch) for ch in dropped):
            break  # a word is the draft's content: the search may drop it, if nothing keeps it
        if _joins_words(text, evidence[d:]) or splits_operator(text, len(text), len(text) + d, evidence):
            continue  # 'a::int' must not become 'aint'
        cost = _cost(len(LEXEME.findall(dropped)), 2 * d)
        yield Candidate(len(text), "", evidence[d:], dropped, f"dropped {dropped!r}", cost, base=d)


def _replace_word(v: Violation) -> Iterator[Candidate]:
    """Replace the word the violation is in with the nearest keyword the grammar expects there
    (a misspelt keyword; never a mark, nor one keyword for another)."""
    word, text = v.word, v.text
    if not (v.word_is_whole and v.word_start >= v.floor and is_word(word)):
        return
    for literal in _expected_literals(v.checker, v.word_start, like=word):
        if word_becomes_other(word, literal, v.keywords):
            continue
        distance = _distance(word, literal)
        if 0 < distance <= max(1, len(word) // 3):
            base = len(word) - (len(text) - v.word_start)
            description = f"replaced {word!r} with {literal!r}"
            yield Candidate(v.word_start, literal, v.after_word, word, description, _cost(1, 3 * distance), base)


def _replace_previous_word(v: Violation) -> Iterator[Candidate]:
    """The previous word was taken as a name but was meant as a keyword (``LIMT 5``): a name one
    typo from the keyword expected there, with the violation right after it, is read as that
    keyword rather than kept as a name."""
    if v.in_word:
        return
    pword_start, pword, gap = _previous_word(v.text)
    if not (gap and pword and pword_start >= v.floor and pword[0].isalpha()):
        return
    for literal in _expected_literals(v.checker, pword_start, like=pword):
        distance = _distance(pword, literal)
        if 0 < distance <= max(1, len(pword) // 3) and not word_becomes_other(pword, literal, v.keywords):
            description = f"replaced {pword!r} with {literal!r}"
            yield Candidate(pword_start, literal + gap, v.evidence, pword, description, _cost(1, 3 * distance + 1), 1)


def _quote_name(v: Violation) -> Iterator[Candidate]:
    """A name with spaces written without its quotes (``frpm.Free Meal Count (K-12)``), quoted
    whole from the word the violation is in or after, or the one before that, where quoting
    changes no lexeme (the search weighs quoting other words against their edits)."""
    text = v.text
    for name_start in _name_starts(text, v.floor):
        if not text[:name_start].strip():
            continue  # words that begin the answer are no name: prose is not made a string
        joined = text[name_start:] + v.evidence
        shape = _name_shape(v.checker, name_start, joined, v.keywords, v.word if v.word.islower() else "")
        for name, cost in names_with_spaces(joined, v.keywords, quoted_names(text[:name_start]), shape):
            cost = _after_qualifier(text[:name_start], cost, v.keywords)
            end = name_start + len(name)
            if end > len(text) and cost < _TIEBREAK:
                kept = joined[len(name) :]
                yield Candidate(name_start, f'"{name}"', kept, name, f"quoted {name!r}", cost, end - len(text))


def _swap_mark(v: Violation) -> Iterator[Candidate]:
    """Swap the offending mark for one of its class the grammar allows (single for double
    quotes, with its partner further on when it is a quote)."""
    text, evidence = v.text, v.evidence
    if not evidence or evidence[0] not in _SWAPPABLE or splits_operator(text, len(text), len(text) + 1, evidence):
        return
    bad = evidence[0]
    if _qualifier_point(text, evidence):
        return
    if bad in QUOTES and _escaped(text):
        return  # a quote after a backslash is escaped (the backslash may be dropped), no string's quote
    if bad == ";":
        return  # a ';' ends what the draft wrote: it is not made a separator within it
    with v.checker.trial() as trial:
        allowed = trial.allowed_bytes()
    for code in sorted(allowed):
        good = chr(code)
        if good not in _SWAPPABLE or good == bad:
            continue
        if bad in QUOTES:
            # A quote is swapped with its partner, or not at all.
            partner = evidence.find(bad, 1)
            if good in QUOTES and partner > 0 and evidence[partner - 1] != "\\":  # not an escaped one
                swapped = evidence[1:partner] + good + evidence[partner + 1 :]
                description = f"replaced {bad}...{bad} with {good}...{good}"
                yield Candidate(len(text), good, swapped, bad, description, _cost(1, 3), base=1)
            if good in QUOTES and partner < 0 and v.final and good not in evidence:
                # A string cut short in ``bad`` quotes (``{'b': 'y``): opened with ``good``, closed at the finish.
                yield Candidate(
                    len(text), good, evidence[1:], bad, f"replaced {bad}... with {good}...", _cost(1, 3), base=1
                )
            if good in QUOTES:
                yield from _requote(v, bad, good)
                yield from _mismatched_partner(v, bad, good)
        elif _same_class(bad, good) or (
            good == "." and _point_slipped(text, bad, evidence, v.checker.grammar.keywords)
        ):
            yield Candidate(len(text), good, evidence[1:], bad, f"replaced {bad!r} with {good!r}", _cost(1, 2), base=1)


def _requote(v: Violation, bad: str, good: str) -> Iterator[Candidate]:
    """A string in ``bad`` quotes that holds ``good`` quotes, escaped ``bad`` ones or raw control
    characters (``'it"s'``, ``'O\\'Reilly'``, ``'a⇥b'``), written in ``good`` quotes with its text
    kept: the ``good`` quotes inside escaped, the escaped ``bad`` ones written plain, a line
    break, tab or carriage return as its escape (where the grammar takes them raw, the plain
    swap reads as far for less). Its partner is the first ``bad`` quote not escaped."""
    evidence = v.evidence
    partner = _unescaped(evidence, bad, 1)
    if partner < 0:
        return
    inner = evidence[1:partner]
    requoted = re.sub(r"\\(.)|(.)", lambda m: _requoted_char(m, bad, good), inner, flags=re.S)
    if requoted == inner:
        return
    kept = requoted + good + evidence[partner + 1 :]
    description = f"replaced {bad}...{bad} with {good}...{good}, what is inside escaped as {good}...{good} needs"
    yield Candidate(len(v.text), good, kept, bad, description, _cost(1, 4), base=1 + len(inner) - len(requoted))


_STRUCTURE_AFTER = re.compile(r"\s*[,:}\]]")


def _mismatched_partner(v: Violation, bad: str, good: str) -> Iterator[Candidate]:
    """A string opened with ``bad`` and closed with ``good`` (``'b", "c": 1``): where no ``bad``
    quote closes it, the first ``good`` quote that structure follows is its end."""
    evidence = v.evidence
    if _unescaped(evidence, bad, 1) >= 0:
        return
    end = next(
        (m.start() for m in re.finditer(re.escape(good), evidence) if _STRUCTURE_AFTER.match(evidence, m.end())), -1
    )
    if end <= 0 or evidence[end - 1] == "\\":
        return
    description = f"replaced {bad}...{good} with {good}...{good}"
    yield Candidate(len(v.text), good, evidence[1:], bad, description, _cost(1, 4), base=1)


def _requoted_char(match: re.Match[str], bad: str, good: str) -> str:
    escaped, plain = match.group(1), match.group(2)
    if escaped is not None:
        return escaped if escaped == bad else "\\" + escaped
    return "\\" + good if plain == good else _CONTROL_ESCAPES.get(plain, plain)


_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _unescaped(text: str, quote: str, start: int) -> int:
    """The first ``quote`` in ``text`` from ``start`` that no backslash escapes, or -1."""
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return -1


def _previous_word(text: str) -> tuple[int, str, str]:
    """The word at the end of ``text`` before its white space: (where it starts, it, the space)."""
    gap_start = run_start(text, len(text), str.isspace)
    start = run_start(text, gap_start, is_word_char)
    return start, text[start:gap_start], text[gap_start:]


def _drop_mark_before(v: Violation) -> Iterator[Candidate]:
    """Drop the mark before the violation (a trailing comma before a closing bracket)."""
    text = v.text
    gap_start = run_start(text, len(text), str.isspace)
    mark = text[gap_start - 1 : gap_start]
    if not mark or is_word_char(mark) or mark.isspace() or mark in QUOTES or gap_start - 1 < v.floor:
        return
    if splits_operator(text, gap_start - 1, gap_start, v.evidence):
        return
    gap = text[gap_start:]
    if not _joins_words(text[: gap_start - 1], gap + v.evidence):  # 'step-by' must not become 'stepby'
        yield Candidate(gap_start - 1, "", gap + v.evidence, mark, f"dropped {mark!r}", _cost(1, 3), base=-len(gap))
    elif _previous_word(text[: gap_start - 1])[1].lower() in v.keywords:
        # After a keyword a mark glued to the next word joins nothing (``SELECT.DisplayName``: no
        # qualifier): dropped, with a space that keeps the two words apart, as the mark did.
        description = f"dropped {mark!r}"
        yield Candidate(gap_start - 1, " ", gap + v.evidence, mark, description, _cost(1, 4), base=-len(gap))


def _drop_repeated_word(v: Violation) -> Iterator[Candidate]:
    """Drop the word before the violation where the draft wrote it twice in a row (``MAX
    MAX(age)``, ``DISTINCT DISTINCT``): the repeat changes nothing the draft meant, so dropping it
    costs no lexeme (less than a mark put in to keep both: ``MAX MAX,(age)``)."""
    if v.in_word:
        return
    pword_start, pword, gap = _previous_word(v.text)
    if pword and pword_start >= v.floor and _repeats_previous(v.text[:pword_start], pword):
        cost = _cost(0, 2 * len(pword) + 1)
        description = f"dropped {pword!r} (written twice)"
        yield Candidate(pword_start, "", gap + v.evidence, pword, description, cost, base=-len(gap), rule="repeat")


def _drop_repeated_phrase(v: Violation) -> Iterator[Candidate]:
    """Drop a run of lexemes at the violation that repeats the run just before it (``ORDER BY age
    FROM Singer ORDER BY age DESC``: the clause written again, then a word the first copy lacks):
    as a word written twice, the repeat changes nothing the draft meant, and what follows it (``DESC``)
    is read on. Two lexemes or more, one a word; the longest run that repeats."""
    start = v.word_start
    rest = v.text[start:] + v.evidence
    run = _repeated_run(v.text[:start], rest)
    if run and start >= v.floor:
        description = f"dropped {rest[:run].strip()!r} (written twice)"
        cost = _cost(0, 2 * run)
        base = run - (len(v.text) - start)
        yield Candidate(start, "", rest[run:], rest[:run], description, cost, base=base, rule="repeat")


_PHRASE_REACH = 12  # the most lexemes a repeated phrase may have


def _repeated_run(before: str, rest: str) -> int:
    """How many characters of ``rest`` (from its start, with the white space after them) repeat
    the lexemes that end ``before``, case aside; 0 where fewer than two do."""
    ahead = list(itertools.islice(LEXEME.finditer(rest), _PHRASE_REACH))  # (the evidence may be long)
    if not ahead or ahead[0].start() != 0:
        return 0
    behind = [m.group().lower() for m in LEXEME.finditer(before)][-_PHRASE_REACH:]
    for n in range(min(len(ahead), len(behind)), 1, -1):
        words = [m.group().lower() for m in ahead[:n]]
        if words == behind[-n:] and any(is_word(w) and w[0].isalpha() for w in words) and before[-1:].isspace():
            end = ahead[n - 1].end()
            return end + len(rest[end:]) - len(rest[end:].lstrip(" "))
    return 0


def _repeats_previous(before: str, word: str) -> bool:
    """Whether ``before`` ends in ``word`` (case aside) and white space: a word written twice."""
    stripped = before.rstrip()
    head = stripped[: len(stripped) - len(word)]
    return (
        len(stripped) < len(before)
        and stripped[-len(word) :].lower() == word.lower()
        and not is_word_char(head[-1:])
        and any(c.isalpha() for c in word)
    )


def _insert_mark(v: Violation) -> Iterator[Candidate]:
    """Insert a short mark the grammar expects (a missing comma, colon or bracket), never
    inside the draft's operator (``2 *|* 3``). Marks the draft writes after the same word come
    first, so that of those that read as far and cost the same, that one is taken."""
    text, evidence = v.text, v.evidence
    if splits_operator(text, len(text), len(text), evidence):
        return
    literals = _expected_literals(v.checker, len(text))
    for literal in sorted(literals, key=lambda mark: not _written_after_word(text, mark, evidence)):
        if _invents_mark(v.checker, text, literal, evidence):
            continue
        if literal == "." and text[-1:].isspace():
            yield _tight_point(text, evidence)
        elif len(literal) <= _MAX_INSERT_LEN and not literal.isalnum() and not set(literal) & set("([{'\"`"):
            # An operator written after white space gets white space after it too (``age > 30``).
            spaced = text[-1:].isspace() and not set(literal) <= TIGHT and evidence[:1].strip() != ""
            insert = literal + " " if spaced else literal
            invented = _invented_lexemes(literal)
            yield Candidate(
                len(text), insert, evidence, "", f"inserted {literal!r}", _cost(invented, 2 * len(literal) + 1)
            )


def _tight_point(text: str, evidence: str) -> Candidate:
    """A qualifier's ``.`` the draft left out between two words it wrote apart (``AVG(P
    duration)``, where it writes ``P.driverId``): written between them in place of the white
    space (``P.duration``; ``_qualifies_no_name`` says where one may be)."""
    gap_start = run_start(text, len(text), str.isspace)
    kept = evidence.lstrip()
    space = text[gap_start:] + evidence[: len(evidence) - len(kept)]
    return Candidate(gap_start, ".", kept, space, "inserted '.'", _cost(0, 3), base=len(evidence) - len(kept))


def _invents_mark(checker: Checker, before: str, literal: str, after: str) -> bool:
    """Whether the mark ``literal``, inserted between the draft's ``before`` (the first characters
    of ``checker``'s text) and ``after``, is no repair: it invents what the draft did not write
    (``_invents_between``) or makes a keyword it wrote a name (``_makes_keyword_a_name``)."""
    return _invents_between(before, literal, after, checker.grammar.keywords) or _makes_keyword_a_name(
        checker, len(before), literal, after
    )


def _invents_between(before: str, literal: str, after: str, keywords: frozenset[str]) -> bool:
    """Whether inserting ``literal`` between the draft's ``before`` and ``after`` (as written, white
    space and all) invents what it did not write: an operator between two names, or a name and
    its bracket (``line_1 & INCLUDE``, ``T2.Average&(LifeExpectancy)``: an operation nobody
    wrote; before a value, ``age 30``, the comparison left out is a reading, which a target may
    choose of the ties), or a ``.`` that makes a qualified name of what the draft wrote as no
    name (``_qualifies_no_name``), or a ``,`` that parts a construct of another dialect
    (``_parts_construct``)."""
    if is_operator(literal) and _ends_in_name(before.rstrip(), keywords) and _starts_name(after.lstrip(), keywords):
        return True
    if literal == "," and (_parts_call(before, after) or _parts_construct(before.rstrip(), after, keywords)):
        return True
    return _qualifies_no_name(before, literal, after, keywords)


def _parts_call(before: str, after: str) -> bool:
    """Whether a ``,`` between ``before`` and ``after`` would part a word from the ``(`` the draft
    glued to it: a call (``b REPLACE(c, 'x', 'y')`` is ``b, REPLACE(…)``, not the alias
    ``REPLACE`` and a bracketed list after it). A qualified name is no call's (``T1.name(SELECT …``
    is ``T1.name,(SELECT …``)."""
    if after[:1] != "(" or not is_word_char(before[-1:]):
        return False
    start = run_start(before, len(before), is_word_char)
    return before[start - 1 : start] != "."


_BRACKET_AFTER = re.compile(r"[ \t]?([(\[])")  # a bracket right after a word, a space between or none


def _parts_construct(before: str, after: str, keywords: frozenset[str]) -> bool:
    """Whether a ``,`` between ``before`` and ``after`` would part a word and the bracket the draft
    opened right after it, where the two are one construct of another dialect: a ``[`` (an
    array's, ``array,[1, 2]``: SQLite reads ``[1, 2]`` as a quoted name), or a ``(`` after a word
    in capitals that is no keyword of the grammar (``JOIN LATERAL, (SELECT``, ``KEEP, (DENSE_RANK``:
    a join or a call made two items nobody wrote)."""
    bracket = _BRACKET_AFTER.match(after)
    last = _last_lexemes(before, 1)
    word = last[0].group() if last else ""
    if bracket is None or not is_word(word):
        return False
    return bracket.group(1) == "[" or (len(word) > 1 and word.isupper() and word.lower() not in keywords)


def _makes_keyword_a_name(checker: Checker, start: int, insert: str, after: str) -> bool:
    """Whether writing ``insert`` after the first ``start`` characters of ``checker``'s text makes
    the keyword the draft wrote next, in capitals, a name (``'French', END``, ``'French' & END``:
    the grammar then reads ``END`` as a column; ``t, INNER u``: a table; ``+ CASE`` keeps ``CASE``
    a keyword), or leaves it unread. Asked of the marks the search inserts, not of every edit:
    the grammar's expected literals cost a probe."""
    gap = after[: len(after) - len(after.lstrip())]
    first = LEXEME.match(after, len(gap))
    word = first.group() if first else ""
    if not (len(word) > 1 and word.isupper() and word.lower() in checker.grammar.keywords):
        return False
    with checker.trial() as trial:
        trial.rollback_chars(start)
        if trial.feed(insert + gap) != len(insert + gap):
            return False
        # (Not expected as a keyword there, it is read as a name or not at all: either way the
        # mark is no repair, and the search need not try what reads nothing further.)
        if word.lower() not in {lit.lower() for lit in _expected_literals(trial, len(trial.text))}:
            return not _called(trial, after[len(gap) :])
        # (A keyword the draft writes before a word, as a join's is, ``INNER u``; not before a
        # bracket, where SQLite's ``LEFT(name, 3)`` is a call, a name's part.)
        return first is not None and _WORD_NEXT.match(after, first.end()) is not None and _read_as_name(trial, word)


def _called(checker: Checker, after: str) -> bool:
    """Whether ``after`` begins with a word and the ``(`` glued to it, read at the end of
    ``checker``'s text as a call (SQLite's ``REPLACE(c, 'x', 'y')``: a keyword that names a
    function)."""
    call = re.match(r"\w+\(", after)
    return call is not None and _reads_whole(checker, len(checker.text), call.group())


_PLAIN_NAME = "name_"  # a word no grammar here takes for a keyword
_WORD_NEXT = re.compile(r"[ \t]+[A-Za-z_]")


def _read_as_name(checker: Checker, word: str) -> bool:
    """Whether ``word``, a keyword that the grammar also takes for a name where ``checker``'s text
    ends (SQLite names a table ``INNER``), is read there as a name: what may follow it is what
    may follow a plain name (``FROM t, INNER u``: the join's keyword made a table). A keyword read
    as one is followed by its own construct (``+ CASE WHEN``)."""
    followers = []
    for probe in (word, _PLAIN_NAME):
        with checker.trial() as trial:
            if trial.feed(probe + " ") != len(probe) + 1:
                return False
            followers.append({terminal.name for terminal in trial.expected()})
    return followers[0] == followers[1]


def _ends_in_name(text: str, keywords: frozenset[str]) -> bool:
    """Whether ``text`` ends in a name: a word that is no keyword of the grammar."""
    last = _last_lexemes(text, 1)
    return bool(last) and is_word(last[0].group()) and last[0].group().lower() not in keywords


def _starts_name(text: str, keywords: frozenset[str]) -> bool:
    """Whether ``text`` begins with a name (a word that is no keyword of the grammar) or a bracket."""
    first = LEXEME.match(text)
    lexeme = first.group() if first else ""
    return lexeme == "(" or (is_word(lexeme) and lexeme.lower() not in keywords)


def _qualifies_no_name(before: str, literal: str, after: str, keywords: frozenset[str]) -> bool:
    """Whether inserting ``literal`` would make a qualified name of what the draft wrote as no
    name: a ``.`` written after a literal or a keyword of the grammar, or before anything but a
    word or ``*`` (SQLite takes ``'Yes' . independence`` and ``LIKE . '%East%'``, a string and a
    keyword read as a table: a literal or a keyword turned into a name is no repair); or between
    two words the draft wrote apart (``airport .code``: two names made one), unless the draft
    writes the word before with a ``.`` after it elsewhere (``T2 Teacher_ID`` beside ``T2.Name``)."""
    if literal != ".":
        return False
    apart = before[-1:].isspace() or after[:1].isspace()
    if apart and not _written_after_word(before, literal, after):
        return True  # two words the draft wrote apart ('airport code') are not made one name
    last = _last_lexemes(before.rstrip(), 1)
    qualifier = last[0].group() if last else ""
    named = (is_word(qualifier) and qualifier.lower() not in keywords) or qualifier[:1] in ('"', "`", "]")
    following = LEXEME.match(after.lstrip())
    return not (named and following is not None and (is_word(following.group()) or following.group() == "*"))


def _written_after_word(text: str, mark: str, rest: str = "") -> bool:
    """Whether the draft already writes ``mark`` right after the word that ends ``text`` (``T2.``
    of ``T2.Name``, where ``T2 Teacher_ID`` lacks a mark), before it or in ``rest``, the draft's
    text after the violation (``AVG(P duration) … ON D.driverId = P.driverId``): that mark keeps
    the word meaning what it means there (``T2.Teacher_ID``, not the table list ``T2, Teacher_ID``)."""
    gap_start = run_start(text, len(text), str.isspace)
    word = text[run_start(text, gap_start, is_word_char) : gap_start]
    if not word or not is_word_char(word[0]):
        return False
    pattern = re.compile(rf"(?<!\w){re.escape(word)}\s*{re.escape(mark)}")
    return pattern.search(text[: gap_start - len(word)]) is not None or pattern.search(rest) is not None


def _close_brackets(v: Violation) -> Iterator[Candidate]:
    """Close two or more brackets the draft left open where its statement ends (``... AS x⏎;``
    inside ``(SELECT (``); not before more of it, which may close them itself."""
    if v.evidence.lstrip()[:1] not in ("", ";"):
        return
    closers = closing_brackets(v.checker, _MAX_CLOSERS)
    for n in range(2, len(closers) + 1):
        yield Candidate(len(v.text), closers[:n], v.evidence, "", f"inserted {closers[:n]!r}", _cost(n, 2 * n + 1))


def _close_swallowing_literal(v: Violation) -> Iterator[Candidate]:
    """A string or quoted name that swallowed code because the draft forgot its closing quote
    (``= 'Bad) AS bad, COUNT(id) ... = 'Bad) / ...``): the violation comes right after its
    quote, or a word written on to it (``JOIN `hero_power hp ON ... JOIN `superpower sp``), which
    the draft wrote as the opening of the next one, and what it holds reads as code
    (a keyword in capitals). The closing quote is inserted at a word's end inside it, nearest the
    opening first (``'Bad'``, ``'Portuguese (Brazil)'``): a closing mark, no word invented; the
    draft's text after it, the swallowed code, is read again as code. Where the draft wrote no
    closing quote for the next literal, only in a finished answer whose end then closes it too."""
    text = v.text
    written_on = _WRITTEN_ON_QUOTE.search(text, max(v.floor, len(text) - _MAX_REACH))
    if written_on is None:
        return
    closing = written_on.start()  # the quote the violation's word, or the word before it, is written on to
    quote = text[closing]
    after = text[closing + 1 :] + v.evidence
    partnered = after.find(quote) >= 0  # the next literal's closing quote the draft wrote
    if quote not in QUOTES or not is_word_char(after[:1]) or not (partnered or v.final):
        return
    opening = _swallowing_opening(text, closing, quote, v.floor, v.keywords)
    if opening is None:
        return
    for nearness, end in enumerate(_word_ends(text[opening + 1 : closing])[:_MAX_LITERAL_CLOSES]):
        start = opening + 1 + end
        if not (partnered or _closes_at_end(v.checker, start, quote + text[start:] + v.evidence, v.floor)):
            continue
        cost = _cost(1, 1 + nearness)  # of those that read as far, the nearest the opening
        yield Candidate(start, quote, text[start:] + v.evidence, "", _closed(quote), cost, start - len(text))


def close_swallowed_at_end(checker: Checker, floor: int) -> Edit | None:
    """At the end of a finished draft, a quoted literal left open that swallowed code (``JOIN
    `superpower sp ON hp.power_id = sp.id WHERE s.id = 56``: its closing quote forgotten, often
    after ``_close_swallowing_literal`` made its quote an opening): the closing quote inserted at a
    word's end inside it, nearest the opening first, where the draft's text after it then reads
    to a complete text, or one closing brackets alone complete; ``None`` if there is none. The
    edit's ``kept`` is the draft's text after the quote, read again."""
    text = checker.text
    close = "" if checker.is_complete else shortest_close(checker)
    quote = close[:1] if close else ""
    opening = _swallowing_opening(text, len(text), quote, floor, checker.grammar.keywords) if quote in QUOTES else None
    if opening is None:
        return None
    for end in _word_ends(text[opening + 1 :])[:_MAX_LITERAL_CLOSES]:
        start = opening + 1 + end
        if start == len(text):
            break  # the close at the end is the finish's own
        with checker.trial() as trial:
            trial.rollback_chars(start)
            if trial.feed(quote) != 1 or trial.feed(text[start:]) != len(text) - start:
                continue
            closers = closing_brackets(trial)
            if trial.feed(closers) == len(closers) and trial.is_complete:
                return Edit(start, quote, text[start:], "", _closed(quote))
    return None


def break_swallowing_comment(checker: Checker, floor: int) -> Edit | None:
    """At the end of a finished draft, a line comment that swallowed the draft's code, its line
    breaks lost (an answer stored on one line: ``-- Step 1: find the schools WITH s AS (SELECT …``):
    a line break inserted before the word where the code begins, the first after the comment's
    first word whose text, up to the next comment mark or the end, the checker reads as code,
    ``_MIN_CODE_LEXEMES`` lexemes at least; ``None`` if there is none. The edit's ``kept`` is the
    draft's text after the break, read again."""
    text = checker.text
    start = _line_comment_start(checker, floor)
    if start is None:
        return None
    words = [m.start(1) for m in _COMMENT_WORD.finditer(text, start)][1 : _MAX_COMMENT_WORDS + 1]
    for at in words:
        rest = text[at:]
        mark = _COMMENT_MARK.search(rest)
        if len(LEXEME.findall(rest[: mark.start() if mark else len(rest)])) < _MIN_CODE_LEXEMES:
            continue
        with checker.trial() as trial:
            trial.rollback_chars(at)
            if trial.feed("\n") == 1 and trial.feed(rest) == len(rest):
                return Edit(at, "\n", rest, "", _BROKEN, rule="line break")
    return None


def _line_comment_start(checker: Checker, floor: int) -> int | None:
    """Where the line comment that the text ends in begins (a comment mark on its last line, after
    ``floor``, after which the grammar reads any character and a line break ends what it reads)."""
    text = checker.text
    for mark in _COMMENT_MARK.finditer(text, max(floor, text.rfind("\n") + 1)):
        with checker.trial() as trial:
            trial.rollback_chars(mark.end())
            if trial.feed(_ANY) != len(_ANY):
                continue
        with checker.trial() as trial:
            trial.rollback_chars(mark.end())
            if trial.feed("\n" + _ANY) != 1 + len(_ANY):
                return mark.start()
    return None


_COMMENT_MARK = re.compile(r"--|#|//")
_COMMENT_WORD = re.compile(r"\s(\S)")
_ANY = "\x01"  # a character that only a comment (or a literal) reads (SQLite names take any above 0x7f)
_MIN_CODE_LEXEMES = 3
_MAX_COMMENT_WORDS = 64
_BROKEN = "inserted a line break (the draft's line comment ended where its code begins)"


def _swallowing_opening(text: str, end: int, quote: str, floor: int, keywords: frozenset[str]) -> int | None:
    """Where the literal that ``quote`` opens last before ``end`` begins, where it holds the
    draft's code (``_holds_code``); ``None`` otherwise. (A quote after an edit, a word or a quote is
    no evidence it opens: ``Ward's``, ``'+''``.)"""
    opening = text.rfind(quote, 0, end)
    if opening <= floor or is_word_char(text[opening - 1]) or text[opening - 1] == quote:
        return None
    return opening if _holds_code(text[opening + 1 : end], keywords, quote) else None


def _closed(quote: str) -> str:
    return f"inserted {quote!r} (the draft's {quote}...{quote} closed where its text ends)"


_MAX_LITERAL_CLOSES = 8
_MAX_REACH = 64
_WRITTEN_ON_QUOTE = re.compile(r"[\"'`]\w*\s*$")


def _closes_at_end(checker: Checker, start: int, edited: str, floor: int) -> bool:
    """Whether, with ``edited`` written after the first ``start`` characters of ``checker``'s text,
    the literal the draft's quote then opens, left open at the end of its finished answer, is
    closed too where its text ends (``close_swallowed_at_end``)."""
    with checker.trial() as trial:
        trial.rollback_chars(start)
        return trial.feed(edited) == len(edited) and close_swallowed_at_end(trial, max(floor, start + 1)) is not None


_WORD_END = re.compile(r"(?<=[\w)])(?![\w.(])")


def _holds_code(inside: str, keywords: frozenset[str], quote: str) -> bool:
    """Whether a quoted text holds the draft's code: a keyword of the grammar written in capitals,
    or a comparison that ends it (``'6.5 and SEX = 'F'``: the quote after ``=`` opens its value).
    One that holds its own quote written twice (``'+'' AND ...``), or begins with such a keyword
    (`` `SELECT q1 FROM ...``), was not left open: the quote written twice, or before the code, is
    the slip."""
    words = re.findall(r"[A-Za-z_]\w*", inside)
    first = inside.lstrip()[:1].isalpha() and words[:1] and _capital_keyword(words[0], keywords)
    code = any(_capital_keyword(w, keywords) for w in words) or _ENDS_IN_COMPARISON.search(inside) is not None
    return quote not in inside and not first and code


#: A text that ends in a comparison of a word (``SEX =``, ``b <>``) and white space: the quote after
#: it opens the compared value.
_ENDS_IN_COMPARISON = re.compile(r"\w\s*(?:=|<>|!=|<=|>=|<|>)\s*$")


def _capital_keyword(word: str, keywords: frozenset[str]) -> bool:
    return word.isupper() and len(word) > 1 and word.lower() in keywords


def _word_ends(inside: str) -> list[int]:
    """Where a word, or a closing bracket after it, ends inside a quoted text (``Portuguese``,
    ``(Brazil``, ``(Brazil)``): not inside a word, a qualified name or before a call's bracket."""
    return [m.start() for m in _WORD_END.finditer(inside)]


def _rewrite_slips(v: Violation) -> Iterator[Candidate]:
    """The grammar's known slips (``Grammar.rewrites``: ``a::int`` for ``CAST(a AS int)``) whose
    match spans the violation. The match itself is evidence, so one more token read after it is
    enough, and it costs less than a generic edit that reads as far (JSON's ``\\\\/`` is ``/``,
    not ``\\\\`` with the ``/`` dropped, which makes the escape ``\\\\b``). (Or the match spans
    where the evidence first fails: past the text's end when the rejected text begins with the
    word before it, ``line1`` of ``"line1⏎line2"``.)"""
    text, evidence = v.text, v.evidence
    read = try_edit(v.checker, len(text), "", evidence)
    fails = len(text) + (read[0] if read else 0)
    complete = _complete_before_word(v)
    sentence = sentence_start(evidence, v.keywords)
    statement = None if sentence is None else evidence[:sentence].rstrip()
    for rewrite in v.checker.grammar.rewrites:
        window_start = _window_start(rewrite, text, v.rewrite_floor, complete)
        if window_start is None:
            continue
        for window, before_sentence in _rewrite_windows(text[window_start:], evidence, statement):
            yield from _rewrite_matches(v, rewrite, window_start, window, fails, before_sentence)


def _complete_before_word(v: Violation) -> bool:
    """Whether the text is complete at the violation, or before the word it is in (``FROM t
    QUALIFY R|OW_NUMBER()``: the checker read ``R`` as the start of a keyword)."""
    if v.checker.is_complete:
        return True
    if not v.in_word:
        return False
    with v.checker.trial() as trial:
        trial.rollback_chars(v.word_start)
        return trial.is_complete


def _rewrite_windows(text: str, evidence: str, statement: str | None) -> Iterator[tuple[str, bool]]:
    """The texts a rewrite's match is looked for in, and whether each ends before a sentence: the
    text and all the evidence; then, where a sentence of prose begins in the evidence, the text
    and the ``statement`` before it, its end the statement's (``\\Z`` matches there)."""
    yield text + evidence, False
    if statement is not None:
        yield text + statement, True


def _rewrite_matches(
    v: Violation, rewrite: Rewrite, window_start: int, window: str, fails: int, before_sentence: bool
) -> Iterator[Candidate]:
    """The candidates of ``rewrite``'s matches in ``window`` (from ``window_start`` of the text)
    that span the violation; with ``before_sentence``, only those that end the window, before
    the sentence that follows it."""
    text, evidence = v.text, v.evidence
    for match in _matches(rewrite.regex, window):
        start, end = window_start + match.start(), window_start + match.end()
        if start > fails:
            break
        spans = start <= len(text) < end or start <= fails < end
        at_end = match.end() == len(window)
        if before_sentence and not at_end:
            continue  # (found in the whole evidence too)
        if not spans or (not v.final and at_end and not before_sentence):
            continue  # not across the violation; or cut where the draft's text is (the rest unread)
        # (A match that begins in the evidence keeps the draft's text before it.)
        before = evidence[: max(start - len(text), 0)]
        kept = evidence[end - len(text) :]
        # (Other rewrites inside its text only where the grammar rejects that text as written.)
        written = rewrite.expand(match)
        reads = _reads_whole(v.checker, min(start, len(text)), before + written)
        inserts = _rewritten(before, match, rewrite, written, () if reads else v.checker.grammar.rewrites)
        for insert in inserts if reads else _with_known_names(inserts, quoted_names(text)):
            yield Candidate(
                min(start, len(text)),
                insert,
                kept,
                match.group(),
                _rewrote(match, rewrite),
                _cost(0, 1),
                base=end - len(text),
                min_read=0 if _chained(rewrite, before, insert, kept) else rewrite.min_read,
                rule=rewrite.rule,
                before_sentence=before_sentence,
            )


def _with_known_names(inserts: Iterable[str], known: frozenset[str]) -> Iterator[str]:
    """Each of a rewrite's texts, then that text with the names with spaces that the text wrote
    quoted (``known``, in lower case) quoted where it copies them bare: ``RIGHT(e.Examination Date,
    5)``, after ``YEAR(e."Examination Date")``, is ``substr(e."Examination Date", -5)``."""
    for insert in inserts:
        yield insert
        quoted = _quote_known(insert, known) if known else insert
        if quoted != insert:
            yield quoted


_STRING_OR_QUOTED = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"|`[^`]*`|\[[^\]]*\]")


def _quote_known(text: str, known: frozenset[str]) -> str:
    """``text`` with each bare ``known`` name (outside strings and quoted names) in double quotes."""
    names = "|".join(re.escape(name) for name in sorted(known, key=len, reverse=True))
    bare = re.compile(rf"({_STRING_OR_QUOTED.pattern})|(?<![\w$])(?:{names})(?![\w$])", re.IGNORECASE)
    return bare.sub(lambda m: m.group() if m.group(1) else f'"{m.group()}"', text)


def _chained(rewrite: Rewrite, before: str, insert: str, kept: str) -> bool:
    """Whether the draft makes the same slip again right after the rewrite's match, so that the
    same rewrite matches over its own text and the draft's next words (``WHERE a WHERE b WHERE c``:
    after ``WHERE a AND b``, ``WHERE a AND b WHERE c``): the rewrite needs no more evidence, the
    next one takes its text back and joins the third."""
    own = insert[len(before) :]
    match = rewrite.regex.match(own + kept)  # (a match at the start only: not every match in the rest)
    return match is not None and 0 < len(own) < match.end()


def _rewritten(
    before: str, match: re.Match[str], rewrite: Rewrite, written: str, rewrites: tuple[Rewrite, ...]
) -> Iterator[str]:
    """A rewrite's text, then, where the draft's matched text holds a slip strictly inside it, that
    text with the slip rewritten too: the same rewrite's (``WHERE a IN (SELECT b WHERE c WHERE d)
    WHERE e``: the outer second WHERE's match holds the inner one; the draft's slip, none the
    replacement made), or one of ``rewrites`` marked ``within`` inside the draft's text the rewrite
    copies (a group: ``RIGHT(LEFT(d, 6), 2)``, MySQL's LEFT inside its RIGHT's string). ``before``: the draft's
    text kept before it; ``written``: the rewrite's text for ``match``."""
    yield before + written
    drafted = match.group()
    if any(inner.start() > 0 and inner.end() < len(drafted) for inner in _matches(rewrite.regex, drafted)):
        inner = rewrite.regex.sub(rewrite.expand, written)
        if inner != written:
            yield before + inner
    for other in rewrites:
        if other.within and other is not rewrite and other.regex.search(drafted):
            inner = rewrite.expand(match, functools.partial(_rewrite_whole, other))
            if inner != written:
                yield before + inner


def _rewrite_whole(rewrite: Rewrite, text: str) -> str:
    """``text`` with ``rewrite``'s slips in it rewritten where a slip is whole, its quotes and
    brackets paired (``LEFT(d, 6)``, ``x::date``): not a quote that ends a string (JSON's
    escaped quote), whose meaning depends on the text around it."""
    return rewrite.regex.sub(lambda m: rewrite.expand(m) if _paired(m.group()) else m.group(), text)


def _paired(text: str) -> bool:
    """Whether ``text``'s quotes and brackets are each closed within it, in order."""
    stack: list[str] = []
    for ch in text:
        if stack and stack[-1] in "'\"`":
            if ch == stack[-1]:
                stack.pop()
        elif ch in "'\"`" or ch in _OPENERS:
            stack.append(ch)
        elif ch in ")]}":
            if not stack or _CLOSERS.get(stack[-1]) != ch:
                return False
            stack.pop()
    return not stack


def _reads_whole(checker: Checker, at: int, insert: str) -> bool:
    """Whether the grammar reads ``insert`` whole in place of the text from ``at`` on."""
    with checker.trial() as trial:
        trial.rollback_chars(at)
        return trial.feed(insert) == len(insert)


def _matches(regex: re.Pattern[str], window: str) -> Iterator[re.Match[str]]:
    """``regex``'s matches in ``window`` by where they start, overlapping ones too: a slip inside
    a match that spans more (``WHERE a IN (SELECT b FROM c WHERE d WHERE e) WHERE f``: the inner
    second WHERE, inside the outer one's match) is found where the outer match leads nowhere."""
    pos = 0
    while (match := regex.search(window, pos)) is not None:
        yield match
        pos = match.start() + 1


def _window_start(rewrite: Rewrite, text: str, floor: int, complete: bool) -> int | None:
    """Where a rewrite's match may begin: within its ``reach`` of characters before the
    violation, or, for a pattern anchored at ``\\A``, at the start of an answer that is
    complete where more follows (``None`` when it is not, or text before the draft's is someone
    else's)."""
    if rewrite.at_start:
        return 0 if floor == 0 and complete else None
    return max(floor, len(text) - rewrite.reach)


_STEPS = (
    _drop_marks,
    _replace_word,
    _replace_previous_word,
    _quote_name,
    _swap_mark,
    _drop_mark_before,
    _drop_repeated_word,
    _drop_repeated_phrase,
    _insert_mark,
    _close_brackets,
    _close_swallowing_literal,
    _rewrite_slips,
)


#: A word in title case, a space and an open bracket: a name's bracketed part may follow
#: (``Enrollment (Ages 5-17)``); a call is written ``MAX (``, ``max (``.
_TITLED_BEFORE_BRACKET = re.compile(r"\b[A-Z][a-z][A-Za-z]* \($")


def _name_starts(text: str, floor: int) -> list[int]:
    """Where the last two words of ``text`` start (a name with spaces may begin there), a word in
    title case before an open bracket counted as the one before the word after it
    (``Enrollment (Ages``), or as the last word where the bracket ends ``text`` (``Percent (``)."""
    starts = []
    end = len(text.rstrip(" "))
    if _TITLED_BEFORE_BRACKET.search(text[:end]):
        end -= 2  # 'Percent (%': the violation is the bracket's first mark, the name begins before it
    for _ in range(2):
        start = run_start(text, end, is_word_char)
        if start == end or start < floor or not is_word(text[start:end]):
            break
        starts.append(start)
        end = run_start(text, start, lambda ch: ch == " ")
        if end == start and _TITLED_BEFORE_BRACKET.search(text[:start]):
            end = start - 2  # 'Enrollment (Ages': the word before a bracketed part of a name
        elif end == start:
            break
    return starts


# -- measures ----------------------------------------------------------------------------------


def levenshtein(a: str, b: str, *, transpositions: bool = False) -> int:
    """Edit distance; with ``transpositions``, swapping two adjacent characters is one edit
    (optimal string alignment: ``FORM`` is one edit from ``FROM``)."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if transpositions and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb and ca != cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, previous = previous, current
    return previous[-1]


_TOKEN = re.compile(r"\w+|[^\w\s]")  # how much of the evidence an edit reads: words and marks
_TIEBREAK = 10  # a lexeme changed costs more than any difference in characters
_INVENTED_WORD = 2  # lexemes a word or operator inserted costs: more than one of the draft's dropped


def _invented_lexemes(literal: str) -> int:
    """What writing ``literal`` where the draft has nothing costs, in lexemes: a word, an operator
    or an opening bracket is invented meaning (``age > 30`` for ``age 30``, an operation nobody
    wrote; ``CreationDate() FROM``, a call or a group nobody wrote, whose close is the draft's
    stray one), so it costs more than one of the draft's lexemes dropped; a mark that shapes the
    text (``,``, ``)``) one; a marker word (``MARKER_WORDS``: ``AS``) none."""
    if literal.lower() in MARKER_WORDS:
        return 0
    invents = is_word(literal) or is_operator(literal) or literal in _OPENERS
    return _INVENTED_WORD if invents else 1


def _cost(lexemes: int, chars: int) -> int:
    """An edit's cost: the draft's lexemes it changes, then (between equal ones) its characters."""
    return _TIEBREAK * lexemes + min(chars, _TIEBREAK - 1)


def try_edit(checker: Checker, start: int, insert: str, rest: str) -> tuple[int, bool] | None:
    """Write ``insert`` then ``rest`` after the first ``start`` characters of ``checker``'s text,
    and take it back: how many characters of ``rest`` were accepted and whether the text was then
    complete, or ``None`` when ``insert`` itself was not accepted."""
    with checker.trial() as trial:
        trial.rollback_chars(start)
        if insert and trial.feed(insert) != len(insert):
            return None
        return trial.feed(rest), trial.is_complete


def _closed_by_marks(v: Violation, start: int, insert: str) -> bool:
    """Whether, once ``insert`` is written at ``start``, closing brackets alone end the text (no
    quote: a string the rewrite opened is no value the draft wrote; but a string the draft left
    open before ``start`` and the rewrite wrote no quote in is the draft's: ``"abc⏎`` at the end,
    its line break dropped), or, after a rewrite that only dropped text, a rewrite at the end does
    (``[1, 2, // more``: the comment, then the separator)."""
    with v.checker.trial() as trial:
        trial.rollback_chars(start)
        before = shortest_close(trial)
        drafts_string = before is not None and _quoted(before) and not _quoted(insert)
        if trial.feed(insert) != len(insert):
            return False
        close = shortest_close(trial)
        if close is not None:
            return drafts_string or not _quoted(close)
        return not insert and rewrite_at_end(trial, v.floor) is not None


def _quoted(text: str) -> bool:
    return any(q in text for q in QUOTES)


def conclusive(kept: str, accepted: int, final: bool, complete: bool, min_read: int = 2) -> bool:
    """The evidence supports an edit when the checker then reads at least ``min_read`` more
    tokens of it (words or punctuation), or all of the rest of a finished answer."""
    read = len(_TOKEN.findall(kept[:accepted]))
    if final and accepted == len(kept):
        return read >= 1 or complete
    return read >= min_read


def rewrite_at_end(checker: Checker, floor: int) -> Edit | None:
    """A rewrite whose match ends the text of a finished draft, white space aside (``... LIMIT
    ALL``, ``= '=\\''`` whose quote a backslash escapes, MySQL's way): the text is
    then complete; or, where no closing marks end the text as it is (``[1, 2,``, ``{"a": 2e``),
    they then do (the separator, the unfinished number dropped); or it drops marks alone, no
    word, and fewer closing marks then end the text (``["`` is ``[]``, not an empty string
    nobody wrote; ``"x,`` keeps its comma). ``None`` if there is none."""
    text = checker.text
    close = shortest_close(checker)
    closable = close is not None
    for rewrite in checker.grammar.rewrites:
        window_start = max(floor, len(text) - rewrite.reach)
        window = text[window_start:]
        for match in _matches(rewrite.regex, window):
            if window[match.end() :].strip():
                continue
            start = window_start + match.start()
            insert = rewrite.expand(match) + window[match.end() :]  # (the white space after it kept)
            with checker.trial() as trial:
                trial.rollback_chars(start)
                if trial.feed(insert) != len(insert):
                    continue
                after = shortest_close(trial)
                # (Marks alone dropped where the close then needs less: ``["`` is ``[]``.)
                less = close is not None and after is not None and len(after) < len(close)
                drops_marks = not insert and not re.search(r"\w", match.group()) and less
                if not (trial.is_complete or ((not closable or drops_marks) and after is not None)):
                    continue
            return Edit(start, insert, "", match.group(), _rewrote(match, rewrite), at=start, rule=rewrite.rule)
    return None


_SEARCH_LEXEMES = 6  # how many lexemes before the violation the search may edit at
_MIN_READ = 2  # lexemes of the evidence an edit found by search must let parse
_MAX_TIES = 16  # equally good edits handed on for the target to choose between


def search_edits(checker: Checker, evidence: str, *, final: bool, floor: int = 0) -> list[Edit]:
    """``_search_edits``, kept for the text it was asked of: the loop looks ahead at the
    violations after an edit (``repair._outlasting``), and then reaches them and asks again."""
    key = (checker.grammar, checker.text, evidence, final, floor)
    with _SEARCHES_LOCK:
        found = _SEARCHES.get(key)
    if found is None:
        found = _search_edits(checker, evidence, final=final, floor=floor)
        with _SEARCHES_LOCK:
            if len(_SEARCHES) >= _MAX_SEARCHES:
                del _SEARCHES[next(iter(_SEARCHES))]
            _SEARCHES[key] = found
    return list(found)


_SEARCHES: dict[tuple[object, str, str, bool, int], list[Edit]] = {}
_MAX_SEARCHES = 64
_SEARCHES_LOCK = threading.Lock()


def _search_edits(checker: Checker, evidence: str, *, final: bool, floor: int = 0) -> list[Edit]:
    """The least edits that let the most of the draft's own text parse: insert, delete or replace
    one lexeme at the violation or up to ``_SEARCH_LEXEMES`` lexemes before it
    (``SELECT (COUNT(*) FROM t`` meant ``SELECT (SELECT COUNT(*) FROM t``); empty if none.

    Candidates are ranked by how far into the draft's text (the accepted text from the edit on,
    then the evidence) the checker reads after the edit, then by the fewer lexemes changed; of a
    finished draft, then one that leaves its whole text complete or to be closed by marks alone
    (``BETWEEN 1 AND 5``, not the shorter ``BETWEEN 1 & 5``, which only an invented ``AND x``
    could finish), then by the fewer characters. All the edits of the best rank are returned
    (the evidence cannot choose between them; a target model may): of those, one whose words the
    draft wrote itself first (``SELECT``, where a subquery has it, not ``DETACH``), then the one
    nearest the violation.
    An edit must read at least ``_MIN_READ`` lexemes of the evidence, or all of a finished draft's
    text, which it leaves complete or to be closed by marks alone.
    """
    text = checker.text
    lexemes = _last_lexemes(text, _SEARCH_LEXEMES, checker.grammar.ignored_text)
    known = quoted_names(text)
    # Each lexeme's start, and its end where white space follows (a missing comma goes there).
    positions = {m.start() for m in lexemes} | {m.end() for m in lexemes if text[m.end() : m.end() + 1].isspace()}
    ranked: list[tuple[tuple[int, int, bool, int, bool, int], Edit]] = []
    keywords = checker.grammar.keywords
    rejected = _rejected_word(text, evidence)
    written = {w.lower() for w in _WORD_RUN.findall(text + evidence)}
    for start in sorted(p for p in positions | {len(text)} if p >= floor):
        if splits_operator(text, start, start, evidence):
            continue  # nothing is written inside the draft's '**'
        draft = text[start:] + evidence
        for insert, skip, description, cost, rule in _candidates(checker, start, draft, keywords, known, rejected):
            rest = draft[skip:]
            if _alters_comment(text[:start], draft[:skip], insert, rest):
                continue
            if not (_quotes_balanced(insert, draft[:skip]) or _drops_stray_quote(insert, draft, skip)):
                continue
            if _joins_words(text[:start] + insert, rest):
                continue  # 'b.title' must not become 'btitle'
            tried = _read_in_code(try_edit(checker, start, insert, rest), insert, rest)
            if tried is None:
                continue
            accepted, complete = tried
            read = whole_words(rest, accepted)  # what counts as read; the edit keeps all it accepted
            if _opens_unclosed(insert, rest[:accepted]) or _empty_before_closer(text[:start], insert, rest):
                continue
            read_evidence = read + skip - (len(text) - start)
            # (Of a finished draft, an edit that reads all its text and leaves it complete, or
            # to be closed by marks alone, needs read no more of it.)
            ends = final and accepted == len(rest) and (complete or closes_by_marks(checker, start, insert + rest))
            if not ends and len(_TOKEN.findall(evidence[: max(read_evidence, 0)])) < _MIN_READ:
                continue
            edit = Edit(start, insert, rest[:accepted], draft[:skip], description, rest[accepted:], rule=rule)
            changed = cost // _TIEBREAK  # the lexemes the edit changes
            ranked.append(((start + skip + read, -changed, ends, -cost, _words_written(insert, written), start), edit))
    if not ranked:
        return []
    ranked.sort(key=lambda item: item[0], reverse=True)  # stable: equal edits keep their order
    best = ranked[0][0][:4]
    ties: list[Edit] = []
    seen: set[str] = set()  # one edit per resulting text
    for rank, edit in ranked:
        if rank[:4] != best or len(ties) == _MAX_TIES:
            break
        result = _edited(text, edit)
        if result not in seen:
            seen.add(result)
            ties.append(edit)
    return ties


def closes_by_marks(checker: Checker, start: int, written: str, *, rewrite_floor: int | None = None) -> bool:
    """Whether, with ``written`` put after the first ``start`` characters of ``checker``'s text,
    a close of marks alone ends it (``(b BETWEEN 1 AND 5`` is closed by ``)``), or, given
    ``rewrite_floor``, a rewrite at the end from there on does (``[1, 2, // more``: the comment
    dropped, then the separator): nothing but invention finishes it otherwise."""
    with checker.trial() as trial:
        trial.rollback_chars(start)
        if trial.feed(written) != len(written):
            return False
        if shortest_close(trial) is not None:
            return True
        return rewrite_floor is not None and rewrite_at_end(trial, rewrite_floor) is not None


def _words_written(insert: str, written: set[str]) -> bool:
    """Whether every word of ``insert`` is one of the draft's (``written``, in small letters)."""
    return all(w.lower() in written for w in _WORD_RUN.findall(insert))


def _rejected_word(text: str, evidence: str) -> str:
    """The word the violation at the end of ``text`` is in or before (after white space), where the
    draft wrote it in lower case."""
    head = _WORD_HEAD.search(evidence.lstrip(" "))
    if head is None:
        return ""
    tail = "" if evidence[:1] == " " else text[run_start(text, len(text), is_word_char) :]
    word = tail + head.group()
    return word if word.islower() else ""


def _read_in_code(tried: tuple[int, bool] | None, insert: str, kept: str) -> tuple[int, bool] | None:
    """What ``try_edit`` read (``tried``) of the draft's ``kept`` text after an edit writing
    ``insert``, up to a string that would run on past the end of the code into the prose after
    it (``6'0" ) ... \\end{code} Comment: I'm``): prose is never made a string literal. ``None``
    where the edit itself writes that string's opening."""
    if tried is None:
        return None
    opened = string_past_code_end(insert + kept[: tried[0]])
    if opened is None:
        return tried
    if opened < len(insert):
        return None
    return opened - len(insert), False


def whole_words(kept: str, accepted: int) -> int:
    """How much of the draft's ``kept`` text an edit reads, in whole words: half a word is not
    read (``t`` of ``the`` is not the start of ``true``)."""
    while 0 < accepted < len(kept) and is_word_char(kept[accepted - 1]) and is_word_char(kept[accepted]):
        accepted -= 1
    return accepted


def _rewrote(match: re.Match[str], rewrite: Rewrite) -> str:
    """What a rewrite did, for the trace."""
    return f"rewrote {match.group()!r}" + (f" ({rewrite.reason})" if rewrite.reason else "")


_MAX_CLOSERS = 4


def _edited(text: str, edit: Edit) -> str:
    """The text as far as ``edit`` reads: what two edits are compared by (one per result)."""
    return text[: edit.start] + edit.text + edit.kept


def _last_lexemes(text: str, n: int, ignored: re.Pattern[str] | None = None) -> list[re.Match[str]]:
    """The last ``n`` lexemes of ``text``, read from the end as far as they need; none inside the
    text the grammar ignores (``ignored``: a comment's words are no lexemes to edit, nor do they
    put the code before the comment out of the search's reach)."""
    window = 256
    while True:
        pos = max(0, len(text) - window)
        lexemes = list(LEXEME.finditer(text, pos))
        if ignored is not None:
            lexemes = _outside(text, lexemes, ignored)
        # Only the first lexeme found may be the cut end of a longer one.
        if pos == 0 or len(lexemes) > n:
            return lexemes[-n:]
        window *= 4


def _outside(text: str, lexemes: list[re.Match[str]], ignored: re.Pattern[str]) -> list[re.Match[str]]:
    """``lexemes`` less those in the ignored text that one of them begins (``/* … */``)."""
    kept: list[re.Match[str]] = []
    skip_to = -1
    for m in lexemes:
        if m.start() < skip_to:
            continue
        gap = ignored.match(text, m.start())
        if gap is not None and gap.end() > m.start():
            skip_to = gap.end()
            continue
        kept.append(m)
    return kept


_Option = tuple[str, int, str, int, EditRule]  # text inserted, draft characters replaced, description, cost, rule


def _keyword_spellings(checker: Checker, start: int, before: str, keywords: frozenset[str]) -> dict[str, str]:
    """The grammar's case-insensitive literals expected at ``start``, in capitals, by their lower
    case, where the draft writes its keywords in capitals (most of the last six before ``start``):
    an inserted keyword is written as the draft writes them (``ELSE 0 END`` after ``CASE WHEN …
    ELSE``); empty otherwise (a literal of one case, JSON's ``null``, is never respelt)."""
    if not keywords_in_capitals(before, keywords):
        return {}
    return {literal.lower(): literal for literal in _expected_literals(checker, start, like="A")}


_WORD_RUN = re.compile(r"[A-Za-z_]+")


def _candidates(
    checker: Checker,
    start: int,
    draft: str,
    keywords: frozenset[str],
    known: frozenset[str] = frozenset(),
    rejected: str = "",
) -> list[_Option]:
    """Edits at the start of ``draft`` (after the first ``start`` characters of ``checker``'s
    text), as ``_Option``s. Keywords the grammar expects are inserted, or replace the next lexeme
    where that is a slip of it (a misspelt keyword, an operator another language writes; the one
    keyword the grammar takes there, ``BY`` after ``GROUP``, costs nothing); a name,
    or a name with spaces, may be quoted whole; the next lexeme dropped (for no lexeme where it
    repeats the word before it). Each costs the lexemes it changes (``_cost``); ``known``: the
    names with spaces the text wrote quoted (``quoted_names``); ``rejected``: the word the
    violation is in, in lower case (see ``NameShape.rejected``)."""
    stripped = draft.lstrip()
    gap = len(draft) - len(stripped)
    lexeme = LEXEME.match(stripped)
    word = lexeme.group() if lexeme else ""
    out: list[_Option] = []
    before = checker.text[:start]
    expected = checker.expected(start)
    literals = dict.fromkeys(_literals_of(expected, like=word))
    forced = _forced_keyword(expected)
    spellings = _keyword_spellings(checker, start, before, keywords)
    point = _qualifier_point(before, draft)  # a qualified name's '.' is never replaced
    for literal in sorted(literals, key=lambda mark: not _written_after_word(before, mark, draft)):
        if _invents_mark(checker, before, literal, draft):
            continue
        if literal == "." and (gap or before[-1:].isspace()):
            # A point is written tight, in place of the white space (``P.duration``), from the
            # start before that space only.
            if gap:
                out.append((".", gap, "inserted '.'", _cost(0, 3), "edit"))
            continue
        sep = " " if literal[-1].isalnum() and draft[:1].isalnum() else ""
        lead = " " if is_word_char(literal[0]) and is_word_char(before[-1:]) else ""  # 'ELSE 0 END', not '0END'
        # A word written where the draft has none is invented: it costs more than a lexeme of the
        # draft dropped (``FROM ORDER BY`` is not ``FROM FULL ORDER BY``, a keyword made a name).
        invented = 0 if literal.lower() == forced else _invented_lexemes(literal)
        written = spellings.get(literal.lower(), literal) if literal.isalpha() else literal
        out.append((lead + written + sep, 0, f"inserted {written!r}", _cost(invented, len(literal) + 2), "edit"))
        replaced = None if point else _replacement_cost(word, literal, keywords)
        if replaced is not None:
            description = f"replaced {word!r} with {literal!r}"
            out.append((draft[:gap] + literal, gap + len(word), description, replaced, "edit"))
    if word:
        skip = gap + len(word)
        if gap or checker.text[:start][-1:].isspace():  # one space stays between the words around it
            skip += len(draft[skip:]) - len(draft[skip:].lstrip(" "))
        if is_word(word) and _repeats_previous(checker.text[:start], word):  # 'MAX MAX'
            out.append(("", skip, f"dropped {word!r} (written twice)", _cost(0, 2 * len(word) + 1), "repeat"))
        else:
            out.append(("", skip, f"dropped {word!r}", _cost(1, 2 * len(word) + 1), "edit"))
        if word.lower() not in keywords and _may_drop_run(checker, before, draft):
            out += _dropped_runs(draft, gap, bool(gap) or before[-1:].isspace())
    out += _stray_quote_drops(draft)
    out += _hyphenated_alias(before, draft)
    if is_word(word) and (word.lower() not in keywords or not word.isupper()):
        # A name in double quotes; in single quotes (a string SQLite also takes for a name) after.
        # A keyword written as the draft writes names (``FROM order``) may be one; one written as
        # a keyword (``FROM ORDER BY``: the table left out) is not made a name.
        for quote, cost in (('"', 3), ("'", 4)):
            quoted = quote + word + quote
            out.append((draft[:gap] + quoted, gap + len(word), f"quoted {word!r}", _cost(1, cost), "edit"))
        shape = NameShape(_QUALIFIER.search(before) is not None, word.lower() not in map(str.lower, literals), rejected)
        for name, cost in names_with_spaces(stripped, keywords, known, shape) if before.strip() else ():
            cost = _after_qualifier(checker.text[:start] + draft[:gap], cost, keywords)
            out.append((draft[:gap] + f'"{name}"', gap + len(name), f"quoted {name!r}", cost, "edit"))
    return out


_MAX_RUN = 3  # lexemes in a run the search may drop at once
_RUN_MARKS = frozenset({".", "::"})  # the marks a run may drop: a qualifier's point, a cast


def _may_drop_run(checker: Checker, before: str, draft: str) -> bool:
    """Whether a run of lexemes may be dropped at the start of ``draft`` (whose first word is no
    keyword of the grammar: a dialect's word, ``EPOCH``, not a clause's ``WHERE``): within a bracket the
    draft opened (``EXTRACT(EPOCH FROM``; a clause's keywords outside one, ``course WHERE`` of a
    model repeating itself, are not dropped to join its repetitions on), not after a complete
    answer (its tail is cut, or repeats it, never joined on by dropping its keywords), nor from a
    word's cut end or from within a qualified name (``r.t``)."""
    if checker.is_complete or before[-1:] in (".", ":") or before.count("(") <= before.count(")"):
        return False  # (only within a bracket the draft opened: a call's dialect words)
    return not (is_word_char(before[-1:]) and is_word_char(draft[:1]))


def _dropped_runs(draft: str, gap: int, spaced: bool) -> list[_Option]:
    """Drop a run of 2 to ``_MAX_RUN`` lexemes on one line at the start of ``draft`` (after
    ``gap`` white space), each costing the lexemes it drops: a dialect's words the grammar has no
    place for (``EXTRACT(EPOCH FROM time)``: ``EPOCH FROM`` dropped, the call and the rest of the
    query kept; ``COUNT(c.*)``: ``c.`` dropped). A run drops words, a qualifier's point and a
    cast's ``::`` only: no bracket (the draft's brackets stay where it wrote them), no operator
    (``x::TIME - '0'`` is not ``x '0'``), no literal. ``spaced``: white space before the run,
    so the white space after it is dropped with it (one space stays between the words around it)."""
    options: list[_Option] = []
    end = gap
    for count, m in enumerate(LEXEME.finditer(draft, gap), 1):
        between = draft[end : m.start()]
        if count > _MAX_RUN or "\n" in between or (count > 1 and not between.isspace() and between):
            break
        if not (is_word(m.group()) or m.group() in _RUN_MARKS):
            break
        end = m.end()
        if count > 1 and draft[end : end + 1] not in (".", ":"):  # (not 'FROM r' of 'r.t', nor 'x' of 'x::')
            skip = end + (len(draft[end:]) - len(draft[end:].lstrip(" ")) if spaced else 0)
            dropped = draft[gap:end]
            options.append(("", skip, f"dropped {dropped!r}", _cost(count, 2 * len(dropped) + 1), "edit"))
    return options


#: An alias written with a hyphen (``AS FRPM_Count_K-12``): after ``AS`` no operator goes on
#: with the alias, so the words and the hyphens between them are one name.
_AFTER_AS = re.compile(r"\bAS\s+$", re.IGNORECASE)
_HYPHENATED = re.compile(r"[A-Za-z_]\w*(?:-\w+)+(?![\w-])")


def _hyphenated_alias(before: str, draft: str) -> list[_Option]:
    """An alias after ``AS`` with hyphens in it, quoted whole (no lexeme changed; inventing a
    comma before ``-12`` would make it a column nobody wrote)."""
    stripped = draft.lstrip()
    gap = len(draft) - len(stripped)
    alias = _HYPHENATED.match(stripped)
    if alias is None or not _AFTER_AS.search(before + draft[:gap]):
        return []
    name = alias.group()
    return [(draft[:gap] + f'"{name}"', gap + len(name), f"quoted {name!r}", _cost(0, 3), "edit")]


def _after_qualifier(before: str, cost: int, keywords: frozenset[str]) -> int:
    """What quoting a name with spaces costs right after a table's qualifier (``l.aCL IgM``): no
    lexeme changed, as a name in title case (a column of that table; after ``l.`` no alias or
    operator is the words' reading); one more lexeme right after a qualified name's first word
    (``frpm.Educational "Option Type"``: the words of one name made a column and its alias, where
    quoting them from the qualifier on keeps them one name), or right after a word in title case
    that is no keyword (``Free "Meal Count (K-12)"``: a column and its alias, where quoting from
    ``Free`` keeps the words one name)."""
    if before.endswith("."):
        return min(cost, _cost(0, 3))
    titled = _TITLED_WORD_BEFORE.search(before)
    apart = titled is not None and titled.group(1).lower() not in keywords
    return cost + _TIEBREAK if apart or _QUALIFIED_WORD.search(before) else cost


#: A qualified name's first word, and the space after it (``frpm.Educational ``).
_QUALIFIED_WORD = re.compile(r'(?:(?<![\w.])[A-Za-z_]\w*|"[^"\n]+"|`[^`\n]+`)\.[A-Za-z_]\w* +$')
#: A word in title case (no digit or underscore: no code name), and one space after it (``Free ``).
_TITLED_WORD_BEFORE = re.compile(r"(?<![\w.])([A-Z][a-z]+) $")


def _replacement_cost(word: str, literal: str, keywords: frozenset[str]) -> int | None:
    """What replacing the draft's lexeme ``word`` with ``literal`` costs, or ``None`` where that is
    no repair: a word made into a mark or into another keyword (``answer`` into ``^``, ``AS``
    into ``IS``), a mark into a word (``)`` into ``is``), a word that is no slip of the keyword
    (``FROM`` is not ``ORDER``), a literal, or an operator of several marks for another (``**``
    for ``*``). A mark for another costs one
    lexeme, an operator another language writes for the same (``**`` for ``^``) less."""
    if not word or word == literal or word_becomes_other(word, literal, keywords) or word == ";":
        return None  # (a ';' ends what the draft wrote: it is not made a separator within it)
    distance = _distance(word, literal)
    if is_word(word):
        return _cost(1, 2 * distance) if is_word(literal) and distance <= max(1, len(word) // 3) else None
    if word[0].isdigit() or word[0] in QUOTES:
        return None  # a literal of the draft ('"b"', '50') is its content, not a slip
    if is_operator(word) != is_operator(literal):
        return None  # an operator is not a bracket ('> ALL (' is not '( ALL ('), nor the reverse
    if literal in _OPENERS and word not in _OPENERS:
        return None  # a separator is not an opening bracket: it would open a value nobody wrote
    if word in _OPENERS and literal in _CLOSING:
        return None  # a bracket the draft opened is not made a close: ``EXTRACT(EPOCH`` is no ``EXTRACT)EPOCH``
    if word in _CLOSING and literal not in _CLOSING:
        return None  # nor one it closed a separator: ``AS REAL) * 100`` is no ``AS REAL, * 100``
    if literal in OPERATOR_SYNONYMS.get(word, ()):
        return _cost(1, 0)
    if is_word(literal):
        return None  # a mark is not made a word: ')' into 'is' invents a keyword
    if len(word) > 1:
        return None  # '**' is not '*': an operator of several marks means what it says
    return _cost(1, 2 * len(word) + len(literal) + 1)


_NAME_PART = re.compile(r"[A-Za-z_][\w-]*|\((?:[^()'\"\n]|\([^()'\"\n]*\))*\)")
#: A number that goes on with a name's words in title case (``Lunch Provision 2``, ``Address Line 1``;
#: not after a word in capitals, T-SQL's ``TOP 5``).
_NAME_NUMBER = re.compile(r"\d+(?=[\s),;]|\Z)")
_MAX_NAME_PARTS = 8
#: A word with a digit or an underscore is written as code names are (``T2``, ``Teacher_ID``), not
#: as the words of a name with spaces (``Free Meal Count``); but not one joined by a hyphen, which no
#: code name has (``Ages5-17``: the minus would read it as two).
_CODE_IDENTIFIER = re.compile(r"^(?!.*\w-\w)[^\d_]*[\d_]")


#: After a name's bracketed part, a word in title case that goes on with the name
#: (``Percent (%) Eligible Free (K-12)``).
_TITLED_WORD_NEXT = re.compile(r" [A-Z][a-z]")


#: A name with spaces the draft wrote quoted (``AS "Max Number of Times a Course Shows Up"``).
_QUOTED_NAME = re.compile(r'"([A-Za-z_][^"\n]*? [^"\n]*)"')
_QUOTED_REACH = 4096  # how far back the draft's quoted names are read


def quoted_names(text: str) -> frozenset[str]:
    """The names with spaces ``text`` wrote in double quotes (in its last ``_QUOTED_REACH``
    characters), in lower case: written bare later, each is that name, however many words."""
    return frozenset(m.group(1).lower() for m in _QUOTED_NAME.finditer(text[-_QUOTED_REACH:]))


#: A bracket holding one name or ``*`` (``(LifeExpectancy)``, ``(*)``): a call's argument, where a
#: name's bracketed part has more (``(K-12)``, ``(Ages 5-17)``).
_CALL_ARGUMENT = re.compile(r"\(\s*(?:[A-Za-z_][\w.]*|\*)\s*\)")


@dataclass(frozen=True)
class NameShape:
    """What the text before a name says of its words: ``qualified``, it follows a table's
    qualifier (``s.``: a column's name, no call, as SQLite has no ``schema.func()``, so a bracket
    right after a word is the name's, ``s.Enrollment(K-12)``); ``first_is_name``, its first word
    has no keyword reading there (``First`` after ``year(`` or ``f.``, ``Virtual`` after ``AS``:
    the grammar expects no such keyword there)."""

    qualified: bool = False
    first_is_name: bool = False
    #: The word the violation is in, in lower case where the draft wrote it so: a keyword the
    #: grammar rejects there is read as a name's word (``normal range``), not as that keyword.
    rejected: str = ""


#: A table's qualifier right before a name (``s.``, ``"frpm".``), not a number's point.
_QUALIFIER = re.compile(r'(?:(?<![\w.])[A-Za-z_]\w*|"[^"\n]+"|`[^`\n]+`|\[[^\]\n]+\])\.$')


def _name_shape(checker: Checker, start: int, draft: str, keywords: frozenset[str], rejected: str) -> NameShape:
    """The ``NameShape`` of a name at ``start`` of ``checker``'s text (``draft`` from there on,
    ``rejected`` the word the violation is in, where the draft wrote it in lower case); the
    grammar's expected keywords are read only where the first word is a keyword."""
    before = checker.text[:start]
    first = _NAME_PART.match(draft)
    word = first.group().lower() if first else ""
    first_is_name = word not in keywords or word not in map(str.lower, _expected_literals(checker, start))
    return NameShape(_QUALIFIER.search(before) is not None, first_is_name, rejected)


def names_with_spaces(
    draft: str, keywords: frozenset[str], known: frozenset[str] = frozenset(), shape: NameShape = NameShape()
) -> list[tuple[str, int]]:
    """Names of two or more parts written without their quotes at the start of ``draft``
    (``Free Meal Count (K-12)``, ``Max Number of Times``), shortest first, each with what quoting
    it whole costs: a word, then words or bracketed parts, each after one space (a bracketed part
    ends the name unless a word in title case follows it). A word written
    as code names are (a digit or an underscore in it: ``T2 Teacher_ID``), or called (``AVG
    COUNT(*)``), is no part of one. A keyword is
    no part of a name (``People_ID IN SELECT`` is not one), except a small word within a name in
    title case (``of``), or one the grammar rejects where the draft wrote it (``shape.rejected``:
    ``normal range``). Quoting changes none of the draft's lexemes where the name is in title
    case, ends in a bracketed part or in that rejected keyword; otherwise it costs one (``name
    age`` may want a comma).
    A name of ``known`` (the draft quoted it before) that ``draft`` begins with is one name,
    whatever its words, and quoting it changes no lexeme: the draft's own quotes say so.
    ``shape`` (``NameShape``): after a qualifier a bracket right after a word is the name's
    (``Enrollment(K-12)``); a first word with no keyword reading there is a name's word."""
    names: list[tuple[str, int]] = []
    parts: list[str] = []
    end = 0
    titled = False
    while len(parts) < _MAX_NAME_PARTS:
        attached = shape.qualified and len(parts) == 1 and parts[0][0] != "(" and draft[end : end + 1] == "("
        if attached and _CALL_ARGUMENT.match(draft, end) and not parts[0].endswith("_"):
            break  # 'T2.Average(LifeExpectancy)', 'T2.COUNT(*)': a call's argument, no name's part
        at = end + (1 if parts and not attached else 0)
        numbered = parts and titled and not any(w.isupper() for w in parts)  # 'Line 1', not 'TOP 5'
        part = _NAME_PART.match(draft, at) or (_NAME_NUMBER.match(draft, at) if numbered else None)
        if part is None or (parts and not attached and draft[end] != " ") or (not parts and part.group()[0] == "("):
            break
        if part.group()[0] == "(" and _reads_as_code(part.group()[1:-1], keywords):
            break
        if (
            part.group()[0] != "("
            and not part.group().isdigit()
            and _CODE_IDENTIFIER.search(part.group())
            and not _bracketed_after(draft, part, shape)
        ):
            break  # 'T2 Teacher_ID': an alias and a column, no words of one name with spaces
        if part.group()[0] != "(" and draft[part.end() : part.end() + 1] == "(" and (parts or not shape.qualified):
            break  # 'AVG COUNT(*)', 't.age AVG(t.age)': a word right before its bracket is a call
        parts.append(part.group())
        end = part.end()
        words = [p for p in parts if p[0] != "(" and not p.isdigit()]
        titled = all(w[0].isupper() or written_as_name(w) for w in words if w.lower() not in keywords)
        if any(_keyword_in_name(w, i, titled, shape, keywords) for i, w in enumerate(words)):
            break
        # (A rejected keyword ends a name of words in lower case alone: ``Pets outer`` is a table's alias.)
        ends_rejected = parts[-1] == shape.rejected and not titled
        if len(parts) > 1 and (parts[-1].lower() not in keywords or ends_rejected):
            lexemes = 0 if titled or parts[-1][0] == "(" or (ends_rejected and shape.rejected in keywords) else 1
            names.append((draft[:end], _cost(lexemes, 3)))
        if part.group()[0] == "(" and not _TITLED_WORD_NEXT.match(draft, end):
            break  # a bracketed part ends a name, unless a word in title case goes on with it
    return sorted(set(_bracket_kept(names)) | set(_known_names(draft, known)), key=lambda item: len(item[0]))


def _bracket_kept(names: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``names`` less those a bracketed part of the name follows (``Free Meal Count`` before
    ``(K-12)``: quoted without it, the bracket reads as a call of the name nobody wrote)."""
    whole = {name for name, _ in names}
    return [
        (name, cost)
        for name, cost in names
        if not any(other.startswith(name) and _NAME_BRACKET.fullmatch(other[len(name) :]) for other in whole)
    ]


#: A name's bracketed part after a word (a space before it or none): words with a hyphen or a space
#: between them (``(K-12)``, ``(Ages 5-17)``), no call's lone argument.
_NAME_BRACKET = re.compile(r" ?\([^()'\"\n]*[- ][^()'\"\n]*\)")


def _bracketed_after(draft: str, part: re.Match[str], shape: NameShape) -> bool:
    """Whether ``part``, a word written as code names are (``FRPM_Count_``), is the first word of
    a name after a table's qualifier with a name's bracketed part after it (``f.FRPM_Count_(K-12)``,
    ``frpm.FRPM_Count (Ages 5-17)``: BIRD's ``FRPM Count (K-12)`` written with underscores; SQLite
    has no ``schema.func()``, and an operator inserted before the bracket is an operation nobody wrote;
    ``T1.Percent_(_Eligible_Free)``, the bracket right after the word's underscore, whatever it holds)."""
    if part.start() != 0 or not shape.qualified:
        return False
    glued = part.group().endswith("_") and draft[part.end() : part.end() + 1] == "("  # 'Percent_(_Eligible)'
    return glued or _NAME_BRACKET.match(draft, part.end()) is not None


def _keyword_in_name(word: str, index: int, titled: bool, shape: NameShape, keywords: frozenset[str]) -> bool:
    """Whether ``word``, the ``index``-th word of a name, is a keyword that ends it: not a small
    word within a name in title case (``of``), nor a first word with no keyword reading there, nor
    a later one the grammar rejects where the draft wrote it (``shape.rejected``: ``normal range``)."""
    if word.lower() not in keywords or (index == 0 and shape.first_is_name) or (index and word == shape.rejected):
        return False
    return not (titled and word.islower() and index > 0)


def _known_names(draft: str, known: frozenset[str]) -> list[tuple[str, int]]:
    """The names of ``known`` that ``draft`` begins with, no more of a word after it."""
    low = draft.lower()
    return [
        (draft[: len(name)], _cost(0, 3))
        for name in known
        if low.startswith(name) and not is_word_char(draft[len(name) : len(name) + 1])
    ]


#: A bracket's text that is a number alone (``(10)``, `` 2.5 ``).
_NUMBER_ALONE = re.compile(r"\s*\d+(?:\.\d*)?\s*")

#: A table's column written in a bracket (``(l.date)``): a call's argument, no name's part.
_QUALIFIED_NAME = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]")


def _reads_as_code(inside: str, keywords: frozenset[str]) -> bool:
    """Whether a bracketed part is the draft's code, not part of a name: it begins with a keyword
    (``(SELECT boat FROM crews)``, ``(select ...)``), has one written in capitals, or holds a
    qualified name (``amount (l.date)`` is no column's name), or is Oracle's outer-join mark
    ``(+)`` or a number alone (``TABLESAMPLE SYSTEM (10)``: an argument, no name's part).
    ``(K-12)``, ``(%)`` and ``(Ages 5-17)`` are names' parts."""
    if inside.strip() == "+" or _NUMBER_ALONE.fullmatch(inside):
        return True
    words = re.findall(r"[A-Za-z_]\w*", inside)
    first = inside.lstrip()[:1].isalpha() and words[:1] and words[0].lower() in keywords
    capitals = any(w.isupper() and len(w) > 1 and w.lower() in keywords for w in words)
    return bool(first) or capitals or _QUALIFIED_NAME.search(inside) is not None


def _quotes_balanced(insert: str, removed: str) -> bool:
    """An edit may not leave a quote unpaired: the rest of the draft would turn into a string."""
    return all((insert.count(q) - removed.count(q)) % 2 == 0 for q in QUOTES)


def _drops_stray_quote(insert: str, draft: str, skip: int) -> bool:
    """Whether an edit drops (writing nothing) the quote ``draft`` begins with, whose string would
    run on past the end of the code (``6'0" ) ... \\end{code} Comment: I'm``): it leaves no
    quote unpaired, the draft's text after it is code again."""
    opened = string_past_code_end(draft)
    return not insert and opened is not None and not draft[:opened].strip() and opened < skip


def _stray_quote_drops(draft: str) -> list[_Option]:
    """Drop the quote ``draft`` begins with (after white space) where its string would run on past
    the end of the code into the prose after it (``6'0" ) AND ... \\end{code} Comment: I'm``):
    the quote alone, or with the marks and words written on to it (``'0"`` of ``6'0"``), each
    costing the draft's lexemes it drops."""
    opened = string_past_code_end(draft)
    if opened is None or draft[:opened].strip():
        return []
    glued = _GLUED_TO_QUOTE.match(draft, opened)
    runs = dict.fromkeys([opened + 1, glued.end() if glued else opened + 1])
    options: list[_Option] = []
    for end in runs:
        dropped = draft[opened:end]
        lexemes = len(LEXEME.findall(dropped))
        options.append(("", end, f"dropped {dropped!r} (a stray quote)", _cost(lexemes, 2 * len(dropped) + 1), "edit"))
    return options


_GLUED_TO_QUOTE = re.compile(r"[\"'`][\w.\"'`]*")


def _opens_comment(before: str, insert: str, rest: str) -> bool:
    """Whether the edit would turn the draft's text into a comment: ``/`` before ``*)``, or a
    ``-`` written after the ``-`` before it (``x -( SELECT`` is not ``x -- SELECT``). A marker
    inside a string the edit writes whole (``"https://x"``) is the string's text."""
    joined = before[-1:] + _QUOTED.sub('""', insert) + rest[:2]
    return any(marker in joined and marker not in rest[:2] for marker in ("/*", "--", "//", "#"))


def _alters_comment(before: str, removed: str, insert: str, rest: str) -> bool:
    """Whether an edit that writes ``insert`` for ``removed`` between ``before`` and ``rest`` opens
    a comment (``_opens_comment``) or takes a comment's end apart (``_unends_comment``)."""
    return _opens_comment(before, insert, rest) or _unends_comment(before, removed, insert, rest)


def _unends_comment(before: str, removed: str, insert: str, rest: str) -> bool:
    """Whether the edit takes apart a comment's end (``… schema */ GROUP BY`` is not ``… schema *
    GROUP BY``: the rest of the draft made part of the comment)."""
    was, now = before[-1:] + removed + rest[:1], before[-1:] + insert + rest[:1]
    return _comment_ends(was) > _comment_ends(now)  # (a whole comment dropped, its start too, is no end taken apart)


def _comment_ends(text: str) -> int:
    """How many comment ends ``text`` has beyond the comment starts it has."""
    return text.count("*/") - text.count("/*")


_QUOTED = re.compile(r'"[^"]*"|\'[^\']*\'')
_CLASSES = (set(")]}"), set("([{"), set(",;"))


def _joins_words(before: str, after: str) -> bool:
    """Whether writing ``after`` right after ``before`` merges the lexemes at the seam."""
    return merges(before, after)


_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_OPENERS = frozenset(_CLOSERS)
_CLOSING = frozenset(_CLOSERS.values())


def _opens_unclosed(insert: str, kept: str) -> bool:
    """Whether an edit opens a bracket the draft's text read after it never closes: ``LEFT(d, 4)``
    must not become ``LEFT[d, 4) ...``, where SQLite reads the whole rest as one bracketed name;
    nor ``{"a": 1}, []`` ``[{"a": 1}, []``, where the draft's ``]`` closes its own ``[``."""
    for opener, closer in _CLOSERS.items():
        opened = insert.count(opener) - insert.count(closer)
        if opened > 0 and opened + kept.count(opener) - kept.count(closer) > 0:
            return True
    return False


def _empty_before_closer(before: str, insert: str, rest: str) -> bool:
    """Whether an edit gives the answer's first mark, a closing bracket, an opener of its own:
    ``]`` alone is no JSON, not ``[]`` (an empty value nobody wrote)."""
    closer = _CLOSERS.get(insert.strip())
    return not before.strip() and closer is not None and rest.lstrip().startswith(closer)


def _escaped(text: str) -> bool:
    """Whether ``text`` ends with an odd number of backslashes (what follows it is escaped)."""
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _qualifier_point(before: str, draft: str) -> bool:
    """Whether ``draft`` begins with the ``.`` of a qualified name, a word on each side of it
    (``c2.Stadium_ID``): it is never replaced (``c2,Stadium_ID``, a name made a join's two tables)."""
    return draft[:1] == "." and is_word_char(before[-1:]) and is_word_char(draft[1:2])


_GLUED_NAME = re.compile(r"[A-Za-z_\"`\[]")  # a name, or a quoted one, starting right there


def _point_slipped(text: str, bad: str, evidence: str, keywords: frozenset[str]) -> bool:
    """Whether the draft's ``bad`` close, glued between a name and the next, is a qualifier's ``.``
    one key off: the draft writes that name with a ``.`` after it elsewhere (``ORDER BY
    T1)`FRPM Count` `` beside ``T1.CDSCode``; it became ``T1()`` and then a second term)."""
    if bad != ")" or not _ends_in_name(text, keywords) or not _GLUED_NAME.match(evidence, 1):
        return False
    return is_word_char(text[-1:]) and _written_after_word(text, ".", evidence)


def _same_class(a: str, b: str) -> bool:
    """Punctuation that plays the same part: closing brackets, opening brackets, separators."""
    return any(a in c and b in c for c in _CLASSES)


# Words other languages write for a grammar's literal (Python's ``None`` for JSON's ``null``).
_SYNONYMS = {"none": "null", "nil": "null", "undefined": "null", "nul": "null"}


def _distance(word: str, literal: str) -> int:
    """Edit distance, a case-only difference (or a known synonym) counting as one edit."""
    if _SYNONYMS.get(word.lower()) == literal.lower():
        return 1
    folded = levenshtein(word.lower(), literal.lower(), transpositions=True)
    return folded if folded or word == literal else 1


def _forced_keyword(expected: list[Terminal]) -> str | None:
    """The keyword (in small letters) that is the one terminal ``expected`` holds, where it is
    one (``BY`` after ``GROUP``): the draft's own keyword before it means it, so writing it invents
    nothing."""
    if len(expected) != 1:
        return None
    literal = expected[0].literal
    return literal.lower() if literal and is_word(literal) else None


def _expected_literals(checker: Checker, upto: int, like: str = "") -> list[str]:
    """Literal terminals expected after the first ``upto`` characters of ``checker``'s text;
    case-insensitive ones in ``like``'s case."""
    return _literals_of(checker.expected(upto), like)


def _literals_of(expected: list[Terminal], like: str = "") -> list[str]:
    """The literals of ``expected`` (case-insensitive ones in ``like``'s case), and the operators
    another language writes for ``like`` that a pattern among them matches."""
    literals = []
    for terminal in expected:
        if terminal.literal:
            literal = terminal.literal
            if terminal.case_insensitive and like:
                literal = literal.upper() if like.isupper() else literal.lower() if like.islower() else literal
            literals.append(literal)
        else:
            # An operator another language writes for ``like`` that a pattern terminal matches
            # (``OP: "+" | "^"`` for ``**``).
            literals += [s for s in OPERATOR_SYNONYMS.get(like, ()) if re.fullmatch(terminal.pattern, s)]
    return literals
