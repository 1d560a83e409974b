"""The poll schedule: a grid of slots per unit, spread over phases, that a late wake-up does not shift."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from ptmon.monitor.settings import Target
from ptmon.monitor.sources import Scraper
from ptmon.monitor.sources.poller import PHASES, next_slot, phase_of
from ptmon.monitor.store import Store

BODY = b"up 1\n"


def test_the_next_slot_is_one_interval_on_or_the_latest_one_passed() -> None:
    assert next_slot(10.0, interval_s=1.0, now=10.3) == 11.0  # on time: the next slot ahead
    assert next_slot(10.0, interval_s=1.0, now=9.5) == 11.0  # polled before its slot (the first poll)
    assert next_slot(10.0, interval_s=1.0, now=11.4) == 11.0  # ran long: the slot passed runs at once
    assert next_slot(10.0, interval_s=1.0, now=13.7) == 13.0  # three passed: the latest, never three at once
    assert next_slot(10.0, interval_s=2.0, now=10.0) == 12.0


def test_units_round_robin_over_the_phases() -> None:
    assert [phase_of(i) for i in range(PHASES + 2)] == [i / PHASES for i in range(PHASES)] + [0.0, 1 / PHASES]


def _targets(n: int) -> list[Target]:
    return [Target(name=f"w{i}", url=f"http://w{i}:9100/metrics") for i in range(n)]


async def test_late_wake_ups_do_not_push_later_polls_back() -> None:
    # Every sleep wakes 40 ms late (a loaded machine, a long Dashboard build on the event loop). Timed
    # start to start, each poll inherited the lateness of the last and a 0.2 s loop made 0.2/0.24 of its
    # scrapes; on a grid each poll is late by 40 ms at most and none is lost.
    starts: list[float] = []
    loop = asyncio.get_running_loop()

    def handler(request: httpx.Request) -> httpx.Response:
        starts.append(loop.time())
        return httpx.Response(200, content=BODY)

    async def late_sleep(delay: float) -> None:
        await asyncio.sleep(delay + 0.04)

    scraper = Scraper(_targets(1), store=Store(), interval_s=0.2, sleep=late_sleep,
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.start()
        await asyncio.sleep(2.05)
    lateness = [s - starts[0] - 0.2 * k for k, s in enumerate(starts)]
    assert len(starts) >= 10  # 2.05 s at 0.2 s: 11 slots; start to start at 0.24 s made 9
    assert max(lateness[1:]) < 0.1 and min(lateness[1:]) > 0.0


async def test_units_poll_at_once_then_on_their_phase_of_the_interval() -> None:
    firsts: dict[str, list[float]] = {}
    loop = asyncio.get_running_loop()

    def handler(request: httpx.Request) -> httpx.Response:
        firsts.setdefault(request.url.host, []).append(loop.time())
        return httpx.Response(200, content=BODY)

    scraper = Scraper(_targets(PHASES), store=Store(), interval_s=0.8, transport=httpx.MockTransport(handler))
    async with scraper:
        began = loop.time()
        await scraper.start()
        await asyncio.sleep(1.75)
    for i in range(PHASES):
        first, second = firsts[f"w{i}"][:2]
        assert first - began < 0.1  # every target's first scrape at once: data on screen from the start
        assert second - began == pytest.approx(0.8 + 0.1 * i, abs=0.06)  # then spread over the interval
