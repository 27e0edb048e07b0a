"""What a guided generation returns: the text, the ordered events that made it, and statistics.

Events are plain frozen dataclasses; offsets are in characters of the final text's coordinate
system at the time of the event (the accepted text never shrinks except by a ``Cut``). Rendering
(HTML, JSON) is a pure function of these events.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

__all__ = [
    "Alternative",
    "Correction",
    "Cut",
    "DraftSpan",
    "Event",
    "GrammarViolation",
    "GuideResult",
    "GuideStats",
]


@dataclass(frozen=True)
class Alternative:
    """A continuation the target considered, with its probability."""

    text: str
    probability: float


@dataclass(frozen=True)
class DraftSpan:
    """Text the draft wrote that was kept, at ``offset`` of the accepted text, from draft call ``call``."""

    offset: int
    text: str
    call: int
    kind: Literal["draft"] = "draft"


@dataclass(frozen=True)
class GrammarViolation:
    """The draft wrote ``rejected`` at ``offset``, where the grammar allows none of it.

    ``rejected`` is the drafted text thrown away from that point (what was streamed before the
    stream was closed). ``offset`` may lie before the end of the text accepted so far: a repair
    then took back the accepted text from ``offset`` on (the start of a misspelt word, a trailing
    comma), and ``rejected`` begins with that taken-back text. ``expected`` names the terminals
    that could come at ``offset``; ``line`` and ``column`` locate it.
    """

    offset: int
    rejected: str
    expected: tuple[str, ...]
    line: int
    column: int
    call: int
    kind: Literal["violation"] = "violation"


@dataclass(frozen=True)
class Correction:
    """Text inserted at ``offset`` by someone other than the draft.

    ``source`` is ``"target"`` (the target model chose it under the grammar mask), ``"forced"``
    (the grammar allowed only this), ``"healed"`` (the target re-chose the last token(s) of the
    accepted text at a token boundary; the text is unchanged) or ``"repair"`` (an edit derived from
    the draft's rejected text: a dropped character, a nearest keyword). ``reason`` says why it was
    needed ("violation", "finish", "stalled"); ``alternatives`` are the target's top choices for
    its first token; ``seconds`` is the time it took.
    """

    offset: int
    text: str
    source: Literal["target", "forced", "healed", "repair"]
    reason: str = "violation"
    alternatives: tuple[Alternative, ...] = ()
    tokens: int = 0
    seconds: float = 0.0
    detail: str = ""
    kind: Literal["correction"] = "correction"


@dataclass(frozen=True)
class Cut:
    """Drafted text that is not part of the result, at ``offset``: prose before the answer
    (``reason`` "preamble"), text after a complete text that cannot extend it ("after complete
    text": a closing fence, an explanation), or what a restating draft repeated ("restated").

    Like a violation's, ``offset`` may lie before the end of the accepted text: the accepted text
    from ``offset`` on (white space after a complete text) was taken back and begins ``text``.
    """

    offset: int
    text: str
    reason: str
    call: int
    kind: Literal["cut"] = "cut"


Event = Union[DraftSpan, GrammarViolation, Correction, Cut]

_EVENT_TYPES = {cls.__dataclass_fields__["kind"].default: cls for cls in (DraftSpan, GrammarViolation, Correction, Cut)}


@dataclass
class GuideStats:
    """Counts and timings of one guided generation.

    Token counts of the draft are as the provider reports them (``None`` when it does not).
    ``target_tokens`` are the tokens the target model chose (sampled, or re-chosen by token
    healing: ``healed_tokens`` of them); ``forced_tokens`` were appended without a model choice.
    ``discarded_tokens`` estimates drafted tokens thrown away (by the draft's own count where the
    provider gives one, else by characters / 4).
    """

    draft_calls: int = 0
    draft_tokens_in: int | None = None
    draft_tokens_out: int | None = None
    discarded_tokens: int = 0
    discarded_chars: int = 0
    target_tokens: int = 0
    forced_tokens: int = 0
    healed_tokens: int = 0
    corrections: int = 0
    prefill_tokens_saved: int = 0
    draft_seconds: float = 0.0
    check_seconds: float = 0.0
    target_seconds: float = 0.0
    total_seconds: float = 0.0

    def add_draft_usage(self, tokens_in: int | None, tokens_out: int | None) -> None:
        if tokens_in is not None:
            self.draft_tokens_in = (self.draft_tokens_in or 0) + tokens_in
        if tokens_out is not None:
            self.draft_tokens_out = (self.draft_tokens_out or 0) + tokens_out


@dataclass
class GuideResult:
    """The outcome of ``guide``: ``text`` is complete and valid under ``grammar_name``'s grammar."""

    text: str
    prompt: str
    grammar_name: str
    events: list[Event] = field(default_factory=list)
    stats: GuideStats = field(default_factory=GuideStats)
    complete: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "prompt": self.prompt,
            "grammar": self.grammar_name,
            "complete": self.complete,
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
        from ._html import render_html

        return render_html(self)

    def save_html(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        from ._html import render_fragment

        return render_fragment(self)

    def __str__(self) -> str:
        return self.text
