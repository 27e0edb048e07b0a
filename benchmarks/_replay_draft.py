"""A recorded model answer replayed as a black-box draft (no grammar_guide import: the reference
project's worker loads this file by path in its own venv).

The first call returns the whole answer. A later call gets the text accepted so far (after a
repair it differs from the answer) and returns the rest of the answer from where that text left
it: the answer position after the latest occurrence of the prefix's last lexemes (4, then 3, 2, 1
of them, case ignored), the one nearest to where the prefix's length puts it, counted from where
the prefix's first lexemes stand in the answer (a cut introduction is not in the prefix). Nothing found: the
draft has nothing more to say (""). This is what a model that keeps to its own answer would write
when asked to continue a prefix; it never sees the grammar.
"""

from __future__ import annotations

import re

_LEXEME = re.compile(
    r"```[A-Za-z]*|'(?:[^'\\]|''|\\.)*'?|\"(?:[^\"]|\"\")*\"?|`[^`]*`?|\[[^\]]*\]?|(?:[A-Za-z0-9_$]|\\_)+|\\\*|\S"
)


def _plain(raw: str) -> str:
    """A lexeme as compared: case ignored, Markdown escapes (``\\_``, ``\\*``) undone."""
    return raw.replace("\\_", "_").replace("\\*", "*").lower()


def lexemes(text: str) -> list[tuple[str, int, int]]:
    """(compared form, start, end) of each lexeme of ``text``: quoted things, words, signs."""
    return [(_plain(m.group()), m.start(), m.end()) for m in _LEXEME.finditer(text)]


def _raw_offset(raw: str, n: int) -> int:
    """Where in ``raw`` the first ``n`` characters of its compared form end."""
    i = seen = 0
    while seen < n and i < len(raw):
        i += 2 if raw[i] == "\\" and raw[i + 1 : i + 2] in ("_", "*") else 1
        seen += 1
    return i


class ReplayDraft:
    """``continue_from(prefix)``: the rest of ``answer`` after ``prefix`` (see the module docstring)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str]] = []  # (prefix, returned text)
        self._lexemes = lexemes(answer)

    def continue_from(self, prefix: str) -> str:
        out = self.answer if not prefix.strip() else self._rest(prefix)
        self.calls.append((prefix, out))
        return out

    def _rest(self, prefix: str) -> str:
        mine = [lx for lx, _, _ in lexemes(prefix)]
        words = [lx for lx, _, _ in self._lexemes]
        here = _start(words, mine[:4]) + len(mine)
        for k in (4, 3, 2, 1):
            if len(mine) < k:
                continue
            *whole, last = mine[-k:]
            # The last lexeme of the prefix may be cut short (``event_na``): a prefix of the answer's.
            ends = [
                i + k
                for i in range(len(words) - k + 1)
                if words[i : i + k - 1] == whole and words[i + k - 1].startswith(last)
            ]
            if ends:
                # The occurrence nearest to where the prefix's own length puts it.
                best = min(ends, key=lambda e: (abs(e - here), -e))
                _, start, end = self._lexemes[best - 1]
                return self.answer[start + _raw_offset(self.answer[start:end], len(last)) :]
        return ""


def _start(words: list[str], head: list[str]) -> int:
    """Where ``head`` (a prefix's first lexemes) first stands in ``words``; 0 where it does not."""
    k = len(head)
    return next((i for i in range(len(words) - k + 1) if words[i : i + k] == head), 0)
