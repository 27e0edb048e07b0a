"""What to do at a violation, decided from the draft's own evidence (the text it wrote after the
violation point) and returned as data: ``Edit`` (a small edit the evidence supports), ``Cut``
(the rest is not part of the answer) or ``NeedTarget`` (let the target model choose). ``decide``
emits nothing and leaves the checker as it was; the loop acts on its answer.

A draft that writes ``ILIKE`` in SQLite SQL, a misspelt keyword, or one ``)`` too many meant
something close to a valid text. Before asking the target model, the loop tries small edits at the
violation (``_edit_search``: drop a stray mark, replace a misspelt keyword, quote a name with
spaces, insert a missing mark, rewrite a known slip) and keeps the one under which the checker
reads furthest into the draft's text, at the least cost in the draft's lexemes. An edit is used
only when the evidence supports it conclusively; otherwise the target model decides.

Prose is never made into code: a sentence the draft wrote where its answer goes (``The answer is
3 + 4``, ``That's fine. Maybe``) or document markup (``\\end{code}``) is left out where the
answer reads on after it, and cut otherwise.
"""

from __future__ import annotations

import collections
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ._checker import CheckedGrammar, Checker
from ._edit_search import (
    TIGHT,
    Edit,
    break_swallowing_comment,
    close_swallowed_at_end,
    closes_by_marks,
    conclusive,
    levenshtein,
    propose_edit,
    propose_rewrite,
    rewrite_at_end,
    search_edits,
    try_edit,
    whole_words,
)
from ._events import REWRITE_RULES, CutReason
from ._lexemes import LEXEME, is_word
from ._reader import (
    has_function_word,
    looks_like_aside,
    looks_like_sentence,
    names_before_sentence,
    opening_tag,
    prose_after_answer,
    prose_line,
    prose_run,
    reads_as_code,
    sentence_end,
    trailing_word,
)
from ._resync import resync
from ._text import is_word_char, open_quote, plain_space

__all__ = [
    "Cut",
    "Decision",
    "Edit",
    "NeedTarget",
    "begins_answer",
    "break_swallowing_comment",
    "close_swallowed_at_end",
    "dead_end",
    "decide",
    "is_made_of_runs",
    "levenshtein",
    "propose_edit",
    "prose_cut",
    "repeats_answer",
    "rewrite_at_end",
    "search_edits",
    "signature",
]


@dataclass(frozen=True)
class Cut:
    """Leave the text from ``start`` on, with the rejected text, out of the answer."""

    start: int
    reason: CutReason
    at: int


@dataclass(frozen=True)
class NeedTarget:
    """No edit the evidence supports: take the text back to ``start`` (the start of the word the
    violation is in) and let the target model choose."""

    start: int
    at: int


Decision = Edit | Cut | NeedTarget
"""Every decision takes the accepted text back to ``start``; the rejected text is the accepted
text from ``at`` on followed by the evidence (``at`` lies before the violation when the accepted
text ends in a word that leads nowhere)."""


def signature(text: str, evidence: str, at: int) -> tuple[int, str]:
    """What makes a violation the same as the last one (then no edit is tried again)."""
    return at, (text[at:] + evidence)[:16]


def decide(
    checker: Checker,
    evidence: str,
    *,
    final: bool,
    floor: int,
    last: tuple[int, str] | None = None,
    rewrite_floor: int | None = None,
    no_target: bool = False,
    lookahead: int = 2,
) -> Decision:
    """What to do about the violation at the end of ``checker``'s text (not modified).

    ``evidence`` is the rejected draft text; ``final``: the draft wrote nothing after it; no
    decision takes back text before ``floor``; ``last`` is the signature of the previous
    violation (an edit is not tried twice at the same place); ``rewrite_floor``: a rewrite may
    take back text from there on (the loop's own earlier rewrites), see ``propose_edit``;
    ``no_target``: no model may write at the violation, so where no edit fixes it the fewest of
    the draft's lexemes are dropped after which its text reads on (``_resync``), before the rest
    is cut; and an edit after which the draft's text soon fails again, and is cut, gives way to
    the drop that loses less of it (``_outlasting``: the next ``lookahead`` decisions after each).

    The steps, in order (``_STEPS``): white space of another kind; prose (a sentence before, in
    or after the answer); a run-on after a full stop; another answer after a complete one; an
    aside; the edit at the violation; the edits the search finds; then the fewest lexemes
    dropped (no target) or the target.
    """
    spaced = _plain_spaces(checker, evidence, floor)
    if spaced is not None:
        return spaced
    cut = prose_cut(checker, evidence, floor)
    if cut is not None:
        return cut
    at = _rejected_start(checker, evidence, floor)
    v = _Violation(checker, evidence, at, final, floor, last, rewrite_floor, no_target, lookahead)
    for step in _STEPS:
        decision = step(v)
        if decision is not None:
            return decision
    return _dropped_or_target(v)


@dataclass(frozen=True)
class _Violation:
    """What ``decide``'s steps read: the violation, its rejected text (``moved``, from ``at`` on)
    and the loop's settings."""

    checker: Checker
    evidence: str
    at: int
    final: bool
    floor: int
    last: tuple[int, str] | None
    rewrite_floor: int | None
    no_target: bool
    lookahead: int

    @property
    def text(self) -> str:
        return self.checker.text

    @functools.cached_property
    def moved(self) -> str:
        return self.text[self.at :] + self.evidence

    @functools.cached_property
    def stop(self) -> int | None:
        """Where the first sentence of the rejected text ends, if it does."""
        return sentence_end(self.moved)

    @functools.cached_property
    def fresh(self) -> bool:
        """Not the same violation as the last one (where no edit is tried again)."""
        return signature(self.text, self.evidence, self.at) != self.last

    @functools.cached_property
    def word_at(self) -> int:
        return _word_start(self.text, self.at, self.moved, self.floor)

    @functools.cached_property
    def aside(self) -> Cut | None:
        starts = _aside_starts(self.checker, self.word_at, self.floor)
        cuts = (_aside_cut(self.checker, s, self.evidence, final=self.final, floor=self.floor) for s in starts)
        return next(filter(None, cuts), None)

    def outlasting(self, at: int, edit: Edit) -> Edit:
        steps = self.lookahead * self.no_target
        moved = self.text[at:] + self.evidence
        return _outlasting(self.checker, at, moved, edit, final=self.final, floor=self.floor, steps=steps)


def _preamble(v: _Violation) -> Decision | None:
    """A sentence the answer began with, a statement after it: the sentence is preamble."""
    if v.stop is None:
        return None
    return _sentence_before_answer(v.checker, v.at, v.moved, v.stop, final=v.final, floor=v.floor)


def _sentence(v: _Violation) -> Decision | None:
    """Prose first: 'The answer is 3 + 4' is no second answer after the name 'The'."""
    sentence = _leave_prose(v.checker, v.at, v.moved, final=v.final, floor=v.floor)
    if sentence is None and v.stop is not None:
        sentence = _sentence_ends(v.checker, v.at, v.moved, v.floor)
    return sentence


def _run_on(v: _Violation) -> Decision | None:
    return _full_stop(v.checker, v.at, v.moved, v.floor)


def _another_answer(v: _Violation) -> Decision | None:
    """Another answer after a complete one is cut, unless a rewrite reads across it."""
    cut = another_answer_cut(v.checker, v.evidence, v.floor)
    if cut is None:
        return None
    rewrite = None
    if v.fresh:
        rewrite = _rewrite_across(v.checker, v.at, v.moved, final=v.final, floor=v.floor, rewrite_floor=v.rewrite_floor)
    return cut if rewrite is None else rewrite


def _aside_first(v: _Violation) -> Decision | None:
    """An aside is cut before any edit, but for closing brackets alone (an edit may say which)."""
    return v.aside if not _CLOSES_ONLY.fullmatch(v.moved) else None


def _edit_here(v: _Violation) -> Decision | None:
    """The edit at the violation, and then the aside it gave way to."""
    local = None
    if v.fresh:
        local = _edit_at(v.checker, v.at, v.moved, final=v.final, floor=v.floor, rewrite_floor=v.rewrite_floor)
    if isinstance(local, Cut):
        return local
    if local is not None:
        if _leaves_invention(v, local):
            searched = _searched(v)  # (``BETWEEN 1 5``: ``AND``, not the mark ``&`` that wants ``AND x``)
            if isinstance(searched, Edit) and not _leaves_invention(v, searched):
                return searched
        return v.outlasting(v.at, local)
    return v.aside


def _leaves_invention(v: _Violation, edit: Edit) -> bool:
    """Whether ``edit`` reads all that is left of a finished draft and leaves a text that only
    invented text finishes: no close of marks alone ends it, nor, after an edit that only
    dropped text, a rewrite at the end (``[1, 2, // more``: the comment, then the separator)."""
    if not v.final or edit.unread.strip():
        return False
    rewrite_floor = None if edit.text else v.floor
    return not closes_by_marks(v.checker, edit.start, edit.text + edit.kept, rewrite_floor=rewrite_floor)


def _searched(v: _Violation) -> Decision | None:
    """The least edits the search finds, placed before the space they follow; prose instead
    where the first would make code of it."""
    edits = search_edits(v.checker, v.evidence, final=v.final, floor=v.floor) if v.fresh else []
    if not edits:
        return None
    start = edits[0].start
    prose = _prose_instead(v.checker, v.text, v.evidence, start, edits[0], v.floor, at=min(v.at, start))
    if prose is not None:
        return prose
    placed = [_before_space(v.checker, e, v.floor) for e in edits]
    placed = [replace(e, at=min(v.at, e.start)) for e in placed]
    return v.outlasting(v.word_at, replace(placed[0], ties=tuple(placed[1:])))


def _dropped_or_target(v: _Violation) -> Decision:
    """Without a target, the fewest of the draft's lexemes dropped after which it reads on; else
    (or where none does) the target writes at the violation's word."""
    start = v.word_at
    if v.no_target and v.fresh:
        dropped = _resync_at(v.checker, start, v.text[start:] + v.evidence, final=v.final)
        if dropped is not None:
            return dropped
    return NeedTarget(start, v.at)


_STEPS: tuple[Callable[[_Violation], Decision | None], ...] = (
    _preamble,
    _sentence,
    _run_on,
    _another_answer,
    _aside_first,
    _edit_here,
    _searched,
)


def _plain_spaces(checker: Checker, evidence: str, floor: int) -> Edit | None:
    """White space of a kind the grammar does not take (a vertical tab, a no-break space), at the
    violation or before it (nearest first, after ``floor``), written as the plain space or line
    break it stands for, outside quotes, where the checker then reads past the violation:
    formatting. SQLite reads a no-break space as part of a name, so the violation may come words
    later."""
    text = checker.text
    joined = text + evidence
    for at in range(len(text), max(floor, len(text) - _SPACE_REACH) - 1, -1):
        plain = plain_space(joined[at : at + 1])
        if plain is None or open_quote(joined[floor:at]) is not None:
            continue  # (inside a string it is the string's: a raw form feed is escaped, not spaced)
        rest = joined[at + 1 :]
        with checker.trial() as trial:
            trial.rollback_chars(at)
            read = trial.feed(rest) if trial.feed(plain) == len(plain) else -1
        if at + 1 + read > len(text):
            kept = rest[:read]
            return Edit(at, plain, kept, joined[at], _RESPACED, unread=rest[read:], at=at, rule="space")
    return None


_RESPACED = "white space of another kind written as a plain space"
_SPACE_REACH = 256  # how far before the violation white space of another kind is looked for


#: Closing brackets alone after a complete answer: a stray close, or one the draft closed too soon
#: before (``IN (SELECT a FROM t) INTERSECT SELECT b FROM u)``): an edit may say which, before the
#: aside's cut.
_CLOSES_ONLY = re.compile(r"\s*\)[\s)]*")


def _aside_starts(checker: Checker, at: int, floor: int) -> list[int]:
    """Where an aside may begin: at the violation's word, or at the capitalised word before it
    that is no keyword, read as an alias (``FROM t⏎This query returns``: ``This``)."""
    before = checker.text[:at].rstrip(" \t")
    word = trailing_word(before)
    start = len(before) - len(word)
    if start > floor and _SENTENCE_START.fullmatch(word) and word.lower() not in checker.grammar.keywords:
        return [at, start]
    return [at]


def _aside_cut(checker: Checker, at: int, evidence: str, *, final: bool, floor: int) -> Cut | None:
    """A complete text at ``at`` followed by something that cannot extend it: a closing fence, an
    explanation (``looks_like_aside``). Cut it, with the white space before it, and stop; no edit
    reads on into it (``= 1  However, there is`` is no ``LIMIT However``, the ``H`` the checker
    read as the start of ``HAVING`` taken back with the word)."""
    text = checker.text
    rest = text[at:] + evidence
    with checker.trial() as trial:
        trial.rollback_chars(at)
        if not (trial.is_complete and looks_like_aside(text[:at], rest, final, checker.grammar.keywords)):
            return None
        cut = at - len(_trailing_space(trial, floor))
    return None if _read_on_new_line(checker, at, rest) else Cut(cut, "after complete text", at)


def _read_on_new_line(checker: Checker, at: int, rest: str) -> bool:
    """Whether ``rest``, put on a new line after the first ``at`` characters of the text, reads on
    for two lexemes at least: the answer's next line, only its line break missing (a config's
    ``Name: x Age: 5``), no aside."""
    with checker.trial() as trial:
        trial.rollback_chars(at)
        if trial.feed("\n") != 1:
            return False
        head = rest.lstrip(" \t")
        return len(_LEXEME.findall(head[: _whole_words_read(trial, head)])) >= 2


def _word_start(text: str, at: int, moved: str, floor: int) -> int:
    """Where the word the rejected text ``moved`` begins in starts (``A`` of ``AS INT)`` was read as
    the start of ``AND``): the target writes from there, and a drop takes the word whole."""
    word = trailing_word(text[:at])
    return at - len(word) if word and moved[:1].isalnum() and at - len(word) >= floor else at


#: Cuts after which nothing of the answer is lost: the draft's answer ended there.
_ANSWER_ENDS = frozenset({"after complete text", "another answer", "prose", "repeated"})


def _outlasting(checker: Checker, at: int, moved: str, edit: Edit, *, final: bool, floor: int, steps: int) -> Edit:
    """``edit``, or the resync at the same violation where less of the draft's text is lost after
    it (CPCT+'s rule that a repair counts only if the parse goes on): an edit whose reading fails
    again soon (``GROUP_CONCAT(name ORDER BY name DESC) AS l FROM t``: a ``)`` inserted before
    ``ORDER``, then the close of the draft's bracket cannot be read, and the rest is cut) loses
    more than the drop of ``ORDER BY name DESC``. Each is followed for ``steps`` decisions; only
    where no model may write (``steps`` is 0 otherwise) and the edit leaves text unread."""
    if not steps or not edit.unread.strip():
        return edit
    drop = _resync_at(checker, at, moved, final=final)
    if drop is None:
        return edit
    lost = functools.partial(_lost_after, checker, final=final, floor=floor, steps=steps)
    return drop if lost(drop) < lost(edit) else edit


def _lost_after(checker: Checker, edit: Edit, *, final: bool, floor: int, steps: int) -> int:
    """The draft's lexemes lost by ``edit`` and the next ``steps`` decisions after it: those the
    edits remove, and the rest of the draft's text where a decision cuts it before the answer
    has ended (the text after the last step is taken to read on)."""
    lost = _lexemes_lost(edit)
    with checker.trial() as trial:
        for _ in range(steps):
            trial.rollback_chars(edit.start)
            trial.feed(edit.text + edit.kept)
            if not edit.unread.strip():
                break
            after = decide(trial, edit.unread, final=final, floor=floor, no_target=True, lookahead=0)
            if isinstance(after, Cut) and after.reason in _ANSWER_ENDS:
                break
            if not isinstance(after, Edit):
                return lost + _lexemes(trial.text[after.start :] + edit.unread)
            lost += _lexemes_lost(after)
            edit = after
    return lost


#: Edits that lose none of the draft's answer: a known slip written in the grammar's spelling, a
#: word written twice, prose left out.
_LOSSLESS: frozenset[str] = REWRITE_RULES | {"repeat", "prose"}


#: The parts of a lexeme an edit may keep: its words and marks, not the quotes around a name.
_PARTS = re.compile(r"\w+|[^\w\s\"'`\[\]]")


def _lexemes_lost(edit: Edit) -> int:
    """The draft's words and marks ``edit`` removes and does not write again (a name quoted whole
    loses none; a misspelt keyword respelt loses one)."""
    if edit.rule in _LOSSLESS:
        return 0
    written = collections.Counter(part.lower() for part in _PARTS.findall(edit.text))
    removed = collections.Counter(part.lower() for part in _PARTS.findall(edit.removed))
    return sum((removed - written).values())


def _lexemes(text: str) -> int:
    return len(LEXEME.findall(text))


def _edit_at(
    checker: Checker, at: int, moved: str, *, final: bool, floor: int, rewrite_floor: int | None
) -> Edit | Cut | None:
    """The best edit at the violation (``propose_edit``, with its ties), placed at ``at``; or a
    prose cut where that edit would make words that are no code into code."""
    text = checker.text
    with checker.trial() as trial:
        trial.rollback_chars(at)
        edit = propose_edit(trial, moved, final=final, floor=floor, rewrite_floor=rewrite_floor)
        if edit is None:
            return None
        prose = _prose_instead(checker, text, moved[len(text) - at :], min(at, edit.start), edit, floor)
        if prose is not None:
            return prose
        placed = [replace(_before_space(trial, e, floor), at=at) for e in (edit, *edit.ties)]
    return replace(placed[0], ties=tuple(placed[1:]))


def _rewrite_across(
    checker: Checker, at: int, moved: str, *, final: bool, floor: int, rewrite_floor: int | None
) -> Edit | None:
    """A rewrite of a known slip at the violation that reads on into what would be cut as a
    second answer (``FROM t MINUS SELECT …``: Oracle's EXCEPT, not an alias and another query)."""
    return _proposed_at(
        checker, at, lambda trial: propose_rewrite(trial, moved, final=final, floor=floor, rewrite_floor=rewrite_floor)
    )


def _resync_at(checker: Checker, at: int, moved: str, *, final: bool) -> Edit | None:
    """``resync`` of the rejected text ``moved`` after the first ``at`` characters of the text,
    where that text is not complete: after a complete answer what no edit fixes is cut (a model
    repeating itself, ``ORDER BY age FROM t ORDER BY age DESC``, is never joined on)."""
    return _proposed_at(checker, at, lambda trial: None if trial.is_complete else resync(trial, moved, final=final))


def _proposed_at(checker: Checker, at: int, propose: Callable[[Checker], Edit | None]) -> Edit | None:
    """What ``propose`` makes of a trial of ``checker`` taken back to ``at``, placed at ``at``."""
    with checker.trial() as trial:
        trial.rollback_chars(at)
        edit = propose(trial)
    return None if edit is None else replace(edit, at=at)


def _prose_instead(
    checker: Checker, text: str, evidence: str, start: int, edit: Edit, floor: int, *, at: int | None = None
) -> Cut | None:
    """A ``prose`` cut of ``text`` (the accepted text; the checker may be in a trial) and
    ``evidence`` from ``start`` on, where ``edit`` there would make words that are no code into
    code (``_code_for_words``); ``None`` otherwise."""
    if _respells_word(edit) or not _code_for_words(checker, text[:start], edit, text[start:] + evidence):
        return None
    return Cut(max(len(text[:start].rstrip()), floor), "prose", start if at is None else at)


def _code_for_words(checker: Checker, before: str, edit: Edit, moved: str) -> bool:
    """Whether an edit would make words that are no code into code: nothing of the answer is
    written yet, the edit writes a word the draft did not (a keyword), and the draft's text has
    none of the grammar's keywords (``error`` is not ``DETACH error``), or it stops being code
    right after a word the edit inserted (``_reads_on_as_code``: ``To determine how`` is not ``ROLLBACK
    To "determine how"``), or the edit inserts before a sentence (``looks_like_sentence``: ``The
    query is:  xyz FROM t``). ``name FROM users`` does read as SQL missing its ``SELECT``. Such
    text is cut as prose instead."""
    if before.strip() or _respaced(edit):
        return False
    drafted = {word.lower() for word in _WORD.findall(moved)}
    own = {word.lower() for word in _WORD.findall(edit.removed + edit.kept)}  # the words the edit reads
    if all(word.lower() in own for word in _WORD.findall(edit.text)):
        return False
    keywords = checker.grammar.keywords
    inserted = edit.rule == "edit" and not edit.removed.strip()
    if inserted and looks_like_sentence(moved.lstrip(), keywords):
        return True  # 'The query is:  xyz FROM t' is no 'select The, query is'
    return not drafted & keywords or (inserted and not _reads_on_as_code(edit.kept, keywords))


def _respaced(edit: Edit) -> bool:
    """Whether ``edit`` only changes the white space in the draft's text it removes
    (``SELECTFirstName`` as ``SELECT FirstName``): it writes no word the draft did not."""
    return bool(edit.removed.strip()) and "".join(edit.text.split()) == "".join(edit.removed.split())


def _reads_on_as_code(kept: str, keywords: frozenset[str]) -> bool:
    """Whether the draft's text that an edit at the start of the answer reads (``kept``) is
    three lexemes or more, with a keyword of the draft's own after its first word (``name FROM
    users`` after ``select``); not ``To`` of ``To determine how`` after ``rollback``, nor
    ``python import`` after ``select``."""
    lexemes = LEXEME.findall(kept)
    return len(lexemes) >= 3 and any(is_word(w) and w.lower() in keywords for w in lexemes[1:])


_ONE_WORD = re.compile(r"\s*\w+\s*")


def _respells_word(edit: Edit) -> bool:
    """Whether ``edit`` is one of the grammar's rewrites that writes one word the draft wrote as
    the one word it means (JSON's ``None`` as ``null``): a word the grammar's data names is a
    slip of the answer, not prose."""
    return edit.rule == "rewrite" and all(_ONE_WORD.fullmatch(s) for s in (edit.removed, edit.text))


def _before_space(checker: Checker, edit: Edit, floor: int) -> Edit:
    """A separator or closing bracket inserted after white space goes before it when that reads
    the same (``[1, 2, 3]``, not ``[1, 2 ,3]``); an operator keeps its space (``age > 30``)."""
    text = checker.text[: edit.start]
    gap = len(text) - len(text.rstrip())
    if not gap or edit.removed or not edit.text or not set(edit.text) <= TIGHT:
        return edit
    start = edit.start - gap
    if start < floor:
        return edit
    kept = text[start:] + edit.kept
    with checker.trial() as trial:
        trial.rollback_chars(start)
        if trial.feed(edit.text) != len(edit.text) or trial.feed(kept) != len(kept):
            return edit
    return replace(edit, start=start, kept=kept)


def repeats_answer(checker: Checker, rejected: str) -> bool:
    """Whether ``rejected``, which no edit fixes after ``checker``'s complete text, only repeats
    it: it has a word, and it is made of runs of the text's lexemes, each two or more long (case
    aside), as they stand in the text (a model looping: ``WHERE T1.id = course WHERE T1.id =
    course``; ``AS COUNT`` after ``AS T1 … COUNT(*)`` is no repetition). It adds nothing to the answer."""
    tail = [lexeme.lower() for lexeme in LEXEME.findall(rejected)]
    if not checker.is_complete or not any(is_word(w) for w in tail):
        return False
    return is_made_of_runs(tail, [lexeme.lower() for lexeme in LEXEME.findall(checker.text)])


def is_made_of_runs(tail: Sequence[object], text: Sequence[object], shortest: int = 2) -> bool:
    """Whether ``tail`` is a sequence of runs of ``text``, each ``shortest`` or more items long
    (the longest run taken at each step)."""
    i = 0
    while i < len(tail):
        longest = 0
        for start in range(len(text)):
            n = 0
            while i + n < len(tail) and start + n < len(text) and tail[i + n] == text[start + n]:
                n += 1
            longest = max(longest, n)
        if longest < min(shortest, len(tail) - i) or longest == 0:
            return False
        i += longest
    return True


def prose_cut(checker: Checker, evidence: str, floor: int) -> Cut | None:
    """ "…FROM road)\n\nThis query returns…": the first word of an explanation after the answer
    was read as an alias and the violation is in the explanation: cut at the end of the answer."""
    end = prose_after_answer(checker.text, evidence, floor, functools.partial(_complete_at, checker))
    return None if end is None else Cut(end, "after complete text", end)


#: A sentence's stop at the end of its line, and the white space after it.
_FULL_STOP_LINE = re.compile(r"[.!?][ \t]*(?:\n\s*|$)")
_STOP_REACH = 80  # characters before the violation a stop may be in


def _full_stop(checker: Checker, at: int, moved: str, floor: int) -> Cut | None:
    """A complete answer, then a sentence's stop that ends its line, the violation in it or on
    the line after it (``… = 'x').⏎⏎CREATE TABLE …``, a run-on after the answer; ``… = 'x'.⏎⏎The
    final SQL is``, where ``'x'.`` would read as a qualifier): cut at the stop, not read on into
    what follows by an edit (``'x'.x``, a name made of the next line); named another answer
    where the next line begins the grammar's text. Not where the grammar takes the stop as the
    end of a text of its own."""
    joined = checker.text[:at] + moved
    for m in _FULL_STOP_LINE.finditer(joined, max(floor, at - _STOP_REACH)):
        stop = m.start()
        if stop > at or stop > len(checker.text):
            break
        if "\n" in joined[m.end() : at] or not _complete_at(checker, stop):
            continue
        if stop == len(checker.text) or not _complete_at(checker, stop + 1):
            fresh = _answer_read(checker.grammar, joined[m.end() : m.end() + _ANOTHER_ANSWER_READ])
            return Cut(stop, "another answer" if fresh else "after complete text", min(at, stop))
    return None


def _leave_prose(checker: Checker, at: int, moved: str, *, final: bool, floor: int) -> Cut | Edit | None:
    """Prose at the violation (``The answer is 3 + 4``, ``That's fine. Maybe``, ``\\end{code}``)
    is never made into code: where the draft's answer resumes after it (``3 + 4`` reads on), an
    edit that leaves the prose out; otherwise a cut before it. ``None`` if it is not prose."""
    text = checker.text
    keywords = checker.grammar.keywords
    joined = text[:at] + moved
    # A whole line of prose (``Sure! This should work:``): the answer resumes on the next line, if at all.
    code_first = _complete_code_before(checker, at)
    line = None if code_first else _prose_line_span(joined + "\n" * final, at, floor, keywords)
    run = line or prose_run(text, at, moved, keywords)
    if run is None:
        return None
    start, end = run
    if start < floor:
        start = at
    elif code_first:
        start = _first_complete(checker, joined, start, at)  # 'Write Sql for', not 'votes Consider the'
    cut = max(len(joined[:start].rstrip()), floor)
    if cut <= len(text) and text[:cut].strip() and _complete_at(checker, cut):
        # After a complete answer, prose (``\end{code}  Comment: …``) is never read on into:
        # what follows it is more of the explanation, not the answer (issue 28 items 1, 2).
        return Cut(cut, "prose", min(at, cut))
    code_end = _code_before_sentence(checker, joined, start, at, floor)
    if code_end is not None:
        return Cut(code_end, "prose", min(at, code_end))
    span = range(end, end + 1) if line is not None else range(start, end + 1)
    resume = _resume_after_prose(checker, cut, joined, span, final, after_line=line is not None)
    if resume is not None:
        return resume
    return Cut(cut, "prose", min(at, cut))


def _sentence_ends(checker: Checker, at: int, moved: str, floor: int) -> Cut | None:
    """The rejected text ``moved`` being words up to a sentence's end (``_reader.sentence_end``:
    ``in `results` table.  SELECT …``, ``underwent testing in 1997 AND … range.  Write``), a
    capitalised word after it: a sentence end is where the answer may end. Where the text is
    complete at the violation, the sentence and all after it are cut there (a statement after it
    is never joined on, its full stop never read as a qualifier's dot: issue 28 items 1, 2);
    ``None`` otherwise."""
    text = checker.text[:at].rstrip()
    word = trailing_word(text)
    ends = [len(text)]
    if _SENTENCE_START.fullmatch(word) and word.lower() not in checker.grammar.keywords:
        ends.insert(0, len(text[: -len(word)].rstrip()))  # the sentence's first word: 'singer  Write Sql'
    for cut in ends:
        if cut >= floor and text[:cut].strip() and _complete_at(checker, cut):
            return Cut(cut, _sentence_cut_reason(text[cut:] + moved), min(at, cut))
    return None


def _sentence_cut_reason(left_out: str) -> CutReason:
    """``after complete text`` where the text left out begins a sentence (``  Write Sql for``) or
    another statement; ``prose`` where it goes on with a small letter (``underwent testing in …``):
    a sentence the kept words may have begun (``Changes`` counts that as an edit)."""
    return "prose" if left_out.lstrip()[:1].islower() else "after complete text"


#: A capitalised word that may begin a sentence (``Write``), no name in capitals (``ID``).
_SENTENCE_START = re.compile(r"[A-Z][a-z]+")


def _sentence_before_answer(checker: Checker, at: int, moved: str, end: int, *, final: bool, floor: int) -> Edit | None:
    """The edit that leaves out a sentence the draft began its answer with, up to its end ``end``
    in the rejected text ``moved`` (``_reader.sentence_end``), and reads on in the statement after it
    (``SELECT `aCL IgG` and `aCL IgM` are the two antibodies that were tested.  SELECT Symptoms
    FROM …``: no complete statement in code before it); or ``None``. The sentence is all
    of the answer before it, on one line, with no code mark (no operator, bracket or quote but a
    name's backticks) and not two keywords in capitals with no English word between (``SELECT n
    FROM p ORDER BY n``: code, ``_complete_code_before``); what follows it begins an answer of the
    grammar (``SELECT``) and reads on conclusively."""
    text = checker.text
    start = len(text) - len(text.lstrip())
    sentence = text[start:at] + moved[:end]
    if start < floor or "\n" in sentence or _CODE_MARK.search(sentence) or _complete_code_before(checker, at):
        return None
    rest = moved[end:].lstrip()
    if not begins_answer(checker.grammar, rest):
        return None
    tried = try_edit(checker, start, "", rest)
    if tried is None:
        return None
    read = whole_words(rest, tried[0])
    if not read or not conclusive(rest, read, final, tried[1]):
        return None
    removed = text[start:at] + moved[: len(moved) - len(rest)]
    description = f"left out the sentence {sentence.strip()!r} before the answer"
    return Edit(start, "", rest[:read], removed, description, rest[read:], rule="prose")


#: Marks of code in a sentence: an operator, a bracket, a quote, a qualified name (``a.b``).
_CODE_MARK = re.compile(r"[=(){}\[\];\"'<>+*/%|&]|\w\.\w")


def _complete_code_before(checker: Checker, at: int) -> bool:
    """Whether the line before the violation ``at`` holds code (two keywords of the grammar in
    capitals, no English function word: not ``select the customer``, ``SELECT Unfortunately,
    without knowing``) that ends a complete text there: prose
    on the same line (``… ORDER BY n Join the tables on their ids to see more.``) begins at the
    violation, not at the line's start or a word before."""
    end = len(checker.text[:at].rstrip())
    line = checker.text[checker.text.rfind("\n", 0, end) + 1 : end]
    keywords = checker.grammar.keywords
    capitals = {word.lower() for word in re.findall(r"\b[A-Z][A-Z_]+\b", line)} & keywords
    return len(capitals) >= 2 and not has_function_word(line, keywords) and _complete_at(checker, end)


def _first_complete(checker: Checker, joined: str, start: int, at: int) -> int:
    """The first word start from ``start`` to the violation ``at`` where the text is complete
    (``at`` if none): the prose after a complete query begins there."""
    starts = [start, *(start + m.start() for m in re.finditer(r"(?<=\s)\S", joined[start:at]))]
    return next((p for p in starts if _complete_at(checker, len(joined[:p].rstrip()))), at)


def _code_before_sentence(checker: Checker, joined: str, start: int, at: int, floor: int) -> int | None:
    """Where the accepted text is complete after the last of a prose run's words before its
    sentence (``FROM votes Consider the extra knowledge``: the table ``votes``, then the
    sentence), or ``None``: those words are the draft's code, never left out to make the prose
    after them parse (the answer is complete without the sentence)."""
    for end in reversed(names_before_sentence(joined, start, at, checker.grammar.keywords)):
        if end >= floor and end <= len(checker.text) and _complete_at(checker, end):
            return end
    return None


def _prose_line_span(joined: str, at: int, floor: int, keywords: frozenset[str]) -> tuple[int, int] | None:
    """Where the line that the violation ``at`` is in begins and where its line end is, when it
    is a line of prose (``_reader.prose_line``) that does not begin before ``floor``; ``None``
    otherwise."""
    line_start = joined.rfind("\n", 0, at) + 1
    lead = len(joined[line_start:]) - len(joined[line_start:].lstrip(" \t"))
    length = prose_line(joined[line_start + lead :], keywords)
    if not length or line_start < floor:
        return None
    return line_start, line_start + lead + length - 1


def _resume_after_prose(
    checker: Checker, cut: int, joined: str, span: range, final: bool, *, after_line: bool = False
) -> Edit | None:
    """The edit that leaves out the prose from ``cut`` up to the first word start in ``span``
    (or its end) after which the draft's text reads on conclusively, and not as more prose
    (``AND The answer is here`` does not resume at ``answer is here``), or ``None``. With
    ``after_line``, the prose is a whole line and ``span`` its line end: the next line is the
    answer's however its words read (eql's ``process where pid in (1, 2)``), if the grammar
    reads it conclusively."""
    keywords = checker.grammar.keywords
    gap = " " if cut and joined[cut - 1 : cut].strip() else ""
    for resume in span:
        word_start = resume > span.start and is_word_char(joined[resume : resume + 1]) and joined[resume - 1] == " "
        run_end = resume == span.stop - 1 and joined[resume : resume + 1].isspace()  # not '-by' of 'step-by'
        tag_end = joined[resume - 1 : resume] == ">" and opening_tag(joined[span.start : resume])  # '<json>{'
        rest = joined[resume:].lstrip()
        if not (word_start or run_end or tag_end) or not rest:
            continue
        code = after_line or reads_as_code(rest, keywords)
        if not code and is_word_char(rest[0]):
            continue
        tried = try_edit(checker, cut, gap, rest)
        if tried is None:
            continue
        accepted, complete = tried
        read = whole_words(rest, accepted)
        if not code and not (complete and reads_as_code(rest[:read], keywords)):
            continue  # a mark that begins prose; or a complete value that prose follows, judged alone
        if read and conclusive(rest, read, final, complete):
            removed = joined[cut : len(joined) - len(rest)]
            description = f"left out the prose {removed.strip()!r}"
            return Edit(cut, gap, rest[:read], removed, description, rest[read:], rule="prose")
    return None


_WORD = re.compile(r"\w+")
_WORD_HEAD = re.compile(r"^\w+")
_LEXEME = re.compile(r"\w+|[^\w\s]")  # words and marks, as far as a second answer is read
_ANOTHER_ANSWER_READ = 200  # how much of the rejected text is read as the start of a new answer


def another_answer_cut(checker: Checker, evidence: str, floor: int) -> Cut | None:
    """``SELECT 1; SELECT 2``, ``… = 'x' /* Answer the following: … */ SELECT …``: the text is
    complete (at the violation, or before one of the last two words, read as an alias or the
    start of a longer keyword: ``REPLACE INT|O``) and the draft begins another answer there (its
    first word begins the grammar's text), and no separator would join the two (a config's
    ``retries = 1 timeout = 5`` lacks only a new line); or the text is complete before a ``,``
    it ends in, the other answer after it (``… LIMIT 1, SELECT …``: read on, the comma would make
    the limit an offset). Cut at the end of the first answer, with the ignored text (white space,
    comments) after it."""
    text = checker.text
    words = [m.start() for m in _WORD.finditer(text, max(0, len(text) - _ANOTHER_ANSWER_READ))][-2:]
    starts = [(at, at) for at in (len(text), *reversed(words))]
    starts += [(len(text[:at].rstrip()) - 1, at) for at, _ in starts if text[:at].rstrip().endswith(",")]
    for at, after in starts:
        if at < floor or not _complete_at(checker, at):
            continue
        rest = (text[after:] + evidence)[:_ANOTHER_ANSWER_READ]
        if is_word_char(text[after - 1 : after]) and is_word_char(rest[:1]):
            continue  # one word the draft wrote (JSON's '0123'), not a second answer glued to the first
        fresh = _answer_read(checker.grammar, rest)
        if fresh and _begins_apart(checker, text[:at], rest) and not _joinable(checker, at, rest, fresh):
            end = _answer_end(checker, at, floor)
            return Cut(end, "another answer", end)
    return None


def _begins_apart(checker: Checker, before: str, rest: str) -> bool:
    """Whether ``rest`` stands apart from the text as a new answer: on a line of its own, or
    beginning with a keyword of the grammar (``SELECT``); a name that runs on from a complete
    text on its line (eql's ``process hwere x == 1``, ``hwere`` read as the next query's event
    type) is the draft's answer going on, not a second one."""
    lead = checker.grammar.ignored_text.match(rest)
    skip = lead.end() if lead else 0
    word = _WORD_HEAD.match(rest[skip:])
    gap = before[len(before.rstrip()) :] + rest[:skip]
    return "\n" in gap or (word is not None and word.group().lower() in checker.grammar.keywords)


_JOINERS = ("\n", ";", ",")  # separators that may join a second part on to a complete text


def _joinable(checker: Checker, at: int, rest: str, fresh: int) -> bool:
    """Whether a separator written at ``at`` lets the checker read as much of ``rest`` as a new
    answer reads (``fresh`` characters), and two lexemes of it at least or all of it to a
    complete text (``, REPLACE`` reads a table name, then stops)."""
    for joiner in _JOINERS:
        with checker.trial() as trial:
            trial.rollback_chars(at)
            if trial.feed(joiner) != len(joiner):
                continue
            read = _whole_words_read(trial, rest)
            if read >= fresh and (len(_LEXEME.findall(rest[:read])) >= 2 or trial.is_complete):
                return True
    return False


def _whole_words_read(checker: Checker, rest: str) -> int:
    """How much of ``rest`` ``checker`` reads (it is fed), not counting a last word it read only
    the beginning of (``s`` of ``s Soccer'`` as the start of ``SELECT``; ``SELECT`` where only a
    longer word may stand: a dead-end guard)."""
    fed = checker.feed(rest + " ")
    read = min(fed, len(rest))
    if checker.is_dead_end() or (fed <= len(rest) and is_word_char(rest[read - 1 : read])):
        read -= len(trailing_word(rest[:read]))
    return read


def _complete_at(checker: Checker, end: int) -> bool:
    with checker.trial() as trial:
        trial.rollback_chars(end)
        return trial.is_complete


def begins_answer(grammar: CheckedGrammar, text: str) -> bool:
    """Whether ``text`` begins a new text of the grammar with a whole word (``SELECT b FROM u``)."""
    return _answer_read(grammar, text.lstrip()) > 0


def _answer_read(grammar: CheckedGrammar, rest: str) -> int:
    """How much of ``rest`` a new text of the grammar reads, if it begins with a whole word
    that the grammar's text may begin with (not only the beginning of one: ``IN`` of
    ``INSERT``); 0 otherwise."""
    lead = grammar.ignored_text.match(rest)
    skip = lead.end() if lead else 0
    word = _WORD_HEAD.match(rest[skip:])
    if word is None:
        return 0
    read = _whole_words_read(grammar.checker(), rest)
    return read if read >= skip + word.end() else 0


def _answer_end(checker: Checker, end: int, floor: int) -> int:
    """The earliest point of ``checker``'s first ``end`` characters after which there is only
    ignored text (white space, comments), where the text is still complete."""
    text = checker.text[:end]
    ignored = checker.grammar.ignored_text
    for start in range(max(floor, end - 4096), end):
        if ignored.fullmatch(text, start) and _complete_at(checker, start):
            return start
    return end


def _rejected_start(checker: Checker, evidence: str, floor: int) -> int:
    """Where the rejected text begins: the violation, or the start of a trailing word that leads
    nowhere (a grammar's dead-end guard: a misspelt keyword) or could not end there (``FROM``
    read as the start of a longer name)."""
    text = checker.text
    dead = dead_end(checker, floor)
    if dead is not None:
        return dead
    word = trailing_word(text)
    if (
        word
        and evidence[:1]
        and not (evidence[0].isalnum() or evidence[0] == "_")
        and not checker.is_complete
        and len(text) - len(word) >= floor
    ):
        return len(text) - len(word)
    return len(text)


def dead_end(checker: Checker, floor: int) -> int | None:
    """Where the trailing dead-end word starts, if the accepted text can never be completed
    because every terminal that may follow matches nothing; ``None`` otherwise. A mark after the
    word that only begins ignored text there (``2010_count/``: ``/`` read as the start of ``/*``
    after a name that begins with digits, a guard) is no way out of it."""
    text = checker.text
    end = len(text.rstrip())
    opening = _ignored_opening(text[:end], checker.grammar.ignored_start_bytes)
    with checker.trial() as trial:
        if opening:
            trial.rollback_chars(end - opening)
            trial.feed(" ")  # (the word ends there: a guard's word leads on only to its dead end)
        if not trial.is_dead_end():
            return None
    word_end = len(text[: end - opening].rstrip())
    start = word_end - len(trailing_word(text[:word_end]))
    return start if floor <= start < len(text) else None


def _ignored_opening(text: str, starts: frozenset[int]) -> int:
    """How many marks at the end of ``text`` (at most two, after a word) may begin ignored text
    (``/`` of ``/*``, ``-`` of ``--``): 0 where none."""
    marks = len(text) - len(text.rstrip("".join(ch for ch in _IGNORED_MARKS if ord(ch) in starts)))
    return marks if 0 < marks <= 2 and is_word_char(text[-marks - 1 : len(text) - marks]) else 0


_IGNORED_MARKS = frozenset("/-#")  # marks that may begin a comment


def _trailing_space(checker: Checker, floor: int) -> str:
    """White space at the end of a complete text that it is still complete without."""
    text = checker.text
    stripped = text.rstrip()
    if stripped == text or len(stripped) < floor:
        return ""
    with checker.trial() as trial:
        trial.rollback_chars(len(stripped))
        return text[len(stripped) :] if trial.is_complete else ""
