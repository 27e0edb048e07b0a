"""What a guided generation returns: the text, the ordered events that made it (``_events``), and
statistics. Rendering (HTML, JSON) is a pure function of these events.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._changes import Changes, changes_of
from ._events import Alternative, Correction, Cut, DraftSpan, Event, GrammarRefused, GrammarViolation, GuideStats
from ._html import render_fragment, render_html
from ._provenance import Dropped, Origin, dropped, origins

__all__ = ["GuideResult"]

_EVENT_TYPES = {
    cls.__dataclass_fields__["kind"].default: cls
    for cls in (DraftSpan, GrammarViolation, Correction, Cut, GrammarRefused)
}


@dataclass
class GuideResult:
    """The outcome of ``guide``: ``text`` is complete and valid under ``grammar_name``'s grammar.

    ``complete`` is False when a budget ended the run (the text is closed under the grammar, short
    of the draft's answer: a ``Cut`` with reason ``budget`` says so) and in the partial result of
    ``GuideExhausted`` (a valid prefix only)."""

    text: str
    prompt: str
    grammar_name: str
    events: list[Event] = field(default_factory=list)
    stats: GuideStats = field(default_factory=GuideStats)
    complete: bool = True

    @property
    def changes(self) -> Changes:
        """What was changed of the draft's answer: edits, rewrites, invented text, dropped text,
        closing marks (read from ``events``), and whether the result is incomplete."""
        return changes_of(self.events, self.complete)

    @property
    def origins(self) -> tuple[Origin, ...]:
        """Every character of ``text`` by origin, as spans in order: the draft's text (with its
        call), text the grammar forces, an edit (with its rule), the target's text, the
        grammar's close (see ``Origin``). Rebuilt from ``events``; a ``ValueError`` if they do not
        rebuild ``text`` (a result put together by hand)."""
        spans = origins(self.events, self.text)
        if spans is None:
            raise ValueError("the result's events do not rebuild its text")
        return spans

    @property
    def dropped(self) -> tuple[Dropped, ...]:
        """What the draft wrote that is not in ``text``, and why (see ``Dropped``)."""
        return dropped(self.events, self.text)

    @property
    def faithful(self) -> bool:
        """Whether the text is what the draft wrote: complete (never a partial result), nothing
        of its answer edited or dropped and nothing invented, beyond text the grammar forces,
        closing marks, recorded formatting and the grammar's rewrites of known slips (see
        ``Changes``)."""
        return self.changes.faithful

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "prompt": self.prompt,
            "grammar": self.grammar_name,
            "complete": self.complete,
            "faithful": self.faithful,
            "changes": dataclasses.asdict(self.changes),
            "origins": [dataclasses.asdict(o) for o in origins(self.events, self.text) or ()],
            "dropped": [dataclasses.asdict(d) for d in self.dropped],
            "stats": dataclasses.asdict(self.stats),
            "events": [dataclasses.asdict(e) for e in self.events],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuideResult:
        events: list[Event] = []
        for raw in data.get("events", []):
            raw = dict(raw)
            kind = _EVENT_TYPES[raw["kind"]]
            if kind is Correction:
                raw["alternatives"] = tuple(Alternative(**a) for a in raw.get("alternatives", ()))
            if kind is GrammarViolation:
                raw["expected"] = tuple(raw.get("expected", ()))
            events.append(kind(**raw))
        return cls(
            text=data["text"],
            prompt=data.get("prompt", ""),
            grammar_name=data.get("grammar", ""),
            events=events,
            stats=GuideStats(**data.get("stats", {})),
            complete=data.get("complete", True),
        )

    def to_html(self) -> str:
        """One self-contained HTML page showing the text and every correction."""
        return render_html(self)

    def save_html(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        return render_fragment(self)

    def __str__(self) -> str:
        return self.text
