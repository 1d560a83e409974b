"""The one fake clock of the test suite.

Inject it wherever ptmon takes a clock (an exporter's ``clock=``/``wall_clock=``,
a LiveFeed's or a Scraper's ``clock=``, the app's): one clock can drive both
sides of a scrape, so the numbers a test records are exactly the numbers the
Dashboard must show. Never sleep for time to pass: set or advance it.
"""

from __future__ import annotations

__all__ = ["FakeClock"]


class FakeClock:
    """A clock that only moves when the test moves it: ``clock.now = t`` (or ``clock.t``), ``advance(s)``."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    @property
    def t(self) -> float:
        return self.now

    @t.setter
    def t(self, value: float) -> None:
        self.now = value
