"""The live scraper parses and stores only what is read (``Store.wanted``), and shows the same as without.

A LiveFeed whose parsers skip unread names and one handed every sample scrape
the same real HTTP target at the same fake times: health numbers, the
recognised flag, the detail's raw series and every Dashboard must be equal,
while only the first's store lacks the unread series.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any, cast

import pytest

from ptmon.monitor.live import LiveFeed
from ptmon.monitor.reads import is_read
from ptmon.monitor.recording.writer import Recorder, TappedStore
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.store import Store
from tests.bench.scale_targets import worker_page
from tests.monitor.sources.peers import http_server, send
from tests.support.clock import FakeClock

T0 = 1_000_000.0
_TIMES = re.compile(r"(scrape_seconds|seconds)=[^,)]+")
_SERIES = re.compile(r"(scrape_seconds|seconds|series)=[^,)]+")


class _Everything(Store):
    """A store kept like the live one (``keep=is_read``) that asks to be handed every sample."""

    @property
    def wanted(self) -> Callable[[str], bool] | None:
        return None


@contextmanager
def _target(page: Callable[[], str]) -> Iterator[str]:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send(h, page().encode(), "text/plain; version=0.0.4")

    with http_server(respond) as port:
        yield f"http://127.0.0.1:{port}/metrics"


def _feeds(url: str, clock: FakeClock) -> tuple[LiveFeed, LiveFeed]:
    settings = Settings(targets=(Target(name="w", url=url, role="rollout"),), interval_s=10.0)
    skipping = LiveFeed(settings, clock=clock)
    whole = LiveFeed(settings, clock=clock, store=_Everything(keep=is_read))
    return skipping, whole


def _same(a: object, b: object, *, strip: re.Pattern[str] = _TIMES) -> None:
    """Equal but for how long each scrape took (two scrapes of one page never take the same time)."""
    assert strip.sub("", repr(a)) == strip.sub("", repr(b))


async def _scrape_and_compare(page: Callable[[int], str], *, scrapes: int,
                              churn: bool = False) -> tuple[LiveFeed, LiveFeed]:
    """Both feeds over ``scrapes`` of ``page``; ``churn``: unread series leave the page, which only the
    whole store still counts and lists (their last point, until evicted), so health's series and the
    detail are not compared."""
    clock, tick = FakeClock(T0), [0]
    with _target(lambda: page(tick[0])) as url:
        skipping, whole = _feeds(url, clock)
        try:
            for k in range(scrapes):
                tick[0], clock.t = k, T0 + 10.0 * k
                await skipping.collect_once()
                await whole.collect_once()
                strip = _SERIES if churn else _TIMES
                _same(skipping.health(), whole.health(), strip=strip)
                for window in (60.0, 3600.0):
                    _same(await skipping.dashboard(window_s=window), await whole.dashboard(window_s=window),
                          strip=strip)
                    if not churn:
                        _same(skipping.detail("w", window_s=window), whole.detail("w", window_s=window))
        finally:
            await skipping.aclose()
            await whole.aclose()
    return skipping, whole


def _moving_worker() -> Callable[[int], str]:
    base = worker_page()

    def page(k: int) -> str:  # every value moves: the counters' and the unread gauges' alike
        return re.sub(r" (\d+\.\d+)$", lambda m: f" {float(m.group(1)) + k}", base, flags=re.M)
    return page


async def test_a_worker_page_shows_the_same_with_its_unread_series_skipped() -> None:
    skipping, whole = await _scrape_and_compare(_moving_worker(), scrapes=4)
    (h,) = skipping.health()
    assert (h.samples, h.series, h.recognised) == (1021, 1014, True)  # unread counted (a series twice: once)
    assert skipping.store.series_count("w") == 213 < whole.store.series_count("w") == 1014  # not stored
    assert skipping.store.series("w", "python_gc_objects_collected_total") == []
    detail = skipping.detail("w", window_s=60.0)
    assert detail is not None and detail.series_total == 1014
    assert {r.name for r in detail.series} >= {"python_gc_objects_collected_total", "posttrain_rollouts_total"}
    gc = next(r for r in detail.series if r.name == "python_gc_objects_collected_total")
    assert gc.at == T0 + 30.0  # the last scrape's time, its value as sent then


async def test_churning_read_and_unread_series_show_the_same() -> None:
    def page(k: int) -> str:
        return "".join(f'posttrain_rollouts_total{{env="e{j}",outcome="ok"}} {k + j}\n'
                       f'app_sessions_total{{id="s{j}"}} {k}\n' for j in range(k, k + 3))
    skipping, whole = await _scrape_and_compare(page, scrapes=5, churn=True)
    (h,) = skipping.health()
    # the read series stay counted after they left, as the whole store counts both kinds; unread: the page's
    assert (h.samples, h.series, h.recognised) == (6, 7 + 3, True)
    assert whole.health()[0].series == 7 + 7
    detail = skipping.detail("w", window_s=3600.0)
    assert detail is not None
    assert [r.labels for r in detail.series if r.name == "app_sessions_total"] == \
        [(("id", f"s{j}"),) for j in range(4, 7)]  # the last page's, not the ones gone


@pytest.mark.parametrize(("page", "recognised"), [
    ('node_cpu_seconds_total{cpu="0",mode="idle"} 12.5\nnode_load1 0.5\n', False),  # nothing ptmon reads
    ("posttrain_not_a_contract_metric 1\nnode_load1 0.5\n", True),  # ours, though no section reads it
    ("node_load1 0.5\nvllm:some_engine_gauge 2\n", True),
])
async def test_recognised_says_the_same_when_every_series_is_skipped(page: str, recognised: bool) -> None:
    skipping, _ = await _scrape_and_compare(lambda k: page, scrapes=2)
    (h,) = skipping.health()
    assert (h.samples, h.series, h.recognised) == (2, 2, recognised)
    assert skipping.store.series_count("w") == 0


def test_a_recording_store_is_handed_every_sample() -> None:
    store = TappedStore(cast(Recorder, cast(Any, object())), keep=is_read)
    assert store.wanted is None  # it records what it is not asked to keep
    assert Store(keep=is_read).wanted is is_read and Store().wanted is None
