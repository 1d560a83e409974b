"""The server's answers laid over a Dashboard: where Prometheus answered it wins, elsewhere the store speaks."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ptmon.monitor.dashboard import Dashboard, WorkerRow
from ptmon.monitor.evaluated import Evaluated, overlay


def worker(name: str, *, up: bool = True, rate: float | None = 1.0) -> WorkerRow:
    return WorkerRow(name=name, role="rollout", up=up, rollouts_per_s=rate, tokens_per_s=rate,
                     policy_version=3.0, staleness=0.0, mean_reward=None, status="ok" if up else "down")


BUILT = Dashboard(now=1000.0, window_s=300.0, interval_s=1.0,
                  workers=(worker("w0"), worker("w1", up=False, rate=None)),
                  rollout_rate_per_s=2.0, rollout_tokens_per_s=2.0, weight_sync_p99_s=5.0, weight_sync_count=4.0,
                  weight_sync_failures=1.0, burn_dollars_per_hour=10.0, rollout_error_rate_per_s=0.1)


def no_price(target: str, role: str) -> float:
    raise AssertionError("no GPUs answered: no price needed")


def test_no_answers_change_nothing() -> None:
    ev = Evaluated(at=1000.0, window_s=300.0, range_s=300.0)
    d = overlay(BUILT, ev, price=no_price)
    assert d == BUILT


def test_answers_replace_the_built_numbers_and_a_down_worker_shows_no_rate() -> None:
    ev = Evaluated(at=1000.0, window_s=300.0, range_s=300.0,
                   fleet={"sync_p99": 6.5, "sync_count": 2.6, "sync_failures": 0.4, "rollout_errors": 0.25},
                   by_target={"rollouts": {"w0": 3.0, "w1": 0.5}, "rollout_tokens": {"w0": 2.5},
                              "engine_tokens": {"w0": 70.0}},
                   gpus=(("t", "trainer", 8.0), ("w0", "rollout", 2.0)))
    prices = {("t", "trainer"): 3.0, ("w0", "rollout"): 1.5}
    d = overlay(BUILT, ev, price=lambda target, role: prices[target, role])
    # Fleet total as PromQL's sum: a down worker's samples count while they are in the window...
    assert d.rollout_rate_per_s == 3.5
    # ... but its row shows no rate (the status says why), as build_dashboard does.
    # A worker's tokens are its rollout tokens; an engine's generated tokens only when it has none.
    assert [(w.name, w.rollouts_per_s, w.tokens_per_s) for w in d.workers] == [("w0", 3.0, 2.5), ("w1", None, None)]
    assert d.weight_sync_p99_s == 6.5
    # Counts stay the stored samples' exact ones: increase() extrapolates (one failure can read 1.5).
    assert (d.weight_sync_count, d.weight_sync_failures) == (4.0, 1.0)
    assert d.rollout_error_rate_per_s == 0.25
    assert d.rollout_tokens_per_s == 2.5 and d.engine_tokens_per_s == 70.0
    assert d.weight_sync_p50_s is None and d.step_seconds is None  # not answered: the built number stays
    assert d.burn_dollars_per_hour == pytest.approx(8 * 3.0 + 2 * 1.5)
    assert d.dollars_per_million_rollout_tokens == pytest.approx(27.0 / (2.5 * 3600) * 1e6)


def test_an_engine_only_worker_gets_its_generated_tokens() -> None:
    ev = Evaluated(at=1000.0, window_s=300.0, range_s=300.0, by_target={"engine_tokens": {"w0": 70.0}})
    built = Dashboard(now=1000.0, window_s=300.0, interval_s=1.0, workers=(worker("w0", rate=None),))
    (w,) = overlay(built, ev, price=no_price).workers
    assert (w.rollouts_per_s, w.tokens_per_s) == (None, 70.0)


@pytest.mark.parametrize(("now", "window", "fresh"), [
    (1000.0, 300.0, True), (1003.0, 300.0, True), (1003.5, 300.0, False),  # older than max_age
    (1000.0, 60.0, False),  # another window
    (999.0, 300.0, False),  # from the future (a clock step back): not trusted
])
def test_fresh_means_this_window_and_recent(now: float, window: float, fresh: bool) -> None:
    ev = Evaluated(at=1000.0, window_s=300.0, range_s=120.0)
    assert ev.fresh(now=now, window_s=window, max_age_s=3.0) is fresh


def test_slow_is_judged_on_the_servers_rates() -> None:
    built = Dashboard(now=1000.0, window_s=300.0, interval_s=1.0,
                      workers=(worker("w0"), worker("w1"), worker("w2"),
                               replace(worker("w3"), status="stale")))
    ev = Evaluated(at=1000.0, window_s=300.0, range_s=300.0,
                   by_target={"rollouts": {"w0": 10.0, "w1": 10.0, "w2": 4.0, "w3": 1.0}})
    d = overlay(built, ev, price=no_price, slow_ratio=0.5)
    # Median of 10, 10, 4, 1 is 7: w2 at 4.0 is not at or below 3.5; w3 keeps "stale" (staleness wins).
    assert [(w.name, w.status) for w in d.workers] == [("w0", "ok"), ("w1", "ok"), ("w2", "ok"), ("w3", "stale")]
    ev = replace(ev, by_target={"rollouts": {"w0": 10.0, "w1": 10.0, "w2": 3.0, "w3": 10.0}})
    assert [w.status for w in overlay(built, ev, price=no_price, slow_ratio=0.5).workers] == [
        "ok", "ok", "slow", "stale"]
