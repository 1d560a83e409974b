"""Histograms over a window: means from ``_sum``/``_count`` deltas, quantiles from bucket rates.

A histogram's ``_sum`` may legitimately fall (negative rewards), so only
``_count`` says whether the process restarted; everything here reads restarts
off the count. Raw increases (Δ) rather than PromQL's extrapolated ones where
a mean is taken: the series of one scrape share their times, so the ratio is
the plain mean of what was observed in the window, exact for exact inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ptmon.exporters import schema
from ptmon.exporters.schema import MetricSpec
from ptmon.monitor.derive import histogram_quantile, histogram_sum_estimate, parse_le, span_rate
from ptmon.monitor.exposed import exposed_names
from ptmon.monitor.store import Series, Store
from ptmon.monitor.window import Window, finite, series_of

__all__ = ["paired_deltas", "histogram_pairs", "increase_ratio", "mean_parts", "buckets_by_le",
           "quantiles_over_window"]

_LabelsKey = tuple[tuple[str, str], ...]


def paired_deltas(sums: Sequence[tuple[float, float]], counts: Sequence[tuple[float, float]]
                  ) -> list[tuple[float, float, float]]:
    """``(t, Δsum, Δcount)`` between consecutive scrapes with observations; resets read off _count."""
    by_t = dict(counts)
    out: list[tuple[float, float, float]] = []
    prev: tuple[float, float] | None = None
    for t, s in sums:
        c = by_t.get(t)
        if c is None:
            continue
        if prev is not None:
            ps, pc = prev
            ds, dc = (s, c) if c < pc else (s - ps, c - pc)
            if dc > 0:
                out.append((t, ds, dc))
        prev = (s, c)
    return out


def histogram_pairs(store: Store, target: str, spec: MetricSpec) -> list[tuple[Series, Series]]:
    """(_sum, _count) series pairs with the same labels."""
    counts = {s.sorted_labels(): s for s in store.series(target, spec.count)}
    return [(s, counts[k]) for s in store.series(target, spec.sum) if (k := s.sorted_labels()) in counts]


def increase_ratio(w: Window, sum_series: Series, count_series: Series) -> tuple[float, float]:
    """(Σ Δsum, Σ Δcount) over the window, restarts read off ``_count``.

    When both series hold the same scrapes (the usual case) this reads only
    their ends and the count's drops; otherwise it pairs the points scrape by
    scrape.
    """
    ss, cs = w.span(sum_series), w.span(count_series)
    if ss is not None and cs is not None and ss.n >= 2 and (ss.n, ss.first_t, ss.last_t) == (
            cs.n, cs.first_t, cs.last_t):
        before = [sum_series.value_at(t) for t in count_series.drop_times(w.start, w.end)]
        if None not in before:
            return (ss.last_v - ss.first_v + sum(before),  # type: ignore[arg-type]
                    cs.last_v - cs.first_v + cs.resets)
    deltas = paired_deltas(w.pts(sum_series), w.pts(count_series))
    return sum(d[1] for d in deltas), sum(d[2] for d in deltas)


def mean_parts(store: Store, target: str, spec: MetricSpec, w: Window, *,
               signed: tuple[MetricSpec, MetricSpec] | None = None) -> tuple[float, float]:
    """(Σ Δsum, Σ Δcount) of a histogram over the window, per label set; 0, 0 when nothing was observed.

    Best source first, per label set (env):

    1. ``signed`` = (positive, negative) sum counters, as the exporters expose the reward's sum:
       Δpositive − Δnegative. Both are monotonic, so each one's own drops are its restarts (Prometheus's
       rule, as ``increase()`` in a user's PromQL reads them); exact.
    2. ``_sum``: Δsum, restarts read off ``_count`` (a sum may legitimately fall); exact.
    3. Neither (a third-party exporter with negative buckets: prometheus_client then omits ``_sum``): an
       estimate from the buckets' increases (``histogram_sum_estimate``), off by up to half a bucket
       width per observation.
    """
    covered: set[_LabelsKey] = set()
    total, count = _signed_parts(store, target, spec, w, signed, covered) if signed is not None else (0.0, 0.0)
    for su, co in histogram_pairs(store, target, spec):
        key = su.sorted_labels()
        if key in covered:
            continue
        covered.add(key)
        s, c = increase_ratio(w, su, co)
        total += s
        count += c
    for est in _bucket_estimates(store, target, spec, w, covered):
        total += est[0]
        count += est[1]
    return total, count


def _signed_parts(store: Store, target: str, spec: MetricSpec, w: Window, signed: tuple[MetricSpec, MetricSpec],
                  covered: set[_LabelsKey]) -> tuple[float, float]:
    """(Δpositive − Δnegative, Δcount) over the label sets that have both signed counters; adds them to
    ``covered``."""
    total = count = 0.0
    positive = {s.sorted_labels(): s for s in series_of(store, target, exposed_names(signed[0]))}
    negative = {s.sorted_labels(): s for s in series_of(store, target, exposed_names(signed[1]))}
    for co in store.series(target, spec.count):  # store order: a deterministic float sum
        key = co.sorted_labels()
        pos, neg = positive.get(key), negative.get(key)
        if pos is None or neg is None:
            continue
        covered.add(key)
        dp, dn, dc = w.raw_increase(pos), w.raw_increase(neg), w.raw_increase(co)
        if dp is not None and dn is not None and dc is not None:
            total += dp - dn
            count += dc
    return total, count


def _bucket_estimates(store: Store, target: str, spec: MetricSpec, w: Window, covered: set[_LabelsKey]
                      ) -> list[tuple[float, float]]:
    """(estimated Σ, count) per label set not ``covered``, from its buckets' increases."""
    groups: dict[_LabelsKey, list[tuple[float, float]]] = {}
    for s in store.series(target, spec.bucket):
        if (key := s.sorted_labels(without=schema.LABEL_LE)) in covered:
            continue  # most of them, every build: the signed sums or _sum/_count gave this label set
        le = parse_le(s.labels.get(schema.LABEL_LE, ""))
        if le is None:
            continue
        inc = w.raw_increase(s)
        if inc is not None:
            groups.setdefault(key, []).append((le, inc))
    return [est for buckets in groups.values() if (est := histogram_sum_estimate(buckets)) is not None]


def buckets_by_le(store: Store, targets: Iterable[str], spec: MetricSpec) -> list[tuple[float, str, Series]]:
    """Every bucket series of ``spec`` on ``targets``, as (upper bound, target, series)."""
    out: list[tuple[float, str, Series]] = []
    for target in targets:
        for s in store.series(target, spec.bucket):
            le = parse_le(s.labels.get(schema.LABEL_LE, ""))
            if le is not None:
                out.append((le, target, s))
    return out


def quantiles_over_window(buckets: list[tuple[float, str, Series]], qs: Sequence[float], w: Window
                          ) -> list[float | None]:
    """histogram_quantile(q, sum by (le) (rate(x_bucket[window]))), as PromQL computes it."""
    by_le: dict[float, float] = {}
    for le, target, s in buckets:
        r = span_rate(w.rate_span(s, target), start=w.range_start(target), end=w.end)
        if r is not None:
            by_le[le] = by_le.get(le, 0.0) + r
    if not by_le:
        return [None] * len(qs)
    pairs = list(by_le.items())
    return [finite(histogram_quantile(q, pairs)) for q in qs]
