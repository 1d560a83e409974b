"""Weight-sync quantiles: never outside what the window's syncs are known to lie within (issue 13 item 4)."""

from __future__ import annotations

import contextlib
import io

import pytest
from rich.console import Console

from ptmon.exporters import TrainerExporter, schema
from ptmon.exporters.serve import serve
from ptmon.monitor.alerts import evaluate
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.evaluated import Evaluated
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.parse import Sample
from ptmon.monitor.sections.sync import clamp, sync_bounds
from ptmon.monitor.settings import Settings, Target, Thresholds
from ptmon.monitor.snapshot import render
from ptmon.monitor.store import Store
from ptmon.monitor.widgets.cards import card_rows
from tests.monitor.helpers import T0, Clock
from tests.monitor.test_build import NOW, SYNC_TIMES, WINDOW, S, fill

SPEC = schema.WEIGHT_SYNC_SECONDS


def syncs_in(les: tuple[float, ...], durations: tuple[float, ...], *, at: tuple[float, ...] = SYNC_TIMES):
    """A trainer whose syncs (0.3 s each before the window, then ``durations`` at ``at``) fill buckets ``les``."""
    def gen(t: float) -> list[Sample]:
        seen = [0.3] * 20 + [d for ts, d in zip(at, durations, strict=True) if ts <= t]
        out = [S(SPEC.bucket, sum(1 for o in seen if o <= le), le=repr(le)) for le in les]
        return out + [S(SPEC.bucket, len(seen), le="+Inf"), S(SPEC.count, len(seen)), S(SPEC.sum, sum(seen))]
    return gen


def build(gen, evaluated: Evaluated | None = None):
    return build_dashboard(fill(Store(), {"t": gen}), (), Settings(), now=NOW, window_s=WINDOW,
                           evaluated=evaluated)


def test_quantiles_above_the_windows_max_read_the_max() -> None:
    # The healthy demo's shape (2.00/4.40/4.94 s with max 2.37 s). Buckets (1, 2, 5]; 5 syncs, 3 of them <= 2 s:
    # p50 rank 2.5 -> 1 + 2.5/3 = 1.833 (inside what was seen); p90 rank 4.5 -> 2 + 1.5/2 x 3 = 4.25 and
    # p99 rank 4.95 -> 4.925, both above the slowest sync (2.37 s), so both read 2.37.
    d = build(syncs_in((1.0, 2.0, 5.0), (1.2, 1.6, 1.9, 2.29, 2.37)))
    assert d.weight_sync_max_s == pytest.approx(2.37)
    assert d.weight_sync_p50_s == pytest.approx(1 + 2.5 / 3)
    assert d.weight_sync_p90_s == pytest.approx(2.37)
    assert d.weight_sync_p99_s == pytest.approx(2.37)


def test_quantiles_below_the_windows_min_read_the_min() -> None:
    # One wide bucket (0.05, 5]: p50 = 0.05 + 0.5 x 4.95 = 2.525 though no sync took under 4.0 s;
    # p90 = 4.505 and p99 = 4.95 above the slowest (4.4 s).
    d = build(syncs_in((0.05, 5.0), (4.0, 4.2, 4.4, 4.1, 4.3)))
    assert d.weight_sync_p50_s == pytest.approx(4.0)
    assert d.weight_sync_p90_s == pytest.approx(4.4)
    assert d.weight_sync_p99_s == pytest.approx(4.4)


def test_several_syncs_in_one_scrape_are_bounded_by_their_sum_not_their_mean() -> None:
    # 1.0 s and 2.0 s between the same two scrapes: the mean (1.5 s) is no bound on the slower one; the sum is.
    # Buckets (0.5, 5]: p99 = 0.5 + 0.99 x 4.5 = 4.955 -> 3.0; p50 = 2.75 stays (nothing known below it but 0).
    d = build(syncs_in((0.5, 5.0), (1.0, 2.0), at=(1200.0, 1200.0)))
    assert d.weight_sync_p99_s == pytest.approx(3.0)
    assert d.weight_sync_p50_s == pytest.approx(2.75)


def test_the_servers_quantiles_are_held_to_the_same_bounds() -> None:
    served = Evaluated(at=NOW, window_s=WINDOW, range_s=WINDOW,
                       fleet={"sync_p50": 1.5, "sync_p90": 4.4, "sync_p99": 4.94})
    d = build(syncs_in((1.0, 2.0, 5.0), (1.2, 1.6, 1.9, 2.29, 2.37)), served)
    assert (d.weight_sync_p50_s, d.weight_sync_p90_s, d.weight_sync_p99_s) == pytest.approx((1.5, 2.37, 2.37))
    low = Evaluated(at=NOW, window_s=WINDOW, range_s=WINDOW, fleet={"sync_p50": 0.5})
    assert build(syncs_in((1.0, 2.0, 5.0), (1.2, 1.6, 1.9, 2.29, 2.37)), low).weight_sync_p50_s == pytest.approx(1.2)


def test_bounds_and_clamp() -> None:
    assert sync_bounds([]) == (None, None)
    assert sync_bounds([(2.0, 1.0), (3.0, 1.0)]) == (2.0, 3.0)
    assert sync_bounds([(2.0, 1.0), (3.0, 2.0)]) == (0.0, 3.0)  # two syncs summing to 3: either could be ~0
    assert clamp(None, 1.0, 2.0) is None
    assert clamp(5.0, None, None) == 5.0
    assert clamp(5.0, 1.0, 2.0) == 2.0 and clamp(0.5, 1.0, 2.0) == 1.0 and clamp(1.5, 1.0, 2.0) == 1.5


# --- a real trainer exporter over loopback: milliseconds, and failures timed apart (issue 13 item 3) ----

async def scrape_a_trainer(sync_s: float, *, per_round: int = 1, failures_in: tuple[int, ...] = (),
                           rounds: int = 11, step_s: float = 10.0) -> Dashboard:
    """A real TrainerExporter on loopback: each round ``per_round`` syncs of ``sync_s`` (plus a 0.5 ms failed one in the
    rounds ``failures_in``), then one scrape; the Dashboard over the whole run."""
    wall = Clock(T0)
    mono = Clock(0.0)
    trainer = TrainerExporter(run="r", model="m", algorithm="grpo", clock=mono, wall_clock=wall)
    server = serve(trainer.registry)
    feed = LiveFeed(Settings(targets=(Target(name="t", url=server.url),), interval_s=step_s, timeout_s=2.0),
                    clock=wall)
    try:
        for i in range(rounds):
            wall.t = T0 + step_s * i
            for _ in range(per_round):
                with trainer.weight_sync(version=i + 1):
                    mono.t += sync_s
            if i in failures_in:
                with contextlib.suppress(ConnectionError), trainer.weight_sync(version=99):
                    mono.t += 0.0005
                    raise ConnectionError("broadcast: peer gone")
            await feed.collect_once()
        return await feed.dashboard(window_s=step_s * (rounds - 1))
    finally:
        await feed.aclose()
        server.close()


async def test_a_15_ms_sync_reads_in_its_bucket_not_the_old_25_ms() -> None:
    # Three syncs between scrapes, so only the buckets speak (the bounds are 0 and their 45 ms sum).
    # Old buckets: everything under 50 ms read p50 25 ms, p99 49.5 ms. Now (8, 16] ms holds them:
    # p50 = 8 + 0.5 x 8 = 12 ms, p99 = 8 + 0.99 x 8 = 15.92 ms.
    d = await scrape_a_trainer(0.015, per_round=3)
    assert d.weight_sync_p50_s == pytest.approx(0.012)
    assert d.weight_sync_p99_s == pytest.approx(0.01592)
    # One sync between scrapes: its exact duration pins every quantile.
    one = await scrape_a_trainer(0.015)
    for q in (one.weight_sync_p50_s, one.weight_sync_p90_s, one.weight_sync_p99_s):
        assert q == pytest.approx(0.015)


async def test_failed_syncs_never_move_the_success_quantiles() -> None:
    clean = await scrape_a_trainer(0.015, per_round=3)
    failing = await scrape_a_trainer(0.015, per_round=3, failures_in=(4, 5))
    assert failing.weight_sync_failures == 2
    assert (failing.weight_sync_p50_s, failing.weight_sync_p90_s, failing.weight_sync_p99_s) == (
        clean.weight_sync_p50_s, clean.weight_sync_p90_s, clean.weight_sync_p99_s)
    assert failing.weight_sync_count == clean.weight_sync_count == 27  # those after the window's first scrape
    assert failing.weight_sync_last_s == pytest.approx(0.015)


def test_failures_since_the_last_success_are_counted_as_a_run() -> None:
    # Successes at 1060, 1120, 1180, then one failure a scrape (every 10 s, 1190..1300): 12 since the last
    # success, all of the window's failures, and 12 of 15 attempts.
    def gen(t: float) -> list[Sample]:
        base = syncs_in((1.0, 5.0), (1.0, 2.0, 3.0), at=(1060.0, 1120.0, 1180.0))(t)
        return [*base, S(schema.WEIGHT_SYNC_FAILURES.name, max(0.0, (t - 1180.0) // 10))]
    d = build(gen)
    assert d.weight_sync_failures == 12
    assert d.weight_sync_failures_in_a_row == 12
    assert {a.name: a.level for a in evaluate(d, Thresholds())}.get("weight_sync_failing") == "critical"


async def test_failures_followed_by_a_success_are_no_run() -> None:
    d = await scrape_a_trainer(0.015, failures_in=(4, 5))
    assert d.weight_sync_failures == 2 and d.weight_sync_failures_in_a_row == 0
    assert {a.name: a.level for a in evaluate(d, Thresholds())}.get("weight_sync_failing") == "warn"


# --- several syncs in one scrape interval are a mean, and said to be (issue 14 item 9) ---------------------

async def test_several_syncs_a_scrape_are_labelled_per_scrape_means_on_card_and_snapshot() -> None:
    def last_label(d: Dashboard) -> str:
        return str(card_rows("sync", d, Thresholds())[2][0])

    def snapshot_text(d: Dashboard) -> str:
        buf = io.StringIO()
        render(d, Console(file=buf, width=200))
        return buf.getvalue()

    # One sync between scrapes (direct scraping faster than the syncs): each point is that sync's duration.
    exact = await scrape_a_trainer(0.015)
    assert exact.weight_sync_averaged is False
    assert last_label(exact) == "last" and "per-scrape means" not in snapshot_text(exact)
    # Three between scrapes (a server scraping every 5 s, a fast loop): last and max are the interval's mean.
    mean = await scrape_a_trainer(0.015, per_round=3)
    assert mean.weight_sync_averaged is True
    assert mean.weight_sync_max_s == pytest.approx(0.015)  # the mean of three 15 ms syncs, not a sync seen
    assert last_label(mean) == "last avg"
    assert "15ms / 15ms (per-scrape means)" in snapshot_text(mean)
