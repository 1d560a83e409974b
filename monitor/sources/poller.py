"""The shape both sources share: a loop per unit, a cadence, a backoff, one locked poll at a time.

The scraper polls each target on its own loop; the Prometheus source polls
one server. Everything else about polling is the same and lives here once:
start/aclose, ``set_interval``, a fixed grid of slots per unit (as Prometheus keeps, so a late
wake-up never pushes every later poll back) spread over ``PHASES`` offsets, backoff while a
unit fails, a poll that never overlaps the previous one of the same unit and
never lets a bug end its loop, the client-or-reason of each TLS setting, and
the fetch deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Self, TypeVar

import httpx

from ptmon.monitor.settings import effective_timeout
from ptmon.monitor.sources.errors import FetchError, short

__all__ = ["Poller", "PollState", "TLSKey", "backoff_delay", "check_polling", "next_slot", "phase_of",
           "MAX_BACKOFF_S", "PHASES"]

MAX_BACKOFF_S = 30.0
# Units are spread over this many offsets within the interval: 256 targets polled in the same instant queue
# 256 fetches and parses behind each other (and behind a Dashboard build), and the last ones outlived their
# deadline; in eight groups each burst is an eighth of that.
PHASES = 8
TLSKey = tuple[bool, str | None]  # (verify_tls, ca_file): httpx fixes TLS settings per client


def check_polling(*, interval_s: float, timeout_s: float | None, max_body_bytes: int) -> None:
    """The options every source polls with, refused when they cannot work (a programming error: config
    errors are caught earlier, with the file and key)."""
    _check_interval(interval_s)
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes!r}")


def _check_interval(interval_s: float) -> None:
    if not interval_s > 0:
        raise ValueError(f"interval_s must be positive, got {interval_s!r}")


def backoff_delay(interval_s: float, failures: int, *, max_backoff_s: float = MAX_BACKOFF_S) -> float:
    """Seconds to wait before the next poll after ``failures`` consecutive failures.

    The first failure retries at the normal pace (a blip recovers at once),
    then the wait doubles: interval x 2^(n-1), capped at ``max_backoff_s``
    (or the interval itself when that is longer), so a dead target costs
    little and is still noticed coming back within the cap.
    """
    if failures <= 0:
        return interval_s
    return min(max(max_backoff_s, interval_s), interval_s * 2.0 ** min(failures - 1, 32))


def next_slot(due: float, *, interval_s: float, now: float) -> float:
    """When the poll after the one due at ``due`` is due: the grid ``due + k x interval``, never drifting.

    The next slot when it is still ahead; when it has passed (a poll, or the event loop, ran long), the
    latest slot passed, so the poll runs at once (never overlapped) and the grid is kept: one late wake-up
    delays one poll, not every later one, which start-to-start timing did (each lost the lateness of the
    last, and the losses added up to missed scrapes).
    """
    behind = int((now - due) // interval_s)
    return due + max(1, behind) * interval_s


def phase_of(index: int) -> float:
    """The offset of unit ``index`` within the interval, as a fraction of it (units round-robin over PHASES)."""
    return (index % PHASES) / PHASES


@dataclass(slots=True, kw_only=True)
class PollState:
    """What one polled unit (a target, a server) holds between polls: its lock and its last outcome."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    failures: int = 0  # consecutive failed polls, for backoff
    up: bool | None = None
    error: str | None = None
    last_attempt: float | None = None
    seconds: float | None = None

    def failed(self, error: str, *, at: float, seconds: float | None) -> None:
        self.up, self.error = False, error
        self.failures += 1
        self.last_attempt, self.seconds = at, seconds

    def answered(self, *, at: float, seconds: float) -> None:
        self.up, self.error = True, None
        self.failures = 0
        self.last_attempt, self.seconds = at, seconds


S = TypeVar("S", bound=PollState)


class Poller(Generic[S]):
    """A ``Source``'s lifecycle and schedule; a subclass says what its units are and how one is polled.

    ``_units()`` lists what is polled (each on its own loop); ``_poll_locked``
    polls one (called under the unit's lock); an exception escaping it is a
    bug, reported on that unit as an internal error through ``PollState.failed``.
    """

    def __init__(self, *, interval_s: float, timeout_s: float | None, max_body_bytes: int,
                 clock: Callable[[], float], sleep: Callable[[float], Awaitable[object]]) -> None:
        check_polling(interval_s=interval_s, timeout_s=timeout_s, max_body_bytes=max_body_bytes)
        self._interval = float(interval_s)
        self._timeout = timeout_s
        self._max_body = max_body_bytes
        self._clock = clock
        self._sleep = sleep
        self._clients: dict[TLSKey, httpx.AsyncClient | str] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._naps: set[asyncio.Future[object]] = set()  # each loop's wait for its next poll
        self._closed = False

    # -- what a subclass supplies ------------------------------------------------

    def _units(self) -> Sequence[tuple[str, S]]:
        """(task name, state) of each unit polled on its own loop."""
        raise NotImplementedError

    async def _poll_locked(self, unit: S) -> None:
        raise NotImplementedError

    # -- Source ----------------------------------------------------------------

    async def start(self) -> None:
        self._check_open()
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._loop(unit, phase=phase_of(i)), name=name)
                           for i, (name, unit) in enumerate(self._units())]

    async def scrape_once(self) -> None:
        self._check_open()
        await asyncio.gather(*(self._poll(unit) for _, unit in self._units()))

    def set_interval(self, interval_s: float) -> None:
        """The new interval, applied at once: every loop's wait is measured again with it (a loop that
        was told to wait a minute and is now due polls now, not when the minute is up)."""
        _check_interval(interval_s)
        if float(interval_s) == self._interval:
            return
        self._interval = float(interval_s)
        for nap in self._naps:
            nap.cancel()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in self._clients.values():
            if isinstance(client, httpx.AsyncClient):
                await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- for subclasses ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")

    def _deadline(self) -> float:
        """Seconds one fetch may take at the current interval."""
        return effective_timeout(self._interval, self._timeout)

    def _client(self, key: TLSKey) -> httpx.AsyncClient:
        """The client for one TLS setting; a setting that has none (a bad CA file) fails the fetch with why."""
        client = self._clients[key]
        if isinstance(client, str):
            raise FetchError(client)
        return client

    async def _loop(self, unit: S, *, phase: float) -> None:
        """One unit's loop: poll at once, then on its grid (offset ``phase`` of the interval), or after the
        backoff while failing (the grid starts again from the first poll that answers)."""
        loop = asyncio.get_running_loop()
        due = loop.time() + phase * self._interval  # the first poll runs now, its grid from its phase
        while True:
            await self._poll(unit)
            ended = now = loop.time()
            while await self._nap(self._delay(unit, due=due, ended=ended, now=now)):
                now = loop.time()  # the interval changed while waiting: measure the wait again
            due = loop.time() if unit.failures else next_slot(due, interval_s=self._interval, now=now)

    def _delay(self, unit: S, *, due: float, ended: float, now: float) -> float:
        if unit.failures:
            return max(0.0, backoff_delay(self._interval, unit.failures) - (now - ended))
        return max(0.0, next_slot(due, interval_s=self._interval, now=now) - now)

    async def _nap(self, delay: float) -> bool:
        """Sleep ``delay`` (the injected sleep); True when ``set_interval`` cut it short."""
        nap = asyncio.ensure_future(self._sleep(delay))
        self._naps.add(nap)
        try:
            await asyncio.wait((nap,))
        finally:
            self._naps.discard(nap)
            nap.cancel()  # when this loop itself is cancelled (aclose) mid-nap
        if nap.cancelled():
            return True
        nap.result()  # a sleep that raised ends the loop, as before
        return False

    async def _poll(self, unit: S) -> None:
        async with unit.lock:
            try:
                await self._poll_locked(unit)
            except Exception as exc:  # a bug here must not end the unit's loop
                unit.failed(short(f"internal error: {type(exc).__name__}: {exc}"), at=self._clock(), seconds=None)
