"""The seam between the data layer and everything that shows data.

A Feed hides where numbers come from (direct scrape, a Prometheus server, a
replay): the TUI and ``ptmon snapshot`` get one injected and only ever see
Dashboards. Tests inject a fake Feed with a fake clock.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ptmon.monitor.dashboard import Dashboard

__all__ = ["Feed"]


@runtime_checkable
class Feed(Protocol):
    async def start(self) -> None:
        """Begin collecting in the background (per-target schedules)."""

    async def dashboard(self, *, window_s: float) -> Dashboard:
        """The Dashboard at the feed's clock's now over ``window_s``, alerts included.

        Cheap and non-blocking: it reads what has been collected, it never waits on a target.
        """

    def set_interval(self, interval_s: float) -> None:
        """Change the collection interval (applies from each target's next scrape)."""

    def set_baseline_now(self) -> None:
        """Make the latest eval the intelligence-per-dollar baseline."""

    async def aclose(self) -> None:
        """Stop collecting and release connections. Idempotent."""
