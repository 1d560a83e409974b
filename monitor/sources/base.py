"""The interface every data source offers the feed.

A direct scraper, a Prometheus-API reader and a replay all fill a ``Store``
and report per-target health; the feed builds Dashboards from the store and
cannot tell them apart. That is what lets the TUI stay ignorant of HTTP.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ptmon.monitor.dashboard import TargetHealth

__all__ = ["Source"]


@runtime_checkable
class Source(Protocol):
    """Something that collects samples into a ``Store`` on its own schedule."""

    async def start(self) -> None:
        """Begin collecting in the background; returns at once."""

    async def scrape_once(self) -> None:
        """Collect one round from every target now and return when it has been stored."""

    def health(self) -> tuple[TargetHealth, ...]:
        """Each target's health as last seen, in configuration order."""

    def set_interval(self, interval_s: float) -> None:
        """Change the collection interval; applies from each target's next collection."""

    async def aclose(self) -> None:
        """Stop collecting and release connections. Idempotent."""
