"""LiveFeed end to end: the real exporters served on loopback, scraped over real HTTP.

A fake clock drives both sides (the exporters' GPU meters and step clock, and
the feed's scrape stamps), so the numbers the test records are the numbers
the Dashboard must show.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import pytest

from ptmon.exporters import schema
from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.schema import ROLLOUT_REWARD
from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor.derive import histogram_quantile, histogram_sum_estimate, parse_le
from ptmon.monitor.feed import Feed
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from tests.monitor.helpers import T0, Clock, scrape_one_worker

SYNC_DURATIONS = (0.5, 1.0, 1.5, 1.8, 2.0)  # one sync every 6 rounds, at rounds 6, 12, .., 30


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def loop_of_exporters():
    clock = Clock(T0)
    ident = dict(run="run-7", model="qwen-7b", algorithm="grpo")
    trainer = TrainerExporter(**ident, gpus=8, gpu_hour_price=3.0, clock=clock, wall_clock=clock)
    w1 = RolloutExporter(**ident, gpus=4, gpu_hour_price=2.0, clock=clock)
    w2 = RolloutExporter(**ident, gpus=4, gpu_hour_price=2.0, clock=clock)
    ev = EvalExporter(**ident, gpus=1, gpu_hour_price=3.0, clock=clock)
    servers = {name: serve(e.registry) for name, e in
               (("trainer", trainer), ("w1", w1), ("w2", w2), ("eval", ev))}
    try:
        yield clock, trainer, w1, w2, ev, servers
    finally:
        for s in servers.values():
            s.close()


async def run_loop(feed: LiveFeed, clock: Clock, trainer, w1, w2, ev, *, rounds: int = 30) -> None:
    """Round i ends at T0 + 10 i: 4 steps of 2 s, maybe a weight sync, 20 + 10 rollouts, maybe an eval."""
    version = 0
    ev.record_eval(benchmark="gsm8k", score=0.40, policy_version=0, samples=1319)
    w1.set_policy_version(0)
    w2.set_policy_version(0)
    await feed.collect_once()
    for i in range(1, rounds + 1):
        for _ in range(4):
            with trainer.step():
                clock.t += 2.0
            trainer.record(tokens=4096, loss=0.3)
        if i % 6 == 0:
            version += 1
            with trainer.weight_sync(version=version, nbytes=2e9):
                clock.t += SYNC_DURATIONS[version - 1]
            w1.set_policy_version(version)  # w1 loads every version; w2 stays one behind
            w2.set_policy_version(version - 1)
        clock.t = T0 + 10 * i
        for _ in range(20):
            w1.record_rollout(env="math", tokens=100, reward=0.5, seconds=1.0)
        for _ in range(10):
            w2.record_rollout(env="code", tokens=300, reward=-0.5, seconds=3.0)
        if i in (10, 20):
            ev.record_eval(benchmark="gsm8k", score=0.40 + 0.05 * i / 10, policy_version=version, samples=1319)
        await feed.collect_once()


async def test_round_trip_over_real_http_gives_the_recorded_numbers(loop_of_exporters) -> None:
    clock, trainer, w1, w2, ev, servers = loop_of_exporters
    dead = f"http://127.0.0.1:{closed_port()}/metrics"
    targets = tuple(Target(name=n, url=s.url) for n, s in servers.items()) + (Target(name="dead", url=dead),)
    feed = LiveFeed(Settings(targets=targets, interval_s=10.0, timeout_s=2.0), clock=clock)
    assert isinstance(feed, Feed)
    try:
        await run_loop(feed, clock, trainer, w1, w2, ev)
        d = await feed.dashboard(window_s=300.0)
    finally:
        await feed.aclose()

    assert d.now == T0 + 300
    health = {t.name: t for t in d.targets}
    assert [health[n].up for n in ("trainer", "w1", "w2", "eval", "dead")] == [True, True, True, True, False]
    assert health["dead"].error  # says why
    assert {n: health[n].role for n in servers} == {"trainer": "trainer", "w1": "rollout", "w2": "rollout",
                                                    "eval": "eval"}
    assert (d.run, d.model, d.algorithm) == ("run-7", "qwen-7b", "grpo")

    # Rollouts: 20 + 10 per 10 s. The window (1000, 1300] holds scrapes 1010..1300: 29 rounds of
    # increase over 290 s sampled, extrapolated 10 s to the range start: exactly 3/s.
    assert d.rollout_rate_per_s == pytest.approx(3.0)
    assert d.rollout_tokens_per_s == pytest.approx(20 * 100 / 10 + 10 * 300 / 10)
    rows = {w.name: w for w in d.workers}
    assert rows["w1"].rollouts_per_s == pytest.approx(2.0)
    assert rows["w2"].rollouts_per_s == pytest.approx(1.0)
    # prometheus_client exposes no _sum for a histogram with negative buckets (the reward's default
    # buckets start at -1); the exporters' signed reward-sum counters give the exact mean (the bucket
    # estimate used before read 0.45 and -0.75, the midpoints of (0.4, 0.5] and (-1, -0.5]).
    assert rows["w1"].mean_reward == 0.5
    assert rows["w2"].mean_reward == -0.5
    assert d.rollout_error_rate_per_s == 0.0
    assert d.rollout_rate_median_10m == pytest.approx(3.0)

    # Trainer: 4 steps of 2 s per 10 s; the last step ended at 1298 + sync.
    assert d.steps_per_s == pytest.approx(0.4)
    assert d.step_seconds == pytest.approx(2.0)
    assert d.step_seconds_median == pytest.approx(1.0 + 1.5 * 0.5)  # all in (1, 2.5]
    assert d.trainer_tokens_per_s == pytest.approx(4 * 4096 / 10)
    assert d.loss == pytest.approx(0.3)
    assert 0 < d.seconds_since_last_step <= 2.0

    # Weight sync: 5 syncs in the window, each one its own scrape interval.
    assert d.weight_sync_count == 5
    assert [v for _, v in d.weight_sync_series] == pytest.approx(list(SYNC_DURATIONS))
    assert d.weight_sync_last_s == pytest.approx(2.0)
    assert d.weight_sync_max_s == pytest.approx(2.0)
    bounds = (*schema.WEIGHT_SYNC_SECONDS.buckets, float("inf"))  # the exporter's default buckets
    recorded = [(b, sum(1 for x in SYNC_DURATIONS if x <= b)) for b in bounds]
    lo, hi = min(SYNC_DURATIONS), max(SYNC_DURATIONS)  # one sync per scrape: held to what was seen
    assert d.weight_sync_p50_s == pytest.approx(min(max(histogram_quantile(0.5, recorded), lo), hi))
    assert d.weight_sync_p99_s == pytest.approx(min(max(histogram_quantile(0.99, recorded), lo), hi))
    assert d.weight_sync_failures == 0
    # The bytes counter is still 0 at the first scrape in the window, so PromQL does not extrapolate
    # before that zero point: rate = raw increase / 300 s.
    assert d.weight_sync_bytes_per_s == pytest.approx(5 * 2e9 / 300)

    # Staleness: trainer at 5, w1 at 5, w2 at 4.
    assert d.policy_version == 5
    assert (d.staleness_max, d.staleness_mean) == (1, 0.5)

    # Cost: 8 GPUs x $3 + 2 x 4 GPUs x $2 + 1 GPU x $3 = $43/h, since T0.
    assert d.burn_dollars_per_hour == pytest.approx(43.0)
    assert d.spend_dollars == pytest.approx(43.0 * 300 / 3600)
    assert dict(d.spend_by_role) == pytest.approx({"trainer": 2.0, "rollout": 16 * 300 / 3600, "eval": 0.25})
    assert d.dollars_per_million_rollout_tokens == pytest.approx(43.0 / (500 * 3600) * 1e6)

    # Evals at 1000, 1100, 1200: 0.40, 0.45, 0.50 at spend 0, 43 x 100/3600, 43 x 200/3600.
    assert [(p.timestamp, p.score) for p in d.eval_curve] == [(1000.0, 0.40), (1100.0, 0.45), (1200.0, 0.50)]
    h = 43.0 * 100 / 3600
    assert [p.spend_dollars for p in d.eval_curve] == pytest.approx([0.0, h, 2 * h])
    assert d.eval_samples == 1319
    assert d.ipd_points_per_kilodollar == pytest.approx(0.10 / (43.0 * 300 / 3600) * 1000)
    assert d.marginal_ipd_points_per_kilodollar == pytest.approx(0.05 / h * 1000)
    assert d.dollars_per_next_point == pytest.approx(0.01 * h / 0.05)  # the default point: 0.01 of score

    assert [(a.name, a.subject) for a in d.alerts] == [("target_down", "dead")]


async def test_baseline_now_and_alert_since_across_dashboards(loop_of_exporters) -> None:
    clock, trainer, w1, w2, ev, servers = loop_of_exporters
    dead = Target(name="dead", url=f"http://127.0.0.1:{closed_port()}/metrics")
    targets = tuple(Target(name=n, url=s.url) for n, s in servers.items()) + (dead,)
    feed = LiveFeed(Settings(targets=targets, interval_s=10.0, timeout_s=2.0), clock=clock)
    try:
        await run_loop(feed, clock, trainer, w1, w2, ev, rounds=25)
        first = await feed.dashboard(window_s=300.0)
        assert first.baseline_score == 0.40
        feed.set_baseline_now()
        clock.t += 10
        ev.record_eval(benchmark="gsm8k", score=0.56, policy_version=4, samples=1319)
        await feed.collect_once()
        second = await feed.dashboard(window_s=300.0)
    finally:
        await feed.aclose()
    assert second.baseline_score == 0.50
    spend_at_baseline = 43.0 * 200 / 3600
    assert second.baseline_spend_dollars == pytest.approx(spend_at_baseline)
    assert second.ipd_points_per_kilodollar == pytest.approx(0.06 / (43.0 * 260 / 3600 - spend_at_baseline) * 1000)
    down = [a for a in second.alerts if a.name == "target_down"]
    assert down and down[0].since == first.now  # still the time it was first seen


async def test_binary_rewards_at_half_success_read_exactly_half() -> None:
    """Exact 0/1 rewards, alternating: the mean reward is 0.5, not the bucket estimate's 0.35."""
    def ten_rollouts(worker: RolloutExporter) -> None:
        for k in range(10):
            worker.record_rollout(env="math", tokens=100, reward=float(k % 2), outcome="ok")

    d, feed = await scrape_one_worker(ten_rollouts, rounds=11, step_s=10.0, window_s=100.0, gpu_hour_price=2.0)
    (row,) = d.workers
    assert row.mean_reward == 0.5
    # What the monitor estimated from the same scraped buckets before the exporters had the signed
    # counters: 0 lies in (-0.5, 0] (read at -0.25), 1 in (0.9, 1] (read at 0.95).
    buckets = [(parse_le(s.labels["le"]), s.last()[1]) for s in feed.store.series("w", ROLLOUT_REWARD.bucket)]
    total, count = histogram_sum_estimate(buckets)
    assert count == 110 and total / count == pytest.approx(0.35)


async def test_mock_transport_failure_marks_only_that_target() -> None:
    body = b"posttrain_rollouts_total{env=\"e\",outcome=\"ok\"} 5\n"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "bad":
            return httpx.Response(500, text="boom")
        return httpx.Response(200, content=body, headers={"content-type": "text/plain; version=0.0.4"})

    clock = Clock(T0)
    settings = Settings(targets=(Target("good", "http://good/metrics"), Target("bad", "http://bad/metrics")))
    feed = LiveFeed(settings, clock=clock, transport=httpx.MockTransport(handler))
    try:
        await feed.collect_once()
        d = await feed.dashboard(window_s=60)
    finally:
        await feed.aclose()
        await feed.aclose()  # idempotent
    health = {t.name: t for t in d.targets}
    assert health["good"].up is True and health["good"].role == "rollout"
    assert health["bad"].up is False and "500" in (health["bad"].error or "")
    assert {a.subject for a in d.alerts if a.name == "target_down"} == {"bad"}


def _created_stamps(registry) -> list[float]:
    """Every posttrain ``_created`` value the exporter exposes, read from its registry (not the schema)."""
    return [s.value for family in registry.collect() for s in family.samples
            if s.name.startswith("posttrain_") and s.name.endswith("_created")]


async def test_uptime_counts_from_the_real_trainers_start_over_http() -> None:
    # prometheus_client stamps _created with the wall clock. This monitor's clock runs 1000 s ahead: as
    # if it joined, at its first scrape, a run whose trainer started 1000 s earlier. The worker was
    # created first, yet the run's start is the trainer's.
    ident: dict[str, Any] = dict(run="r", model="m", algorithm="grpo")
    worker = RolloutExporter(**ident, gpus=1, gpu_hour_price=1.0)
    worker.record_rollout(env="math", tokens=10, reward=1.0)
    trainer = TrainerExporter(**ident, gpus=8, gpu_hour_price=3.0)
    trainer_start = min(_created_stamps(trainer.registry))
    assert min(_created_stamps(worker.registry)) < trainer_start
    servers = {"w": serve(worker.registry), "trainer": serve(trainer.registry)}
    feed = LiveFeed(Settings(targets=tuple(Target(name=n, url=s.url) for n, s in servers.items()),
                             interval_s=1.0, timeout_s=2.0),
                    clock=lambda: time.time() + 1000.0)
    try:
        await feed.collect_once()
        d = await feed.dashboard(window_s=300.0)
        first_scrape = min(feed.store.scrape_times("trainer"))
    finally:
        await feed.aclose()
        for s in servers.values():
            s.close()
    assert d.started_at == trainer_start  # the exposed float, exactly
    assert d.uptime_s == pytest.approx(d.now - trainer_start)
    assert d.uptime_s > 1000.0 and first_scrape - d.started_at > 1000.0


async def test_uptime_with_only_a_worker_and_with_stamps_from_another_clock() -> None:
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0)
    worker.record_rollout(env="math", tokens=10, reward=1.0)
    server = serve(worker.registry)
    settings = Settings(targets=(Target(name="w", url=server.url),), interval_s=1.0, timeout_s=2.0)
    try:
        feed = LiveFeed(settings, clock=lambda: time.time() + 1000.0)
        await feed.collect_once()
        d = await feed.dashboard(window_s=300.0)
        await feed.aclose()
        assert d.started_at == min(_created_stamps(worker.registry))  # no trainer: any target's
        # A monitor whose clock is far behind the exporter's (here T0 = 1000): the stamps lie in its
        # future, so uptime counts from the first scrape, as before.
        clock = Clock(T0)
        feed = LiveFeed(settings, clock=clock)
        await feed.collect_once()
        clock.t = T0 + 30
        d = await feed.dashboard(window_s=300.0)
        await feed.aclose()
        assert (d.started_at, d.uptime_s) == (T0, 30.0)
    finally:
        server.close()


async def test_a_long_build_lets_the_event_loop_run_and_shows_the_same_numbers(monkeypatch) -> None:
    """A build longer than YIELD_AFTER_S gives the loop turns (scrapes waiting on sockets and timers run
    between its steps instead of after all of it), and its Dashboard is the one-go build's."""
    import asyncio
    from dataclasses import replace as dc_replace

    from ptmon.monitor import live
    from ptmon.monitor.build import build_dashboard

    body = b"".join(b'posttrain_rollouts_total{env="e%d",outcome="ok"} %d\n' % (k, 5 + k) for k in range(20))

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/plain; version=0.0.4"})

    clock = Clock(T0)
    settings = Settings(targets=tuple(Target(f"w{i}", f"http://w{i}/metrics") for i in range(4)))
    feed = LiveFeed(settings, clock=clock, transport=httpx.MockTransport(handler))
    turns = 0

    async def counting() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    try:
        for _ in range(3):
            await feed.collect_once()
            clock.advance(1.0)
        monkeypatch.setattr(live, "YIELD_AFTER_S", 0.0)  # every step is "long": yield after each
        counter = asyncio.create_task(counting())
        await asyncio.sleep(0)
        before = turns
        d = await feed.dashboard(window_s=60)
        during = turns - before
        counter.cancel()
    finally:
        await feed.aclose()
    assert during >= 5  # one turn after each of the build's steps
    one_go = build_dashboard(feed.store, feed.health(), settings, now=d.now, window_s=60, evals=feed.evals)
    assert dc_replace(d, alerts=()) == one_go
    assert d.rollout_rate_per_s is not None and d.rollout_rate_per_s == one_go.rollout_rate_per_s


async def test_a_settled_feed_freezes_the_heap_once_every_target_has_answered_or_failed() -> None:
    # The long-lived state (series, parser caches) out of the collector's reach, so full collections stop
    # walking it on the event loop; not before every target was polled (their first series are still to come).
    import gc

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "b":
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, content=b"ptmon_rollout_tokens_total 5\n")

    settings = Settings(targets=(Target(name="a", url="http://a:9100/metrics"),
                                 Target(name="b", url="http://b:9100/metrics")))
    gc.unfreeze()
    try:
        feed = LiveFeed(settings, transport=httpx.MockTransport(handler), settle_heap=True)
        await feed.dashboard(window_s=60.0)
        assert gc.get_freeze_count() == 0  # nothing polled yet
        await feed.collect_once()
        await feed.dashboard(window_s=60.0)
        frozen = gc.get_freeze_count()
        assert frozen > 0
        gc.unfreeze()
        await feed.dashboard(window_s=60.0)
        assert gc.get_freeze_count() == 0  # once only
        await feed.aclose()
        plain = LiveFeed(settings, transport=httpx.MockTransport(handler))
        await plain.collect_once()
        await plain.dashboard(window_s=60.0)
        assert gc.get_freeze_count() == 0  # the default (snapshot, tests): the heap is left alone
        await plain.aclose()
    finally:
        gc.unfreeze()


async def test_the_chart_a_feed_keeps_between_builds_is_the_one_a_fresh_build_draws() -> None:
    """``ptmon watch`` keeps the rate chart's settled slots from build to build (``SlotMemo``): through
    moving counters, a restart, a worker that stops answering and window switches, every Dashboard's chart
    and 10-minute median are those of a build from nothing at the same moment."""
    from ptmon.monitor.build import build_dashboard

    ticks = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        n = ticks["n"]
        if request.url.host == "w2" and 30 <= n < 45:
            return httpx.Response(503)
        k = int(request.url.host[1:]) + 1
        value = (n - 50 if request.url.host == "w1" and n >= 50 else n) * k * 1.5  # w1 restarts at 50
        body = b'posttrain_rollouts_total{env="math",outcome="ok"} %r\n' % value
        return httpx.Response(200, content=body, headers={"content-type": "text/plain; version=0.0.4"})

    clock = Clock(T0)
    settings = Settings(targets=tuple(Target(f"w{i}", f"http://w{i}/metrics") for i in range(3)))
    feed = LiveFeed(settings, clock=clock, transport=httpx.MockTransport(handler))
    try:
        for n in range(90):
            ticks["n"] = n
            await feed.collect_once()
            clock.advance(0.7 if n % 3 else 1.3)
            window = 60.0 if n < 70 else 30.0
            d = await feed.dashboard(window_s=window)
            fresh = build_dashboard(feed.store, feed.health(), settings, now=d.now, window_s=window,
                                    evals=feed.evals)
            assert d.rollout_rate_series == fresh.rollout_rate_series, n
            assert d.rollout_rate_median_10m == fresh.rollout_rate_median_10m, n
    finally:
        await feed.aclose()
    assert len(d.rollout_rate_series) >= 8
