"""Server-sent events, read from an HTTP response's lines (the WHATWG event-stream format)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

__all__ = ["ServerSentEvent", "aiter_sse"]


@dataclass(frozen=True)
class ServerSentEvent:
    """One event: its ``event`` name (``None`` when unnamed) and its ``data`` lines joined by newlines."""

    event: str | None
    data: str


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[ServerSentEvent]:
    """The events in a stream of lines (line endings already removed).

    Comment lines (``:``) and the ``id``/``retry`` fields are skipped; an event is dispatched at a
    blank line, and a last event without one is dispatched at the end of the stream.
    """
    event: str | None = None
    data: list[str] = []
    async for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            if data or event is not None:
                yield ServerSentEvent(event, "\n".join(data))
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield ServerSentEvent(event, "\n".join(data))
