"""The Prometheus source: a real Prometheus scraping real exporters, and failure paths (MockTransport).

The central claim is that the TUI cannot tell a Prometheus server from direct
scraping: the same exporters, read both ways at once, give the same Dashboard.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import httpx
import pytest

from ptmon.exporters import schema
from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor import promql
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.config import prometheus_from_url
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.sources import PrometheusSource, Source
from ptmon.monitor.sources.prometheus import parse_matrix, series_selector
from ptmon.monitor.store import Store
from tests.monitor.sources.peers import http_server, send
from tests.support.fleet import Fleet, loopback_fleet

SERVER = Target(name="prom:9090", url="http://prom:9090")
ROLLOUTS = "posttrain_rollouts_total"
RATE_PER_WORKER = 20.0  # rollouts/s each worker's counter follows


# --- a small fleet of real exporters on loopback (tests/support/fleet.py) ---------------------------


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    """A trainer and two rollout workers, each worker's rollout counter following ``RATE_PER_WORKER * elapsed``."""
    with loopback_fleet(run="run-7", rate_per_worker=RATE_PER_WORKER) as f:
        yield f


def settings_for(*, prometheus: str | None = None, urls: list[str] | None = None, interval: float = 0.5
                 ) -> Settings:
    if prometheus is not None:
        return Settings(prometheus=prometheus_from_url(prometheus), interval_s=interval)
    return Settings(targets=tuple(Target(name=u.split("/")[2], url=u) for u in urls or ()), interval_s=interval)


async def until(predicate: Callable[[], object], *, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.1)


# --- against a real Prometheus -------------------------------------------------------------------


async def test_a_dashboard_through_prometheus_agrees_with_direct_scraping_and_with_promql(
        fleet: Fleet, prometheus_server: Callable[..., object]) -> None:
    prom = prometheus_server(fleet.jobs(), scrape_interval=0.5)
    prom.wait_for("count(up == 1) == 3")  # type: ignore[attr-defined]
    direct = LiveFeed(settings_for(urls=fleet.urls))
    via = LiveFeed(settings_for(prometheus=prom.url))  # type: ignore[attr-defined]
    await direct.start()
    await via.start()
    try:
        await asyncio.sleep(2.0)  # both have data from before the syncs
        sync_start = time.time()
        for v in (1, 2, 3):  # each sync in a scrape interval of its own (0.5 s), so each is seen exactly
            await asyncio.to_thread(fleet.sync, v, seconds=0.05 * v)
            await asyncio.sleep(1.1)
        for w in fleet.workers:
            w.set_policy_version(2)
        d: dict[str, Dashboard] = {}

        async def settled() -> bool:
            d["direct"] = await direct.dashboard(window_s=60)
            d["via"] = await via.dashboard(window_s=60)
            return all(x.policy_version == 3 and x.staleness_max == 1 and x.weight_sync_count == 3
                       for x in d.values())

        deadline = time.monotonic() + 20
        while not await settled():
            assert time.monotonic() < deadline, f"never settled: {d}"
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.5)  # a few more scrapes after the last sync on both sides
        a, b = await direct.dashboard(window_s=60), await via.dashboard(window_s=60)

        # Exact: the same readings of the same gauges and counter increases, whoever collected them.
        assert (b.run, b.model, b.algorithm) == (a.run, a.model, a.algorithm) == ("run-7", "qwen-7b", "grpo")
        assert {(t.name, t.role, t.up) for t in b.targets} == {(t.name, t.role, t.up) for t in a.targets}
        assert {t.role for t in b.targets} == {"trainer", "rollout"}
        assert b.policy_version == a.policy_version == 3
        assert b.staleness_max == a.staleness_max == 1
        assert b.weight_sync_count == a.weight_sync_count == 3
        assert b.weight_sync_failures == a.weight_sync_failures == 0
        assert sorted(w.name for w in b.workers) == sorted(w.name for w in a.workers)
        worker = b.workers[0].name
        unread = "posttrain_rollout_seconds_bucket"
        assert a.workers and direct.store.series(worker, unread) and not via.store.series(worker, unread)
        # Spend is the total at each side's newest sample; Prometheus's is older by at most its scrape
        # interval plus our poll interval (1 s): allow 2 s of burn.
        burn = 8 * 3.0 + 2 * 4 * 2.0  # $/h
        assert b.spend_dollars == pytest.approx(a.spend_dollars, abs=burn / 3600 * 2)
        assert b.weight_sync_p99_s == pytest.approx(a.weight_sync_p99_s, rel=0.01)

        # Rates, from both stores at one common ``now`` (the newest time both hold every target's data:
        # a live dashboard through Prometheus reads up to 1.5 s older data, which over this test's ~10 s
        # of history would bias it low by up to ~10%; over a 5-minute window that is 0.5%). Both sides
        # sample counters that follow a straight line (the driver sets them from the wall clock: within
        # 1-2 counts), at different instants; the rate of a sampled line is its slope whatever the phase,
        # so each is 40/s up to 2 counts over >= 4 s x 40/s = 160: under 2%. 5% leaves room for a driver
        # thread held off the CPU on this shared 2-core machine.
        common = min(max(f.store.scrape_times(t)) for f in (direct, via) for t in f.store.targets())
        a, b = (build_dashboard(f.store, f._scraper.health(), f.settings, now=common, window_s=60)  # noqa: SLF001
                for f in (direct, via))
        total = RATE_PER_WORKER * len(fleet.workers)
        for x in (a, b):
            assert x.rollout_rate_per_s == pytest.approx(total, rel=0.05)
            # GPU-seconds are exact when served (gpus x elapsed); the sample's time is when the scrape
            # began, a few ms earlier on a loaded machine: 2%.
            assert x.burn_dollars_per_hour == pytest.approx(burn, rel=0.02)
        assert b.rollout_rate_per_s == pytest.approx(a.rollout_rate_per_s, rel=0.05)
        assert b.rollout_tokens_per_s == pytest.approx(a.rollout_tokens_per_s, rel=0.05)

        # And through Prometheus, the numbers are PromQL's own on the same samples. Evaluate at the newest
        # scrape every target has in our store, so Prometheus holds nothing we lack up to then.
        store = via.store
        at = min(max(store.scrape_times(t)) for t in store.targets())
        window_ms = int((at - sync_start + 1.0) * 1000) | 1  # odd ms: no 500 ms scrape sits on the bound
        points = {ts for t in store.targets() for ts in store.scrape_times(t)}
        while round(at - window_ms / 1000, 3) in points:
            window_ms += 2
        window = window_ms / 1000
        health = via._scraper.health()  # noqa: SLF001 - the same health the feed builds with
        mine = build_dashboard(store, health, via.settings, now=at, window_s=window)

        def at_common(expr: str) -> float:
            result = prom.api("query", query=expr, time=f"{at:.3f}")["result"]  # type: ignore[attr-defined]
            return float(result[0]["value"][1])

        assert mine.rollout_rate_per_s == pytest.approx(
            at_common(f"sum(rate({ROLLOUTS}[{window_ms}ms]))"), rel=0.01)
        # PromQL interpolates p99 inside the (0.128, 0.256] bucket, above the slowest sync seen (0.15 s):
        # ptmon shows PromQL's quantile within what was observed, never above it.
        promql_p99 = at_common(
            f"histogram_quantile(0.99, sum by (le) (rate(posttrain_weight_sync_seconds_bucket[{window_ms}ms])))")
        assert mine.weight_sync_max_s is not None and promql_p99 > mine.weight_sync_max_s
        assert mine.weight_sync_p99_s == pytest.approx(min(promql_p99, mine.weight_sync_max_s), rel=0.01)
        assert mine.weight_sync_p50_s == pytest.approx(at_common(
            f"histogram_quantile(0.5, sum by (le) (rate(posttrain_weight_sync_seconds_bucket[{window_ms}ms])))"),
            rel=0.01)

        # Live through Prometheus, the windowed numbers are evaluated by Prometheus (rate, increase,
        # histogram_quantile at the feed's now over the window) and the Dashboard shows exactly those.
        live = await via.dashboard(window_s=60)
        ev = via._prometheus.evaluated()  # noqa: SLF001
        assert ev is not None and ev.window_s == 60 and live.now - ev.at < 3
        assert live.rollout_rate_per_s == sum(ev.by_target["rollouts"].values())
        assert {w.name: w.rollouts_per_s for w in live.workers} == dict(ev.by_target["rollouts"])
        assert live.weight_sync_max_s is not None and live.weight_sync_count == 3
        assert live.weight_sync_p99_s == min(ev.fleet["sync_p99"], live.weight_sync_max_s)
        assert live.burn_dollars_per_hour == pytest.approx(burn, rel=0.02)  # GPUs x each role's price gauge
        # ... and they are what Prometheus answers for the same expressions at that time (a scrape that had
        # begun but not ended when the source asked can add a sample: 2%).

        def at_ev(expr: str) -> float:
            result = prom.api("query", query=expr, time=f"{ev.at:.3f}")["result"]  # type: ignore[attr-defined]
            return float(result[0]["value"][1])

        # The range is the data's age here, not the 60 s window: PromQL divides by the whole range.
        assert ev.range_s < 60
        r = promql.duration(ev.range_s)
        assert ev.fleet["sync_p99"] == pytest.approx(at_ev(
            f"histogram_quantile(0.99, sum by (le) (rate(posttrain_weight_sync_seconds_bucket[{r}])))"), rel=0.02)
        assert live.rollout_rate_per_s == pytest.approx(at_ev(f"sum(rate({ROLLOUTS}[{r}]))"), rel=0.02)
        # The chart is a range query over the range evaluated, one point per step (2 polls: 1 s here).
        step = max(2 * 0.5, ev.range_s / 120)
        assert len(live.rollout_rate_series) >= int(ev.range_s / step) - 1 >= 3
        assert all(ev.at - ev.range_s <= t <= ev.at for t, _ in live.rollout_rate_series)
        assert live.rollout_rate_series[-1][1] == pytest.approx(total, rel=0.2)
        # A new window is asked for from the next poll; meanwhile the stored samples speak.
        await via.dashboard(window_s=30)
        await until(lambda: via._prometheus.evaluated().window_s == 30,  # noqa: SLF001
                    what="a poll over the new window")
        assert (await via.dashboard(window_s=30)).rollout_rate_per_s == pytest.approx(total, rel=0.1)
    finally:
        await direct.aclose()
        await via.aclose()


async def test_with_a_run_filter_another_run_on_the_same_prometheus_is_left_out(
        fleet: Fleet, prometheus_server: Callable[..., object]) -> None:
    """A second run's trainer, far ahead and syncing slowly, scraped by the same Prometheus in the same job:
    with ``run=`` the fleet's numbers are its own run's (server-side and stored), without it they mix."""
    other = TrainerExporter(gpus=64, gpu_hour_price=9.0, run="run-8", model="m", algorithm="ppo")
    other.publish_policy(100)
    server = serve(other.registry)
    try:
        jobs = fleet.jobs()
        jobs["trainer"] = [*jobs["trainer"], server.url]
        prom = prometheus_server(jobs, scrape_interval=0.5)
        prom.wait_for("count(up == 1) == 4")  # type: ignore[attr-defined]
        for v in (1, 2):
            await asyncio.to_thread(fleet.sync, v, seconds=0.02)
            with other.weight_sync(version=100 + v, nbytes=1e9):
                await asyncio.sleep(1.2)
        for w in fleet.workers:
            w.set_policy_version(2)
        settings = replace(settings_for(prometheus=prom.url), run="run-7")  # type: ignore[attr-defined]
        feed, mixed = LiveFeed(settings), LiveFeed(settings_for(prometheus=prom.url))  # type: ignore[attr-defined]
        for f in (feed, mixed):
            await f.start()
        try:
            other_name = server.url.split("/")[2]
            box: dict[str, Dashboard] = {}

            async def evaluated() -> bool:
                box["d"] = await feed.dashboard(window_s=60)
                box["m"] = await mixed.dashboard(window_s=60)
                return (feed._prometheus.evaluated() is not None  # noqa: SLF001
                        and box["d"].weight_sync_p99_s is not None and box["m"].weight_sync_p99_s is not None)

            deadline = time.monotonic() + 20
            while not await evaluated():
                assert time.monotonic() < deadline, box
                await asyncio.sleep(0.2)
            d, m = box["d"], box["m"]
            assert other_name not in {t.name for t in d.targets} and other_name in {t.name for t in m.targets}
            assert d.run == "run-7" and d.policy_version == 2 and d.staleness_max == 0
            assert m.policy_version == 102  # mixed: the other run's trainer
            # Server-side: run-7's syncs took 20 ms, run-8's 1.2 s; the filtered p99 is run-7's alone.
            assert d.weight_sync_p99_s < 0.5 < m.weight_sync_p99_s
            # Burn: run-7's GPUs only (8 x $3 + 2 x 4 x $2 = $40/h), not run-8's 64 x $9.
            assert d.burn_dollars_per_hour == pytest.approx(40.0, rel=0.05)
            assert m.burn_dollars_per_hour > 500
        finally:
            for f in (feed, mixed):
                await f.aclose()
    finally:
        server.close()


async def test_a_killed_exporter_is_down_and_a_dead_prometheus_is_a_clear_error(
        fleet: Fleet, prometheus_server: Callable[..., object]) -> None:
    prom = prometheus_server(fleet.jobs(), scrape_interval=0.5)
    prom.wait_for("count(up == 1) == 3")  # type: ignore[attr-defined]
    feed = LiveFeed(settings_for(prometheus=prom.url))  # type: ignore[attr-defined]
    await feed.start()
    try:
        await until(lambda: sum(bool(h.up) for h in feed._scraper.health()) == 3, what="3 targets up")  # noqa: SLF001
        victim = fleet.servers[2]
        name = f"127.0.0.1:{victim.port}"
        victim.close()
        box: dict[str, Dashboard] = {}

        async def victim_down() -> bool:
            box["d"] = await feed.dashboard(window_s=60)
            return any(t.name == name and t.up is False for t in box["d"].targets)

        deadline = time.monotonic() + 20
        while not await victim_down():
            assert time.monotonic() < deadline, box
            await asyncio.sleep(0.2)
        d = box["d"]
        down = next(t for t in d.targets if t.name == name)
        assert down.error == f"down according to Prometheus (job=rollout, instance={name})"
        assert down.last_success is not None and down.last_scrape is not None
        assert down.last_scrape > down.last_success
        assert [t.name for t in d.targets if t.up] == [t.name for t in d.targets if t.name != name]
        assert any(a.name == "target_down" and a.subject == name for a in d.alerts)
        assert d.rollout_rate_per_s is not None and d.rollout_rate_per_s > 0  # the live worker still counts

        prom.stop()  # type: ignore[attr-defined]
        await feed.collect_once()
        d = await feed.dashboard(window_s=60)  # still builds, from what was collected
        host = prom.url.split("/")[2]  # type: ignore[attr-defined]
        assert {t.up for t in d.targets} == {False}
        assert {t.error for t in d.targets} == {f"Prometheus {host}: connection refused"}
        assert d.policy_version is None  # nothing is current; the run's identity is still known
        assert d.run == "run-7"
    finally:
        await feed.aclose()


def _ptmon(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ptmon.monitor", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_ptmon_snapshot_reads_a_real_prometheus(fleet: Fleet, prometheus_server: Callable[..., object]) -> None:
    prom = prometheus_server(fleet.jobs(), scrape_interval=0.5)
    prom.wait_for("count(up == 1) == 3")  # type: ignore[attr-defined]
    prom.wait_for(f"sum(rate({ROLLOUTS}[3s])) > 0")  # type: ignore[attr-defined]
    url = prom.url  # type: ignore[attr-defined]
    out = _ptmon("snapshot", "--prometheus", url, "--over", "3", "--json", "--interval", "0.5")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["run"] == "run-7"
    assert doc["targets_up"] == 3
    assert sorted(t["role"] for t in doc["targets"]) == ["rollout", "rollout", "trainer"]
    assert {t["name"] for t in doc["targets"]} == {u.split("/")[2] for u in fleet.urls}
    # The window opens with Prometheus's history (backfill), not with our first poll.
    assert doc["window_s"] > 3.5
    # The newest sample through Prometheus is up to its scrape interval plus our poll interval old
    # (1 s; rate() extrapolates 0.25 s of it), so over a history of window_s seconds the rate reads low
    # by up to 0.75 / window_s; 5% more for the driver's sampling (see the agreement test).
    low = 0.75 / doc["window_s"] + 0.05
    assert 2 * RATE_PER_WORKER * (1 - low) <= doc["rollout_rate_per_s"] <= 2 * RATE_PER_WORKER * 1.05
    assert doc["policy_version"] == 0


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # starts a process
def test_ptmon_snapshot_with_prometheus_down_says_why_and_exits_1() -> None:
    port = _closed_port()
    out = _ptmon("snapshot", "--prometheus", f"127.0.0.1:{port}", "--over", "0.6", "--json", "--interval", "0.25")
    assert out.returncode == 1
    assert "no target answered" in out.stderr
    (row,) = json.loads(out.stdout)["targets"]
    assert row["up"] is False
    assert row["error"] == f"Prometheus 127.0.0.1:{port}: connection refused"


@pytest.mark.slow  # starts a process
def test_ptmon_snapshot_refuses_urls_and_prometheus_together() -> None:
    out = _ptmon("snapshot", "127.0.0.1:9100", "--prometheus", "127.0.0.1:9090")
    assert out.returncode == 2
    assert "--prometheus: expected either /metrics URLs or --prometheus, not both" in out.stderr
    assert out.stdout == ""


# --- failure paths and bookkeeping (MockTransport) ------------------------------------------------


def matrix(*series: tuple[dict[str, str], Sequence[tuple[float, float | str]]]) -> bytes:
    result = [{"metric": m, "values": [[ts, str(v)] for ts, v in vals]} for m, vals in series]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def fleet_answer(t: float, *, rollouts: float = 10.0, up: float = 1.0) -> bytes:
    """One Prometheus scrape at ``t`` of a worker (job w, instance a:1) and a trainer (job t, instance b:1)."""
    w = {"job": "w", "instance": "a:1"}
    tr = {"job": "t", "instance": "b:1"}
    return matrix(
        ({"__name__": ROLLOUTS, "env": "math", "outcome": "ok", **w}, [(t, rollouts)]),
        ({"__name__": "posttrain_policy_version", **tr}, [(t, 4)]),
        ({"__name__": "up", **w}, [(t, up)]),
        ({"__name__": "up", **tr}, [(t, 1)]),
        ({"__name__": "scrape_duration_seconds", **w}, [(t, 0.012)]),
        ({"__name__": "scrape_samples_scraped", **w}, [(t, 42)]),
    )


def vector(*items: tuple[dict[str, str], float | str], t: float = 1_700_000_100.0) -> bytes:
    result = [{"metric": m, "value": [t, str(v)]} for m, v in items]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


class Answers:
    """A Prometheus query API that answers raw-sample queries from a queue, recording each query.

    The server-side evaluation (the combined instant query, the chart's range
    query) gets ``evaluation`` and ``chart``: by default nothing evaluated.
    """

    def __init__(self, *answers: httpx.Response | bytes | Exception, evaluation: bytes = vector(),
                 chart: bytes = matrix()) -> None:
        self.answers = list(answers)
        self.queries: list[str] = []
        self.evaluation, self.chart = evaluation, chart
        self.evaluations: list[dict[str, str]] = []
        self.ranges: list[dict[str, str]] = []
        self.raw_params: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        if request.url.path.endswith("/api/v1/query_range"):
            self.ranges.append(params)
            return httpx.Response(200, content=self.chart, headers={"content-type": "application/json"})
        assert request.url.path.endswith("/api/v1/query")
        if promql.Q_LABEL in params["query"]:
            self.evaluations.append(params)
            return httpx.Response(200, content=self.evaluation, headers={"content-type": "application/json"})
        self.queries.append(params["query"])
        self.raw_params.append(params)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, bytes):
            return httpx.Response(200, content=answer, headers={"content-type": "application/json"})
        return answer

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


def source(answers: Answers, store: Store | None = None, **kw: object) -> PrometheusSource:
    return PrometheusSource(SERVER, store=store or Store(), transport=answers.transport(), interval_s=1.0,
                            clock=lambda: 1_700_000_100.0, **kw)  # type: ignore[arg-type]


async def test_it_is_a_source_and_splits_an_answer_into_targets_without_their_labels() -> None:
    store = Store()
    src = source(Answers(fleet_answer(1_700_000_000.0)), store)
    assert isinstance(src, Source)
    await src.scrape_once()
    assert sorted(store.targets()) == ["a:1", "b:1"]
    (series,) = store.series("a:1", ROLLOUTS)
    assert dict(series.labels) == {"env": "math", "outcome": "ok"}  # job/instance gone, as a direct scrape
    assert series.points() == [(1_700_000_000.0, 10.0)]  # at Prometheus's scrape time
    assert list(store.names("a:1")) == [ROLLOUTS]  # up and scrape_* are health, not data
    health = {h.name: h for h in src.health()}
    assert health["a:1"].up is True and health["a:1"].url == "a:1"
    assert (health["a:1"].samples, health["a:1"].scrape_seconds) == (42, 0.012)
    assert health["a:1"].last_success == health["a:1"].last_scrape == 1_700_000_000.0
    await src.aclose()


async def test_an_overlapping_answer_is_stored_once() -> None:
    store = Store()
    t0 = 1_700_000_000.0
    both = matrix(({"__name__": ROLLOUTS, "env": "math", "outcome": "ok", "job": "w", "instance": "a:1"},
                   [(t0, 1), (t0 + 1, 2)]),
                  ({"__name__": "up", "job": "w", "instance": "a:1"}, [(t0, 1), (t0 + 1, 1)]))
    src = source(Answers(fleet_answer(t0, rollouts=1), both, both), store)
    for _ in range(3):
        await src.scrape_once()
    assert store.scrape_times("a:1") == [t0, t0 + 1]  # one stored scrape per Prometheus scrape
    assert store.series("a:1", ROLLOUTS)[0].points() == [(t0, 1.0), (t0 + 1, 2.0)]
    await src.aclose()


async def test_the_first_query_backfills_the_window_then_each_asks_since_the_last_with_overlap() -> None:
    answers = Answers(fleet_answer(1_700_000_000.0))
    src = PrometheusSource(SERVER, store=Store(), transport=answers.transport(), interval_s=1.0, window_s=300.0,
                           overlap_s=10.0)
    await src.scrape_once()
    await src.scrape_once()
    assert answers.queries[0] == series_selector() + "[300s]"
    later = answers.queries[1]
    assert later.startswith(series_selector() + "[")
    assert 10_000 <= int(later.rsplit("[", 1)[1].removesuffix("ms]")) < 12_000
    await src.aclose()


async def test_a_backfill_too_big_for_the_cap_is_skipped_not_fatal() -> None:
    big = matrix(({"__name__": ROLLOUTS, "job": "w", "instance": "a:1", "pad": "x" * 4000}, [(1.0, 1)]))
    small = fleet_answer(1_700_000_000.0)
    answers = Answers(big, small)
    src = source(answers, max_body_bytes=2048)
    await src.scrape_once()
    assert answers.queries[0].endswith("[300s]") and answers.queries[1].endswith("[11s]")
    assert {h.name: h.up for h in src.health()} == {"a:1": True, "b:1": True}
    await src.aclose()


@pytest.mark.parametrize(("answer", "error"), [
    (httpx.Response(500, content=b"boom"), "HTTP 500 Internal Server Error"),
    (b"<html><body>Sign in</body></html>", "not a Prometheus API answer (JSONDecodeError; body starts "
                                           "'<html><body>Sign in</body></html>')"),
    (b'{"status": "success", "data": {"resultType": "vector", "result": []}}',
     "expected a matrix from the query, got 'vector'"),
    (httpx.Response(400, json={"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}),
     "HTTP 400 Bad Request (query failed: bad_data: parse error at char 3)"),
    (b'{"status": "success", "data": {"resultType": "matrix", "result": []}}' + b" " * 5000,
     "body exceeds 4 KiB"),
    (httpx.ConnectError("[Errno 111] Connection refused"), "connection refused"),
    (httpx.Response(503, content=b"\x1b[31mdown\x1b[0m"), "HTTP 503 Service Unavailable"),
    (httpx.Response(302, headers={"location": "https://sso.example/login"}),
     "HTTP 302 Found (redirect to https://sso.example/login: is the URL the API's base?)"),
])
async def test_a_failing_server_marks_every_target_down_with_the_reason(answer: object, error: str) -> None:
    store = Store()
    answers = Answers(fleet_answer(1_700_000_000.0), answer)  # type: ignore[arg-type]
    src = source(answers, store, max_body_bytes=4096)
    await src.scrape_once()
    assert {h.up for h in src.health()} == {True}
    await src.scrape_once()
    assert [(h.name, h.up, h.error) for h in src.health()] == [  # by job (t, w), then name
        ("b:1", False, f"Prometheus prom:9090: {error}"), ("a:1", False, f"Prometheus prom:9090: {error}")]
    assert [h.last_success for h in src.health()] == [1_700_000_000.0] * 2  # what was known stays
    assert store.series("a:1", ROLLOUTS)[0].points() == [(1_700_000_000.0, 10.0)]  # nothing lost
    await src.aclose()


async def test_an_error_from_the_server_is_shown_literally() -> None:
    hostile = {"status": "error", "errorType": "execution", "error": "\x1b]0;pwned\x07[bold]x[/]\n\u202e"}
    src = source(Answers(httpx.Response(422, json=hostile)))
    await src.scrape_once()
    (row,) = src.health()
    assert row.error == ("Prometheus prom:9090: HTTP 422 Unprocessable Entity (query failed: execution: "
                         "\\x1b]0;pwned\\x07[bold]x[/]\\n\\u202e)")
    await src.aclose()


async def test_before_any_target_one_row_says_what_the_server_holds() -> None:
    empty = matrix(({"__name__": "up", "job": "node", "instance": "n:9100"}, [(1.0, 1)]))
    src = source(Answers(empty))
    await src.scrape_once()
    (row,) = src.health()
    assert (row.name, row.url, row.up, row.last_success) == ("prom:9090", "http://prom:9090", None, None)
    # A node exporter is not listed; the server answered, and the row says so.
    assert row.error == "Prometheus prom:9090 answered, but holds no posttrain_, engine or DCGM series"
    await src.aclose()


async def test_names_instance_then_job_slash_instance_then_ptmon_name() -> None:
    store = Store()
    t = 1_700_000_000.0
    answer = matrix(
        ({"__name__": ROLLOUTS, "job": "a", "instance": "h:1"}, [(t, 1)]),
        ({"__name__": ROLLOUTS, "job": "b", "instance": "h:1"}, [(t, 2)]),
        ({"__name__": ROLLOUTS, "job": "c", "instance": "h:2", "ptmon_name": "rollout-3"}, [(t, 3)]),
    )
    src = source(Answers(answer), store)
    await src.scrape_once()
    assert [(h.name, h.url) for h in src.health()] == [("h:1", "h:1"), ("b/h:1", "h:1"), ("rollout-3", "h:2")]
    assert store.series("b/h:1", ROLLOUTS)[0].last() == (t, 2.0)
    assert dict(store.series("rollout-3", ROLLOUTS)[0].labels) == {}
    await src.aclose()


async def test_a_target_prometheus_stopped_scraping_goes_down() -> None:
    t = 1_700_000_000.0
    first = fleet_answer(t)
    w_only = matrix(({"__name__": "up", "job": "w", "instance": "a:1"}, [(t + 60, 1)]),
                    ({"__name__": ROLLOUTS, "job": "w", "instance": "a:1"}, [(t + 60, 11)]))
    src = source(Answers(first, w_only))
    await src.scrape_once()
    await src.scrape_once()
    health = {h.name: h for h in src.health()}
    assert health["a:1"].up is True
    assert health["b:1"].up is False
    assert health["b:1"].error == "not scraped by Prometheus for 60 s (job=t, instance=b:1)"
    await src.aclose()


async def test_an_up_of_zero_is_down_with_job_and_instance() -> None:
    src = source(Answers(fleet_answer(1_700_000_000.0, up=0)))
    await src.scrape_once()
    health = {h.name: h for h in src.health()}
    assert (health["a:1"].up, health["a:1"].last_success) == (False, None)
    assert health["a:1"].error == "down according to Prometheus (job=w, instance=a:1)"
    assert health["b:1"].up is True
    await src.aclose()


async def test_it_polls_on_its_own_and_backs_off_while_the_server_fails() -> None:
    waits: list[float] = []
    polled = asyncio.Event()

    async def sleep(s: float) -> None:
        waits.append(s)
        if len(waits) >= 4:
            polled.set()
            await asyncio.Event().wait()

    answers = Answers(httpx.ConnectError("refused"))
    src = PrometheusSource(SERVER, store=Store(), transport=answers.transport(), interval_s=1.0, sleep=sleep)
    await src.start()
    await asyncio.wait_for(polled.wait(), 5)
    assert waits == [1.0, 2.0, 4.0, 8.0]
    assert len(answers.queries) == 4
    await src.aclose()
    await src.aclose()  # idempotent


def test_parse_matrix_and_selector() -> None:
    assert parse_matrix(matrix(({"__name__": "x"}, [(1.5, "NaN")]))) == [
        {"metric": {"__name__": "x"}, "values": [[1.5, "NaN"]]}]
    sel = series_selector()
    assert sel.startswith('{__name__=~"posttrain_.*|vllm:.*|') and "|up" in sel and "DCGM_FI_.*" in sel
    assert sel.endswith(', __name__!~"posttrain_rollout_seconds_bucket"}')  # nothing reads them: not fetched
    with pytest.raises(ValueError, match="only letters"):
        series_selector(("a.b",))


async def test_non_finite_values_and_malformed_points_are_skipped_never_fatal() -> None:
    # Non-finite points never reach the store (issue 14): VictoriaMetrics's raw answers carry staleness
    # markers (NaN), and a NaN between a counter's points hid its restart.
    store = Store()
    body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "posttrain_loss", "job": "t", "instance": "b:1"},
         "values": [[1.0, "NaN"], ["bad"], [2.0, "+Inf"], [3.0, "x"], [4.0, "-Inf"], [5.0, "0.5"]]},
        {"metric": {"__name__": "posttrain_rollouts_total", "job": "t", "instance": "b:1"},
         "values": [[1.0, "1170.9"], [2.0, "NaN"], [3.0, "398.2"]]},
        {"metric": {"__name__": "posttrain_gpus", "job": "t", "instance": "b:1"}, "histograms": [[1.0, {}]]},
        "not a series",
    ]}}).encode()
    src = source(Answers(body), store)
    await src.scrape_once()
    (loss,) = store.series("b:1", "posttrain_loss")
    assert loss.points() == [(5.0, 0.5)]
    (rollouts,) = store.series("b:1", "posttrain_rollouts_total")
    assert rollouts.points() == [(1.0, 1170.9), (3.0, 398.2)]
    assert store.series("b:1", "posttrain_gpus") == []
    await src.aclose()


async def test_every_query_asks_victoria_metrics_not_to_answer_from_its_cache() -> None:
    # VictoriaMetrics answers an instant query within -search.latencyOffset (30 s) of now as of 30 s ago
    # unless nocache=1 (issue 14, item 7); Prometheus ignores the parameter.
    answers = Answers(fleet_answer(1_700_000_000.0))
    src = source(answers, Store())
    for _ in range(2):
        await src.scrape_once()
    assert answers.evaluations and answers.ranges and answers.raw_params
    for params in [*answers.raw_params, *answers.evaluations, *answers.ranges]:
        assert params.get("nocache") == "1", params
    await src.aclose()


async def test_credentials_go_to_the_server_and_a_missing_token_file_says_so(tmp_path: object) -> None:
    seen: list[str | None] = []
    paths: list[str] = []
    answers = Answers(fleet_answer(1_700_000_000.0))

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        paths.append(request.url.path)
        return answers(request)

    token = tmp_path / "token"  # type: ignore[operator]
    token.write_text("t0ken\n")
    server = Target(name="prom:9090", url="https://prom:9090/prefix", bearer_token_file=str(token))
    src = PrometheusSource(server, store=Store(), transport=httpx.MockTransport(handler))
    await src.scrape_once()
    await src.scrape_once()
    # Raw samples; then raw samples, the evaluated numbers and the chart's range query.
    assert seen == ["Bearer t0ken"] * 4
    # The URL's path is the API's prefix (a proxy, Mimir).
    assert sorted(paths) == ["/prefix/api/v1/query"] * 3 + ["/prefix/api/v1/query_range"]
    token.unlink()
    await src.scrape_once()
    assert {h.error for h in src.health()} == {f"Prometheus prom:9090: bearer token file {token}: "
                                               "No such file or directory"}
    await src.aclose()
    basic = PrometheusSource(Target(name="p", url="http://p:9090", basic_auth=("u", "pw")), store=Store(),
                             transport=httpx.MockTransport(handler))
    await basic.scrape_once()
    assert seen[-1] == "Basic dTpwdw=="
    await basic.aclose()


async def test_a_target_over_the_series_cap_keeps_what_fit_and_says_so() -> None:
    t = 1_700_000_000.0
    w = {"job": "w", "instance": "a:1"}
    answer = matrix(*(({"__name__": ROLLOUTS, "env": f"e{i}", **w}, [(t, i)]) for i in range(5)),
                    ({"__name__": "up", **w}, [(t, 1)]))
    store = Store(max_series=3)
    src = source(Answers(answer), store)
    await src.scrape_once()
    (row,) = src.health()
    assert (row.up, row.series, row.dropped_series) == (False, 3, 2)
    assert row.error == "series limit 3 reached: 2 new series dropped"
    await src.aclose()


async def test_a_series_over_the_label_size_contract_is_refused_as_the_scraper_refuses_it() -> None:
    # Issue 12: the scraper refuses a page holding a 65 KiB label value, but the same series through a
    # Prometheus server was stored whatever its size. Now it is refused with the scraper's words, its target
    # says so, and every other series (its own and other targets') is kept.
    t = 1_700_000_000.0
    w = {"job": "w", "instance": "a:1"}
    other = {"job": "w", "instance": "b:1"}
    fat = "x" * (schema.MAX_LABEL_VALUE_BYTES + 1)
    wide = {f"l{i}": "y" * 40_000 for i in range(4)}  # each value within its limit, the series over its own
    answer = matrix(({"__name__": ROLLOUTS, "env": "ok", **w}, [(t, 1)]),
                    ({"__name__": ROLLOUTS, "env": fat, **w}, [(t, 2)]),
                    ({"__name__": ROLLOUTS, "env": "ok", **other}, [(t, 3)]),
                    ({"__name__": ROLLOUTS, **wide, **other}, [(t, 4)]),
                    ({"__name__": "up", **w}, [(t, 1)]), ({"__name__": "up", **other}, [(t, 1)]))
    store = Store()
    src = source(Answers(answer), store)
    await src.scrape_once()
    await src.scrape_once()  # a cached refusal is still said on the next answer
    rows = {r.name: r for r in src.health()}
    assert rows["a:1"].series == 1 and rows["b:1"].series == 1
    assert rows["a:1"].up is False and rows["a:1"].error == (
        f"series refused: label value of {len(fat):,} bytes exceeds the limit of {schema.MAX_LABEL_VALUE_BYTES:,} "
        f"(label 'env' of {ROLLOUTS})")
    assert rows["b:1"].error is not None and rows["b:1"].error.startswith(
        "series refused: series of 160,")
    assert rows["b:1"].error.endswith(f"exceeds the limit of {schema.MAX_SERIES_BYTES:,} ({ROLLOUTS})")
    assert {s.labels["env"] for s in store.series("a:1", ROLLOUTS)} == {"ok"}
    await src.aclose()


# --- server-side evaluation (MockTransport) -------------------------------------------------------

T0 = 1_700_000_000.0  # the Prometheus scrape in fleet_answer
NOW = 1_700_000_100.0  # the source's and the feed's clock


def evaluation_answer() -> bytes:
    """What Prometheus answers to the combined instant query (each answer tagged by ``ptmon_q``)."""
    q = promql.Q_LABEL
    return vector(
        ({q: "rollouts", "job": "w", "instance": "a:1"}, 12.5),
        ({q: "rollouts", "job": "gone", "instance": "x:1"}, 99.0),  # a target not in the raw answer: ignored
        ({q: "rollout_tokens", "job": "w", "instance": "a:1"}, 1250.0),
        ({q: "sync_p99"}, 7.0),
        ({q: "sync_p50"}, "NaN"),  # no sync in the window: histogram_quantile's NaN is no answer
        ({q: "sync_count"}, 3.3),  # increase() extrapolates: the stored samples' exact count is shown
        ({q: "gpus", "job": "t", "instance": "b:1", "role": "trainer"}, 8.0),
        ({q: "gpus", "job": "w", "instance": "a:1", "role": "rollout"}, 4.0),
        ({"__name__": "unrelated"}, 1.0),
    )


def feed_on(answers: Answers, *, prices: dict[str, float] | None = None, clock: Callable[[], float] = lambda: NOW
            ) -> LiveFeed:
    from types import MappingProxyType
    settings = Settings(prometheus=SERVER, interval_s=1.0, prices=MappingProxyType(prices or {}))
    return LiveFeed(settings, clock=clock, transport=answers.transport())


async def test_windowed_numbers_are_evaluated_by_the_server_and_shown() -> None:
    chart = matrix(({}, [(NOW - 4, 11.0), (NOW - 2, 12.0), (NOW, "NaN")]))
    answers = Answers(fleet_answer(T0), evaluation=evaluation_answer(), chart=chart)
    feed = feed_on(answers, prices={"trainer": 2.5})
    await feed.collect_once()
    assert answers.evaluations == []  # nothing stored yet to say how old the data is: from the next poll
    local = await feed.dashboard(window_s=300)
    await feed.collect_once()
    d = await feed.dashboard(window_s=300)

    # One instant query at the feed's now, over the data's age (100 s + half a poll), not the 300 s
    # window: PromQL divides by the range, so a run younger than the window would read low.
    (asked,) = answers.evaluations
    assert asked["time"] == f"{NOW:.3f}" and "[100500ms]" in asked["query"]
    assert 'histogram_quantile(0.99, sum by (le) (rate(posttrain_weight_sync_seconds_bucket[100500ms])))' \
        in asked["query"]
    (chart_q,) = answers.ranges
    assert (float(chart_q["start"]), float(chart_q["end"]), float(chart_q["step"])) == (NOW - 100.5, NOW, 2.0)
    assert chart_q["query"].startswith('sum (rate({__name__=~"posttrain_rollouts_total|posttrain_rollouts"}[')

    assert d.rollout_rate_per_s == 12.5 and [(w.name, w.rollouts_per_s) for w in d.workers] == [("a:1", 12.5)]
    assert d.rollout_tokens_per_s == 1250.0 and d.workers[0].tokens_per_s == 1250.0
    assert d.weight_sync_p99_s == 7.0 and d.weight_sync_count == local.weight_sync_count
    assert d.weight_sync_p50_s == local.weight_sync_p50_s is None  # NaN: the stored data's (no) answer stands
    # Burn: GPUs in use (server-side rate of GPU-seconds) x price: ptmon's config for the trainer (2.5),
    # the default for a rollout worker that exposes no price gauge.
    from ptmon.exporters import schema
    assert d.burn_dollars_per_hour == pytest.approx(8 * 2.5 + 4 * schema.DEFAULT_GPU_HOUR_PRICE)
    assert d.dollars_per_million_rollout_tokens == pytest.approx(d.burn_dollars_per_hour / (1250 * 3600) * 1e6)
    assert d.rollout_rate_series == ((NOW - 4, 11.0), (NOW - 2, 12.0))
    assert d.rollout_error_rate_per_s == 0.0  # rollouts counted, none an error
    await feed.aclose()


async def test_a_new_window_or_an_old_answer_falls_back_to_the_stored_samples() -> None:
    now = [NOW]
    answers = Answers(fleet_answer(T0), evaluation=evaluation_answer())
    feed = feed_on(answers, clock=lambda: now[0])
    for _ in range(2):
        await feed.collect_once()
    assert (await feed.dashboard(window_s=300)).weight_sync_p99_s == 7.0
    # Another window: the answer is for 300 s; until the next poll asks for 60 s the store's numbers show.
    assert (await feed.dashboard(window_s=60)).weight_sync_p99_s is None
    await feed.collect_once()
    assert "[60s]" in answers.evaluations[-1]["query"]
    assert (await feed.dashboard(window_s=60)).weight_sync_p99_s == 7.0
    now[0] += 30  # Prometheus stopped answering 30 s ago: its last numbers are no longer "now"
    assert (await feed.dashboard(window_s=60)).weight_sync_p99_s is None
    await feed.aclose()


async def test_an_evaluation_the_server_refuses_leaves_the_targets_up_and_the_stored_numbers_shown() -> None:
    refused = json.dumps({"status": "error", "errorType": "bad_data", "error": "1:1: parse error"}).encode()
    answers = Answers(fleet_answer(T0), evaluation=refused)
    feed = feed_on(answers)
    await feed.collect_once()  # raw samples only: fine
    await feed.collect_once()
    d = await feed.dashboard(window_s=300)
    # The targets answered and their samples arrived: nothing is down, no alert; the numbers are the store's.
    assert {(t.name, t.up, t.error) for t in d.targets} == {("a:1", True, None), ("b:1", True, None)}
    assert d.alerts == () and d.weight_sync_p99_s is None
    assert feed._prometheus.evaluation_error == (  # noqa: SLF001
        "Prometheus prom:9090: evaluation: query failed: bad_data: 1:1: parse error")
    answers.evaluation = evaluation_answer()
    await feed.collect_once()
    assert (await feed.dashboard(window_s=300)).weight_sync_p99_s == 7.0
    assert feed._prometheus.evaluation_error is None  # noqa: SLF001
    await feed.aclose()


async def test_a_slow_evaluation_is_given_up_without_holding_the_poll_or_failing_it() -> None:
    answers = Answers(fleet_answer(T0), evaluation=evaluation_answer())
    slow = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        if promql.Q_LABEL in request.url.params.get("query", ""):
            await slow.wait()  # never set: the evaluation hangs
        return answers(request)

    src = PrometheusSource(SERVER, store=Store(), transport=httpx.MockTransport(handler), interval_s=1.0,
                           timeout_s=0.2, clock=lambda: NOW)
    await src.scrape_once()
    began = time.monotonic()
    await src.scrape_once()
    assert time.monotonic() - began < 2  # the evaluation's own deadline, not forever
    assert {h.up for h in src.health()} == {True} and src.evaluated() is None
    assert src.evaluation_error == "Prometheus prom:9090: evaluation: timed out after 0.2 s"
    await src.aclose()


async def test_aclose_during_a_poll_returns_and_stops_polling() -> None:
    """A poll cancelled while its queries are in flight ends; the loop does not carry on."""
    hang = asyncio.Event()
    calls: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        await hang.wait()
        raise AssertionError("unreachable")

    src = PrometheusSource(SERVER, store=Store(), transport=httpx.MockTransport(handler), interval_s=0.05,
                           timeout_s=5.0, clock=lambda: NOW)
    await src.start()
    while not calls:
        await asyncio.sleep(0.01)
    await asyncio.wait_for(src.aclose(), timeout=2)
    seen = len(calls)
    await asyncio.sleep(0.2)
    assert len(calls) == seen  # no poll after aclose


async def test_evaluation_can_be_turned_off() -> None:
    answers = Answers(fleet_answer(T0), evaluation=evaluation_answer())
    src = source(answers, evaluate=False)
    for _ in range(2):
        await src.scrape_once()
    assert answers.evaluations == [] and answers.ranges == [] and src.evaluated() is None
    await src.aclose()


async def test_the_range_starts_at_the_newest_first_scrape_of_the_targets_there_from_the_start() -> None:
    """Prometheus scrapes each target at its own offset: a range starting before a target's first sample
    by over 1.1 scrapes makes rate() extrapolate it back only half a scrape, reading it low."""
    w, tr, late = ({"job": "w", "instance": "a:1"}, {"job": "t", "instance": "b:1"},
                   {"job": "w", "instance": "c:1"})
    answer = matrix(
        ({"__name__": ROLLOUTS, **w}, [(T0 + 3, 1), (T0 + 8, 2)]),
        ({"__name__": "up", **w}, [(T0 + 3, 1), (T0 + 8, 1)]),
        ({"__name__": "posttrain_policy_version", **tr}, [(T0, 1), (T0 + 5, 1)]),
        ({"__name__": "up", **tr}, [(T0, 1), (T0 + 5, 1)]),
        ({"__name__": ROLLOUTS, **late}, [(T0 + 50, 1)]),  # joined later: does not shorten the range
        ({"__name__": "up", **late}, [(T0 + 50, 1)]),
    )
    answers = Answers(answer)
    src = source(answers)
    for _ in range(2):
        await src.scrape_once()
    # 5 s scrapes; the newest first scrape of the starting targets is T0 + 3: the range starts 2.5 s before.
    assert "[99500ms]" in answers.evaluations[-1]["query"]
    assert src.evaluated() is not None and src.evaluated().range_s == 99.5
    await src.aclose()


async def test_a_late_first_answer_is_said_while_waiting_for_it() -> None:
    """The first query (the window's history) may take 10 s; the server row says it is waiting, not nothing."""
    release = asyncio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        await release.wait()
        return httpx.Response(200, content=fleet_answer(T0))

    src = PrometheusSource(SERVER, store=Store(), transport=httpx.MockTransport(slow), interval_s=1.0,
                           timeout_s=0.1)
    poll = asyncio.create_task(src.scrape_once())
    await asyncio.sleep(0.05)
    assert src.health()[0].error is None  # within the usual timeout: nothing to say yet
    await asyncio.sleep(0.2)
    (row,) = src.health()
    assert row.up is None
    assert row.error == ("no answer from Prometheus prom:9090 after 0 s (the first query fetches the last 300 s; "
                         "it gives up at 10 s)")
    release.set()
    await poll
    assert {h.name: h.up for h in src.health()} == {"b:1": True, "a:1": True}
    await src.aclose()


async def test_gpus_without_a_role_label_are_priced_by_their_targets_role() -> None:
    q = promql.Q_LABEL
    evaluation = vector(({q: "gpus", "job": "t", "instance": "b:1"}, 8.0))  # no role label on the series
    feed = feed_on(Answers(fleet_answer(T0), evaluation=evaluation), prices={"trainer": 2.5})
    for _ in range(2):
        await feed.collect_once()
    d = await feed.dashboard(window_s=300)
    assert {t.name: t.role for t in d.targets}["b:1"] == "trainer"  # detected from what it exposes
    assert d.burn_dollars_per_hour == 8 * 2.5  # as build_dashboard prices it: the target's role's price
    await feed.aclose()


async def test_a_run_filter_keeps_that_runs_targets_and_asks_for_that_run() -> None:
    """One Prometheus, two runs: with ``run=``, only targets whose run info says it are read, and every
    server-side number is evaluated over them alone."""
    info = "posttrain_run_info"
    a_w, a_t, b_t = ({"job": "w", "instance": "a:1"}, {"job": "t", "instance": "b:1"},
                     {"job": "t", "instance": "z:9"})
    answer = matrix(
        ({"__name__": info, "run": "alpha", "role": "rollout", **a_w}, [(T0, 1)]),
        ({"__name__": ROLLOUTS, **a_w}, [(T0, 10)]),
        ({"__name__": "up", **a_w}, [(T0, 1)]),
        ({"__name__": info, "run": "alpha", "role": "trainer", **a_t}, [(T0, 1)]),
        ({"__name__": "posttrain_policy_version", **a_t}, [(T0, 4)]),
        ({"__name__": "up", **a_t}, [(T0, 1)]),
        ({"__name__": info, "run": "beta", "role": "trainer", **b_t}, [(T0, 1)]),  # another run's trainer
        ({"__name__": "posttrain_policy_version", **b_t}, [(T0, 400)]),
        ({"__name__": "up", **b_t}, [(T0, 0)]),
    )
    answers = Answers(answer)
    store = Store()
    src = source(answers, store, run='alpha"')  # a quote in the name is escaped, not injected
    await src.scrape_once()
    assert store.targets() == [] and src.health()[0].error == (
        "no target of run 'alpha\"' in Prometheus yet (none exposes posttrain_run_info with it)")
    await src.aclose()

    answers = Answers(answer)
    src = source(answers, store, run="alpha")
    for _ in range(2):
        await src.scrape_once()
    assert sorted(store.targets()) == ["a:1", "b:1"]  # not z:9, beta's trainer (and its down `up`)
    assert {h.name: h.up for h in src.health()} == {"a:1": True, "b:1": True}
    query = answers.evaluations[-1]["query"]
    assert 'histogram_quantile(0.99, sum by (le, run) (rate(posttrain_weight_sync_seconds_bucket[' in query
    # Every query is alpha's: run info filtered in both branches of each join (a pushed group's own run, and
    # the target's run info); the mean step time joins twice (its sum and its count).
    assert query.count('posttrain_run_info{run="alpha"}') == 2 * (len(promql.instant_queries(60, run="x")) + 1)
    assert 'posttrain_run_info{run="alpha"}' in answers.ranges[-1]["query"]
    assert promql.string('alpha"') == '"alpha\\""'
    await src.aclose()


async def test_a_shorter_interval_wakes_the_poll_loop_at_once() -> None:
    answers = Answers(fleet_answer(1_700_000_000.0))
    polls: list[float] = []
    inner = answers.transport()

    async def counted(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("query_range") and promql.Q_LABEL not in request.url.params["query"]:
            polls.append(time.monotonic())
        return await inner.handle_async_request(request)

    src = PrometheusSource(SERVER, store=Store(), transport=httpx.MockTransport(counted), interval_s=0.5)
    await src.start()
    try:
        await until(lambda: len(polls) >= 2, what="two polls")
        src.set_interval(60.0)
        await asyncio.sleep(0.3)
        settled = len(polls)
        await asyncio.sleep(1.2)
        assert len(polls) == settled  # the poll due within 0.5 s is now a minute away
        changed = time.monotonic()
        src.set_interval(0.5)
        await until(lambda: len(polls) > settled, timeout=5.0, what="a poll after the change")
        assert polls[settled] - changed < 1.0
    finally:
        await src.aclose()


async def test_a_login_page_where_the_api_should_be_is_named_so() -> None:
    page = b"<!doctype html><html><head><title>Sign in</title></head></html>"
    with http_server(lambda h: send(h, page, "text/html; charset=utf-8")) as port:
        address = f"127.0.0.1:{port}"
        src = PrometheusSource(prometheus_from_url(address), store=Store(), timeout_s=2.0)
        async with src:
            await src.scrape_once()
    (row,) = src.health()
    assert row.up is False
    assert row.error == f"Prometheus {address}: got text/html, not a Prometheus API answer (a login page?)"


def test_snapshot_of_a_server_holding_no_ptmon_series_says_it_answered(capsys: pytest.CaptureFixture[str]) -> None:
    from ptmon.monitor.cli import main

    node_only = matrix(({"__name__": "up", "job": "node", "instance": "n:9100"}, [(time.time(), 1)]))
    with http_server(lambda h: send(h, node_only, "application/json")) as port:
        address = f"127.0.0.1:{port}"
        code = main(["snapshot", "--prometheus", address, "--over", "0.6", "--interval", "0.25", "--json"])
    out = capsys.readouterr()
    assert code == 1
    assert out.err == f"ptmon snapshot: Prometheus {address} answered, but holds no posttrain_, engine or DCGM series\n"
    (row,) = json.loads(out.out)["targets"]
    assert row["up"] is None and row["last_scrape"] is not None  # it answered; there is nothing to show


async def test_a_target_in_a_ptmon_job_with_nothing_ptmon_reads_is_listed_up_but_not_recognised() -> None:
    # The shipped config scrapes every file_sd target in one job: a node exporter put there is listed.
    job = {"job": "ptmon"}
    answer = matrix(({"__name__": ROLLOUTS, "env": "math", "outcome": "ok", "instance": "a:1", **job}, [(1.0, 3)]),
                    ({"__name__": "up", "instance": "a:1", **job}, [(1.0, 1)]),
                    ({"__name__": "up", "instance": "n:9100", **job}, [(1.0, 1)]),
                    ({"__name__": "scrape_samples_scraped", "instance": "n:9100", **job}, [(1.0, 812)]))
    src = source(Answers(answer))
    await src.scrape_once()
    health = {h.name: h for h in src.health()}
    assert (health["a:1"].up, health["a:1"].recognised) == (True, True)
    assert (health["n:9100"].up, health["n:9100"].recognised, health["n:9100"].samples) == (True, False, 812)
    await src.aclose()
