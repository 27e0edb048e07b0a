"""Aligning the answer of a draft that cannot truly continue a prefix.

A chat API without assistant prefill, asked to go on from some accepted text, often restates the
answer from the start (maybe inside a code fence, maybe as it first wrote it, before our
corrections), or repeats the last few words before going on. ``Aligner`` reads the stream and
passes on only the genuinely new text: never duplicating accepted text, never dropping new text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Aligner"]

_FENCE_OPEN = re.compile(r"^\s*```[\w+-]*[ \t]*\n")
_MAYBE_FENCE = re.compile(r"^\s*`{1,3}[\w+-]*[ \t]*$")
_MIN_OVERLAP = 3
_SAME_START = 8
_MARGIN = 8


@dataclass
class Aligner:
    """Feed it stream chunks; it returns the new text to check (empty while undecided).

    ``accepted`` is the text accepted so far; ``earlier`` are the draft's earlier raw answers in
    this generation (a restatement may repeat those rather than the corrected text). ``dropped``
    collects what was removed (the restated part, an opening fence) for the trace.
    """

    accepted: str
    earlier: tuple[str, ...] = ()
    accepts: Callable[[str], int] | None = None
    _buffer: str = ""
    _decided: bool = False
    dropped: list[str] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        """Whether it knows where the new text begins (from then on it passes chunks through)."""
        return self._decided

    def push(self, chunk: str) -> str:
        if self._decided:
            return chunk
        self._buffer += chunk
        return self._try_decide(final=False)

    def finish(self) -> str:
        """The stream ended: decide with what there is."""
        if self._decided:
            return ""
        return self._try_decide(final=True)

    def _try_decide(self, final: bool) -> str:
        buffer = self._buffer
        fence = _FENCE_OPEN.match(buffer)
        if not fence and not final and _MAYBE_FENCE.match(buffer):
            return ""  # maybe the start of a fence
        skip = fence.end() if fence else 0
        if not self.accepted.strip():
            return self._decide(skip)
        body = buffer[skip:]
        lead = len(body) - len(body.lstrip())
        body = body.lstrip()
        accepted = self.accepted.lstrip()

        if self._restates(body, accepted):
            if accepted.startswith(body) and not final:
                return ""  # agrees with the accepted text so far
            if body.startswith(accepted):
                return self._decide(skip + lead + len(accepted))
            if len(body) < len(accepted) + _MARGIN and not final:
                return ""  # a restatement that differs: wait for enough of it to align
            return self._decide(skip + lead + _aligned_end(accepted, body, self.accepts))

        # The answer repeats the accepted text's last words, then goes on.
        overlap = _suffix_prefix_overlap(self.accepted, buffer)
        if overlap >= _MIN_OVERLAP:
            return self._decide(overlap)
        if not final and len(buffer) < _MIN_OVERLAP and self.accepted.endswith(buffer):
            return ""
        return self._decide(0)

    def _restates(self, body: str, accepted: str) -> bool:
        """Whether ``body`` starts the way the accepted text or an earlier answer started."""
        for reference in (accepted, *(e.lstrip() for e in self.earlier)):
            n = min(_SAME_START, len(reference))
            if n == 0:
                continue
            if len(body) < n:
                if reference.startswith(body) and body:
                    return True
                continue
            if body[:n] == reference[:n]:
                return True
        return False

    def _decide(self, cut: int) -> str:
        self._decided = True
        if cut:
            self.dropped.append(self._buffer[:cut])
        return self._buffer[cut:]


def _aligned_end(accepted: str, body: str, accepts: Callable[[str], int] | None = None) -> int:
    """Where in ``body`` (a restatement of ``accepted`` with edits) the accepted text ends.

    After the last run both share, the accepted text was corrected: its length says roughly how
    much of ``body`` it stands for. With ``accepts`` (how much of a text the grammar takes after
    the accepted text), the end is the word boundary between that run and a little past the
    estimate after which the grammar reads furthest into ``body``, the earliest on a tie, so no
    new text is dropped for a length that only looked right (``"born": `` for ``born: ``)."""
    matcher = difflib.SequenceMatcher(None, accepted, body, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return 0
    # Anchor on the last run of some length: a lone quote or comma matches anywhere.
    anchors = [b for b in blocks if b.size >= 3] or blocks
    last = anchors[-1]
    shared_end = last.b + last.size
    estimate = min(shared_end + (len(accepted) - (last.a + last.size)), len(body))
    if accepts is None or estimate <= shared_end:
        return estimate
    best, reach = shared_end, shared_end + accepts(body[shared_end:])
    for cut in _boundaries(body, shared_end + 1, min(len(body), estimate + _MARGIN)):
        end = cut + accepts(body[cut:])
        if end > reach:
            best, reach = cut, end
    return best if reach > shared_end else estimate


def _boundaries(text: str, start: int, stop: int) -> list[int]:
    """Positions in ``text[start:stop + 1]`` where a word or mark begins or white space does."""
    return [i for i in range(start, stop + 1) if i == len(text) or not (text[i].isalnum() and text[i - 1].isalnum())]


def _suffix_prefix_overlap(accepted: str, new: str) -> int:
    """Length of the longest prefix of ``new`` that ``accepted`` ends with, at a word boundary."""
    for k in range(min(len(accepted), len(new)), _MIN_OVERLAP - 1, -1):
        if accepted.endswith(new[:k]):
            before = accepted[-k - 1] if len(accepted) > k else " "
            boundary = not (before.isalnum() and new[0].isalnum())
            if boundary and new[:k].strip():
                return k
    return 0
