"""The grammar's own shortest completion of a valid prefix, found by search over the checker.

When the draft has stopped and no model can (or should) write the end, the text is closed with
the fewest characters the grammar allows: ``{"x": "unterminated`` gets ``"}``, ``[1, 2, `` gets
``0]``, ``SELECT CASE WHEN 1 THEN 2`` gets `` END``. A best-first search over printable
characters, where a large class of allowed characters (letters of a free name, digits) is tried
through one representative, first from the text itself, then after each keyword the grammar
expects there; each search gives up after ``max_nodes`` checker states (about 20 µs each; the
searches after keywords share one such budget).
"""

from __future__ import annotations

import heapq
import re

from ._checker import Checker
from ._terminal_completion import terminal_completion
from ._text import QUOTES, leaves_open, open_quote

__all__ = ["closing_brackets", "open_brackets", "shortest_close", "shortest_completion"]

# Tried first at each depth: what closes things, then what fills a value or a name.
_PREFERRED = ")]}\"'0a;"
# What a close may be made of: closing brackets and quotes, a terminator, white space; no value
# (``*``, ``?``), no operator, nothing that could open a comment.
_CLOSERS = frozenset(")]}>;. \t\n") | QUOTES
_CLASSES = ("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789")


def shortest_completion(checker: Checker, *, max_nodes: int = 4_000) -> str | None:
    """The shortest text (in characters, as far as the search sees) that completes ``checker``'s
    accepted text, or ``None`` when none is found; ``""`` when it is already complete."""
    if checker.is_complete:
        return ""
    if _in_line_comment(checker):
        # Every character reads on inside the comment: the search would spend itself there.
        with checker.trial() as trial:
            trial.feed("\n")
            rest = shortest_completion(trial, max_nodes=max_nodes)
        return None if rest is None else "\n" + rest
    with checker.trial() as trial:
        found = [_search(trial, _Nodes(max_nodes))]
    # A keyword may begin a shorter one; not where what was found is all but the least any
    # completion needs (a close for each bracket open: a hundred, 4 ms a try on such a text).
    opened = open_brackets(checker.text)
    if found[0] is None or len(found[0]) > max(opened, 0) + 2:
        found += _after_keywords(checker, _Nodes(max_nodes), max_nodes // 8)
    best = min((f for f in found if f is not None), key=len, default=None)
    if best is None:
        best = _after_closers(checker, max_nodes)
    costs = checker.grammar.terminal_costs if best is None else None
    if costs is None:
        return best
    # A terminal for each bracket open, at least: a model looping ``((((`` leaves hundreds.
    depth = 64 + max(opened, 0)
    chart = checker.grammar.completion_chart
    return terminal_completion(checker, costs, chart=chart, max_tries=400 + depth, max_depth=depth)


class _Nodes:
    """The checker states a search may still try, and the ``pool`` it shares with others."""

    def __init__(self, left: int, pool: _Nodes | None = None) -> None:
        self.left = left
        self.pool = pool

    def take(self) -> bool:
        """Whether one more may be tried (and it is counted, in the pool too)."""
        self.left -= 1
        pooled = self.pool is None or self.pool.take()
        return pooled and self.left >= 0


def _after_keywords(checker: Checker, pool: _Nodes, each: int) -> list[str | None]:
    """The completions found after each keyword the grammar expects (``KEYWORD`` and
    `` KEYWORD``), each search trying at most ``each`` states, all of them ``pool``'s."""
    found: list[str | None] = []
    for literal in _keywords(checker):
        for start in (literal, " " + literal):
            if pool.left <= 0:
                return found
            with checker.trial() as trial:
                if trial.feed(start) == len(start):
                    rest = _search(trial, _Nodes(each, pool))
                    found.append(None if rest is None else start + rest)
    return found


_PRINTABLE = frozenset(range(0x20, 0x7F))


def _in_line_comment(checker: Checker) -> bool:
    """Whether the text ends inside a comment that a line's end closes (``-- and then``): every
    printable character reads on there, and after a line's end the text expects something else."""
    allowed = checker.allowed_bytes()
    if not allowed >= _PRINTABLE:
        return False
    with checker.trial() as trial:
        return trial.feed("\n") == 1 and trial.allowed_bytes() != allowed


def _after_closers(checker: Checker, max_nodes: int) -> str | None:
    """Closing brackets while the grammar allows one, then the search: what a deeply nested text
    (a hundred open calls) needs, beyond the breadth-first search's reach."""
    closers = closing_brackets(checker)
    if not closers:
        return None
    with checker.trial() as trial:
        trial.feed(closers)
        rest = _search(trial, _Nodes(max_nodes))
    return None if rest is None else closers + rest


def closing_brackets(checker: Checker, limit: int = 4096) -> str:
    """The closing brackets the grammar allows one after another at the end of ``checker``'s text
    (``)))`` for three open ones), up to ``limit`` and at most one for each opening bracket of the
    text (a closer past those closes nothing: it is read as text, inside a string)."""
    text = checker.text
    limit = min(limit, sum(text.count(opener) for opener in "([{"))
    out = ""
    with checker.trial() as trial:
        while len(out) < limit:
            allowed = trial.allowed_bytes()
            closer = next((c for c in ")]}" if ord(c) in allowed), None)
            if closer is None or trial.feed(closer) != 1:
                break
            out += closer
    return out


def shortest_close(checker: Checker, *, max_length: int = 8, max_nodes: int = 400) -> str | None:
    """The shortest text of closing marks and white space alone (``_CLOSERS``), at most
    ``max_length`` characters (or any number of closing brackets alone), that completes
    ``checker``'s text (``"}``, ``))``), or ``None``: a close that invents nothing. It opens no
    quoted text (``''`` would be an empty string nobody wrote); ``""`` when the text is already
    complete."""
    if checker.is_complete:
        return ""
    key = (checker.grammar, checker.text, max_length, max_nodes)
    if key in _CLOSES:  # a failed search costs its whole budget: the loop asks again at the finish
        return _CLOSES[key]
    with checker.trial() as trial:
        found = _search(trial, _Nodes(max_nodes), max_length, marks_only=True)
    if found is None:  # more open brackets than the search reaches: all of them closed
        found = _quote_then_closers(checker)
    if len(_CLOSES) >= _MAX_CLOSES:
        del _CLOSES[next(iter(_CLOSES))]
    _CLOSES[key] = found
    return found


def _quote_then_closers(checker: Checker) -> str | None:
    """The text's open string closed (where a quote ends it) and then every bracket still open:
    what the search misses where brackets written inside the open string look like closes
    (``{"a": ["b", "c`` needs ``"]}``)."""
    for quote in ("", *sorted(q for q in QUOTES if ord(q) in checker.allowed_bytes())):
        with checker.trial() as trial:
            if trial.feed(quote) != len(quote):
                continue
            closers = closing_brackets(trial)
            if (quote or closers) and trial.feed(closers) == len(closers) and trial.is_complete:
                return quote + closers
    return None


# The last few closes found (or not): ``shortest_close`` depends on the grammar and text alone.
_CLOSES: dict[tuple[object, str, int, int], str | None] = {}
_MAX_CLOSES = 64


def _keywords(checker: Checker) -> list[str]:
    """The keywords the grammar expects after the text (upper case where case does not matter)."""
    literals = []
    for terminal in checker.expected():
        literal = terminal.literal
        if literal and literal[0].isalpha():
            literals.append(literal.upper() if terminal.case_insensitive else literal)
    return sorted(set(literals), key=len)[:40]


def _search(checker: Checker, nodes: _Nodes, max_length: int = 48, *, marks_only: bool = False) -> str | None:
    """Best-first over suffixes, each tried on ``checker`` and taken back (a node costs its
    suffix's length, not the text's): the shortest first, counting each bracket still open as a
    character it will need (so that closing comes before opening more); a step is a character
    and the literal rest it forces. Gives up when ``nodes`` are spent or past ``max_length``."""
    if checker.is_complete:
        return ""
    with checker.trial() as state:
        start = state.snapshot()
        open_kinds = _open_by_kind(checker.text)
        opened = sum(open_kinds)
        quote = open_quote(checker.text)
        if not marks_only:
            max_length = max(max_length, opened + max_length // 2)  # each bracket open needs its close
        # Among equal costs the longest suffix first (it is as cheap and further on): a text of
        # forty open brackets is closed in forty steps, not after every tie at each depth.
        frontier: list[tuple[int, int, int, str]] = [(opened, 0, 0, "")]
        seen: set[str] = set()  # suffixes that differ only in a space beside a mark are one
        tried = 0
        while frontier:
            _, _, _, suffix = heapq.heappop(frontier)
            state.rollback(start)
            state.feed(suffix)
            parent = state.snapshot()
            for ch in _steps(state, suffix, marks_only):
                tried += 1
                if not nodes.take():
                    return None
                fed = state.feed(ch) == len(ch)
                if fed and state.is_complete:
                    return suffix + ch
                if fed and state.can_continue:
                    longer = suffix + ch + _forced(state)
                    if state.is_complete:
                        return longer
                    key = _SPACE_BY_MARK.sub("", longer)
                    if len(longer) <= max_length and key not in seen:
                        seen.add(key)
                        cost = len(longer) + _still_open(open_kinds, _outside_quotes(quote, longer))
                        heapq.heappush(frontier, (cost, -len(longer), tried, longer))
                state.rollback(parent)
    return None


_SPACE_BY_MARK = re.compile(r"(?<=[^\w\s])\s+|\s+(?=[^\w\s])")


_PAIRS = ("()", "[]", "{}")


def _open_by_kind(text: str) -> tuple[int, ...]:
    """The brackets ``text`` leaves open of each kind (``_PAIRS``), counted as marks."""
    return tuple(text.count(pair[0]) - text.count(pair[1]) for pair in _PAIRS)


def _still_open(open_kinds: tuple[int, ...], suffix: str) -> int:
    """The brackets the text leaves open that ``suffix`` does not close, each kind apart (a ``}``
    closes no ``(``: a string of ``}}}`` was taken for the close of three)."""
    return sum(max(n + d, 0) for n, d in zip(open_kinds, _open_by_kind(suffix), strict=True))


def _outside_quotes(quote: str | None, suffix: str) -> str:
    """What of ``suffix`` is outside quoted text, the text before it leaving ``quote`` open:
    a ``)`` inside a string closes nothing (``")))`` looked as cheap as the ``)))`` it is not)."""
    outside = []
    for ch in suffix:
        if quote is not None:
            quote = None if ch == quote else quote
        elif ch in QUOTES:
            quote = ch
        else:
            outside.append(ch)
    return "".join(outside)


def open_brackets(text: str) -> int:
    """How many brackets ``text`` leaves open, counted as marks (strings not told apart)."""
    return sum(_open_by_kind(text))


def _forced(state: Checker) -> str:
    """The text the grammar forces after the state's (fed): a literal's rest is one step of the
    search, not one a character (``(DateAtTimeWithDefaults`` after ``(DateA``)."""
    forced = state.forced_text()
    return forced[: state.feed(forced)] if forced else ""


def _closes_quote(text: str, suffix: str, quote: str) -> bool:
    """Whether ``quote`` may close a string the text left open: the suffix wrote none, and the
    text has an odd number of them (backslash escapes aside). A quote that opens a string is no
    close: inside it every mark reads on (``!A |"`` of a logic with quoted atoms), and the search
    spent its whole budget there."""
    return quote not in suffix and leaves_open(text, quote)


def _steps(state: Checker, suffix: str, marks_only: bool = False) -> list[str]:
    """The characters worth trying after ``suffix``, preferred ones first; with ``marks_only``
    no letter, digit or ``_``, and no quote but one that closes a string the text left open
    (``_closes_quote``: not a pair)."""
    allowed_bytes = state.allowed_bytes()
    allowed = {chr(b) for b in allowed_bytes if 0x20 <= b < 0x7F}
    if suffix.endswith(" "):
        allowed.discard(" ")
    if marks_only:
        allowed = {
            ch for ch in allowed if ch in _CLOSERS and not (ch in QUOTES and not _closes_quote(state.text, suffix, ch))
        }
    for chars in _CLASSES:
        members = allowed & set(chars)
        if len(members) > 6:
            # One representative, itself allowed (``A`` where only ``M``, ``T`` and so on begin
            # the grammar's words would be a step that leads nowhere).
            allowed -= members
            allowed.add(min(members))
    preferred = [ch for ch in _PREFERRED if ch in allowed]
    # A line end last: where the grammar ignores it, a space does as much and is tried first;
    # where lines matter (Python), it ends a statement.
    # Not after white space the search wrote (`` \n`` does what ``\n`` does: one more node each).
    after_space = suffix[-1:].isspace()
    line_end = ["\n"] if 0x0A in allowed_bytes and not after_space and (not marks_only or "\n" not in suffix) else []
    return preferred + sorted(allowed - set(preferred)) + line_end
