"""Several sources as one: the endpoints a scraper polls and the files a file source tails, side by side.

The feed holds one ``Source``; ``ptmon watch metrics.jsonl host:8000`` needs
two kinds. Each part fills the same store under its own target names, so
the union is only the lifecycle and the health, in configuration order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.sources.base import Source

__all__ = ["Sources"]


class Sources:
    """``parts`` run together; ``health()`` lists their targets in the order of ``names``."""

    def __init__(self, parts: Sequence[Source], *, names: Sequence[str]) -> None:
        self._parts = tuple(parts)
        self._rank = {name: i for i, name in enumerate(names)}

    async def start(self) -> None:
        for part in self._parts:
            await part.start()

    async def scrape_once(self) -> None:
        await asyncio.gather(*(part.scrape_once() for part in self._parts))

    def health(self) -> tuple[TargetHealth, ...]:
        rows = [h for part in self._parts for h in part.health()]
        return tuple(sorted(rows, key=lambda h: self._rank.get(h.name, len(self._rank))))

    def set_interval(self, interval_s: float) -> None:
        for part in self._parts:
            part.set_interval(interval_s)

    async def aclose(self) -> None:
        for part in self._parts:
            await part.aclose()
