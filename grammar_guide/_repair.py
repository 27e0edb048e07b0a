"""What to do at a violation, decided from the draft's own evidence (the text it wrote after the
violation point) and returned as data: ``Edit`` (a small edit the evidence supports), ``Cut``
(the rest is not part of the answer) or ``NeedTarget`` (let the target model choose). ``decide``
emits nothing and leaves the checker as it was; the loop acts on its answer.

A draft that writes ``ILIKE`` in SQLite SQL, a misspelt keyword, or one ``)`` too many meant
something close to a valid text. Before asking the target model, the loop tries small edits at the
violation (drop a few characters, replace the word with the nearest keyword the grammar expects,
insert a short expected token) and keeps the one under which the checker reads furthest into the
draft's text. An edit is used only when the evidence supports it conclusively; otherwise the target
model decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ._checker import Checker
from ._complete import closing_brackets, shortest_close
from ._events import CutReason, EditRule
from ._grammar import Grammar, Rewrite
from ._reader import looks_like_aside, prose_after_answer, trailing_word
from ._text import QUOTES, is_word_char, run_start

__all__ = [
    "Cut",
    "Decision",
    "Edit",
    "NeedTarget",
    "decide",
    "propose_edit",
    "rewrite_at_end",
    "search_edits",
    "signature",
]

_WORD_HEAD = re.compile(r"^\w+")
_MAX_DELETE = 3
_MAX_INSERT_LEN = 2
_SWAPPABLE = set("'\"`,;:.()[]{}")
_REWRITE_REACH = 200  # how far back before the violation a rewrite's match may begin


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
    #: spelling); ``edit``: the least edit the draft's text supports.
    rule: EditRule = "edit"


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
    checker: Checker, evidence: str, *, final: bool, floor: int, last: tuple[int, str] | None = None
) -> Decision:
    """What to do about the violation at the end of ``checker``'s text (not modified).

    ``evidence`` is the rejected draft text; ``final``: the draft wrote nothing after it; no
    decision takes back text before ``floor``; ``last`` is the signature of the previous
    violation (an edit is not tried twice at the same place).
    """
    cut = prose_cut(checker, evidence, floor) or another_answer_cut(checker, evidence, floor)
    if cut is not None:
        return cut
    text = checker.text
    at = _rejected_start(checker, evidence, floor)
    moved = text[at:] + evidence
    fresh = signature(text, evidence, at) != last
    with checker.trial() as trial:
        trial.rollback_chars(at)
        edit = propose_edit(trial, moved, final=final, floor=floor)
        if edit is not None and fresh:
            placed = [replace(_before_space(trial, e, floor), at=at) for e in (edit, *edit.ties)]
            return replace(placed[0], ties=tuple(placed[1:]))
        if trial.is_complete and looks_like_aside(text[:at], moved, final):
            # A complete text followed by something that cannot extend it: a closing fence, an
            # explanation. Cut it, with the white space before it, and stop.
            return Cut(at - len(_trailing_space(trial, floor)), "after complete text", at)
    edits = search_edits(checker, evidence, final=final, floor=floor) if fresh else []
    if edits:
        placed = [_before_space(checker, e, floor) for e in edits]
        placed = [replace(e, at=min(at, e.start)) for e in placed]
        return replace(placed[0], ties=tuple(placed[1:]))
    start = at
    word = trailing_word(text[:at])
    if word and moved[:1].isalnum() and start - len(word) >= floor:
        start -= len(word)
    return NeedTarget(start, at)


_TIGHT = set(",;:)]}")  # marks written right after the text before them


def _before_space(checker: Checker, edit: Edit, floor: int) -> Edit:
    """A separator or closing bracket inserted after white space goes before it when that reads
    the same (``[1, 2, 3]``, not ``[1, 2 ,3]``); an operator keeps its space (``age > 30``)."""
    text = checker.text[: edit.start]
    gap = len(text) - len(text.rstrip())
    if not gap or edit.removed or not edit.text or not set(edit.text) <= _TIGHT:
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


def prose_cut(checker: Checker, evidence: str, floor: int) -> Cut | None:
    """ "…FROM road)\n\nThis query returns…": the first word of an explanation after the answer
    was read as an alias and the violation is in the explanation: cut at the end of the answer."""

    def complete_at(end: int) -> bool:
        with checker.trial() as trial:
            trial.rollback_chars(end)
            return trial.is_complete

    end = prose_after_answer(checker.text, evidence, floor, complete_at)
    return None if end is None else Cut(end, "after complete text", end)


_WORD = re.compile(r"\w+")
_ANOTHER_ANSWER_READ = 200  # how much of the rejected text is read as the start of a new answer


def another_answer_cut(checker: Checker, evidence: str, floor: int) -> Cut | None:
    """``SELECT 1; SELECT 2``, ``… = 'x' /* Answer the following: … */ SELECT …``: the text is
    complete (at the violation, or before one of the last two words, read as an alias or the
    start of a longer keyword: ``REPLACE INT|O``) and the draft begins another answer there (its
    first word begins the grammar's text), and no separator would join the two (a config's
    ``retries = 1 timeout = 5`` lacks only a new line). Cut at the end of the first answer, with
    the ignored text (white space, comments) after it."""
    text = checker.text
    words = [m.start() for m in _WORD.finditer(text, max(0, len(text) - _ANOTHER_ANSWER_READ))][-2:]
    for at in (len(text), *reversed(words)):
        if at < floor or not _complete_at(checker, at):
            continue
        rest = (text[at:] + evidence)[:_ANOTHER_ANSWER_READ]
        fresh = _answer_read(checker.grammar, rest)
        if fresh and not _joinable(checker, at, rest, fresh):
            end = _answer_end(checker, at, floor)
            return Cut(end, "another answer", end)
    return None


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


def _answer_read(grammar: Grammar, rest: str) -> int:
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
    because every terminal that may follow matches nothing; ``None`` otherwise."""
    text = checker.text
    with checker.trial() as trial:
        if not trial.is_dead_end():
            return None
    start = len(text.rstrip()) - len(trailing_word(text.rstrip()))
    return start if floor <= start < len(text) else None


def _trailing_space(checker: Checker, floor: int) -> str:
    """White space at the end of a complete text that it is still complete without."""
    text = checker.text
    stripped = text.rstrip()
    if stripped == text or len(stripped) < floor:
        return ""
    with checker.trial() as trial:
        trial.rollback_chars(len(stripped))
        return text[len(stripped) :] if trial.is_complete else ""


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


_LEXEME = re.compile(r"\w+|[^\w\s]")


def _try_edit(checker: Checker, start: int, insert: str, rest: str) -> tuple[int, bool] | None:
    """Write ``insert`` then ``rest`` after the first ``start`` characters of ``checker``'s text,
    and take it back: how many characters of ``rest`` were accepted and whether the text was then
    complete, or ``None`` when ``insert`` itself was not accepted."""
    with checker.trial() as trial:
        trial.rollback_chars(start)
        if insert and trial.feed(insert) != len(insert):
            return None
        return trial.feed(rest), trial.is_complete


def _conclusive(kept: str, accepted: int, final: bool, complete: bool, min_read: int = 2) -> bool:
    """The evidence supports an edit when the checker then reads at least ``min_read`` more
    tokens of it (words or punctuation), or all of the rest of a finished answer."""
    read = len(_LEXEME.findall(kept[:accepted]))
    if final and accepted == len(kept):
        return read >= 1 or complete
    return read >= min_read


def propose_edit(checker: Checker, evidence: str, *, final: bool, floor: int = 0) -> Edit | None:
    """The best conclusive edit at ``checker``'s violation (with its ties), or ``None``.

    ``checker`` holds the accepted text (not modified); ``evidence`` is the rejected draft text from
    the violation point on; ``final`` says the draft wrote nothing after it (its answer ended), so
    the evidence is complete. The edit never rolls back before ``floor``.
    """
    text = checker.text
    was_complete = checker.is_complete
    best: tuple[tuple[int, int], list[Edit]] | None = None

    def consider(
        start: int,
        insert: str,
        kept: str,
        removed: str,
        description: str,
        cost: int,
        base: int = 0,
        min_read: int = 2,
        rule: EditRule = "edit",
    ) -> None:
        """Score an edit by how far into the evidence the checker reads after it (``base`` maps
        positions in ``kept`` to positions in the evidence)."""
        nonlocal best
        if _opens_comment(text[:start], insert, kept):
            return
        tried = _try_edit(checker, start, insert, kept)
        if tried is None:
            return
        accepted, complete = tried
        read = _whole_words(kept, accepted)  # what counts as read; the edit keeps all it accepted
        if not (insert or read) or _opens_unclosed(insert, kept[:accepted]):
            return
        if not _conclusive(kept, read, final, complete, min_read):
            return
        # After a complete text, drafted text is often an aside (a closing fence, prose): an edit
        # must make all of it part of a complete text, or read words of it, not only punctuation,
        # or the aside is cut instead.
        if was_complete and not (complete and accepted == len(kept)) and not re.search(r"\w", kept[:accepted]):
            return
        if not insert and accepted == 0:
            return
        score = (base + read, -cost)
        edit = Edit(start, insert, kept[:accepted], removed, description, kept[accepted:], rule=rule)
        if best is None or score > best[0]:
            best = (score, [edit])
        elif score == best[0] and len(best[1]) < _MAX_TIES:
            result = _edited(text, edit)
            if all(_edited(text, e) != result for e in best[1]):
                best[1].append(edit)

    # The word the violation is in: its accepted part, and its rejected part.
    # (Read from the end of the text, as far as each needs: a violation's cost does not grow
    # with the text's length.)
    tail_start = run_start(text, len(text), is_word_char)
    head = _WORD_HEAD.search(evidence)
    in_word = tail_start < len(text) and head is not None
    word_start = tail_start if in_word else len(text)
    word = text[word_start:] + (head.group() if head else "")
    after_word = evidence[len(head.group()) if head else 0 :]
    word_is_whole = bool(word) and (bool(after_word) or final)

    # 1. Drop a few characters at the violation (an extra ')' or a stray quote).
    for d in range(1, min(_MAX_DELETE, len(evidence)) + 1):
        dropped = evidence[:d]
        if dropped.strip() == "" and d > 1:
            break
        if QUOTES & set(dropped):
            break  # an unpaired quote would turn the rest into a string
        if any(is_word_char(ch) for ch in dropped):
            break  # a word is the draft's content: the search may drop it, if nothing keeps it
        if _joins_words(text, evidence[d:]):
            continue  # 'a::int' must not become 'aint'
        if _halves_operator(text, dropped):
            continue  # 'a && b' must not become the bitwise 'a & b'
        consider(len(text), "", evidence[d:], dropped, f"dropped {dropped!r}", cost=2 * d, base=d)

    # 2. Replace the word with the nearest keyword the grammar expects there.
    if word_is_whole and word_start >= floor and (word[0].isalpha() or word[0] == "_"):
        for literal in _expected_literals(checker, word_start, like=word):
            if not is_word_char(literal[:1]):
                continue  # a word is not a typo of a mark: 'e' is not '{'
            distance = _distance(word, literal)
            if 0 < distance <= max(1, len(word) // 3):
                consider(
                    word_start,
                    literal,
                    after_word,
                    word,
                    f"replaced {word!r} with {literal!r}",
                    cost=3 * distance,
                    base=len(word) - (len(text) - word_start),
                )

    # 3. The previous word was taken as a name but was meant as a keyword (``LIMT 5``).
    if not in_word:
        gap_start = run_start(text, len(text), str.isspace)
        pword_start = run_start(text, gap_start, is_word_char)
        pword, gap = text[pword_start:gap_start], text[gap_start:]
        if gap and pword and pword_start >= floor and pword[0].isalpha():
            for literal in _expected_literals(checker, pword_start, like=pword):
                distance = _distance(pword, literal)
                if 0 < distance <= max(1, len(pword) // 3):
                    consider(
                        pword_start,
                        literal + gap,
                        evidence,
                        pword,
                        f"replaced {pword!r} with {literal!r}",
                        cost=3 * distance + 1,
                        # A name one typo from the keyword expected there, with the violation
                        # right after it, is read as that keyword rather than kept as a name.
                        base=1,
                    )

    # 4. Swap the offending character for one the grammar allows (single for double quotes),
    #    with its partner further on when it is a quote.
    if evidence and evidence[0] in _SWAPPABLE:
        bad = evidence[0]
        with checker.trial() as trial:
            allowed = trial.allowed_bytes()
        for code in sorted(allowed):
            good = chr(code)
            if good not in _SWAPPABLE or good == bad:
                continue
            if bad in QUOTES:
                # A quote is swapped with its partner, or not at all.
                partner = evidence.find(bad, 1)
                if good in QUOTES and partner > 0:
                    swapped = evidence[1:partner] + good + evidence[partner + 1 :]
                    consider(
                        len(text), good, swapped, bad, f"replaced {bad}...{bad} with {good}...{good}", cost=3, base=1
                    )
            elif _same_class(bad, good):
                consider(len(text), good, evidence[1:], bad, f"replaced {bad!r} with {good!r}", cost=2, base=1)

    # 5. Drop the punctuation before the violation (a trailing comma before a closing bracket).
    gap_start = run_start(text, len(text), str.isspace)
    mark = text[gap_start - 1 : gap_start]
    if mark and not is_word_char(mark) and not mark.isspace() and gap_start - 1 >= floor and mark not in QUOTES:
        gap = text[gap_start:]
        if not _joins_words(text[: gap_start - 1], gap + evidence):  # 'step-by' must not become 'stepby'
            consider(gap_start - 1, "", gap + evidence, mark, f"dropped {mark!r}", cost=3, base=-len(gap))

    # 6. Insert a short token the grammar expects (a missing comma, colon or bracket).
    for literal in _expected_literals(checker, len(text)):
        if len(literal) <= _MAX_INSERT_LEN and not literal.isalnum() and not set(literal) & set("([{'\"`"):
            # An operator written after white space gets white space after it too (``age > 30``).
            spaced = text[-1:].isspace() and not set(literal) <= _TIGHT and evidence[:1].strip() != ""
            insert = literal + " " if spaced else literal
            consider(len(text), insert, evidence, "", f"inserted {literal!r}", cost=2 * len(literal) + 1)

    # 7. Close two or more brackets the draft left open where its statement ends (``... AS x\n;``
    #    inside ``(SELECT (``); not before more of it, which may close them itself.
    if evidence.lstrip()[:1] in ("", ";"):
        closers = closing_brackets(checker, _MAX_CLOSERS)
        for n in range(2, len(closers) + 1):
            consider(len(text), closers[:n], evidence, "", f"inserted {closers[:n]!r}", cost=2 * n + 1)

    # 8. The grammar's known slips (``Grammar.rewrites``: ``a::int`` for ``CAST(a AS int)``)
    #    whose match spans the violation. The match itself is evidence, so one more token read
    #    after it is enough, and it costs less than a generic edit that reads as far (JSON's
    #    ``\\/`` is ``/``, not ``\\`` with the ``/`` dropped, which makes the escape ``\\b``).
    #    (Or the match spans where the evidence first fails: past ``text``'s end when the
    #    rejected text begins with the word before it, ``line1`` of ``"line1⏎line2"``.)
    window_start = max(floor, len(text) - _REWRITE_REACH)
    window = text[window_start:] + evidence
    read = _try_edit(checker, len(text), "", evidence)
    violation = len(text) + (read[0] if read else 0)
    for rewrite in checker.grammar.rewrites:
        for match in rewrite.regex.finditer(window):
            start, end = window_start + match.start(), window_start + match.end()
            if start > violation:
                break
            spans = start <= len(text) < end or start <= violation < end
            if not spans or (not final and match.end() == len(window)):
                continue  # not across the violation; or cut where the draft's text is (the rest unread)
            # (A match that begins in the evidence keeps the draft's text before it.)
            before = evidence[: max(start - len(text), 0)]
            consider(
                min(start, len(text)),
                before + match.expand(rewrite.replacement),
                evidence[end - len(text) :],
                match.group(),
                _rewrote(match, rewrite),
                cost=1,
                base=end - len(text),
                min_read=1,
                rule="rewrite",
            )

    return replace(best[1][0], ties=tuple(best[1][1:])) if best else None


def rewrite_at_end(checker: Checker, floor: int) -> Edit | None:
    """A rewrite whose match ends the text of a finished draft (``... LIMIT ALL``): the text is
    then complete; or, where no closing marks end the text as it is (``[1, 2,``, ``{"a": 2e``),
    they then do (the separator, the unfinished number dropped). ``None`` if there is none."""
    text = checker.text
    closable = shortest_close(checker) is not None
    window_start = max(floor, len(text) - _REWRITE_REACH)
    window = text[window_start:]
    for rewrite in checker.grammar.rewrites:
        for match in rewrite.regex.finditer(window):
            if match.end() != len(window):
                continue
            start = window_start + match.start()
            insert = match.expand(rewrite.replacement)
            with checker.trial() as trial:
                trial.rollback_chars(start)
                if trial.feed(insert) != len(insert):
                    continue
                if not (trial.is_complete or (not closable and shortest_close(trial) is not None)):
                    continue
            return Edit(start, insert, "", match.group(), _rewrote(match, rewrite), at=start, rule="rewrite")
    return None


_SEARCH_LEXEMES = 6  # how many lexemes before the violation the search may edit at
_MIN_READ = 2  # lexemes of the evidence an edit found by search must let parse
_MAX_TIES = 16  # equally good edits handed on for the target to choose between


def search_edits(checker: Checker, evidence: str, *, final: bool, floor: int = 0) -> list[Edit]:
    """The least edits that let the most of the draft's own text parse: insert, delete or replace
    one lexeme at the violation or up to ``_SEARCH_LEXEMES`` lexemes before it
    (``SELECT (COUNT(*) FROM t`` meant ``SELECT (SELECT COUNT(*) FROM t``); empty if none.

    Candidates are ranked by how far into the draft's text (the accepted text from the edit on,
    then the evidence) the checker reads after the edit, then by the smaller edit. All the edits
    of the best rank are returned, the one nearest the violation first (the evidence cannot
    choose between them; a target model may). An edit must read at least ``_MIN_READ`` lexemes
    of the evidence, or all of a finished draft's text.
    """
    text = checker.text
    lexemes = _last_lexemes(text, _SEARCH_LEXEMES)
    # Each lexeme's start, and its end where white space follows (a missing comma goes there).
    positions = {m.start() for m in lexemes} | {m.end() for m in lexemes if text[m.end() : m.end() + 1].isspace()}
    ranked: list[tuple[tuple[int, int, int], Edit]] = []
    for start in sorted(p for p in positions | {len(text)} if p >= floor):
        draft = text[start:] + evidence
        for insert, skip, description, cost in _candidates(checker, start, draft):
            rest = draft[skip:]
            if _opens_comment(text[:start], insert, rest) or not _quotes_balanced(insert, draft[:skip]):
                continue
            if _joins_words(text[:start] + insert, rest):
                continue  # 'b.title' must not become 'btitle'
            tried = _try_edit(checker, start, insert, rest)
            if tried is None:
                continue
            accepted, complete = tried
            read = _whole_words(rest, accepted)  # what counts as read; the edit keeps all it accepted
            if _opens_unclosed(insert, rest[:accepted]):
                continue
            read_evidence = read + skip - (len(text) - start)
            whole = final and accepted == len(rest) and complete
            if not whole and len(_LEXEME.findall(evidence[: max(read_evidence, 0)])) < _MIN_READ:
                continue
            edit = Edit(start, insert, rest[:accepted], draft[:skip], description, rest[accepted:])
            ranked.append(((start + skip + read, -cost, start), edit))
    if not ranked:
        return []
    ranked.sort(key=lambda item: item[0], reverse=True)  # stable: equal edits keep their order
    best = ranked[0][0][:2]
    ties: list[Edit] = []
    seen: set[str] = set()  # one edit per resulting text
    for rank, edit in ranked:
        if rank[:2] != best or len(ties) == _MAX_TIES:
            break
        result = _edited(text, edit)
        if result not in seen:
            seen.add(result)
            ties.append(edit)
    return ties


def _whole_words(kept: str, accepted: int) -> int:
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


def _last_lexemes(text: str, n: int) -> list[re.Match[str]]:
    """The last ``n`` lexemes of ``text``, read from the end as far as they need."""
    window = 256
    while True:
        pos = max(0, len(text) - window)
        lexemes = list(_LEXEME.finditer(text, pos))
        # Only the first lexeme found may be the cut end of a longer one.
        if pos == 0 or len(lexemes) > n:
            return lexemes[-n:]
        window *= 4


def _candidates(checker: Checker, start: int, draft: str) -> list[tuple[str, int, str, int]]:
    """Edits at the start of ``draft`` (after the first ``start`` characters of ``checker``'s
    text): (text inserted, draft characters it
    replaces, description, cost). Keywords the grammar expects are inserted or replace the next
    lexeme (cost: their edit distance); a bare word may be quoted; the next lexeme dropped."""
    stripped = draft.lstrip()
    gap = len(draft) - len(stripped)
    lexeme = _LEXEME.match(stripped)
    word = lexeme.group() if lexeme else ""
    out: list[tuple[str, int, str, int]] = []
    for literal in dict.fromkeys(_expected_literals(checker, start, like=word)):
        sep = " " if literal[-1].isalnum() and draft[:1].isalnum() else ""
        out.append((literal + sep, 0, f"inserted {literal!r}", len(literal) + 2))
        if word and word != literal:
            distance = _distance(word, literal)
            near = word[0].isalpha() and literal[0].isalpha() and distance <= max(1, len(word) // 3)
            cost = 2 * distance if near else 2 * len(word) + len(literal) + 1
            out.append((draft[:gap] + literal, gap + len(word), f"replaced {word!r} with {literal!r}", cost))
    if word:
        out.append(("", gap + len(word), f"dropped {word!r}", 2 * len(word) + 1))
        if word[0].isalpha():
            # A name in double quotes; in single quotes (a string SQLite also takes for a name) after.
            for quote, cost in (('"', 3), ("'", 4)):
                quoted = quote + word + quote
                out.append((draft[:gap] + quoted, gap + len(word), f"quoted {word!r}", cost))
    return out


def _quotes_balanced(insert: str, removed: str) -> bool:
    """An edit may not leave a quote unpaired: the rest of the draft would turn into a string."""
    return all((insert.count(q) - removed.count(q)) % 2 == 0 for q in QUOTES)


def _opens_comment(before: str, insert: str, rest: str) -> bool:
    """Whether the edit would turn the draft's text into a comment: ``/`` before ``*)``, or a
    ``-`` written after the ``-`` before it (``x -( SELECT`` is not ``x -- SELECT``). A marker
    inside a string the edit writes whole (``"https://x"``) is the string's text."""
    joined = before[-1:] + _QUOTED.sub('""', insert) + rest[:2]
    return any(marker in joined and marker not in rest[:2] for marker in ("/*", "--", "//", "#"))


_QUOTED = re.compile(r'"[^"]*"|\'[^\']*\'')
_CLASSES = (set(")]}"), set("([{"), set(",;"))


def _joins_words(before: str, after: str) -> bool:
    return bool(before) and bool(after) and is_word_char(before[-1]) and is_word_char(after[0])


_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def _opens_unclosed(insert: str, kept: str) -> bool:
    """Whether an edit opens a bracket the draft's text read after it never closes: ``LEFT(d, 4)``
    must not become ``LEFT[d, 4) ...``, where SQLite reads the whole rest as one bracketed name."""
    for opener, closer in _CLOSERS.items():
        if insert.count(opener) > insert.count(closer) and closer not in kept:
            return True
    return False


def _halves_operator(before: str, dropped: str) -> bool:
    """Whether dropping ``dropped`` after ``before`` turns a doubled logical operator into a
    single bitwise one (``&&`` into ``&``, ``||`` into ``|``): a change of meaning, not a repair."""
    return dropped in ("&", "|") and before.endswith(dropped)


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


def _expected_literals(checker: Checker, upto: int, like: str = "") -> list[str]:
    """Literal terminals expected after the first ``upto`` characters of ``checker``'s text;
    case-insensitive ones in ``like``'s case."""
    literals = []
    for terminal in checker.expected(upto):
        if terminal.literal:
            literal = terminal.literal
            if terminal.case_insensitive and like:
                literal = literal.upper() if like.isupper() else literal.lower() if like.islower() else literal
            literals.append(literal)
    return literals
