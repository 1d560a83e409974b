"""Running totals reported by someone else, turned into counter increments.

Frameworks log cumulative numbers (TRL's ``num_tokens``, verl's
``fully_async/count/dropped_stale_samples``); a Prometheus counter must be
*added to*. ``Cumulative.advance(total)`` returns how much to add: the
difference from the previous total, the whole total on the first report
(the counter counts what the source has counted, as ``rate()`` sees a new
series), and the whole total again when it falls (the source restarted from
zero, as Prometheus treats a counter reset).
"""

from __future__ import annotations

import threading

from ptmon.exporters import _build

__all__ = ["Cumulative"]


class Cumulative:
    """The last total seen; thread-safe."""

    __slots__ = ("_last", "_lock", "__weakref__")

    def __init__(self) -> None:
        self._last: float | None = None
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")

    def advance(self, total: float) -> float:
        """The increment that brings a counter from the previous total to ``total`` (>= 0)."""
        with self._lock:
            last, self._last = self._last, total
        if last is None or total < last:
            return total
        return total - last
