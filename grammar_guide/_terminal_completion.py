"""A completion found a terminal at a time, for grammars whose completions are long.

The character search of ``_complete`` finds a close of a few characters. A language whose calls
need arguments (SMCalFlow's Lispress: ``(NextDOW `` needs a day, then ``(DateAtTimeWithDefaults``
its time, then ``(&`` its second constraint) needs dozens, beyond its reach. This search steps by
whole terminals, each written as its shortest text, and tries first the terminal that costs
least: its own length and the fewest characters that must follow it before the rule it is in can
end (``TerminalCosts``, from the grammar's rules). A depth-first search over the checker, within
a budget of tries; the text it finds is complete, not necessarily the shortest.
"""

from __future__ import annotations

import re

from ._checker import Checker
from ._text import is_word_char
from .compiler.terminal_costs import CLOSING, TerminalCosts

__all__ = ["terminal_completion"]


def terminal_completion(
    checker: Checker, costs: TerminalCosts, *, max_tries: int = 400, max_depth: int = 64
) -> str | None:
    """A text that completes ``checker``'s text, found a terminal at a time (see the module
    docstring), or ``None`` within ``max_tries`` feeds and ``max_depth`` terminals."""
    if checker.is_complete:
        return ""
    for fresh_first in (False, True):
        # Then, where the cheapest-first order led into a construct opened again and again (a
        # ``WITH`` inside ``WITH a AS (``), words the text's end has not written come first.
        with checker.trial() as trial:
            found = _complete_from(trial, costs, [max_tries], max_depth, fresh_first)
        if found is not None:
            return found
    return None


def _complete_from(state: Checker, costs: TerminalCosts, tries: list[int], depth: int, fresh_first: bool) -> str | None:
    if depth <= 0:
        return None
    mark = state.snapshot()
    pieces = _pieces(state, costs)
    if fresh_first:
        pieces.sort(key=lambda piece: _written_lately(state.text, piece))
    for piece in pieces:
        if tries[0] <= 0:
            return None
        tries[0] -= 1
        if state.feed(piece) == len(piece):
            if state.is_complete:
                return piece
            if state.can_continue:
                rest = _complete_from(state, costs, tries, depth - 1, fresh_first)
                if rest is not None:
                    return piece + rest
        state.rollback(mark)
    return None


_LATELY = 64  # the characters at the text's end in which a word counts as written lately


def _written_lately(text: str, piece: str) -> bool:
    """Whether ``piece`` is a word the last ``_LATELY`` characters of ``text`` hold (any case)."""
    word = piece.strip()
    if not word or not is_word_char(word[0]):
        return False
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text[-_LATELY:], re.IGNORECASE) is not None


def _pieces(state: Checker, costs: TerminalCosts) -> list[str]:
    """What to try next, cheapest first: each expected terminal's shortest text (its rest, where
    the text ends inside it; after a space, where the text ends in a word character)."""
    text = state.text
    glued = is_word_char(text[-1:])
    pieces: dict[str, tuple[bool, int, bool, bool]] = {}
    for terminal in state.expected():
        whole = costs.texts.get(terminal.name)
        if whole is None:
            continue
        cost = costs.cost(terminal.name)
        started = [whole[k:] for k in range(len(whole) - 1, 0, -1) if text.endswith(whole[:k])]
        # A word glued to the word the text ends in would be one longer word (``0`` + ``0``).
        whole_pieces = [" " + whole] if glued and is_word_char(whole[:1]) else [whole, " " + whole]
        for piece in [*started, *whole_pieces]:
            # Closing brackets first (they invent nothing), then by cost; among equal costs, a
            # number (a value that needs nothing more: SQL's ``?`` is a parameter the caller
            # must bind), then marks.
            first = piece.strip()[:1]
            key = (not set(piece.strip()) <= CLOSING, cost, not first.isdigit(), is_word_char(first))
            pieces[piece] = min(pieces.get(piece, key), key)
    return sorted(pieces, key=lambda p: pieces[p])
