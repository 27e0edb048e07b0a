"""The slots of a target's concurrent calls: each decodes with a KV cache, guesses and a sampler of its own."""

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

    @contextmanager
    def hold(self, context: list[int]) -> Iterator[Slot]:
        """A free slot for one call (the one whose cache holds most of ``context``), held until
        the call ends; a new one while fewer than ``size`` exist, else wait for one."""
        with self._free:
            self._free.wait_for(lambda: len(self._slots) < self.size or any(not s.busy for s in self._slots))
            free = [s for s in self._slots if not s.busy]
            if free:
                slot = max(free, key=lambda s: s.kv.common_prefix(context))
            else:
                slot = self._make(len(self._slots))
                self._slots.append(slot)
            slot.busy = True
        try:
            with slot.kv.lock:  # a draft sharing the cache waits for the call to end
                yield slot
        finally:
            with self._free:
                slot.busy = False
                self._free.notify()
