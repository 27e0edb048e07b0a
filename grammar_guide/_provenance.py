"""Where each character of a guided text came from, read from the result's events.

The events are replayed in order (``rebuild``):

- ``DraftSpan``: drafted text kept, inserted at its offset;
- ``Correction``: text inserted by the target (``target``), the grammar (``forced``,
  ``completion``) or an edit of the draft (``repair``); a ``healed`` correction re-chose text
  already there, which is relabelled;
- ``GrammarViolation``: the drafted text thrown away, kept aside (struck through in the HTML)
  where it was cut;
- ``Cut``: drafted text never kept; when the accepted text at the offset is exactly that text, it
  is removed from the accepted text.

The replay is ``exact`` when it rebuilds the result's text. ``origins`` gives the kept text as
spans by origin, ``dropped`` what of the draft was left out and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ._events import Correction, Cut, CutReason, DraftSpan, EditRule, Event, GrammarViolation
from ._text import line_column

__all__ = ["KEPT_KINDS", "Context", "Dropped", "Origin", "Rebuilt", "Segment", "dropped", "origins", "rebuild"]

KEPT_KINDS = ("draft", "target", "forced", "healed", "repair", "completion")
_DISCARDED_KINDS = ("violation", "cut")
#: Kept text that is the draft's own (``healed``: the draft's text, its token boundary re-chosen).
_DRAFTED_KINDS = ("draft", "healed")


@dataclass
class Segment:
    kind: str
    text: str
    event: int | None
    piece: int = 0

    @property
    def discarded(self) -> bool:
        return self.kind in _DISCARDED_KINDS


@dataclass
class Context:
    """What the page shows about an event beyond its own fields."""

    line: int
    column: int
    violation: GrammarViolation | None = None
    repair: Correction | None = None
    removed: bool = False


@dataclass
class Rebuilt:
    segments: list[Segment]
    contexts: dict[int, Context] = field(default_factory=dict)
    exact: bool = True


class _Builder:
    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.accepted = ""
        self.exact = True

    def _index_at(self, offset: int) -> int:
        """The index at which a segment lands at ``offset`` of the accepted text (after any
        discarded segments already there), splitting a kept segment if needed."""
        pos = 0
        for i, seg in enumerate(self.segments):
            if seg.discarded:
                continue
            end = pos + len(seg.text)
            if offset <= pos:
                return i
            if offset < end:
                cut = offset - pos
                right = Segment(seg.kind, seg.text[cut:], seg.event, seg.piece + 1)
                seg.text = seg.text[:cut]
                self.segments.insert(i + 1, right)
                return i + 1
            pos = end
        return len(self.segments)

    def clamp(self, offset: int) -> int:
        if offset < 0 or offset > len(self.accepted):
            self.exact = False
            return max(0, min(offset, len(self.accepted)))
        return offset

    def insert(self, offset: int, text: str, kind: str, event: int, piece: int = 0) -> Segment | None:
        if not text:
            return None
        offset = self.clamp(offset)
        segment = Segment(kind, text, event, piece)
        self.segments.insert(self._index_at(offset), segment)
        if kind not in _DISCARDED_KINDS:
            self.accepted = self.accepted[:offset] + text + self.accepted[offset:]
        return segment

    def _range(self, start: int, stop: int) -> tuple[int, int]:
        """Split so that the kept text ``[start, stop)`` is whole segments; return their indices."""
        first = self._index_at(start)
        last = self._index_at(stop)
        while first < last and self.segments[first].discarded:
            first += 1
        return first, last

    def relabel(self, start: int, stop: int, kind: str, event: int) -> None:
        first, last = self._range(start, stop)
        piece = 0
        for seg in self.segments[first:last]:
            if not seg.discarded:
                seg.kind, seg.event, seg.piece = kind, event, piece
                piece += 1

    def take_back(self, start: int) -> None:
        """Drop the kept text from ``start`` to the end (discarded segments there stay)."""
        first, last = self._range(start, len(self.accepted))
        self.segments[first:last] = [seg for seg in self.segments[first:last] if seg.discarded]
        self.accepted = self.accepted[:start]

    def remove(self, start: int, stop: int, kind: str, event: int) -> None:
        """Take back the kept text ``[start, stop)``; the draft's text among it (not what the
        grammar forced, an edit or the target wrote there) stays as one discarded segment."""
        first, last = self._range(start, stop)
        removed = "".join(seg.text for seg in self.segments[first:last] if seg.kind in _DRAFTED_KINDS)
        kept_discards = [seg for seg in self.segments[first:last] if seg.discarded]
        self.segments[first:last] = [*kept_discards, Segment(kind, removed, event)]
        self.accepted = self.accepted[:start] + self.accepted[stop:]


def rebuild(events: Sequence[Event], text: str) -> Rebuilt:
    replay = _Replay(events)
    for i, event in enumerate(events):
        replay.step(i, event)
    b = replay.builder
    segments = [s for s in b.segments if s.text]
    exact = b.exact and b.accepted == text
    if not exact:
        segments = [Segment("draft", text, None)]
    return Rebuilt(segments, replay.contexts, exact)


class _Replay:
    """The events replayed in order onto a ``_Builder``, with what one event leaves for the next."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self.builder = _Builder()
        self.contexts: dict[int, Context] = {}
        self.violation: GrammarViolation | None = None
        # The struck-through segment of the last violation, while a repair of it may be followed
        # by the draft's own text taken from the rejected text (then only the rest stays struck).
        self.struck: Segment | None = None
        self.repaired = False
        # The rejected text after such reused draft text, until a later violation reports it again.
        self.leftover: Segment | None = None

    def step(self, i: int, event: Event) -> None:
        b = self.builder
        line, column = line_column(b.accepted, max(0, min(event.offset, len(b.accepted))))
        context = self.contexts[i] = Context(line, column)
        if isinstance(event, (GrammarViolation, Cut)):
            self._drop_leftover_reported_by(event)
        if not isinstance(event, (DraftSpan, Correction, GrammarViolation)) or (
            isinstance(event, Correction) and event.source != "repair"
        ):
            self.struck = None
        self.leftover = None
        if isinstance(event, DraftSpan):
            self._draft(i, event)
        elif isinstance(event, GrammarViolation):
            self._violation(i, event, context)
        elif isinstance(event, Correction):
            self._correction(i, event, context)
        elif isinstance(event, Cut):
            context.removed = _cut(b, event, i)

    def _drop_leftover_reported_by(self, event: GrammarViolation | Cut) -> None:
        """A later violation or cut that reports the leftover again (with the accepted text before
        it) owns it from here."""
        b, leftover = self.builder, self.leftover
        taken = b.accepted[event.offset :] if 0 <= event.offset <= len(b.accepted) else None
        reported = event.rejected if isinstance(event, GrammarViolation) else event.text
        if leftover is not None and taken is not None and reported.startswith(taken + leftover.text):
            b.segments.remove(leftover)

    def _draft(self, i: int, event: DraftSpan) -> None:
        b, struck = self.builder, self.struck
        self.violation = None
        j = -1
        if struck is not None and self.repaired and struck.event is not None:
            owner = self.events[struck.event]
            if getattr(owner, "call", None) == event.call and event.offset == len(b.accepted):
                j = struck.text.find(event.text)
        if struck is not None and j >= 0:
            rest = struck.text[j + len(event.text) :]
            struck.text = struck.text[:j]
            b.insert(event.offset, event.text, "draft", i)
            self.leftover = b.insert(len(b.accepted), rest, "violation", struck.event, struck.piece + 1)  # type: ignore[arg-type]
        else:
            b.insert(event.offset, event.text, "draft", i)
        self.struck, self.repaired = None, False

    def _violation(self, i: int, event: GrammarViolation, context: Context) -> None:
        b = self.builder
        self.violation = event
        context.line, context.column = event.line, event.column
        taken_back = b.accepted[event.offset :]
        if taken_back and event.offset >= 0 and event.rejected.startswith(taken_back):
            # A repair took back accepted text from the offset on; it is part of ``rejected``.
            context.removed = True
            b.take_back(event.offset)
        self.struck, self.repaired = b.insert(event.offset, event.rejected, "violation", i), False

    def _correction(self, i: int, event: Correction, context: Context) -> None:
        context.violation = self.violation
        if event.source == "repair":
            struck = self.struck
            self.repaired = struck is not None
            if struck is not None and struck.event is not None:
                self.contexts[struck.event].repair = event
        if event.source == "healed":
            _heal(self.builder, event, i)
        else:
            _write(self.builder, event, i)


def _heal(b: _Builder, event: Correction, index: int) -> None:
    """A healed correction re-chose text already there: relabel it (and add what runs past the end)."""
    offset = b.clamp(event.offset)
    present = b.accepted[offset : offset + len(event.text)]
    if present == event.text:
        b.relabel(offset, offset + len(event.text), "healed", index)
    elif event.text.startswith(b.accepted[offset:]):
        tail = len(b.accepted) - offset
        b.relabel(offset, len(b.accepted), "healed", index)
        b.insert(len(b.accepted), event.text[tail:], "healed", index)
    else:
        b.insert(offset, event.text, "healed", index)


def _write(b: _Builder, event: Correction, index: int) -> None:
    if 0 <= event.offset < len(b.accepted):
        # Written after taking the accepted text back (a rewrite at the end: the dangling key of
        # ``{"a": 1, "b": ``): that text is left out.
        taken = b.accepted[event.offset :]
        b.take_back(event.offset)
        b.insert(event.offset, taken, "cut", index)
    kind = event.source if event.source in KEPT_KINDS else "target"
    b.insert(event.offset, event.text, kind, index)


def _cut(b: _Builder, event: Cut, index: int) -> bool:
    """Record a cut; whether it took back accepted text. It takes back what it names of the
    accepted text from its offset: all of its text, or, where its text runs on past the end of
    the accepted text (the draft's evidence, never accepted: ``SELECT`` accepted, ``SELECT name``
    cut), the accepted part, the rest recorded after it."""
    accepted = b.accepted[event.offset : event.offset + len(event.text)] if event.offset >= 0 else ""
    whole = len(accepted) == len(event.text) or event.offset + len(accepted) == len(b.accepted)
    if not (event.text and accepted and whole and event.text.startswith(accepted)):
        b.insert(event.offset, event.text, "cut", index)
        return False
    b.remove(event.offset, event.offset + len(accepted), "cut", index)
    b.insert(event.offset, event.text[len(accepted) :], "cut", index)
    return True


# -- the result's view ------------------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    """Where ``text[start:end]`` of a guided text came from.

    ``source`` is ``draft`` (the draft's own text, from draft call ``call``), ``forced`` (the only
    text the grammar allowed), ``healed`` (a token boundary the target re-chose: same text),
    ``repair`` (an edit of the draft's text; ``rule`` says which kind: ``edit`` or ``rewrite``),
    ``target`` (the target model wrote it) or ``completion`` (the grammar's close of the text).
    ``event`` is the index of the event that wrote it in ``GuideResult.events``.
    """

    start: int
    end: int
    source: str
    event: int
    call: int | None = None
    rule: EditRule | None = None


@dataclass(frozen=True)
class Dropped:
    """Drafted ``text`` that is not in the result, and why: a ``Cut``'s reason (``preamble``,
    ``another answer``, ``unfinished``, ``budget``, ...) or ``rejected`` (text the grammar did
    not allow, replaced by a repair or the target's text) or ``prose`` (text the grammar did not
    allow that the repair left out as prose, such as ``The answer is`` before the answer: not
    the answer, so not unfaithful) or ``resync`` (the draft's lexemes dropped where no edit
    fixed the violation, so that its text after them reads on: unfaithful) or ``space`` (white
    space of another kind, a vertical tab or a no-break space, written as a plain space:
    formatting) or ``replaced`` (taken back by the
    correction that wrote in its place, with no violation: a rewrite at the end of the text).
    ``offset`` is where it stood."""

    text: str
    reason: CutReason | str
    offset: int
    event: int


def origins(events: Sequence[Event], text: str) -> tuple[Origin, ...] | None:
    """Every character of ``text`` by origin, in order; ``None`` if the events do not rebuild it."""
    rebuilt = rebuild(events, text)
    if not rebuilt.exact:
        return None
    spans: list[Origin] = []
    pos = 0
    for seg in rebuilt.segments:
        if seg.discarded or seg.event is None:
            continue
        end = pos + len(seg.text)
        if spans and spans[-1].event == seg.event and spans[-1].source == seg.kind and spans[-1].end == pos:
            spans[-1] = Origin(spans[-1].start, end, seg.kind, seg.event, spans[-1].call, spans[-1].rule)
        else:
            spans.append(_origin(pos, end, seg.kind, seg.event, events[seg.event]))
        pos = end
    return tuple(spans)


def _origin(start: int, end: int, kind: str, index: int, event: Event) -> Origin:
    call = event.call if isinstance(event, DraftSpan) else None
    rule = event.rule if isinstance(event, Correction) and event.source == "repair" else None
    return Origin(start, end, kind, index, call, rule)


def _drop_reason(event: Event, context: Context) -> str:
    """A cut's reason; ``replaced`` for text a correction took back; for rejected text, ``prose``
    where the repair left it out as prose (``The answer is`` before ``3 + 4``), ``resync`` where a
    resynchronisation dropped it (``_resync``), ``space`` where it was white space of another
    kind written plain, else ``rejected``."""
    if isinstance(event, Cut):
        return event.reason
    if isinstance(event, Correction):
        return "replaced"
    repair = context.repair
    return repair.rule if repair is not None and repair.rule in ("prose", "resync", "space") else "rejected"


def dropped(events: Sequence[Event], text: str) -> tuple[Dropped, ...]:
    """What the draft wrote that is not in ``text``, in order, and why."""
    rebuilt = rebuild(events, text)
    out: list[Dropped] = []
    pos = 0
    for seg in rebuilt.segments:
        if not seg.discarded:
            pos += len(seg.text)
            continue
        if seg.event is None or not seg.text:
            continue
        out.append(Dropped(seg.text, _drop_reason(events[seg.event], rebuilt.contexts[seg.event]), pos, seg.event))
    return tuple(out)
