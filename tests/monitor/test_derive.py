"""monitor.derive against numbers worked out by hand (PromQL's rules spelled out in each test)."""

from __future__ import annotations

import math

import pytest

from ptmon.monitor.derive import (
    counter_total,
    histogram_quantile,
    histogram_sum_estimate,
    in_window,
    increase,
    least_squares_slope,
    mean,
    median,
    parse_le,
    rate,
    raw_increase,
    running_total,
    span_counter_total,
    span_increase,
    span_of,
    span_rate,
    span_raw_increase,
)
from ptmon.monitor.store import Series

INF = math.inf


def pts(*pairs: tuple[float, float]) -> list[tuple[float, float]]:
    return list(pairs)


# --- rate / increase -------------------------------------------------------------------------


def test_rate_counter_from_zero_extrapolates_no_further_than_zero() -> None:
    # 0,10,..,50 at t=10..60; window (0, 60]. The series starts 10 s after the range start (within
    # 1.1 x the 10 s spacing), but a counter at 0 cannot be extrapolated backwards: increase = 50.
    p = [(10.0 * i, 10.0 * (i - 1)) for i in range(1, 7)]
    assert increase(p, start=0, end=60) == pytest.approx(50.0)
    assert rate(p, start=0, end=60) == pytest.approx(50.0 / 60)


def test_rate_extrapolates_to_the_range_start_when_close() -> None:
    # 100..150 at t=10..60: 10 s to the start < 11 s threshold, zero point is 100 s away:
    # extrapolate the full 10 s: factor (50 + 10) / 50 = 1.2 -> increase 60, rate 1/s.
    p = [(10.0 * i, 90.0 + 10.0 * i) for i in range(1, 7)]
    assert increase(p, start=0, end=60) == pytest.approx(60.0)
    assert rate(p, start=0, end=60) == pytest.approx(1.0)


def test_rate_counter_reset_counts_from_zero() -> None:
    # 100,110,120 | restart | 5,15,25: increments 10+10+5+10+10 = 45 over 50 s sampled;
    # extrapolated by (50 + 10) / 50 -> 54; rate 54 / 60 = 0.9.
    p = pts((10, 100), (20, 110), (30, 120), (40, 5), (50, 15), (60, 25))
    assert raw_increase(p) == pytest.approx(45.0)
    assert increase(p, start=0, end=60) == pytest.approx(54.0)
    assert rate(p, start=0, end=60) == pytest.approx(0.9)


def test_rate_series_starting_mid_window_extrapolates_half_a_spacing() -> None:
    # First sample 50 s after the range start (>= 11 s): extrapolate only avg/2 = 5 s.
    p = [(50.0 + 10 * i, 100.0 + 10 * i) for i in range(6)]
    assert increase(p, start=0, end=100) == pytest.approx(55.0)
    assert rate(p, start=0, end=100) == pytest.approx(0.55)


def test_rate_series_ending_early_extrapolates_half_a_spacing_at_the_end() -> None:
    # 100..150 at t=0.5..50.5 (spacing 10), window (0, 100]: start gap 0.5 s (full), end gap 49.5 s -> 5 s.
    p = [(0.5 + 10 * i, 100.0 + 10 * i) for i in range(6)]
    assert increase(p, start=0, end=100) == pytest.approx(50 * (50 + 0.5 + 5) / 50)


@pytest.mark.parametrize("p", [[], [(10.0, 5.0)]])
def test_rate_needs_two_points(p: list[tuple[float, float]]) -> None:
    assert rate(p, start=0, end=60) is None
    assert increase(p, start=0, end=60) is None
    assert raw_increase(p) is None


def test_flat_counter_rate_is_zero_not_none() -> None:
    p = pts((10, 7), (20, 7), (30, 7))
    assert rate(p, start=0, end=30) == 0.0


def test_in_window_is_left_open() -> None:
    s = Series("x", {}, capacity=10)
    for t in (0.0, 10.0, 20.0, 30.0):
        s.append(t, t)
    assert in_window(s, 10.0, 30.0) == [(20.0, 20.0), (30.0, 30.0)]
    assert in_window(s, 5.0, 25.0) == [(10.0, 10.0), (20.0, 20.0)]
    assert in_window(s, 40.0, 50.0) == []


def test_a_series_span_gives_the_same_numbers_as_its_points() -> None:
    # 100,110,120 | restart | 5,15,25 | restart | 3 at t = 10..80, in a ring of 6 points: the first two
    # fell out. Every (start, end] gives bit-identical results from the span and from the points.
    s = Series("x", {}, capacity=6)
    for t, v in zip(range(10, 90, 10), (100, 110, 120, 5, 15, 25, 30, 3), strict=False):
        s.append(float(t), float(v))
    # Held: 120, 5, 15, 25, 30, 3 (t = 30..80): increments from zero after each drop 5 + 10 + 10 + 5 + 3.
    assert span_raw_increase(s.span(0, 100)) == raw_increase(in_window(s, 0, 100)) == 33
    for start in (0.0, 25.0, 30.0, 45.0, 60.0):
        for end in (45.0, 70.0, 80.0, 100.0):
            p = in_window(s, start, end)
            sp = s.span(start, end)
            assert sp == span_of(p)
            assert span_rate(sp, start=start, end=end) == rate(p, start=start, end=end)
            assert span_increase(sp, start=start, end=end) == increase(p, start=start, end=end)
            assert span_raw_increase(sp) == raw_increase(p)
            assert span_counter_total(sp) == counter_total(p)
    assert s.span(80, 100) is None and span_rate(None, start=0, end=1) is None


def test_counter_total_and_running_total_across_a_restart() -> None:
    p = pts((1, 10), (2, 30), (3, 4), (4, 9))
    assert counter_total(p) == 30 + 9
    assert counter_total([]) is None
    assert running_total([10.0, 30.0, 4.0, 9.0]) == [10.0, 30.0, 34.0, 39.0]
    assert running_total([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    assert running_total([5.0, 1.0, 0.5, 2.0]) == [5.0, 6.0, 6.5, 8.0]  # two restarts in a row


# --- histogram_quantile ----------------------------------------------------------------------

HIST = [(0.1, 0.0), (0.5, 10.0), (1.0, 20.0), (INF, 20.0)]


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        (0.5, 0.5),  # rank 10 is the top of the (0.1, 0.5] bucket
        (0.75, 0.75),  # rank 15: 5 of 10 into (0.5, 1.0]
        (0.99, 0.99),  # rank 19.8: 9.8 of 10 into (0.5, 1.0]
        (0.25, 0.3),  # rank 5: half way through (0.1, 0.5]
    ],
)
def test_histogram_quantile_interpolates_linearly(q: float, expected: float) -> None:
    assert histogram_quantile(q, HIST) == pytest.approx(expected)


def test_histogram_quantile_lowest_bucket_starts_at_zero() -> None:
    assert histogram_quantile(0.25, [(1.0, 10.0), (2.0, 20.0), (INF, 20.0)]) == pytest.approx(0.5)


def test_histogram_quantile_lowest_bucket_at_or_below_zero_returns_its_bound() -> None:
    assert histogram_quantile(0.2, [(-1.0, 5.0), (0.0, 10.0), (INF, 10.0)]) == -1.0


def test_histogram_quantile_rank_in_inf_bucket_returns_highest_finite_bound() -> None:
    assert histogram_quantile(0.5, [(1.0, 0.0), (2.0, 0.0), (INF, 5.0)]) == 2.0
    assert histogram_quantile(0.99, [(1.0, 10.0), (2.0, 20.0), (INF, 40.0)]) == 2.0


def test_histogram_quantile_inf_only_is_unknown() -> None:
    assert histogram_quantile(0.5, [(INF, 5.0)]) is None


def test_histogram_quantile_unknowns() -> None:
    assert histogram_quantile(0.5, []) is None
    assert histogram_quantile(0.5, [(1.0, 3.0), (2.0, 5.0)]) is None  # no +Inf bucket
    assert histogram_quantile(0.5, [(1.0, 0.0), (INF, 0.0)]) is None  # no observations
    assert histogram_quantile(float("nan"), HIST) is None
    assert histogram_quantile(-0.1, HIST) == -INF
    assert histogram_quantile(1.1, HIST) == INF


def test_histogram_quantile_forces_monotonic_and_coalesces_and_sorts() -> None:
    # 10, 8, 12 -> envelope 10, 10, 12: rank 6 lands in (0, 1]: 0.6.
    assert histogram_quantile(0.5, [(INF, 12.0), (2.0, 8.0), (1.0, 10.0)]) == pytest.approx(0.6)
    # Two series with the same bounds add up: (1: 4+6), (+Inf: 10+10) -> rank 10 -> bucket 1 full.
    assert histogram_quantile(0.5, [(1.0, 4.0), (INF, 10.0), (1.0, 6.0), (INF, 10.0)]) == pytest.approx(1.0)


def test_histogram_sum_estimate_from_bucket_midpoints() -> None:
    # Cumulative -1: 2, -0.5: 2, 0: 5, 0.1: 5, 0.5: 9, 1: 10, +Inf: 12. Per bucket: 2 at -1 (the lowest
    # bucket reaches down to -Inf: its bound), 3 at -0.25, 4 at 0.3, 1 at 0.75, 2 at 1 (+Inf: the last
    # finite bound): -2 - 0.75 + 1.2 + 0.75 + 2 = 1.2 over 12 observations.
    buckets = [(-1.0, 2.0), (-0.5, 2.0), (0.0, 5.0), (0.1, 5.0), (0.5, 9.0), (1.0, 10.0), (INF, 12.0)]
    total, count = histogram_sum_estimate(buckets)
    assert (total, count) == (pytest.approx(1.2), 12.0)
    # A positive lowest bound starts at 0, as in histogram_quantile: 4 at 0.5, 2 at 1.5.
    assert histogram_sum_estimate([(1.0, 4.0), (2.0, 6.0), (INF, 6.0)]) == (pytest.approx(5.0), 6.0)
    # Order-free, equal bounds add up (1: 4, +Inf: 6), counts made monotonic (10, 8, 12 -> 10, 10, 12).
    assert histogram_sum_estimate([(INF, 2.0), (1.0, 2.0), (1.0, 2.0), (INF, 4.0)]) == (pytest.approx(4.0), 6.0)
    assert histogram_sum_estimate([(1.0, 10.0), (2.0, 8.0), (INF, 12.0)]) == (pytest.approx(5.0 + 2 * 2.0), 12.0)


def test_histogram_sum_estimate_unknowns() -> None:
    assert histogram_sum_estimate([]) is None
    assert histogram_sum_estimate([(INF, 5.0)]) is None  # +Inf only: no finite value to place them at
    assert histogram_sum_estimate([(1.0, 3.0), (2.0, 5.0)]) is None  # no +Inf bucket
    assert histogram_sum_estimate([(1.0, 0.0), (INF, 0.0)]) is None  # no observations


def test_parse_le() -> None:
    assert parse_le("+Inf") == INF
    assert parse_le("0.25") == 0.25
    assert parse_le("nope") is None


# --- slope, median, mean ----------------------------------------------------------------------


def test_least_squares_slope() -> None:
    # Score 0.1 -> 0.3 over $2000, exactly linear: 1e-4 per dollar.
    assert least_squares_slope([0.0, 1000.0, 2000.0], [0.1, 0.2, 0.3]) == pytest.approx(1e-4)
    # Noisy: x = 0..3, y = 0,2,1,3; means 1.5, 1.5; sxx = 5, sxy = 2.25-0.25-0.25+2.25 = 4 -> 0.8.
    assert least_squares_slope([0, 1, 2, 3], [0, 2, 1, 3]) == pytest.approx(0.8)
    assert least_squares_slope([1.0], [0.5]) is None
    assert least_squares_slope([5.0, 5.0], [0.1, 0.2]) is None
    # Values near the float limit overflow statistics' fsum: no slope rather than an exception.
    assert least_squares_slope([0.0, 1.0], [1.7e308, -1.7e308]) is None
    assert least_squares_slope([0.0, math.inf], [0.1, 0.2]) is None


def test_median_and_mean() -> None:
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    assert median([]) is None
    assert mean([1, 2, 6]) == 3
    assert mean([]) is None


# --- agreement with a real Prometheus ----------------------------------------------------------
#
# The real exporters are served on loopback and scraped by a real prometheus (the conftest
# fixture); one rollout worker is restarted on the same port mid-run, so its counters reset. The
# raw samples Prometheus stored are read back with a range query and fed to ptmon's functions (and
# to build_dashboard through a Store); the results must match PromQL's own rate() and
# histogram_quantile() at the same evaluation time within 1%.

import threading  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from typing import Any  # noqa: E402

from ptmon.exporters import schema  # noqa: E402
from ptmon.exporters.rollout import RolloutExporter  # noqa: E402
from ptmon.exporters.serve import serve  # noqa: E402
from ptmon.exporters.trainer import TrainerExporter  # noqa: E402
from ptmon.monitor.build import build_dashboard  # noqa: E402
from ptmon.monitor.parse import Sample  # noqa: E402
from ptmon.monitor.settings import Settings  # noqa: E402
from ptmon.monitor.store import Store  # noqa: E402

SYNC_CYCLE = (0.07, 0.2, 0.3, 0.45, 0.6, 0.9, 1.5, 3.0, 4.0, 7.0, 15.0)
RANGE_S = 6.0


class OffsetClock:
    """Monotonic time plus an offset the test bumps to make a weight sync 'take' d seconds at once."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


def _matrix(prom, selector: str, at: float, range_s: float = RANGE_S
            ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    data = prom.api("query", query=f"{selector}[{int(range_s)}s]", time=f"{at:.3f}")
    return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]


def _instant(prom, promql: str, at: float) -> list[tuple[dict[str, str], float]]:
    data = prom.api("query", query=promql, time=f"{at:.3f}")
    return [(r["metric"], float(r["value"][1])) for r in data["result"]]


@pytest.mark.prometheus
def test_rate_and_histogram_quantile_agree_with_promql(prometheus_server) -> None:
    ident: dict[str, Any] = dict(run="promql", model="m", algorithm="grpo", gpus=1, gpu_hour_price=1.0)
    clock = OffsetClock()
    trainer = TrainerExporter(**ident, clock=clock)
    workers = {"w": RolloutExporter(**ident)}
    srv_t, srv_w = serve(trainer.registry), serve(workers["w"].registry)
    port_w = srv_w.port
    stop = threading.Event()

    def drive() -> None:
        i = 0
        while not stop.is_set():
            w = workers["w"]
            w.record_rollout(env="math", tokens=37 + i % 5, outcome="error" if i % 7 == 0 else "ok")
            w.record_rollout(env="code", tokens=120)
            if i % 3 == 0:
                with trainer.weight_sync(version=i, nbytes=1e6):
                    clock.offset += SYNC_CYCLE[(i // 3) % len(SYNC_CYCLE)]
            i += 1
            time.sleep(0.01)

    thread = threading.Thread(target=drive, daemon=True)
    servers = [srv_t]
    try:
        prom = prometheus_server([srv_t.url, srv_w.url], scrape_interval=0.5)
        thread.start()
        prom.wait_for("posttrain_rollouts_total", lambda r: len(r) >= 3)
        time.sleep(3.0)
        srv_w.close()  # the worker restarts on the same port: its counters start again from zero
        workers["w"] = RolloutExporter(**ident)
        srv_w = serve(workers["w"].registry, port=port_w)
        time.sleep(4.0)
        stop.set()
        thread.join()
        prom.wait_for("posttrain_rollouts_total", lambda r: len(r) >= 3)

        at = round(time.time() - 0.3, 3)
        selector = '{__name__=~"posttrain_rollouts_total|posttrain_weight_sync_seconds_(bucket|count|sum)"}'
        while True:  # Prometheus 2.x ranges include their start, ptmon's do not: keep samples off it
            series = _matrix(prom, selector, at)
            if not any(t == round(at - RANGE_S, 3) for _, pts in series for t, _ in pts):
                break
            at += 0.001
        start = at - RANGE_S

        # 1. rate() per series, including the restarted worker's reset.
        theirs = {tuple(sorted(m.items())): v for m, v in
                  _instant(prom, f"rate(posttrain_rollouts_total[{int(RANGE_S)}s])", at)}
        rollouts = [(m, pts) for m, pts in series if m["__name__"] == "posttrain_rollouts_total"]
        assert len(rollouts) == 3 and len(theirs) == 3
        resets = 0
        for m, pts in rollouts:
            labels = tuple(sorted((k, v) for k, v in m.items() if k != "__name__"))
            resets += sum(1 for (_, a), (_, b) in zip(pts, pts[1:], strict=False) if b < a)
            assert rate(pts, start=start, end=at) == pytest.approx(theirs[labels], rel=0.01), labels
            inc = _instant(prom, f'increase(posttrain_rollouts_total{{env="{m["env"]}",'
                                 f'outcome="{m["outcome"]}"}}[{int(RANGE_S)}s])', at)[0][1]
            assert increase(pts, start=start, end=at) == pytest.approx(inc, rel=0.01)
        assert resets >= 3, "the restart must be inside the range"

        # 2. histogram_quantile over sum by (le) of bucket rates.
        by_le: dict[float, float] = defaultdict(float)
        for m, pts in series:
            if m["__name__"] == schema.WEIGHT_SYNC_SECONDS.bucket:
                r = rate(pts, start=start, end=at)
                assert r is not None
                by_le[parse_le(m["le"])] += r
        quantiles = {}
        for q in (0.5, 0.9, 0.99):
            promql = (f"histogram_quantile({q}, sum by (le) "
                      f"(rate({schema.WEIGHT_SYNC_SECONDS.bucket}[{int(RANGE_S)}s])))")
            quantiles[q] = _instant(prom, promql, at)[0][1]
            mine = histogram_quantile(q, list(by_le.items()))
            assert mine == pytest.approx(quantiles[q], rel=0.01), q

        # 3. The same through build_dashboard: a Store filled with Prometheus's samples, from before the
        #    range too (as a monitor that has been running), so the whole range is covered.
        store = Store()
        per_target: dict[str, dict[float, list[Sample]]] = defaultdict(lambda: defaultdict(list))
        for m, pts in _matrix(prom, selector, at, 2 * RANGE_S):
            kept = {k: v for k, v in m.items() if k not in ("__name__", "instance", "job")}
            for t, v in pts:
                per_target[m["instance"]][t].append(Sample(m["__name__"], kept, v))
        for target, by_t in per_target.items():
            for t in sorted(by_t):
                store.ingest(target, t, by_t[t])
        d = build_dashboard(store, (), Settings(interval_s=0.5), now=at, window_s=RANGE_S)
        total = _instant(prom, f"sum(rate(posttrain_rollouts_total[{int(RANGE_S)}s]))", at)[0][1]
        assert d.rollout_rate_per_s == pytest.approx(total, rel=0.01)
        assert d.weight_sync_p50_s == pytest.approx(quantiles[0.5], rel=0.01)
        assert d.weight_sync_p90_s == pytest.approx(quantiles[0.9], rel=0.01)
        assert d.weight_sync_p99_s == pytest.approx(quantiles[0.99], rel=0.01)
    finally:
        stop.set()
        for s in (*servers, srv_w):
            s.close()
