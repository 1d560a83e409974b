"""Weight sync: latency quantiles over the window, each sync's duration, counts, bytes and failures."""

from __future__ import annotations

import math
from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor import exposed
from ptmon.monitor.dashboard import Point
from ptmon.monitor.evaluated import prefer
from ptmon.monitor.histograms import buckets_by_le, histogram_pairs, paired_deltas, quantiles_over_window
from ptmon.monitor.sections.context import Context
from ptmon.monitor.sections.loops import loop_sync_last_s
from ptmon.monitor.store import Series
from ptmon.monitor.window import Window

__all__ = ["SyncFields", "clamp", "failures_after", "sync_bounds", "weight_sync"]


class SyncFields(TypedDict):
    weight_sync_p50_s: float | None
    weight_sync_p90_s: float | None
    weight_sync_p99_s: float | None
    weight_sync_last_s: float | None
    weight_sync_max_s: float | None
    weight_sync_count: float | None
    weight_sync_bytes_per_s: float | None
    weight_sync_failures: float | None
    weight_sync_failures_in_a_row: float | None
    weight_sync_averaged: bool
    weight_sync_series: tuple[Point, ...]
    sync_events: tuple[float, ...]


def weight_sync(ctx: Context) -> SyncFields:
    """Quantiles and bytes/s as PromQL (or the server) computes them; the count, failures and each sync's
    duration exactly, from the stored samples (``increase()`` would extrapolate one failure to 1.5)."""
    w, names = ctx.w, ctx.names
    p50, p90, p99 = quantiles_over_window(buckets_by_le(ctx.store, names, schema.WEIGHT_SYNC_SECONDS),
                                          (0.5, 0.9, 0.99), w)
    pairs = [p for n in names for p in histogram_pairs(ctx.store, n, schema.WEIGHT_SYNC_SECONDS)]
    deltas = [(t, ds, dc) for su, co in pairs for t, ds, dc in paired_deltas(w.pts(su), w.pts(co))
              if math.isfinite(ds / dc)]
    syncs = sorted((t, ds / dc) for t, ds, dc in deltas)
    lo, hi = sync_bounds([(ds, dc) for _, ds, dc in deltas])
    last = syncs[-1][1] if syncs else None
    # A scrape interval holding several syncs gives their mean, not each one: through a server scraping
    # every 5 s, "max" 4.8 s stood for a 14.9 s sync. Said on screen, never passed off as a sync.
    averaged = any(dc > 1 for _, _, dc in deltas)
    if last is None and pairs:  # no sync in the window: the last one ever is still news
        older = sorted((t, v, dc) for su, co in pairs
                       for t, ds, dc in paired_deltas(su.points(None, w.end), co.points(None, w.end))
                       if math.isfinite(v := ds / dc))
        last = older[-1][1] if older else None
        averaged = bool(older) and older[-1][2] > 1
    if last is None:  # no histogram at all: the last sync a loop serves (verl's timing_s/update_weights)
        last = loop_sync_last_s(ctx)
    failures = [s for n in names for s in ctx.series(n, exposed.SYNC_FAILURES)]
    return SyncFields(
        weight_sync_p50_s=clamp(prefer(ctx.served("sync_p50"), p50), lo, hi),
        weight_sync_p90_s=clamp(prefer(ctx.served("sync_p90"), p90), lo, hi),
        weight_sync_p99_s=clamp(prefer(ctx.served("sync_p99"), p99), lo, hi),
        weight_sync_last_s=last,
        weight_sync_max_s=max(v for _, v in syncs) if syncs else None,
        weight_sync_count=w.raw_increase_sum(co for _, co in pairs),
        weight_sync_bytes_per_s=prefer(ctx.served("sync_bytes"), ctx.rate_sum(exposed.SYNC_BYTES)),
        weight_sync_failures=w.raw_increase_sum(failures),
        weight_sync_failures_in_a_row=failures_after(failures, syncs[-1][0] if syncs else None, w),
        weight_sync_averaged=averaged,
        weight_sync_series=tuple(syncs),
        sync_events=tuple(t for t, _ in syncs),
    )


def sync_bounds(deltas: list[tuple[float, float]]) -> tuple[float | None, float | None]:
    """What the window's syncs are known to lie within, from each scrape interval's ``(Δsum, Δcount)``.

    A bucket interpolates (p99 4.94 s inside the 2.5-5 s bucket while no sync
    took over 2.37 s); the stored sums bound every quantile better. One sync
    in an interval is its exact duration; several are each at most their sum
    (durations are never negative) and say nothing of the minimum beyond 0.
    None where the window holds no sync.
    """
    if not deltas:
        return None, None
    lo = min(ds if dc == 1 else 0.0 for ds, dc in deltas)
    hi = max(ds for ds, _ in deltas)
    return max(lo, 0.0), hi


def clamp(q: float | None, lo: float | None, hi: float | None) -> float | None:
    """``q`` within ``[lo, hi]`` where the bounds are known: a quantile outside what was seen is wrong."""
    if q is None:
        return None
    if hi is not None:
        q = min(q, hi)
    if lo is not None:
        q = max(q, lo)
    return q


def failures_after(failures: list[Series], last_success: float | None, w: Window) -> float | None:
    """Failed syncs in the window counted at scrapes after the last one that saw a success: the run of
    failures still going on (a scrape seeing both counts none of its failures: which came last is unknown).
    None without a failure counter."""
    if not failures:
        return None
    total = 0.0
    for s in failures:
        pts = w.pts(s)
        for (_, a), (t, b) in zip(pts, pts[1:], strict=False):
            if last_success is None or t > last_success:
                total += b if b < a else b - a  # a reset restarts the counter from 0
    return total
