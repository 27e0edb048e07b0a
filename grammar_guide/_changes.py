"""What a guided generation changed of the draft's answer, read from its events.

The events are the record of where each part of the text came from (``DraftSpan``: the draft;
``Correction``: the grammar, an edit, a rewrite, the target; ``Cut``: what was left out and why).
``changes_of`` counts them by what they did to the draft's answer:

- kept as written: the draft's text, text the grammar forces (no choice was made), a token
  re-chosen by healing (same text), formatting undone (Markdown escapes, a backtick pair, white
  space of another kind written as a plain space: a ``space`` edit), prose
  before, after or within the answer left out (never made into code), a restated answer, a word
  written twice in a row written once (``DISTINCT DISTINCT``);
- ``rewrites``: the grammar's known slips of another dialect, rewritten to what they mean;
- ``quoted``: the draft's words quoted whole as one name (``Ben Jones`` as ``"Ben Jones"``: the
  words kept, only the quotes around them written), formatting;
- ``line_breaks``: a line break the draft's text lost, written where a line comment of it
  swallowed its code (``-- Step 1: … WITH s AS (…`` of an answer stored on one line): the words
  kept, only the break written, formatting;
- ``closed``: closing marks only (brackets, quotes, ``;``) that end an unfinished text, or a
  closing bracket or a ``;`` the draft wrote too many, dropped;
- ``edits``: the least edit of the draft's text (a lexeme dropped, inserted or replaced), and
  prose left out in the middle of a sentence whose other words the text kept (``SELECT
  Unfortunately, without`` of ``SELECT Unfortunately, without knowing ...``: prose made code);
- ``respelt``: an edit that replaced one word of the draft with another within a typo of it
  (``DICTINCT`` as ``DISTINCT``): named apart from other edits, but a replaced word all the same;
- ``invented``: text that the target wrote, or a completion beyond closing marks;
- ``dropped``: the draft's answer left out (a dead end, text no edit could repair, text a budget
  left unread, the unfinished last words taken back, words a repair took away and put nothing in
  place of: a dangling JSON key), or prose where it was all the draft wrote (the text is then
  none of the draft's);
- ``other_answers``: another answer the draft began after a complete one (a second SQL
  statement), left out: not part of the answer, but named;
- ``incomplete``: the result is not complete (``GuideResult.complete``: a budget ended the run,
  or the partial result of ``GuideExhausted``, a valid prefix only): the text is not the draft's
  whole answer.

The text is ``faithful`` to the draft when it is complete and has no edit (respelt or not), nothing
invented and nothing dropped, and some of it is the draft's (a draft that wrote only prose has no answer to be
faithful to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, fields

from ._edit_search import levenshtein
from ._events import REWRITE_RULES, Correction, Cut, DraftSpan, Event, GrammarViolation
from ._text import plain_space

__all__ = ["Changes", "changes_of"]

#: Marks that close what the text opened: a close made of these (and white space) invents nothing.
CLOSING_MARKS = frozenset(")]}\"'`;")
#: Cuts that leave out the draft's answer itself (every other cut is not part of the answer).
_ANSWER_CUTS = frozenset({"dead end", "unrepaired", "budget", "unfinished", "limit"})


@dataclass(frozen=True)
class Changes:
    """Counts of what was changed of the draft's answer (see the module's docstring)."""

    edits: int = 0
    respelt: int = 0
    rewrites: int = 0
    quoted: int = 0
    line_breaks: int = 0
    invented: int = 0
    dropped: int = 0
    closed: int = 0
    other_answers: int = 0
    #: Characters of the text the draft wrote, kept as written or rewritten from its dialect
    #: (T-SQL's ``SELECT TOP 3 ...`` rewritten whole is the draft's answer).
    drafted_chars: int = 0
    incomplete: bool = False

    @property
    def faithful(self) -> bool:
        """Complete, nothing edited, invented or dropped, and the text has some of the draft's own."""
        return not (self.changed or self.incomplete) and self.drafted_chars > 0

    @property
    def changed(self) -> bool:
        """Whether anything of the draft's answer was edited (respelt too), invented or dropped."""
        return bool(self.edits or self.respelt or self.invented or self.dropped)

    def summary(self) -> str:
        """``faithful``, or what was changed: ``2 edits, 1 invented``; rewrites and closing
        marks are named too, after ``faithful`` when they are all there is; other answers cut
        always are; an incomplete result says ``incomplete`` last."""
        changed = _counted(
            (self.edits, "edit"),
            (self.respelt, "respelt"),
            (self.invented, "invented"),
            (self.dropped, "dropped"),
            (self.other_answers, "other answer cut"),
        )
        kept = _counted(
            (self.rewrites, "rewrite"),
            (self.quoted, "quoted"),
            (self.line_breaks, "line break"),
            (self.closed, "closed"),
            (self.other_answers, "other answer cut"),
        )
        if self.faithful:
            return "faithful" + (f" ({kept})" if kept else "")
        if not self.drafted_chars and not self.changed:
            return "no text of the draft's answer"
        if self.incomplete:
            return ", ".join(filter(None, (changed if self.changed else kept, "incomplete")))
        return changed


#: The count each kind of cut adds to (other cuts leave out what is not the answer).
_CUT_COUNTS = {**dict.fromkeys(_ANSWER_CUTS, "dropped"), "another answer": "other_answers"}


def _counted(*counts: tuple[int, str]) -> str:
    words = []
    for n, word in counts:
        if n:
            if n > 1 and word not in ("invented", "dropped", "closed", "respelt", "quoted"):
                word = word.replace("answer", "answers") if "answer" in word else word + "s"
            words.append(f"{n} {word}")
    return ", ".join(words)


def _drops_bracket_close(event: Event) -> bool:
    """Whether ``event`` leaves out only closing marks of the draft: ``)`` it wrote too many, or a
    ``;`` that ends nothing (``LIMIT 3;\n;``, ``AS pct;\nFROM t``: no word, literal or operator)."""
    if isinstance(event, Correction) and event.source == "repair" and not event.text.strip():
        dropped = event.removed
    elif isinstance(event, Cut) and event.reason == "after complete text":
        dropped = event.text
    else:
        return False
    return bool(dropped.strip()) and all(c in ")]};" or c.isspace() for c in dropped)


def _is_close(text: str) -> bool:
    return bool(text.strip()) and all(c in CLOSING_MARKS or c.isspace() for c in text)


def changes_of(events: Iterable[Event], complete: bool = True) -> Changes:
    """Count what ``events`` did to the draft's answer (``complete``: the result's)."""
    events = list(events)
    counts = dict.fromkeys(_COUNTS, 0)
    # A closing bracket too many, dropped, changes no word, literal or operator; where a bracket
    # is also closed for the draft, the draft's own close was moved (its grouping changed): an edit.
    closes_added = any(isinstance(e, Correction) and _correction_kind(e) == "closed" for e in events)
    prose = 0
    # Words the draft wrote where the grammar allows none (``hello world`` for JSON).
    rejected = any(isinstance(e, GrammarViolation) and any(c.isalnum() for c in e.rejected) for e in events)
    counts["edits"] += _sentences_kept_in_part(events)
    for event in events:
        if isinstance(event, DraftSpan):
            counts["drafted_chars"] += len(event.text)
        elif _drops_bracket_close(event):
            counts["edits" if closes_added else "closed"] += 1
        elif isinstance(event, Cut) and event.text.strip() and event.reason in _CUT_COUNTS:
            counts[_CUT_COUNTS[event.reason]] += 1
        elif isinstance(event, Cut) and event.reason == "prose" and event.text.strip():
            prose += 1
        elif isinstance(event, Correction):
            kind = _correction_kind(event)
            if kind is not None:
                counts[kind] += 1
            if kind in ("rewrites", "quoted"):  # the draft's own text, in the grammar's spelling
                counts["drafted_chars"] += len(event.text)
    if not counts["drafted_chars"]:
        # Prose was all the draft wrote, or words that none of the text kept (the target wrote
        # the whole answer in their place): it gave no answer.
        counts["dropped"] += prose or (rejected and not counts["dropped"])
    return Changes(**counts, incomplete=not complete)


def _sentences_kept_in_part(events: list[Event]) -> int:
    """Prose left out mid-sentence, the rest of the sentence kept as the draft's text: the left-out
    text goes on from a kept word (begins with a small letter on the same line, after a kept
    letter), or kept words alone go on from it (it ends with a letter, and the kept line after it
    on the same line is words, no operator: ``Here is the`` then ``SQLite query``)."""
    count = 0
    for i, event in enumerate(events):
        left_out = _prose_left_out(event)
        if left_out is None:
            continue
        before = events[i - 1] if i else None
        after = next((e for e in events[i + 1 :] if not isinstance(e, GrammarViolation)), None)
        goes_on = (
            isinstance(before, DraftSpan) and _joined(before.text, left_out) and left_out.lstrip(" \t")[:1].islower()
        )
        kept_after = isinstance(after, DraftSpan) and _joined(left_out, after.text) and _words_only(after.text)
        count += goes_on or kept_after
    return count


def _prose_left_out(event: Event) -> str | None:
    """The prose ``event`` left out of the answer, if it is a prose cut or repair."""
    if isinstance(event, Cut) and event.reason == "prose":
        return event.text
    if isinstance(event, Correction) and event.source == "repair" and event.rule == "prose":
        return event.removed
    return None


def _words_only(text: str) -> bool:
    """Whether the first line of ``text`` is words alone (``SQLite query``, not ``x + 1``)."""
    line = text.strip().split("\n", 1)[0]
    return bool(line) and all(c.isalpha() or c == " " for c in line)


def _joined(first: str, then: str) -> bool:
    """Whether ``first`` ends with a letter that ``then`` goes on from on the same line, with a letter."""
    gap = then[: len(then) - len(then.lstrip())]
    return bool(first.rstrip(" \t")[-1:].isalpha() and "\n" not in gap and then.strip()[:1].isalpha())


def _correction_kind(event: Correction) -> str | None:
    """Which count a correction adds to (``None``: it changes nothing of the draft's answer)."""
    if event.source in ("forced", "healed") or not (event.text.strip() or event.source == "repair"):
        return None
    if _is_close(event.text) and not event.removed:
        return "closed"
    if event.source == "repair":
        if event.rule in ("prose", "repeat"):
            return None  # a sentence left out (not the draft's answer), a word written twice once
        if event.rule == "line break" and event.text == "\n" and not event.removed:
            return "line_breaks"  # checked, not trusted: a line break and nothing else
        if event.rule == "space" and _respaced(event.removed, event.text):
            return None  # formatting: white space of another kind written as plain white space
        if event.rule != "inert" and not event.text.strip() and any(c.isalnum() for c in event.removed):
            return "dropped"  # words of the draft taken away, by any rule but an inert clause's (a dangling key)
        return "rewrites" if event.rule in REWRITE_RULES else _edit_kind(event)
    return "invented"


def _respaced(removed: str, text: str) -> bool:
    """Whether ``text`` is ``removed``, white space only, with each character of another kind
    written as the ASCII white space it stands for (checked, not trusted)."""
    return (
        removed.isspace()
        and len(text) == len(removed)
        and all(new == old or new == plain_space(old) for old, new in zip(removed, text, strict=True))
    )


def _edit_kind(edit: Correction) -> str:
    """``quoted`` where the edit wrote the words it took away, and nothing else, in double quotes
    (one name); ``respelt`` where it replaced one word with another within a typo of it (a third
    of the word, one swap of two letters counted once, the first letter kept: ``ILIKE`` as
    ``LIKE`` is another word); else ``edits``. Checked, not trusted."""
    words, text = edit.removed.strip(), edit.text.strip()
    if words and '"' not in words and text == f'"{words}"':
        return "quoted"
    if _WORD.fullmatch(words) and _WORD.fullmatch(text) and words[0].upper() == text[0].upper():
        distance = levenshtein(words.upper(), text.upper(), transpositions=True)
        if 0 < distance <= max(1, len(words) // 3):
            return "respelt"
    return "edits"


_WORD = re.compile(r"[A-Za-z_]+")
#: Every count of ``Changes`` that ``changes_of`` adds to (its fields but ``incomplete``).
_COUNTS = tuple(f.name for f in fields(Changes) if f.name != "incomplete")
