"""A gate that every draft call of a batch waits at, closed for a while by a rate limit.

When an API answers one request with 429 and ``Retry-After: 10``, the whole job must pause, not
just the row that got it: the other rows' requests would only collect 429s of their own. A
``RateGate`` is shared by every row of a job (``guide_many`` makes one). Providers find it with
``RateGate.current()`` (a context variable, so it reaches them through the guide loop without
an argument on every call): they ``await gate.wait()`` before each attempt of a call and
``gate.hold(seconds)`` when the API says to wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Iterator

__all__ = ["RateGate"]

_CURRENT: contextvars.ContextVar[RateGate | None] = contextvars.ContextVar("grammar_guide_rate_gate", default=None)


class RateGate:
    """Closed until a time: ``hold(seconds)`` closes it (never shortens a longer hold),
    ``wait()`` returns once it is open. ``holds`` counts the holds, ``held_seconds`` adds up how
    long the gate was asked to stay closed."""

    def __init__(self) -> None:
        self._opens_at = 0.0
        self.holds = 0
        self.held_seconds = 0.0

    def hold(self, seconds: float) -> None:
        """Close the gate for ``seconds`` from now (a longer hold already in place stands)."""
        until = time.monotonic() + max(0.0, seconds)
        self.holds += 1
        self.held_seconds += max(0.0, seconds)
        self._opens_at = max(self._opens_at, until)

    @property
    def closed_for(self) -> float:
        """Seconds until the gate opens (0 when open)."""
        return max(0.0, self._opens_at - time.monotonic())

    async def wait(self) -> None:
        """Return once the gate is open (a hold made while waiting is waited too)."""
        while (left := self.closed_for) > 0:
            await asyncio.sleep(left)

    @staticmethod
    def current() -> RateGate | None:
        """The gate of the job this code runs in (``None`` outside a batch job)."""
        return _CURRENT.get()

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Make this gate ``current()`` for the code run inside (and tasks created there)."""
        token = _CURRENT.set(self)
        try:
            yield
        finally:
            _CURRENT.reset(token)
