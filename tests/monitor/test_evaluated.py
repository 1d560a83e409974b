"""A Prometheus server's answers as an input of the build: where it answered it wins, elsewhere the store
speaks, and everything derived from a rate (status, totals, $/M tokens, burn, the known-zero error rate)
is derived from the answer by the build's one rule."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from ptmon.exporters import schema
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.config import prometheus_from_url
from ptmon.monitor.dashboard import Dashboard, TargetHealth
from ptmon.monitor.evaluated import Evaluated, prefer
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.parse import Sample
from ptmon.monitor.sections import rollouts
from ptmon.monitor.settings import Settings, Target, evaluated_max_age_s
from ptmon.monitor.store import Store
from tests.monitor.test_build import NOW, SCENARIO, T0, WINDOW, Gen, S, fill, histogram, up

SYNCS = (1050.0, 1100.0, 1150.0, 1200.0)


def trainer(t: float) -> list[Sample]:
    r = t - T0
    syncs = [1.0 + 0.5 * i for i, ts in enumerate(SYNCS) if ts <= t]
    return [S(schema.RUN_INFO.name, 1, run="r", model="m", algorithm="grpo", role="trainer"),
            S(schema.POLICY_VERSION.name, 3), S(schema.TRAINER_STEPS.name, 100 + 0.5 * r),
            S(schema.TRAINER_STEP_SECONDS.count, 100 + 0.5 * r), S(schema.TRAINER_STEP_SECONDS.sum, 200 + r),
            S(schema.WEIGHT_SYNC_FAILURES.name, 2 + (1 if t >= 1150 else 0)),
            S(schema.WEIGHT_SYNC_BYTES.name, 1e9 * len(syncs)),
            S(schema.GPU_SECONDS.name, 8 * (r + 10), role="trainer"),
            S(schema.GPU_HOUR_PRICE.name, 3.0, role="trainer"),
            *histogram(schema.WEIGHT_SYNC_SECONDS, syncs)]


def rollout(rate: float, *, version: float = 3, tokens: bool = True, gpus: float = 0.0) -> Gen:
    def gen(t: float) -> list[Sample]:
        r = t - T0
        out = [S(schema.RUN_INFO.name, 1, run="r", model="m", algorithm="grpo", role="rollout"),
               S(schema.ROLLOUTS.name, 10 + rate * r, env="math", outcome="ok"),
               S(schema.ROLLOUT_POLICY_VERSION.name, version)]
        if tokens:
            out.append(S(schema.ROLLOUT_TOKENS.name, 1e4 + 2 * rate * r, env="math"))
        if gpus:
            out += [S(schema.GPU_SECONDS.name, gpus * (r + 10), role="rollout"),
                    S(schema.GPU_HOUR_PRICE.name, 1.5, role="rollout")]
        return out
    return gen


def down(name: str) -> TargetHealth:
    return TargetHealth(name=name, url=f"http://{name}/metrics", role=None, up=False, error="connection refused")


def answers(**kw: Any) -> Evaluated:
    return Evaluated(at=NOW, window_s=WINDOW, range_s=WINDOW, **kw)


def build(store: Store, health: tuple[TargetHealth, ...] = (), settings: Settings | None = None,
          evaluated: Evaluated | None = None) -> Dashboard:
    return build_dashboard(store, health, settings or Settings(), now=NOW, window_s=WINDOW, evaluated=evaluated)


def test_prefer_takes_the_servers_answer_where_it_gave_one() -> None:
    assert prefer(2.0, 1.0) == 2.0 and prefer(None, 1.0) == 1.0 and prefer(None, None) is None
    assert prefer(0.0, 1.0) == 0.0  # a zero is an answer


def test_no_answers_change_nothing() -> None:
    store = fill(Store(), SCENARIO)
    assert build(store, up(*SCENARIO), evaluated=answers()) == build(store, up(*SCENARIO))


def test_answers_replace_the_stored_numbers_and_a_down_worker_shows_no_rate() -> None:
    store = fill(Store(), {"t": trainer, "w0": rollout(1.0, gpus=2), "w1": rollout(0.4, tokens=False)})
    health = (*up("t", "w0"), down("w1"))
    stored = build(store, health)
    # The server's quantiles inside [1.0, 2.5] s, what the syncs took (outside it they are held to it).
    ev = answers(fleet={"sync_p99": 2.4, "sync_count": 2.6, "sync_failures": 0.4, "rollout_errors": 0.25},
                 by_target={"rollouts": {"w0": 3.0, "w1": 0.5}, "rollout_tokens": {"w0": 2.5},
                            "engine_tokens": {"w0": 70.0}},
                 gpus=(("t", "trainer", 8.0), ("w0", "rollout", 2.0)))
    d = build(store, health, evaluated=ev)
    # Fleet total as PromQL's sum: a down worker's samples count while they are in the window...
    assert d.rollout_rate_per_s == 3.5
    # ... but its row shows no rate (the status says why), as for the stored rates.
    # A worker's tokens are its rollout tokens; an engine's generated tokens only when it has none.
    assert [(w.name, w.rollouts_per_s, w.tokens_per_s, w.status) for w in d.workers] == [
        ("w0", 3.0, 2.5, "ok"), ("w1", None, None, "down")]
    assert d.weight_sync_p99_s == 2.4 != stored.weight_sync_p99_s
    # Counts stay the stored samples' exact ones: increase() extrapolates (one failure can read 1.5).
    assert (d.weight_sync_count, d.weight_sync_failures) == (stored.weight_sync_count, stored.weight_sync_failures)
    assert (d.weight_sync_count, d.weight_sync_failures) == (4.0, 1.0)
    assert d.rollout_error_rate_per_s == 0.25
    assert d.rollout_tokens_per_s == 2.5 and d.engine_tokens_per_s == 70.0
    # Not answered: the stored data's number stays.
    assert d.weight_sync_p50_s == stored.weight_sync_p50_s is not None
    assert d.step_seconds == stored.step_seconds == pytest.approx(2.0)
    assert d.spend_dollars == stored.spend_dollars
    # GPUs in use, priced by the exporters' gauges ($3 trainer, $1.5 rollout) as the stored series are.
    assert d.burn_dollars_per_hour == pytest.approx(8 * 3.0 + 2 * 1.5)
    assert d.dollars_per_million_rollout_tokens == pytest.approx(27.0 / (2.5 * 3600) * 1e6)
    # ... and ptmon's [prices] override the gauge for the server's GPUs too.
    priced = build(store, health, Settings(prices={"rollout": 5.0}), evaluated=ev)
    assert priced.burn_dollars_per_hour == pytest.approx(8 * 3.0 + 2 * 5.0)


def test_the_trainers_answers_replace_its_stored_rates() -> None:
    store = fill(Store(), {"t": trainer})
    ev = answers(fleet={"steps": 0.75, "trainer_tokens": 900.0, "step_seconds": 1.25, "sync_p50": 1.2,
                        "sync_p90": 1.9, "sync_bytes": 7.0})  # quantiles inside the syncs' [1.0, 2.5] s
    d = build(store, up("t"), evaluated=ev)
    assert (d.steps_per_s, d.trainer_tokens_per_s, d.step_seconds) == (0.75, 900.0, 1.25)
    assert (d.weight_sync_p50_s, d.weight_sync_p90_s, d.weight_sync_bytes_per_s) == (1.2, 1.9, 7.0)
    stored = build(store, up("t"))
    assert (stored.weight_sync_p50_s, stored.weight_sync_p90_s) != (1.2, 1.9)


def test_an_engine_only_worker_gets_its_generated_tokens() -> None:
    def engine(t: float) -> list[Sample]:
        return [Sample(schema.VLLM_REQUESTS_RUNNING.name, {"engine": "0"}, 4.0)]

    store = fill(Store(), {"e": engine})
    (w,) = build(store, up("e"), evaluated=answers(by_target={"engine_tokens": {"e": 70.0}})).workers
    assert (w.role, w.rollouts_per_s, w.tokens_per_s) == ("engine", None, 70.0)


def test_the_known_zero_error_rate_follows_the_servers_rates() -> None:
    def declared(t: float) -> list[Sample]:  # a rollout worker with nothing counted in the store yet
        return [S(schema.RUN_INFO.name, 1, run="r", model="m", algorithm="grpo", role="rollout")]

    store = fill(Store(), {"w0": declared})
    assert build(store, up("w0")).rollout_error_rate_per_s is None  # no rollouts counted: unknown
    d = build(store, up("w0"), evaluated=answers(by_target={"rollouts": {"w0": 3.0}}))
    assert d.rollout_rate_per_s == 3.0 and d.rollout_error_rate_per_s == 0.0  # counted, none an error


def test_slow_is_judged_on_the_servers_rates() -> None:
    gens = {"t": trainer, "w0": rollout(1.0), "w1": rollout(1.0), "w2": rollout(1.0), "w3": rollout(1.0, version=0)}
    store = fill(Store(), gens)
    health = up(*gens)
    assert [w.status for w in build(store, health).workers] == ["ok", "ok", "ok", "stale"]
    ev = answers(by_target={"rollouts": {"w0": 10.0, "w1": 10.0, "w2": 4.0, "w3": 1.0}})
    d = build(store, health, evaluated=ev)
    # Median of 10, 10, 4, 1 is 7: w2 at 4.0 is not at or below 3.5; w3 keeps "stale" (staleness wins).
    assert [(w.name, w.status) for w in d.workers] == [("w0", "ok"), ("w1", "ok"), ("w2", "ok"), ("w3", "stale")]
    ev = replace(ev, by_target={"rollouts": {"w0": 10.0, "w1": 10.0, "w2": 3.0, "w3": 10.0}})
    assert [w.status for w in build(store, health, evaluated=ev).workers] == ["ok", "ok", "slow", "stale"]


def test_the_servers_chart_replaces_the_stored_one_unless_it_is_empty() -> None:
    store = fill(Store(), SCENARIO)
    stored = build(store, up(*SCENARIO))
    chart = ((NOW - 10, 4.0), (NOW, 5.0))
    assert build(store, up(*SCENARIO), evaluated=answers(rollout_rate_series=chart)).rollout_rate_series == chart
    assert build(store, up(*SCENARIO), evaluated=answers(fleet={"steps": 1.0})).rollout_rate_series == (
        stored.rollout_rate_series)
    # The 10-minute median stays the stored data's (the server answers no such query).
    assert build(store, up(*SCENARIO), evaluated=answers(rollout_rate_series=chart)).rollout_rate_median_10m == (
        stored.rollout_rate_median_10m)


@pytest.mark.parametrize("ev", [
    Evaluated(at=NOW, window_s=60.0, range_s=60.0, fleet={"steps": 9.0}),  # another window
    Evaluated(at=NOW - evaluated_max_age_s(1.0) - 0.5, window_s=WINDOW, range_s=WINDOW, fleet={"steps": 9.0}),
    Evaluated(at=NOW + 1.0, window_s=WINDOW, range_s=WINDOW, fleet={"steps": 9.0}),  # from the future
])
def test_answers_not_for_this_window_or_not_fresh_are_not_used(ev: Evaluated) -> None:
    store = fill(Store(), SCENARIO)
    assert build(store, up(*SCENARIO), evaluated=ev) == build(store, up(*SCENARIO))
    fresh = replace(ev, at=NOW, window_s=WINDOW)
    assert build(store, up(*SCENARIO), evaluated=fresh).steps_per_s == 9.0


@pytest.mark.parametrize(("now", "window", "fresh"), [
    (1000.0, 300.0, True), (1003.0, 300.0, True), (1003.5, 300.0, False),  # older than max_age
    (1000.0, 60.0, False),  # another window
    (999.0, 300.0, False),  # from the future (a clock step back): not trusted
])
def test_fresh_means_this_window_and_recent(now: float, window: float, fresh: bool) -> None:
    ev = Evaluated(at=1000.0, window_s=300.0, range_s=120.0)
    assert ev.fresh(now=now, window_s=window, max_age_s=3.0) is fresh


def test_the_max_age_is_three_polls_and_at_least_one_poll_and_5_s() -> None:
    assert evaluated_max_age_s(1.0) == 6.0 and evaluated_max_age_s(2.5) == 7.5 and evaluated_max_age_s(5.0) == 15.0


# --- against a real Prometheus: the direct and the Prometheus path follow one rule ----------------------

RATES = (20.0, 20.0, 4.0)  # rollouts/s of three workers; the third is slow (at or below half the median)


@pytest.fixture
def three_workers() -> Iterator[list[str]]:
    """Three real rollout workers over HTTP, each counter following ``rate x elapsed`` (set from the wall
    clock every 10 ms, so a loaded machine's scheduling delays never accumulate); yields their URLs."""
    workers = [RolloutExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0) for _ in RATES]
    servers = [serve(w.registry) for w in workers]
    stop = threading.Event()

    def drive() -> None:
        t0, done = time.monotonic(), [0] * len(workers)
        while not stop.wait(0.01):
            for i, (w, rate) in enumerate(zip(workers, RATES, strict=True)):
                due = int(rate * (time.monotonic() - t0))
                for _ in range(due - done[i]):
                    w.record_rollout(env="math", tokens=10, reward=1.0, seconds=0.1)
                done[i] = due

    thread = threading.Thread(target=drive, daemon=True)
    thread.start()
    try:
        yield [s.url for s in servers]
    finally:
        stop.set()
        thread.join(timeout=5)
        for s in servers:
            s.close()


async def test_one_slow_rule_serves_the_direct_and_the_prometheus_path(
        three_workers: list[str], prometheus_server: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The slow-worker rule exists once: changing it (its ratio, or the rule itself) changes the status
    on the direct path and on the Prometheus path, where the rates it judges are Prometheus's own."""
    prom = prometheus_server({"rollout": three_workers}, scrape_interval=0.5)
    prom.wait_for("count(up == 1) == 3")
    names = [u.split("/")[2] for u in three_workers]
    direct = LiveFeed(Settings(targets=tuple(Target(name=n, url=u) for n, u in zip(names, three_workers, strict=True)),
                               interval_s=0.5))
    via = LiveFeed(Settings(prometheus=prometheus_from_url(prom.url), interval_s=0.5))
    source = via._prometheus  # noqa: SLF001 - the answers the Prometheus path built with
    assert source is not None
    await direct.start()
    await via.start()
    try:
        async def statuses(feed: LiveFeed) -> dict[str, str]:
            return {w.name: w.status for w in (await feed.dashboard(window_s=60)).workers}

        async def both_judged() -> bool:
            d, v = await direct.dashboard(window_s=60), await via.dashboard(window_s=60)
            ev = source.evaluated()
            return (ev is not None and ev.window_s == 60 and len(ev.per_target("rollouts")) == 3
                    and {w.name: w.rollouts_per_s for w in v.workers} == dict(ev.per_target("rollouts"))
                    and all(w.rollouts_per_s for w in (*d.workers, *v.workers)) and len(d.workers) == 3)

        deadline = time.monotonic() + 30
        while not await both_judged():
            assert time.monotonic() < deadline, "never had every worker's rate on both paths"
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)  # a few seconds of rates: the slow worker is far below half the others
        slow_one = names[2]
        expected = {n: "slow" if n == slow_one else "ok" for n in names}
        assert await statuses(direct) == expected and await statuses(via) == expected

        # The ratio: at 0.1 x the median (2/s), 4/s is no longer slow, on both paths.
        for feed in (direct, via):
            monkeypatch.setattr(feed, "_settings", replace(
                feed.settings, thresholds=replace(feed.settings.thresholds, rollout_drop_ratio=0.1)))
        assert await statuses(direct) == await statuses(via) == dict.fromkeys(names, "ok")

        # The rule itself, replaced in its one home: "slow" now means at or above the median rate (the two
        # 20/s workers: the middle one is the median), and both paths follow it.
        monkeypatch.setattr(rollouts, "is_slow", lambda rate, typical, ratio: bool(typical) and rate >= typical)
        inverted = {n: "ok" if n == slow_one else "slow" for n in names}
        assert await statuses(direct) == inverted and await statuses(via) == inverted
        first = (await via.dashboard(window_s=60)).workers[0]
        ev = source.evaluated()
        assert ev is not None and first.rollouts_per_s == ev.per_target("rollouts")[first.name]  # Prometheus's
    finally:
        await direct.aclose()
        await via.aclose()
