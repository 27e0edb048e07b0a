"""Is an output faithful to the draft's SQL? Their SQL tokens aligned in order.

The draft's SQL and the output are cut into SQL tokens (keywords, names, strings, numbers,
operators) and aligned in order (``difflib`` on the token sequences, as a diff aligns lines). A
draft token that the alignment replaces or drops is *lost*, unless the result recorded why: a
dialect rewrite that took it away (``Correction(rule="rewrite").removed``) or formatting undone
(``Cut(reason="formatting")``: Markdown escapes, a backtick pair around the answer; the draft is then
read with them undone), or the draft's words quoted whole as one name with spaces (a repair
whose text is exactly its removed words in double quotes: names are compared without quotes, and
issue 28 asks for it; the result counts it ``quoted``, kept), or another answer after a
complete statement, cut and named
(``Cut(reason="another answer")``: the task asks for one statement, issue 28 item 1), or text
after a complete answer cut as repeating it (``Cut(reason="repeated")``) that is made of runs of
two or more of the output's tokens (a model looping adds nothing to the answer). A ``;``, a
``)`` the draft never opened and a quote mark that opens nothing (``= 80000"``: an unclosed quote
with nothing in it, only at the draft's end) are not lost when dropped; nor is a word the draft
wrote twice in a row where the output keeps the other (``DISTINCT DISTINCT``, ``MAX MAX(age)``: a
word is one word however often it is written at once). An
output token that the alignment does not match is *added* (an inserted operator changes the meaning
as a replaced one does), unless it is a closing mark (``)``, ``]``, ``;``, the ``END`` of a ``CASE``
the draft left open) or a rewrite or forced text of the result wrote it there (the recorded text
found as a run of the output's tokens; one found nowhere, an edit inside it since, excuses by
spelling alone). *Faithful*: nothing lost
and nothing added. *Invented literals*: output strings and numbers whose value the draft does not
have (nor a recorded rewrite). A method with no record (sqlglot, a fix written by hand) has nothing
excused.

Names are compared without case and quotes (``order`` and ``"order"`` are one name: SQLite's names
ignore case); a keyword and a name of the same spelling are one word; strings by value.
"""

from __future__ import annotations

import ctypes
import difflib
import functools
import itertools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "Excuses",
    "Faithfulness",
    "Token",
    "excuses_of",
    "faithfulness",
    "read_closed",
    "sql_tokens",
    "sqlite_keywords",
    "string_value",
]

_TOKEN = re.compile(
    r"""'(?:[^'\\]|''|\\.)*'?           # a string (MySQL's backslash escapes read too); cut: no close
    |"(?:[^"]|"")*"?|`[^`]*`?|\[[^\]\s]*\]?  # a quoted name
    |(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?  # a number
    |(?:[A-Za-z_$]|\\_)(?:[A-Za-z0-9_$]|\\_)*  # a word (a Markdown escape inside is part of it)
    |\\\*                               # a Markdown-escaped star
    |<=|>=|<>|!=|==|\|\||::|->>|->|<<|>>  # operators of two or three characters
    |\S""",
    re.VERBOSE,
)
_QUOTES = {'"': '"', "`": "`", "[": "]"}


@dataclass(frozen=True)
class Token:
    """One SQL token: ``kind`` is keyword, name, string, number or op; ``key`` is what is compared."""

    kind: str
    key: tuple[str, str]
    raw: str

    @property
    def literal(self) -> bool:
        return self.kind in ("string", "number")


@functools.lru_cache(maxsize=1)
def sqlite_keywords() -> frozenset[str]:
    """SQLite's own keyword list (``sqlite3_keyword_name``), upper case."""
    from tests.support import sqlite_oracle

    lib = ctypes.CDLL(sqlite_oracle.library_path())
    lib.sqlite3_keyword_count.restype = ctypes.c_int
    lib.sqlite3_keyword_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int)]
    words = set()
    for i in range(lib.sqlite3_keyword_count()):
        name, size = ctypes.c_char_p(), ctypes.c_int()
        lib.sqlite3_keyword_name(i, ctypes.byref(name), ctypes.byref(size))
        words.add(ctypes.string_at(name, size.value).decode().upper())
    return frozenset(words)


def string_value(raw: str) -> str:
    """A string literal's value (a string the answer was cut in: what it has)."""
    body = raw[1:-1] if len(raw) >= 2 and raw.endswith("'") else raw[1:]
    return body.replace("''", "'").replace("\\'", "'")


def _token(raw: str) -> Token:
    first = raw[0]
    if first == "'":
        return Token("string", ("s", string_value(raw)), raw)
    if first in _QUOTES:
        close = _QUOTES[first]
        inner = raw[1:-1] if len(raw) >= 2 and raw.endswith(close) else raw[1:]
        return Token("name", ("w", inner.replace(close * 2, close).lower()), raw)
    if first.isdigit() or (first == "." and len(raw) > 1):
        return Token("number", ("n", raw.lower()), raw)
    if first.isalpha() or first in "_$" or raw.startswith("\\_"):
        kind = "keyword" if raw.upper() in sqlite_keywords() else "name"
        return Token(kind, ("w", raw.lower()), raw)
    return Token("op", ("o", raw), raw)


#: The end of the code in a chat answer: a fence, closing markup (``\\end{code}``, ``</code>``).
_CODE_END = re.compile(r"```|\\end\{\w*\}|</\s*(?:code|pre)\s*>", re.IGNORECASE)


def sql_tokens(sql: str, code_ended: bool = False) -> list[Token]:
    """The SQL tokens of ``sql`` in order (comments are not tokens). A quote whose string would
    run on past the end of the code is a stray mark, and what follows it is read as tokens: past
    a fence or closing markup inside ``sql`` (``6'0" ) AND b = 1 \\end{code} Comment: I'm``),
    or, where ``code_ended`` (the answer's code ended where ``sql`` does, at a fence or markup,
    not where the model stopped), to the end of ``sql`` unclosed: the draft's ``b = 1`` is the
    draft's. A string the model was cut off in (``code_ended`` false) is a string."""
    sql = re.sub(r"--[^\n]*|/\*.*?(?:\*/|$)", " ", sql, flags=re.DOTALL)
    tokens = []
    pos = 0
    while (m := _TOKEN.search(sql, pos)) is not None:
        raw = m.group()
        unclosed = m.end() == len(sql) and (len(raw) == 1 or raw[-1] != raw[0])
        if raw[0] in "'\"" and (_CODE_END.search(raw) or (code_ended and unclosed)):
            tokens.append(Token("op", ("o", raw[0]), raw[0]))
            pos = m.start() + 1
            continue
        tokens.append(_token(raw))
        pos = m.end()
    return tokens


def _unescaped(tokens: list[Token], formatting: bool) -> list[Token]:
    """``tokens`` with their strings' Markdown escapes undone where the result recorded undoing
    formatting: a string is the draft's whether the result undid its escapes or kept them as
    written (``'TR004\\_8'`` in a Markdown-escaped answer)."""
    if not formatting:
        return tokens
    return [
        Token(t.kind, ("s", t.key[1].replace("\\_", "_").replace("\\*", "*")), t.raw) if t.kind == "string" else t
        for t in tokens
    ]


#: A string literal (kept whole: ``'TR004\\_8'`` is the draft's value, escape and all, as the
#: result keeps it) or a Markdown escape outside one (``atom\\_id``, ``COUNT(\\*)``).
_ESCAPES_OUTSIDE_STRINGS = re.compile(r"'(?:[^'\\]|''|\\.)*'|\\[_*]")


def _undo_formatting(sql: str) -> str:
    """The draft as read once its chat formatting is undone: Markdown escapes outside string
    literals (the result undoes those only), a backtick pair."""
    sql = _ESCAPES_OUTSIDE_STRINGS.sub(lambda m: m.group()[1:] if m.group()[0] == "\\" else m.group(), sql)
    stripped = sql.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == "`" and "`" not in stripped[1:-1]:
        return stripped[1:-1]
    return sql


@dataclass(frozen=True)
class Excuses:
    """What a result recorded: formatting undone, the draft's text its rewrites took away (and
    the other answers it cut), and the text its rewrites and forced steps wrote."""

    formatting: bool = False
    removed: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    #: The draft's unfinished last words taken back (``Cut(reason="unfinished")``): not excused by
    #: ``faithfulness``, only counted apart (an answer cut off mid-clause, issue 28 item 4).
    cut_off: tuple[str, ...] = ()
    #: Text after a complete answer the result cut as repeating it (``Cut(reason="repeated")``):
    #: excused where it is made of runs of the output's tokens (checked here, not taken on trust).
    repeated: tuple[str, ...] = ()
    #: Quote marks a repair wrote, and nothing else, to close a string or name the draft left
    #: open (a closing mark): the draft is read with each closed where the output closes it.
    closed: tuple[str, ...] = ()
    #: The draft's text that each line break a repair wrote begins (a line comment that swallowed
    #: its code, its line breaks lost): the draft is read with a break before that text where a
    #: line comment mark before it on its line has it.
    broken: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "formatting": self.formatting,
            "removed": list(self.removed),
            "written": list(self.written),
            "cut_off": list(self.cut_off),
            "repeated": list(self.repeated),
            "closed": list(self.closed),
            "broken": list(self.broken),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Excuses:
        return cls(
            bool(data.get("formatting")),
            tuple(data.get("removed", ())),
            tuple(data.get("written", ())),
            tuple(data.get("cut_off", ())),
            tuple(data.get("repeated", ())),
            tuple(data.get("closed", ())),
            tuple(data.get("broken", ())),
        )


def excuses_of(events: Iterable[Any]) -> Excuses:
    """The excuses a ``GuideResult``'s events record (see the module's docstring)."""
    formatting = False
    removed: list[str] = []
    written: list[str] = []
    cut_off: list[str] = []
    repeated: list[str] = []
    closed: list[str] = []
    events = list(events)
    for event in events:
        kind = getattr(event, "kind", "")
        if kind == "cut" and event.reason == "formatting":
            formatting = True
        elif kind == "cut" and event.reason == "unfinished":
            cut_off.append(event.text)
        elif kind == "cut" and event.reason == "repeated":
            repeated.append(event.text)
        elif kind == "cut" and event.reason == "another answer":
            # A second statement (in a fenced block of its own or not): the task asks for one (issue 28 item 1).
            removed.append(_FENCE_MARK.sub(" ", event.text))
        elif kind == "correction" and event.source == "repair" and event.text in _QUOTE_MARKS and not event.removed:
            closed.append(event.text)
        elif kind == "correction" and event.source == "repair" and _kept_as_written(event):
            removed.append(event.removed)
            written.append(event.text)
        elif kind == "correction" and event.source == "forced":
            written.append(event.text)
    return Excuses(
        formatting, tuple(removed), tuple(written), tuple(cut_off), tuple(repeated), tuple(closed), _broken(events)
    )


def _broken(events: list[Any]) -> tuple[str, ...]:
    """The draft's text each recorded line break was written before: the start of the draft span
    that follows it, less its white space at the end (which may be a later draft call's)."""
    return tuple(
        after.text[:_BROKEN_CONTEXT].rstrip()
        for event, after in itertools.pairwise(events)
        if getattr(event, "kind", "") == "correction" and event.rule == "line break" and after.kind == "draft"
    )


_QUOTE_MARKS = frozenset("'\"`")
_BROKEN_CONTEXT = 40  # characters of the draft's text after a line break that say where it goes


#: A code fence with its language tag: formatting around a second answer, no SQL token.
_FENCE_MARK = re.compile(r"```[\w+-]*")


def _kept_as_written(correction: Any) -> bool:
    """Whether a repair's text is the draft's as it wrote it: a rewrite, or words quoted whole. A
    misspelt word respelt (``DICTINCT`` as ``DISTINCT``) is a word replaced: a loss, as the result
    counts it (``respelt``, not faithful)."""
    from grammar_guide._events import REWRITE_RULES

    return correction.rule in REWRITE_RULES or _quotes_whole(correction)


def _quotes_whole(correction: Any) -> bool:
    """Whether a repair wrote the draft's text, and nothing else, quoted as one name of several
    tokens (``Ben Jones`` as ``"Ben Jones"``, ``Enrollment(K-12)`` after ``s.`` as
    ``"Enrollment(K-12)"``: issue 28 item 3 asks for it). Checked, not trusted: the text written is
    the text taken away in double quotes. One word quoted is not excused (``FROM`` as ``"FROM"``
    makes a keyword a name)."""
    words = correction.removed.strip()
    several = len(sql_tokens(words)) > 1
    return several and '"' not in words and correction.text.strip() == f'"{words}"'


@dataclass(frozen=True)
class Faithfulness:
    """The draft tokens lost, the output names and literals added, and the literals invented
    (an output literal whose value the draft does not have anywhere)."""

    lost: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    invented_literals: list[str] = field(default_factory=list)

    @property
    def faithful(self) -> bool:
        return not self.lost and not self.added


def _excused(tokens: list[Token], texts: tuple[str, ...], formatting: bool = False) -> list[Token]:
    """``tokens`` less those the recorded ``texts`` hold (each recorded token excuses one)."""
    budget = Counter(t.key for text in texts for t in _unescaped(sql_tokens(text), formatting))
    out = []
    for t in tokens:
        if budget[t.key] > 0:
            budget[t.key] -= 1
        else:
            out.append(t)
    return out


def _excused_where_found(
    at: set[int], tokens: list[Token], texts: tuple[str, ...], formatting: bool
) -> tuple[list[int], tuple[str, ...]]:
    """``at`` (indexes of ``tokens``, lost or added) less those each recorded text (a removed text
    in the draft, a written one in the output) stands at: the text is found as a run of the
    tokens (the run with the most of ``at`` in it, each text excusing once) and only indexes
    inside that run are excused, so a rewrite's ``WHERE YEAR`` does not excuse a ``WHERE YEAR``
    dropped elsewhere, nor its ``substr(p.b, -5)``'s comma one inserted elsewhere (``RIGHT,(``).
    So are those of ``at`` beside the run that the alignment could as well have put inside it
    (``_twins``). A text not found as written (an earlier change inside it) is returned to be
    excused by spelling alone."""
    keys = [t.key for t in tokens]
    left = set(at)
    unplaced = []
    for text in texts:
        run = [t.key for t in _unescaped(sql_tokens(text), formatting)]
        starts = [a for a in range(len(keys) - len(run) + 1) if run and keys[a : a + len(run)] == run]
        if not starts:
            unplaced.append(text)
            continue
        best = max(starts, key=lambda a: len(left.intersection(range(a, a + len(run)))))
        left.difference_update(_twins(left, keys, best, best + len(run) - 1))
        left.difference_update(range(best, best + len(run)))
    return sorted(left), tuple(unplaced)


def _twins(left: set[int], keys: list[tuple[str, str]], first: int, last: int) -> set[int]:
    """The tokens of ``left`` (lost, or added) right before and right after a recorded run
    (``first`` to ``last``) that the alignment could as well have matched inside it: a block of
    them beside the run whose keys are those of the run's first (or last) aligned tokens, with
    only tokens of ``left`` between (``FROM ((SELECT … u)) T``, the run's brackets taken away;
    ``ROUND(CAST((…) AS REAL)``, whose added ``(`` the alignment put before ``CAST``; a clause
    moved, ``= a.id JOIN … = p.id WHERE``, its ``.id`` put before it). Of two like places the
    alignment chose one; the one the run stands at is the one it wrote or took."""
    twins: set[int] = set()
    for outward, inward in (
        (range(first - 1, -1, -1), range(first, last + 1)),
        (range(last + 1, len(keys)), range(last, first - 1, -1)),
    ):
        outside = list(itertools.takewhile(left.__contains__, outward))
        aligned = itertools.dropwhile(left.__contains__, inward)  # the run's first aligned token on
        inside = list(itertools.takewhile(lambda i: i not in left, aligned))
        for k in range(min(len(outside), len(inside)), 0, -1):
            block, matched = sorted(outside[:k]), sorted(inside[:k])
            if [keys[i] for i in block] == [keys[i] for i in matched]:
                twins.update(block)
                break
    return twins


#: Closing marks: adding one (to end what the draft opened) changes nothing the draft wrote.
_CLOSING = frozenset({")", "]", ";"})


def _closes_excused(added: list[Token], draft: list[Token]) -> list[Token]:
    """``added`` less its closing marks (``_CLOSING``) and each ``END`` that closes a ``CASE`` the
    draft left open (``ELSE 0) AS n``: as many as it opened and did not end)."""
    words = Counter(t.raw.upper() for t in draft if t.kind == "keyword")
    open_cases = words["CASE"] - words["END"]
    out = []
    for t in added:
        if t.raw in _CLOSING or (t.raw.upper() == "END" and open_cases > 0):
            open_cases -= t.raw.upper() == "END"
            continue
        out.append(t)
    return out


def _stray_closes_excused(lost: list[Token], draft: list[Token]) -> list[Token]:
    """``lost`` less the draft's ``;``, its ``)`` beyond those it opened (a stray close dropped)
    and a lone quote mark (an unclosed quote with nothing in it: a stray mark, as a stray ``)``)."""
    stray = sum(t.raw == ")" for t in draft) - sum(t.raw == "(" for t in draft)
    out = []
    for t in lost:
        if t.raw == ";" or t.raw in _LONE_QUOTES or (t.raw == ")" and stray > 0):
            stray -= t.raw == ")"
            continue
        out.append(t)
    return out


_LONE_QUOTES = frozenset({"'", '"', "`", "["})  # a quote opening nothing: the draft's last mark


def _stutters(draft: list[Token], lost: set[int]) -> set[int]:
    """The indexes in ``lost`` of words the draft wrote twice in a row whose other copy is kept
    (one copy each: ``DISTINCT DISTINCT`` dropped whole is a loss)."""
    excused: set[int] = set()
    for k in sorted(lost):
        if draft[k].kind not in ("keyword", "name"):
            continue
        for other in (k - 1, k + 1):
            if 0 <= other < len(draft) and draft[other].key == draft[k].key and other not in lost | excused:
                excused.add(k)
                break
    return excused | _repeated_runs(draft, lost - excused)


#: Lost runs longer than this (in tokens) are not searched for a copy written twice: the search is
#: cubic in the run's length, and a run that long is a model's loop (held-out 6 has a 750 KB answer).
_MAX_REPEATED_RUN = 300


def _repeated_runs(draft: list[Token], lost: set[int]) -> set[int]:
    """The indexes in ``lost`` of runs of two tokens or more (one a keyword or name) that the draft
    wrote twice in a row, where the other copy is kept (``FROM t ORDER BY x FROM t ORDER BY x DESC``);
    runs of lost tokens up to ``_MAX_REPEATED_RUN`` long."""
    excused: set[int] = set()
    for i, j in _runs(sorted(lost)):
        if j - i > _MAX_REPEATED_RUN:
            continue
        for n in range(j - i, 1, -1):
            for a in range(i, j - n + 1):
                run = [t.key for t in draft[a : a + n]]
                if not any(t.kind in ("keyword", "name") for t in draft[a : a + n]):
                    continue
                for b in (a - n, a + n):
                    copy = range(b, b + n)
                    if b >= 0 and b + n <= len(draft) and [draft[c].key for c in copy] == run and not set(copy) & lost:
                        return excused | set(range(a, a + n)) | _repeated_runs(draft, lost - set(range(a, a + n)))
    return excused


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive indexes, as (first, one past the last)."""
    runs: list[tuple[int, int]] = []
    for k in indexes:
        if runs and runs[-1][1] == k:
            runs[-1] = (runs[-1][0], k + 1)
        else:
            runs.append((k, k + 1))
    return runs


def _repetitions(repeated: tuple[str, ...], out: list[Token]) -> tuple[str, ...]:
    """The texts cut as repeating the answer that are made of runs of the output's tokens."""
    if not repeated:
        return ()
    from grammar_guide._repair import is_made_of_runs  # (a result that cut a repetition has it)

    keys = [t.key for t in out]
    return tuple(text for text in repeated if is_made_of_runs([t.key for t in sql_tokens(text)], keys))


def read_closed(draft: str, output: str, excuses: Excuses) -> tuple[str, Excuses]:
    """``draft`` with the quote marks the result recorded as closing marks (``excuses.closed``) put
    where ``output`` closes them, and the excuses less those marks: for each quoted output token in
    order whose text less its closing quote the draft has with no such quote after it (``'Bad`` of
    ``= 'Bad) AS …``), the quote is put there, once per recorded mark. A closing mark changes no
    word the draft wrote; read so, what the draft's literal swallowed is its code again."""
    if not excuses.closed:
        return draft, excuses
    return _closed_as_output(draft, sql_tokens(output), excuses.closed), replace(excuses, closed=())


def read_broken(draft: str, excuses: Excuses) -> tuple[str, Excuses]:
    """``draft`` with a line break before each text the result recorded a line break before
    (``excuses.broken``), where the draft has that text after a line comment mark on its line,
    and the excuses less those breaks: checked, not trusted. A line break changes no word the
    draft wrote; read so, what its line comment swallowed is its code again."""
    at = 0
    for text in excuses.broken:
        found = draft.find(text, at)
        while found >= 0 and "--" not in draft[draft.rfind("\n", 0, found) + 1 : found]:
            found = draft.find(text, found + 1)
        if found < 0:
            continue
        draft = draft[:found] + "\n" + draft[found:]
        at = found + 1
    return draft, replace(excuses, broken=())


def _closed_as_output(draft_sql: str, out: list[Token], closed: tuple[str, ...]) -> str:
    budget = Counter(closed)
    at = 0
    for t in out:
        quote = t.raw[:1]
        if budget[quote] <= 0 or len(t.raw) < 2 or t.raw[-1] != quote:
            continue
        opened = t.raw[:-1]
        found = draft_sql.find(opened, at)
        while found >= 0 and draft_sql[found + len(opened) : found + len(opened) + 1] in (quote, ""):
            found = draft_sql.find(opened, found + 1)
        if found < 0:
            continue
        end = found + len(opened)
        draft_sql = draft_sql[:end] + quote + draft_sql[end:]
        budget[quote] -= 1
        at = end + 1
    return draft_sql


def faithfulness(
    draft_sql: str, output: str, excuses: Excuses = Excuses(), *, code_ended: bool = False, whole: str = ""
) -> Faithfulness:
    """Align the draft's SQL tokens with the output's (see the module's docstring; ``code_ended``:
    see ``sql_tokens``). ``whole``: the whole answer ``draft_sql`` was read from; a literal it has
    anywhere is the model's, not invented (``INSERT … VALUES (6, …); SELECT …``, whose answer is
    the SELECT, kept as its INSERT: the INSERT's values are lost and added, not invented)."""
    draft_sql, excuses = read_closed(draft_sql, output, excuses)
    draft = _unescaped(
        sql_tokens(_undo_formatting(draft_sql) if excuses.formatting else draft_sql, code_ended), excuses.formatting
    )
    out = _unescaped(sql_tokens(output), excuses.formatting)
    matcher = difflib.SequenceMatcher(None, [t.key for t in draft], [t.key for t in out], autojunk=False)
    lost_at: set[int] = set()
    added_at: set[int] = set()
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "delete"):
            lost_at.update(range(i1, i2))
        if op in ("replace", "insert"):
            added_at.update(range(j1, j2))
    formatting = excuses.formatting
    kept_at, unplaced = _excused_where_found(lost_at - _stutters(draft, lost_at), draft, excuses.removed, formatting)
    repeats = _repetitions(excuses.repeated, out)
    lost = _excused(_stray_closes_excused([draft[k] for k in kept_at], draft), unplaced + repeats, formatting)
    added_left, unwritten = _excused_where_found(added_at, out, excuses.written, formatting)
    added = _excused(_closes_excused([out[k] for k in added_left], draft), unwritten, formatting)
    written = (whole, *excuses.written)
    draft_literals = {t.key for t in draft if t.literal} | {t.key for s in written for t in sql_tokens(s) if t.literal}
    invented = [t.raw for t in out if t.literal and t.key not in draft_literals]
    return Faithfulness([t.raw for t in lost], [t.raw for t in added], invented)
