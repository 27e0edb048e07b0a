"""The slots of a model's concurrent calls: each decodes with a KV cache, guesses and a sampler of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .kv_cache import KVCache
    from .lookup import TokenLookup
    from .sampling import Sampler

__all__ = ["Slot", "SlotPool"]


@dataclass(eq=False)
class Slot:
    """What one call decodes with: a KV cache, token guesses and a sampler."""

    kv: KVCache
    lookup: TokenLookup | None
    sampler: Sampler
    busy: bool = False
    #: Who last held it step by step (``SlotPool.hold``'s ``owner``), if anyone.
    owner: object = None


class SlotPool:
    """Up to ``size`` slots, made as concurrent calls need them (``make(i)`` makes the ``i``-th,
    after ``first``) and kept for later calls."""

    def __init__(self, first: Slot, size: int, make: Callable[[int], Slot]) -> None:
        self.size = size
        self._make = make
        self._slots = [first]
        self._free = threading.Condition()

    def __len__(self) -> int:
        return len(self._slots)

    def __iter__(self) -> Iterator[Slot]:
        """The slots made so far."""
        return iter(list(self._slots))

    @property
    def first(self) -> Slot:
        """The slot a call gets when no other is busy."""
        return self._slots[0]

    def _choose(self, context: list[int], owner: object) -> Slot:
        free = [s for s in self._slots if not s.busy]
        if owner is not None:
            mine = [s for s in free if s.owner == owner] or [s for s in free if s.owner is None]
            if mine:
                return max(mine, key=lambda s: s.kv.common_prefix(context))
            if len(self._slots) < self.size:
                return self._grow()
        if free:
            return max(free, key=lambda s: s.kv.common_prefix(context))
        return self._grow()

    def _grow(self) -> Slot:
        slot = self._make(len(self._slots))
        self._slots.append(slot)
        return slot

    @contextmanager
    def hold(self, context: list[int], owner: object = None) -> Iterator[Slot]:
        """A free slot for one call or step, held until it ends; a new one while fewer than
        ``size`` exist, else wait for one.

        Without an ``owner``: the free slot whose cache holds most of ``context``. With one (a
        key such as a prompt, for a caller that takes a slot step by step, between which other
        callers may take it): the free slot that owner last held, else one nobody owns, else a
        new one (sparing the caches other owners will come back to), else the free slot whose
        cache holds most of ``context``."""
        with self._free:
            self._free.wait_for(lambda: len(self._slots) < self.size or any(not s.busy for s in self._slots))
            slot = self._choose(context, owner)
            if owner is not None:
                slot.owner = owner
            slot.busy = True
        try:
            with slot.kv.lock:  # a draft sharing the cache waits for the call to end
                yield slot
        finally:
            with self._free:
                slot.busy = False
                self._free.notify()
