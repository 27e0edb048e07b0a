"""HTML rendering of a guided generation: a pure function of the result's events."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._trace import GuideResult


def render_fragment(result: GuideResult) -> str:
    """The trace as an HTML fragment (for notebooks)."""
    rows = [f"<pre>{html.escape(result.text)}</pre>", "<ol>"]
    for event in result.events:
        rows.append(f"<li>{html.escape(repr(event))}</li>")
    rows.append("</ol>")
    return "\n".join(rows)


def render_html(result: GuideResult) -> str:
    """One self-contained page."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>grammar-guide trace</title></head>"
        f"<body>{render_fragment(result)}</body></html>"
    )
