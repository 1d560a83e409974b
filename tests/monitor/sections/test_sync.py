"""Weight-sync quantiles: never outside what the window's syncs are known to lie within (issue 13 item 4)."""

from __future__ import annotations

import pytest

from ptmon.exporters import schema
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.evaluated import Evaluated
from ptmon.monitor.parse import Sample
from ptmon.monitor.sections.sync import clamp, sync_bounds
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Store
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
