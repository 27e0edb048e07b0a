"""HTML rendering of a guided generation: a pure function of the result's events.

``render_html`` gives one self-contained page (inline CSS, no script, no network; a Content
Security Policy forbids scripts and remote loads as a second line of defence);
``render_fragment`` gives the same view as a ``<div>`` for notebooks.

The text is rebuilt from the events in order:

- ``DraftSpan``: drafted text kept, inserted at its offset;
- ``Correction``: text inserted by the target (``target``), the grammar (``forced``) or an edit of
  the draft (``repair``); a ``healed`` correction re-chose text already there, which is relabelled;
- ``GrammarViolation``: the drafted text thrown away, shown struck through where it was cut;
- ``Cut``: drafted text never kept, shown struck through; when the accepted text at the offset is
  exactly that text, it is removed from the accepted text.

If the events do not rebuild ``result.text`` exactly, the page says so and shows the text as is.
Everything that comes from a model or a user is escaped, attributes included.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Sequence
from typing import Any, Protocol

from ._changes import changes_of
from ._events import Correction, CorrectionReason, Cut, CutReason, DraftSpan, Event, GrammarViolation, GuideStats
from ._provenance import Context, Rebuilt, rebuild

__all__ = ["render_fragment", "render_html"]


class GuideResult(Protocol):
    """What a page is rendered from (``grammar_guide.GuideResult`` has it)."""

    @property
    def text(self) -> str: ...
    @property
    def prompt(self) -> str: ...
    @property
    def grammar_name(self) -> str: ...
    @property
    def events(self) -> Sequence[Event]: ...
    @property
    def stats(self) -> GuideStats: ...
    @property
    def complete(self) -> bool: ...

    def to_json(self, **kwargs: Any) -> str: ...


def _e(value: object) -> str:
    """Escape for text and for double-quoted attribute values."""
    return html.escape(str(value), quote=True)


# -- rebuilding the text from the events -----------------------------------------------------

_LABELS = {
    "draft": "Drafted, kept",
    "target": "Chosen by the target",
    "forced": "Forced by the grammar",
    "healed": "Healed token boundary",
    "repair": "Repaired draft",
    "completion": "Closed by the grammar",
    "violation": "Drafted, rejected by the grammar",
    "cut": "Drafted, cut",
}

_SHORT = {
    "draft": "Draft",
    "target": "Target",
    "forced": "Forced",
    "healed": "Healed",
    "repair": "Repair",
    "completion": "Closed",
    "violation": "Rejected",
    "cut": "Cut",
}

_LEGEND_NOTES = {
    "draft": "the draft model's text, kept as written",
    "target": "written by the local target model under the grammar's mask",
    "forced": "the only text the grammar allowed here",
    "healed": "the target re-chose the last token(s) at the boundary",
    "repair": "a small edit of the draft's own text (dropped character, nearest keyword)",
    "completion": "the shortest text the grammar allows to complete the text",
    "violation": "drafted text the grammar does not allow, thrown away at this point",
    "cut": "drafted text that could not extend a complete text, or a repetition",
}

_REASONS: dict[CorrectionReason, str] = {
    "violation": "the draft broke the grammar here",
    "forced": "the grammar allows only this text here",
    "finish": "a budget ran out, so the text was completed",
    "stalled": "the draft added nothing the grammar allows",
}

_CUT_REASONS: dict[CutReason, str] = {
    "preamble": "prose before the answer",
    "after complete text": "text after a complete answer",
    "another answer": "another answer after a complete one (a second statement)",
    "unfinished": "unfinished words that only invented text could complete",
    "restated": "the draft restated text already accepted",
    "stop": "from a stop string on",
    "dead end": "a word the text could never be completed after",
    "unrepaired": "no edit fixed the violation and no model could repair it",
    "formatting": "chat formatting that is not part of the answer",
    "budget": "a budget ran out: the draft's answer was not read to its end",
    "prose": "a sentence the draft wrote where code goes",
    "repeated": "text after a complete answer that repeats it",
    "limit": "the language's engine rejects the text for one of its limits (nested too deep)",
}


def _change(event: Correction) -> str:
    """What a correction changed, in words."""
    text = repr(_shorten(_visible(event.text), 30))
    if event.source == "repair":
        return event.detail or f"wrote {text}"
    if event.source == "healed":
        return f"re-chose {text} at a token boundary"
    if event.source == "forced":
        return f"inserted {text}"
    if event.source == "completion":
        return f"closed the text with {text}"
    return f"the target wrote {text}"


def _why(event: Correction, violation: GrammarViolation | None) -> str:
    """Why a correction was needed, in words."""
    if event.reason == "violation" and violation is not None:
        why = f"the draft wrote {_shorten(_visible(violation.rejected), 24)!r} where the grammar does not allow it"
        if violation.expected:
            why += (
                " (expected "
                + ", ".join(sorted(violation.expected)[:4])
                + (" …" if len(violation.expected) > 4 else "")
                + ")"
            )
        return why
    why = _REASONS.get(event.reason, event.reason)
    if event.source != "repair" and event.detail:
        why += f" ({event.detail})"
    return why


def _cut_why(event: Cut) -> str:
    why = _CUT_REASONS.get(event.reason, event.reason)
    return f"{why} ({event.detail})" if event.detail else why


# -- formatting helpers -----------------------------------------------------------------------


def _seconds(value: float) -> str:
    if value <= 0:
        return "0 s"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 100:
        return f"{value:.2f} s"
    return f"{value:.0f} s"


def _count(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _visible(text: str) -> str:
    """Text for a label: whitespace made visible."""
    return (
        text.replace("\n", "↵").replace("\t", "→")
        if text.strip()
        else (text.replace(" ", "␣").replace("\n", "↵").replace("\t", "→") or "∅")
    )


def _code(text: str, limit: int = 60) -> str:
    return f'<code class="gg-code">{_e(_shorten(_visible(text), limit))}</code>'


# -- the tooltip of each segment ------------------------------------------------------------


def _tip_rows(rows: list[tuple[str, str]]) -> str:
    return "".join(
        f'<span class="gg-row"><span class="gg-k">{_e(k)}</span><span class="gg-v">{v}</span></span>' for k, v in rows
    )


def _expected_html(expected: tuple[str, ...]) -> str:
    if not expected:
        return '<span class="gg-muted">not known</span>'
    expected = tuple(sorted(expected))
    shown = "".join(f'<code class="gg-term">{_e(_shorten(t, 40))}</code>' for t in expected[:12])
    more = f' <span class="gg-muted">+{len(expected) - 12} more</span>' if len(expected) > 12 else ""
    return shown + more


def _alternatives_html(event: Correction) -> str:
    rows = []
    prefixes = [a.text for a in event.alternatives if a.text and event.text.startswith(a.text)]
    picked = max(prefixes, key=len) if prefixes else None
    for alt in event.alternatives[:8]:
        p = max(0.0, min(1.0, float(alt.probability)))
        chosen = " gg-chosen" if alt.text == picked else ""
        rows.append(
            f'<span class="gg-alt{chosen}"><code class="gg-code">{_e(_shorten(_visible(alt.text), 24))}</code>'
            f'<span class="gg-bar"><span class="gg-fill" style="width:{p * 100:.1f}%"></span></span>'
            f'<span class="gg-p">{p * 100:.1f}%</span></span>'
        )
    return '<span class="gg-alts">' + "".join(rows) + "</span>"


def _tooltip(event: Event, context: Context) -> str:
    where = f"line {context.line}, column {context.column}"
    if isinstance(event, Correction):
        title = _LABELS[event.source if event.source in _LABELS else "target"]
        rows = [
            ("Text", _code(event.text)),
            ("At", _e(where)),
            ("Change", _e(_change(event))),
            ("Why", _e(_why(event, context.violation))),
        ]
        if context.violation is not None:
            rows.append(("Rejected", _code(context.violation.rejected, 40)))
            rows.append(("Expected", _expected_html(context.violation.expected)))
        elif event.reason == "violation":
            rows.append(("Expected", _expected_html(())))
        timing = _seconds(event.seconds)
        if event.tokens:
            timing += f" · {event.tokens} token{'s' if event.tokens != 1 else ''}"
        rows.append(("Time", _e(timing)))
        body = _tip_rows(rows)
        if event.alternatives:
            body += '<span class="gg-sub">Target\'s top choices</span>' + _alternatives_html(event)
    elif isinstance(event, GrammarViolation):
        title = _LABELS["violation"]
        rows = [
            ("Rejected", _code(event.rejected, 40)),
            ("At", _e(f"line {event.line}, column {event.column}")),
            ("Expected", _expected_html(event.expected)),
        ]
        if context.repair is not None:
            fix = context.repair.detail or (f"wrote {_shorten(context.repair.text, 30)!r}")
            rows.append(("Fixed by", _e(fix)))
        rows.append(("Draft call", _e(event.call)))
        body = _tip_rows(rows)
    elif isinstance(event, Cut):
        title = _LABELS["cut"]
        rows = [
            ("Text", _code(event.text, 80)),
            ("At", _e(where)),
            ("Why", _e(_cut_why(event))),
            ("Draft call", _e(event.call)),
        ]
        body = _tip_rows(rows)
    else:
        title = _LABELS["draft"]
        body = _tip_rows([("Draft call", _e(event.call)), ("At", _e(where))])
    return f'<span class="gg-tip-title">{_e(title)}</span>{body}'


# -- the page -----------------------------------------------------------------------------


def _segments_html(rebuilt: Rebuilt, result: GuideResult, prefix: str) -> str:
    out = []
    for seg in rebuilt.segments:
        text = f'<span class="gg-t">{_e(seg.text)}</span>'
        blank = " gg-blank" if not seg.text.strip() else ""
        if seg.event is None:
            out.append(f'<span class="gg-seg gg-draft" data-kind="draft">{text}</span>')
            continue
        event = result.events[seg.event]
        ident = f"{prefix}-ev{seg.event}" + (f"-{seg.piece}" if seg.piece else "")
        if seg.kind == "draft":
            call = getattr(event, "call", "")
            out.append(
                f'<span class="gg-seg gg-draft" data-kind="draft" data-event="{seg.event}" data-call="{_e(call)}"'
                f' id="{ident}">{text}</span>'
            )
            continue
        tip_id = f"{ident}-tip"
        if isinstance(event, Cut) and event.reason == "restated":
            # Repeated text the loop aligned away: a small marker, the text in its details.
            n = len(seg.text)
            text = f'<span class="gg-t gg-marker" aria-label="restated text, {n} characters">↻ {n}</span>'
            blank = " gg-restated"
        out.append(
            f'<span class="gg-seg gg-{seg.kind}{blank}" data-kind="{seg.kind}" data-event="{seg.event}" id="{ident}"'
            f' tabindex="0" aria-describedby="{tip_id}">{text}'
            f'<span class="gg-tip" role="tooltip" id="{tip_id}">{_tooltip(event, rebuilt.contexts[seg.event])}</span>'
            "</span>"
        )
    return "".join(out)


def _summary_html(result: GuideResult) -> str:
    stats: GuideStats = result.stats
    if result.complete:
        badge = '<span class="gg-badge gg-ok" data-valid="true">✓ valid &amp; complete</span>'
    else:
        badge = '<span class="gg-badge gg-bad" data-valid="false">✗ incomplete: the budget ran out</span>'
    changes = changes_of(result.events, result.complete)
    kind = "gg-ok" if changes.faithful else "gg-bad"
    badge += (
        f'<span class="gg-badge {kind}" data-faithful="{str(changes.faithful).lower()}">{_e(changes.summary())}</span>'
    )
    tokens_io = f"{_count(stats.draft_tokens_in)} / {_count(stats.draft_tokens_out)}"
    discarded = f"{stats.discarded_tokens:,}"
    if stats.discarded_chars:
        discarded += f'<span class="gg-small">{stats.discarded_chars:,} characters</span>'
    target = f"{stats.target_tokens:,}"
    extra = []
    if stats.forced_tokens:
        extra.append(f"{stats.forced_tokens:,} forced")
    if stats.healed_tokens:
        extra.append(f"{stats.healed_tokens:,} healed")
    if extra:
        target += f'<span class="gg-small">{_e(", ".join(extra))}</span>'
    timing = (
        f"draft {_seconds(stats.draft_seconds)} · check {_seconds(stats.check_seconds)}"
        f" · target {_seconds(stats.target_seconds)}"
    )
    cells = [
        ("Draft calls", _e(stats.draft_calls), "calls"),
        ("Draft tokens in/out", _e(tokens_io), "tokens"),
        ("Tokens discarded", discarded, "discarded"),
        ("Corrections", _e(stats.corrections), "corrections"),
        ("Target tokens", target, "target"),
        ("Time", f'{_e(_seconds(stats.total_seconds))}<span class="gg-small">{_e(timing)}</span>', "time"),
    ]
    if stats.prefill_tokens_saved:
        cells.append(("Prefill tokens saved", _e(f"{stats.prefill_tokens_saved:,}"), "prefill"))
    grid = "".join(
        f'<div class="gg-stat" data-stat="{key}"><div class="gg-stat-k">{_e(k)}</div>'
        f'<div class="gg-stat-v">{v}</div></div>'
        for k, v, key in cells
    )
    return (
        '<header class="gg-head">'
        f'<div class="gg-title"><span class="gg-brand">grammar-guide</span>'
        f'<span class="gg-grammar">grammar <code>{_e(result.grammar_name or "?")}</code></span>{badge}</div>'
        f'<div class="gg-stats">{grid}</div>'
        "</header>"
    )


def _legend_html(rebuilt: Rebuilt, result: GuideResult) -> str:
    used = {seg.kind for seg in rebuilt.segments}
    shown = (result.events[seg.event] for seg in rebuilt.segments if seg.event is not None)
    restated = any(isinstance(event, Cut) and event.reason == "restated" for event in shown)
    items = []
    for kind in ("draft", "target", "forced", "healed", "repair", "completion", "violation", "cut"):
        dim = "" if kind in used else " gg-unused"
        items.append(
            f'<li class="gg-legend-item{dim}" data-kind="{kind}" title="{_e(_LEGEND_NOTES[kind])}">'
            f'<span class="gg-seg gg-{kind} gg-swatch"><span class="gg-t">abc</span></span>'
            f"<span>{_e(_LABELS[kind])}</span></li>"
        )
    if restated:
        items.append(
            '<li class="gg-legend-item" data-kind="restated" '
            'title="text the draft repeated; hover the marker to see it">'
            '<span class="gg-seg gg-cut gg-restated gg-swatch"><span class="gg-t gg-marker">↻ n</span></span>'
            "<span>Restated by the draft (n characters)</span></li>"
        )
    return '<ul class="gg-legend" aria-label="Legend">' + "".join(items) + "</ul>"


def _timeline_html(result: GuideResult, rebuilt: Rebuilt, prefix: str) -> str:
    if not result.events:
        return ""
    anchored = {seg.event for seg in rebuilt.segments if seg.event is not None and seg.piece == 0}
    rows = []
    for i, event in enumerate(result.events):
        ctx = rebuilt.contexts.get(i)
        where = f"{ctx.line}:{ctx.column}" if ctx else ""
        if isinstance(event, DraftSpan):
            kind, text, note = "draft", event.text, f"draft call {event.call}"
        elif isinstance(event, GrammarViolation):
            kind, text = "violation", event.rejected
            note = (
                "expected " + ", ".join(sorted(event.expected)[:6]) + (" …" if len(event.expected) > 6 else "")
                if event.expected
                else ""
            )
        elif isinstance(event, Correction):
            kind, text = event.source if event.source in _LABELS else "target", event.text
            note = f"{_change(event)}: {_why(event, ctx.violation if ctx else None)}"
            if event.seconds:
                note += f" · {_seconds(event.seconds)}"
        elif isinstance(event, Cut):
            kind, text, note = "cut", event.text, _cut_why(event)
        else:  # GrammarRefused: no text of its own (the stats' path says "fallback")
            continue
        label = _e(_SHORT[kind])
        if i in anchored and rebuilt.exact:
            label = f'<a href="#{prefix}-ev{i}">{label}</a>'
        rows.append(
            f'<li class="gg-ev" data-kind="{kind}"><span class="gg-dot gg-{kind}"></span>'
            f'<span class="gg-ev-kind">{label}</span><span class="gg-ev-at">{_e(where)}</span>'
            f'{_code(text, 80)}<span class="gg-ev-note">{_e(note)}</span></li>'
        )
    return (
        f'<details class="gg-timeline"><summary>Events ({len(result.events)})</summary>'
        f"<ol>{''.join(rows)}</ol></details>"
    )


_CSS = """
.gg{--ink:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--panel:#f6f8fa;
 --target:#0a58ca;--target-bg:#dbe9ff;--forced:#7e3ae0;--forced-bg:#efe6ff;--healed:#0f766e;--healed-bg:#d5f5ef;
 --repair:#1a7f37;--repair-bg:#dcf5e2;--bad:#c0222c;--bad-bg:#ffe3e3;--cut:#6e7781;--cut-bg:#eef1f4;
 color:var(--ink);background:var(--bg);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 border:1px solid var(--line);border-radius:10px;padding:18px 20px;max-width:980px;box-sizing:border-box}
.gg *{box-sizing:border-box}
.gg code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
.gg-title{display:flex;flex-wrap:wrap;align-items:center;gap:10px 14px;margin-bottom:12px}
.gg-brand{font-weight:700;font-size:16px;letter-spacing:.01em}
.gg-grammar{color:var(--muted)}
.gg-grammar code{color:var(--ink);background:var(--panel);padding:1px 6px;border-radius:4px}
.gg-badge{margin-left:auto;font-weight:600;font-size:13px;padding:3px 10px;border-radius:999px}
.gg-badge+.gg-badge{margin-left:6px}
.gg-ok{color:#116329;background:#dafbe1;border:1px solid #8fd19e}
.gg-bad{color:var(--bad);background:var(--bad-bg);border:1px solid #f5a5a8}
.gg-stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(118px,1fr));gap:8px}
.gg-stat{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:7px 10px}
.gg-stat-k{font-size:11px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}
.gg-stat-v{font-size:17px;font-weight:600;font-variant-numeric:tabular-nums}
.gg-small{display:block;font-size:11px;font-weight:400;color:var(--muted);line-height:1.35}
.gg-muted{color:var(--muted);font-weight:400}
.gg-prompt{margin:14px 0 0;color:var(--muted)}
.gg-prompt q{color:var(--ink)}
.gg-legend{list-style:none;display:flex;flex-wrap:wrap;gap:6px 16px;margin:14px 0 8px;padding:0;font-size:12.5px}
.gg-legend-item{display:flex;align-items:center;gap:6px;cursor:help}
.gg-legend-item.gg-unused{opacity:.45}
.gg-swatch{font:12px ui-monospace,Menlo,Consolas,monospace;pointer-events:none}
.gg-text{position:relative;font:14px/1.9 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;
 word-break:break-word;background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:12px 14px;
 margin:0}
.gg-warn{color:var(--bad);font-size:13px;margin:8px 0}
.gg-seg{position:relative;border-radius:3px}
.gg-seg[tabindex]{cursor:help;outline:none}
.gg-draft{color:var(--ink)}
.gg-target{background:var(--target-bg);box-shadow:inset 0 -2px 0 var(--target);color:#06357a}
.gg-forced{background:var(--forced-bg);box-shadow:inset 0 -2px 0 var(--forced);color:#4b1d96}
.gg-completion{background:#fff3d6;box-shadow:inset 0 -2px 0 #b7791f;color:#744210}
.gg-healed{background:var(--healed-bg);border-bottom:2px dotted var(--healed);color:#0b4f49}
.gg-repair{background:var(--repair-bg);box-shadow:inset 0 -2px 0 var(--repair);color:#0f5323}
.gg-violation{background:var(--bad-bg);color:var(--bad);text-decoration:line-through;text-decoration-thickness:2px;
 opacity:.9;font-size:.92em}
.gg-cut{background:var(--cut-bg);color:var(--cut);text-decoration:line-through;font-size:.92em}
.gg-blank .gg-t{min-width:.6em;display:inline-block}
.gg-restated{text-decoration:none;font:11px/1 system-ui,sans-serif;padding:1px 4px;margin:0 2px;
 border:1px dashed #afb8c1;
 vertical-align:1px}
.gg-seg[tabindex]:hover,.gg-seg[tabindex]:focus{outline:2px solid rgba(10,88,202,.45);outline-offset:1px}
.gg-seg:target{outline:2px solid #f0b400;outline-offset:2px}
.gg-tip{display:none;position:absolute;z-index:10;left:0;top:calc(100% + 6px);width:max-content;min-width:260px;
 max-width:400px;
 white-space:normal;word-break:normal;text-decoration:none;
 font:12.5px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:var(--ink);background:#fff;border:1px solid var(--line);border-radius:8px;padding:9px 11px;
 box-shadow:0 8px 24px rgba(31,35,40,.18);cursor:auto}
.gg-seg:hover>.gg-tip,.gg-seg:focus>.gg-tip,.gg-seg:focus-within>.gg-tip{display:block}
.gg-tip-title{display:block;font-weight:650;margin-bottom:5px}
.gg-row{display:flex;gap:8px;margin:2px 0}
.gg-k{flex:0 0 72px;color:var(--muted)}
.gg-v{flex:1;min-width:0;overflow-wrap:anywhere}
.gg-v .gg-code{display:inline-block;max-width:100%}
.gg-code{background:var(--panel);border:1px solid var(--line);border-radius:4px;padding:0 4px;white-space:pre-wrap}
.gg-term{display:inline-block;margin:0 4px 3px 0;padding:0 5px;border-radius:4px;background:#fff8c5;
 border:1px solid #e9d77a}
.gg-sub{display:block;margin:7px 0 3px;color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.05em}
.gg-alts{display:block}
.gg-alt{display:grid;grid-template-columns:110px 1fr 48px;align-items:center;gap:8px;margin:2px 0}
.gg-alt .gg-code{overflow:hidden;text-overflow:ellipsis;white-space:pre}
.gg-alt.gg-chosen .gg-code{border-color:var(--target);font-weight:650}
.gg-bar{height:7px;background:var(--panel);border-radius:4px;overflow:hidden}
.gg-fill{display:block;height:100%;background:var(--target);border-radius:4px}
.gg-p{text-align:right;font-variant-numeric:tabular-nums;color:var(--muted)}
.gg-timeline{margin-top:14px}
.gg-timeline summary{cursor:pointer;color:var(--muted);font-weight:600}
.gg-timeline ol{list-style:none;margin:8px 0 0;padding:0;font-size:12.5px}
.gg-ev{display:grid;grid-template-columns:12px 72px 56px minmax(0,3fr) minmax(0,2fr);gap:8px;align-items:baseline;
 padding:4px 2px;border-top:1px solid var(--panel)}
.gg-ev a{color:inherit}
.gg-ev-at{color:var(--muted);font-variant-numeric:tabular-nums}
.gg-ev-note{color:var(--muted)}
.gg-dot{width:10px;height:10px;border-radius:50%;display:inline-block;align-self:center}
.gg-dot.gg-draft{background:#8c959f}.gg-dot.gg-target{background:var(--target)}.gg-dot.gg-forced{background:var(--forced)}.gg-dot.gg-completion{background:#b7791f}
.gg-dot.gg-healed{background:var(--healed)}.gg-dot.gg-repair{background:var(--repair)}.gg-dot.gg-violation{background:var(--bad)}
.gg-dot.gg-cut{background:var(--cut)}
.gg-final{margin-top:10px}
.gg-final summary{cursor:pointer;color:var(--muted);font-weight:600}
.gg-final pre{white-space:pre-wrap;background:var(--panel);border:1px solid var(--line);border-radius:8px;
 padding:10px 14px;
 font:13px/1.6 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
"""

_PAGE_CSS = (
    "body{margin:0;padding:28px 16px;background:#eef1f5}body>.gg{margin:0 auto;box-shadow:0 1px 3px rgba(31,35,40,.08)}"
)


def _prefix(result: GuideResult) -> str:
    digest = hashlib.sha1(result.to_json(sort_keys=True).encode("utf-8")).hexdigest()
    return "gg" + digest[:10]


def render_fragment(result: GuideResult) -> str:
    """The trace as one ``<div>`` with its own scoped styles (for notebooks and embedding)."""
    rebuilt = rebuild(result.events, result.text)
    prefix = _prefix(result)
    warning = ""
    if not rebuilt.exact:
        warning = '<p class="gg-warn">The events do not rebuild the final text exactly; it is shown as is.</p>'
    prompt = ""
    if result.prompt:
        prompt = f'<p class="gg-prompt">Prompt: <q>{_e(_shorten(result.prompt, 400))}</q></p>'
    return (
        f'<div class="gg" id="{prefix}"><style>{_CSS}</style>'
        f"{_summary_html(result)}{prompt}{_legend_html(rebuilt, result)}{warning}"
        f'<pre class="gg-text" data-exact="{"true" if rebuilt.exact else "false"}">'
        f"{_segments_html(rebuilt, result, prefix)}</pre>"
        f"{_timeline_html(result, rebuilt, prefix)}"
        f'<details class="gg-final"><summary>Final text</summary><pre>{_e(result.text)}</pre></details>'
        "</div>"
    )


def render_html(result: GuideResult) -> str:
    """One self-contained page: inline CSS, no script, nothing loaded from the network."""
    title = f"grammar-guide · {result.grammar_name}" if result.grammar_name else "grammar-guide"
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "img-src data:; script-src 'none'; base-uri 'none'; form-action 'none'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_PAGE_CSS}</style></head>"
        f"<body>{render_fragment(result)}</body></html>\n"
    )
