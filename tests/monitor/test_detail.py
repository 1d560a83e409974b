"""build_detail and ScrapeLog: one target's numbers from hand-made samples, checked by hand."""

from __future__ import annotations

import gc

import pytest

from ptmon.exporters import schema
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.detail import ScrapeLog, ScrapeRecord, build_detail, detail_from_health
from ptmon.monitor.parse import Sample
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.store import Store

T0 = 1000.0
ROLLOUTS = schema.ROLLOUTS.name
TOKENS = schema.ROLLOUT_TOKENS.name


def _round(i: int) -> list[Sample]:
    """Scrape i (10 s apart): math finishes 2 ok rollouts of 100 tokens each scrape, code 1 ok and,
    at scrapes 3 and 4, one error each; after scrape 4 the worker restarts (its counters go back to 0)."""
    k = i if i <= 4 else i - 5  # scrapes since the (re)start
    code_errors = (0, 0, 0, 1, 2, 0, 0, 0)[i]
    env = lambda e, o: {schema.LABEL_ENV: e, schema.LABEL_OUTCOME: o}  # noqa: E731
    return [
        Sample(ROLLOUTS, env("math", "ok"), 2.0 * k),
        Sample(ROLLOUTS, env("code", "ok"), 1.0 * k),
        Sample(ROLLOUTS, env("code", "error"), float(code_errors)),
        Sample(TOKENS, {schema.LABEL_ENV: "math"}, 200.0 * k),
        Sample(TOKENS, {schema.LABEL_ENV: "code"}, 50.0 * k),
        Sample(schema.ROLLOUT_REWARD.count, {schema.LABEL_ENV: "math"}, 2.0 * k),
        Sample(schema.ROLLOUT_REWARD_POSITIVE.name, {schema.LABEL_ENV: "math"}, 1.5 * k),
        Sample(schema.ROLLOUT_REWARD_NEGATIVE.name, {schema.LABEL_ENV: "math"}, 0.5 * k),
        Sample("some_other_gauge", {"x": "[bold]y[/bold]"}, float("nan") if i == 7 else 0.25),
    ]


@pytest.fixture
def stored() -> Store:
    store = Store()
    for i in range(8):  # scrapes at T0 .. T0+70
        store.ingest("w", T0 + 10 * i, _round(i))
    return store


SETTINGS = Settings(targets=(Target("w", "http://w/metrics", role="rollout"),), interval_s=10.0, timeout_s=2.0)


def _health(up: bool = True, error: str | None = None) -> TargetHealth:
    return TargetHealth("w", "http://w/metrics", "rollout", up, last_scrape=T0 + 70, last_success=T0 + 70,
                        error=error)


def test_env_rates_outcomes_and_raw_series_from_the_store(stored: Store) -> None:
    # window (T0+10, T0+40]: points at 20, 30, 40 (scrapes 2-4, before the restart); PromQL's rate
    # extrapolates the 20 s they span to the 30 s window: math 4 more rollouts -> 6 / 30 s = 0.2/s
    d = build_detail(stored, [_health()], SETTINGS, name="w", now=T0 + 40, window_s=30.0)
    assert d is not None
    envs = {e.env: e for e in d.envs}
    assert set(envs) == {"code", "math"}
    assert envs["math"].rollouts_per_s == pytest.approx(0.2)
    assert envs["math"].tokens_per_s == pytest.approx(20.0)
    assert envs["math"].mean_reward == pytest.approx((1.5 - 0.5) / 2)  # (Δpos - Δneg) / Δcount
    assert envs["math"].rollouts == 4.0  # counted whole, not extrapolated
    assert envs["code"].rollouts == 2.0 + 2.0  # 2 ok, 2 errors
    assert envs["code"].errors_per_s is not None and envs["code"].errors_per_s > 0
    assert envs["math"].errors_per_s == 0.0  # counted, no error series: a known zero

    d = build_detail(stored, [_health()], SETTINGS, name="w", now=T0 + 70, window_s=30.0)
    assert d is not None
    outcomes = {o.outcome: o for o in d.outcomes}
    # since start, across the restart: math ok 8 before it + 4 after; the code errors 2 before it
    assert outcomes["ok"].total == 8 + 4 + 4 + 2
    assert outcomes["error"].total == 2.0
    assert outcomes["ok"].in_window == 4 + 2  # (T0+40, T0+70]: 50, 60, 70 after the restart
    raw = {(s.name, s.labels): s.value for s in d.series}
    assert raw[(ROLLOUTS, (("env", "math"), ("outcome", "ok")))] == 4.0
    assert d.series_total == 9 and len(d.series) == 9
    assert d.good_scrapes_in_window == 3


def test_errors_are_each_step_of_an_error_counter_with_its_time(stored: Store) -> None:
    d = build_detail(stored, [_health()], SETTINGS, name="w", now=T0 + 70, window_s=70.0)
    assert d is not None
    assert [(e.at, e.what, e.count) for e in d.errors] == [
        (T0 + 30, "rollout error (code)", 1.0), (T0 + 40, "rollout error (code)", 1.0)]


def test_a_down_worker_shows_no_rates_but_its_counts_and_its_failed_scrapes() -> None:
    store = Store()
    for i in range(3):
        store.ingest("w", T0 + 10 * i, _round(i))
    log = ScrapeLog()
    log.observe([TargetHealth("w", "u", "rollout", True, last_scrape=T0 + 20, last_success=T0 + 20,
                              scrape_seconds=0.01, samples=9)])
    for k in (3, 4):
        down = TargetHealth("w", "u", "rollout", False, last_scrape=T0 + 10 * k, last_success=T0 + 20,
                            error="connection refused")
        log.observe([down, down])  # seen twice: recorded once
    d = build_detail(store, [down], SETTINGS, name="w", now=T0 + 40, window_s=60.0, scrapes=log.of("w"))
    assert d is not None
    assert d.health.error == "connection refused" and d.health.up is False
    assert all(e.rollouts_per_s is None and e.tokens_per_s is None for e in d.envs)
    assert {o.outcome: o.total for o in d.outcomes}["ok"] == 2 * 2 + 2
    assert [(r.at, r.ok, r.age_s) for r in d.scrapes] == [(T0 + 20, True, 0.0), (T0 + 30, False, 10.0),
                                                          (T0 + 40, False, 20.0)]
    assert d.failed_scrapes_in_window == 2
    assert d.last_failure is not None and d.last_failure.at == T0 + 40
    assert [e.what for e in d.errors] == ["scrape failed: connection refused"] * 2


def test_the_scrape_log_leaves_nothing_for_the_garbage_collector_to_walk() -> None:
    """600 attempts a target are kept; as objects on the collector's lists, 256 targets' records made every
    full collection walk 154,000 more of them by minute 10. Held as plain tuples they are untracked."""
    log = ScrapeLog(keep=100)
    gc.collect()
    before = len(gc.get_objects())
    for k in range(100):
        log.observe([TargetHealth(f"w{i}", "u", "rollout", k % 7 != 3, last_scrape=T0 + k, last_success=T0 + k - k % 2,
                                  scrape_seconds=0.01, samples=9, error=None if k % 7 != 3 else "connection refused")
                     for i in range(20)])
    gc.collect()
    assert len(gc.get_objects()) - before < 200  # 2,000 records held: the old log left all 2,000 tracked
    records = log.of("w3")
    assert len(records) == 100 and isinstance(records[0], ScrapeRecord)
    assert (records[3].at, records[3].ok, records[3].error, records[3].age_s) == (T0 + 3, False,
                                                                                  "connection refused", 1.0)
    assert (records[4].at, records[4].ok, records[4].seconds, records[4].samples) == (T0 + 4, True, 0.01, 9)


def test_an_unknown_name_has_no_detail_and_health_alone_gives_one(stored: Store) -> None:
    assert build_detail(stored, [_health()], SETTINGS, name="nobody", now=T0 + 70, window_s=30.0) is None
    d = detail_from_health(_health(False, error="boom"), now=T0 + 70, window_s=30.0)
    assert d.health.error == "boom" and d.series == () and d.envs == ()


async def test_the_feeds_detail_agrees_with_its_last_dashboard_while_scrapes_go_on() -> None:
    from ptmon.exporters.rollout import RolloutExporter
    from ptmon.exporters.serve import serve
    from ptmon.monitor.live import LiveFeed
    from tests.support.clock import FakeClock

    clock = FakeClock(T0)
    worker = RolloutExporter(clock=clock)
    server = serve(worker.registry)
    feed = LiveFeed(Settings(targets=(Target("w", server.url, role="rollout"),), interval_s=10.0, timeout_s=2.0),
                    clock=clock)

    async def scrape(n: int) -> None:
        for _ in range(n):
            clock.t += 10
            for _ in range(1 + int(clock.t) % 3):
                worker.record_rollout(env="math", tokens=10)
            await feed.collect_once()

    try:
        await scrape(4)
        assert feed.detail("w", window_s=30.0) is not None  # asked for: built with the next Dashboards
        d = await feed.dashboard(window_s=30.0)
        await scrape(2)  # the store moves on; the screen shows the Dashboard above until the next poll
        detail = feed.detail("w", window_s=30.0)
        assert detail is not None and detail.now == d.now and detail.worker == d.workers[0]
        assert detail.envs[0].rollouts_per_s == d.workers[0].rollouts_per_s
        d = await feed.dashboard(window_s=30.0)
        detail = feed.detail("w", window_s=30.0)
        assert detail is not None and detail.now == d.now == clock.t
    finally:
        await feed.aclose()
        server.close()
