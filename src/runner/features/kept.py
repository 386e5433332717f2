"""A bounded map of derived values by their source text, newest kept: flat memory, reuse.

Why: routed traffic asks about the same documents again and again, batch after batch, and
what a feature derives from a context (tokens, indexes, TF-IDF vectors) is a pure function
of its text, so a kept value is exactly what rebuilding would give. Keys are the texts
themselves: Python caches a string's hash, so a lookup costs one hash of a new string
object and one comparison, never a tokenisation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    """At most `limit` values, least recently used dropped first.

    Parameters
    ----------
    limit : int
        How many values outlive the call that built them.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._values: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[Any], V]) -> V:
        """The kept value of `key`, else ``build(key)`` kept (the oldest dropped past
        `limit`)."""
        value = self._values.get(key)
        if value is None:
            value = build(key)
            self._put(key, value)
        else:
            self._values.move_to_end(key)
        return value

    def many(self, keys: Iterable[Hashable], build: Callable[[list], list[V]]) -> dict:
        """The value of every distinct key: kept ones, and the others built in one
        ``build(missing_keys)`` call (per-call overhead paid once) and kept.

        The returned dict holds this call's values even where `limit` is smaller than
        the number of distinct keys (then only the newest `limit` outlive the call).
        """
        distinct = list(dict.fromkeys(keys))
        found: dict[Hashable, V] = {}
        for key in distinct:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
                found[key] = value
        new = [key for key in distinct if key not in found]
        if new:
            for key, value in zip(new, build(new), strict=True):
                found[key] = value
                self._put(key, value)
        return found

    def _put(self, key: Hashable, value: V) -> None:
        self._values[key] = value
        if len(self._values) > self.limit:
            self._values.popitem(last=False)

    def clear(self) -> None:
        """Drop every value (benchmarks time a cold start)."""
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
