"""A thread-safe least-recently-used map bounded by the total weight of its values (one per
value by default, or their bytes): the in-process caches of parsed metadata share it."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    def __init__(self, capacity: int, weigh: Callable[[V], int] = lambda value: 1) -> None:
        self.capacity = capacity
        self._weigh = weigh
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._weight = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            found = self._values.get(key)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            self._values.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: V) -> None:
        weight = self._weigh(value)
        with self._lock:
            previous = self._values.pop(key, None)
            if previous is not None:
                self._weight -= previous[1]
            self._values[key] = (value, weight)
            self._weight += weight
            while self._weight > self.capacity:  # a value heavier than the capacity is not kept
                _, (_, dropped) = self._values.popitem(last=False)
                self._weight -= dropped

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        return self._weight

    def __len__(self) -> int:
        return len(self._values)


# The process's caches by name, for reports of their sizes and hit rates (the service's metrics).
CACHES: dict[str, LRU] = {}


def named(name: str, capacity: int, weigh: Callable[[V], int] = lambda value: 1) -> LRU[V]:
    """A new cache, listed in :data:`CACHES` under ``name``."""
    CACHES[name] = found = LRU(capacity, weigh)
    return found


def megabytes(variable: str, default: int) -> int:
    """A cache's capacity in bytes: ``$variable`` megabytes, or ``default``."""
    text = os.environ.get(variable, "")
    return (int(text) if text.strip().isdigit() else default) << 20
