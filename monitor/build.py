"""Build the Dashboard: every number the UI shows, from the store at one time.

``build_dashboard`` is a pure function of the stored points, the targets'
health, the settings, an explicit ``now`` and a window, so the TUI, ``ptmon
snapshot`` and the tests all get the same numbers for the same data. The
definitions follow DESIGN.md ("Definitions the numbers must follow"); where
it is silent, the choice is written next to the code and in
notes/data-layer.md.

Cost: independent of the window's length for almost every number. Rates,
increases and counts come from each series' ``Span`` (a few bisections and
the store's incremental counter-reset index), spend from the cost series'
whole-history span; the rate chart copies one value column per series (a
memcpy) and picks its slot bounds in C. Only the trainer's per-sync series
reads its window point by point. tests/bench/bench_build.py measures it
against the pre-span implementation kept in tests/bench/baseline/.

Evals are the one thing that outlives the store's ring buffers (an eval
every 20 minutes outlasts one hour of 1 s points after a few evals), so they
are observed incrementally into an ``EvalLog`` that the caller keeps and
passes back in; ``build_dashboard`` computes one from scratch when given
none.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import islice
from operator import add, itemgetter, sub
from types import MappingProxyType
from typing import Any

from ptmon.exporters import schema
from ptmon.exporters.schema import MetricSpec
from ptmon.monitor.dashboard import Dashboard, EvalPoint, Point, TargetHealth, WorkerRow
from ptmon.monitor.derive import (
    histogram_quantile,
    histogram_sum_estimate,
    in_window,
    least_squares_slope,
    mean,
    median,
    parse_le,
    running_total,
    span_counter_total,
    span_rate,
    span_raw_increase,
)
from ptmon.monitor.exposed import (
    ENGINE_KV,
    ENGINE_RUNNING,
    ENGINE_TOKENS,
    ENGINE_WAITING,
    GPU_SECONDS,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    SYNC_BYTES,
    SYNC_FAILURES,
    TRAINER_STEPS,
    TRAINER_TOKENS,
)
from ptmon.monitor.exposed import exposed_names as _names
from ptmon.monitor.roles import detect_role, label_ci, run_info_names
from ptmon.monitor.settings import MEDIAN_WINDOW_S, Settings, chart_step_s, median_slot_s
from ptmon.monitor.store import Series, Span, Store

__all__ = ["Baseline", "EvalLog", "observe_evals", "build_dashboard", "gpu_hour_price"]

_MAX_EVALS_PER_BENCHMARK = 10_000

_MISSING = object()


_WORKER_ROLES = (schema.ROLE_ROLLOUT, schema.ROLE_ENGINE)
# Creation times (unix) of the contract's counters and histograms: when the exporting process started.
_CREATED = tuple(dict.fromkeys(spec.created for spec in schema.CONTRACT if spec.kind in ("counter", "histogram")))
_REWARD_SIGNED = (schema.ROLLOUT_REWARD_POSITIVE, schema.ROLLOUT_REWARD_NEGATIVE)


# --- evals, incrementally -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Baseline:
    """The intelligence-per-dollar reference: a score and the spend it was reached at."""

    score: float
    spend_dollars: float
    timestamp: float | None = None  # the eval it was taken from; None when configured


@dataclass(frozen=True, slots=True)
class EvalLog:
    """Every eval observed so far, per benchmark, and how far each eval series has been read."""

    evals: Mapping[str, tuple[EvalPoint, ...]] = field(default_factory=lambda: MappingProxyType({}))
    # (target, benchmark) -> (time read up to, last score, last policy version)
    read: Mapping[tuple[str, str], tuple[float, float, float | None]] = field(
        default_factory=lambda: MappingProxyType({}))

    def primary(self, configured: str | None) -> str | None:
        """The configured benchmark, else the one whose first eval came first."""
        if configured:
            return configured
        firsts = [(pts[0].timestamp, name) for name, pts in self.evals.items() if pts]
        return min(firsts)[1] if firsts else None


class _Spend:
    """Spend in dollars at any time, from each cost series' reset-corrected running total."""

    def __init__(self, entries: Sequence[tuple[list[tuple[float, float]], float, float]]) -> None:
        self._entries: list[tuple[list[float], list[float], float]] = []
        for pts, price, carried in entries:
            if not pts:
                continue
            times = [t for t, _ in pts]
            totals = running_total([v for _, v in pts])
            if carried:
                totals = [x + carried for x in totals]
            self._entries.append((times, totals, price))

    def at(self, t: float) -> float | None:
        dollars: float | None = None
        for times, totals, price in self._entries:
            # Before a series' first point, its first value is the best guess: targets of one
            # scrape round land microseconds apart, and an eval must not look free.
            i = max(1, bisect_right(times, t))
            value = totals[i - 1] * price / 3600.0
            if math.isfinite(value):  # a NaN/Inf counter is no spend to speak of
                dollars = value if dollars is None else dollars + value
        return dollars if dollars is not None and math.isfinite(dollars) else None


def observe_evals(store: Store, settings: Settings, *, previous: EvalLog | None = None) -> EvalLog:
    """``previous`` plus the evals stored since it was read.

    An eval is a change of a benchmark's score or eval policy version gauge
    (the first value seen counts as one), placed at the spend at that time.
    Only points newer than what ``previous`` read are looked at.
    """
    previous = previous or EvalLog()
    read = dict(previous.read)
    new: dict[tuple[str, str], list[EvalPoint]] = {}
    read_next: dict[tuple[str, str], tuple[float, float, float | None]] = {}
    for target in store.targets():
        versions = {s.labels.get("benchmark", ""): s for s in store.series(target, schema.EVAL_POLICY_VERSION.name)}
        samples = {s.labels.get("benchmark", ""): s for s in store.series(target, schema.EVAL_SAMPLES.name)}
        for series in store.series(target, schema.EVAL_SCORE.name):
            bench = series.labels.get("benchmark", "")
            key = (target, bench)
            since, last_score, last_version = read.get(key, (-math.inf, math.nan, None))
            pts = in_window(series, since, math.inf)
            if not pts:
                continue
            ver = dict(in_window(versions[bench], since, math.inf)) if bench in versions else {}
            smp = dict(in_window(samples[bench], since, math.inf)) if bench in samples else {}
            for t, score in pts:
                if not math.isfinite(score):  # NaN would differ from itself: a new "eval" every scrape
                    continue
                version = ver.get(t, last_version)
                if score != last_score or version != last_version:
                    new.setdefault(key, []).append(
                        EvalPoint(timestamp=t, spend_dollars=math.nan, score=score, policy_version=version,
                                  samples=smp.get(t)))
                last_score, last_version = score, version
            read_next[key] = (pts[-1][0], last_score, last_version)
    if not new:
        read.update(read_next)
        return EvalLog(evals=previous.evals, read=MappingProxyType(read))
    cost = _cost_series(store, settings, _roles(store, (), settings))
    spend = _Spend([(s.points(), price, s.carried) for _, _, s, price in cost])
    evals = dict(previous.evals)
    for key, advanced in read_next.items():
        points = new.get(key, [])
        placed = [replace(p, spend_dollars=s) for p in points if (s := spend.at(p.timestamp)) is not None]
        if len(placed) < len(points):
            # No cost data yet: an eval with no spend cannot go on the $ axis. Keep it pending
            # (this key's read position stays put) so it is placed once spend is known, not lost.
            continue
        read[key] = advanced
        if placed:
            bench = key[1]
            merged = sorted((*evals.get(bench, ()), *placed), key=lambda p: p.timestamp)
            evals[bench] = tuple(merged[-_MAX_EVALS_PER_BENCHMARK:])
    return EvalLog(evals=MappingProxyType(evals), read=MappingProxyType(read))


# --- store helpers ----------------------------------------------------------------------------


def _series(store: Store, target: str, names: Iterable[str]) -> list[Series]:
    out: list[Series] = []
    for name in names:
        out.extend(store.series(target, name))
    return out


class _Window:
    """One build's view of ``(start, end]``: each series' span (or, where needed, points) read once per build."""

    __slots__ = ("start", "end", "_memo", "_spans", "_from")

    def __init__(self, start: float, end: float, *, coverage: Mapping[str, float] | None = None) -> None:
        self.start = start
        self.end = end
        self._memo: dict[int, list[tuple[float, float]]] = {}
        self._spans: dict[int, Span | None] = {}
        self._from = coverage or {}

    def range_start(self, target: str) -> float:
        """Where ``target``'s rates start: the window's start, or where this monitor's data on it begins.

        PromQL divides by the whole range; a monitor started 20 s ago would then
        show a third of the true rate for its first minute (and a new worker a
        fraction of its own). The range is cut to the data this monitor has.
        """
        return max(self.start, self._from.get(target, self.start))

    def pts(self, series: Series) -> list[tuple[float, float]]:
        """The series' points in the window, as a list (for the few numbers that need every point)."""
        key = id(series)
        pts = self._memo.get(key)
        if pts is None:
            pts = self._memo[key] = in_window(series, self.start, self.end)
        return pts

    def span(self, series: Series) -> Span | None:
        """The series' ``Span`` in the window: a few bisections, however long the window."""
        key = id(series)
        sp = self._spans.get(key, _MISSING)
        if sp is _MISSING:
            sp = self._spans[key] = series.span(self.start, self.end)
        return sp  # type: ignore[return-value]

    def rate_sum(self, target: str, series: Iterable[Series]) -> float | None:
        """Σ PromQL rate over ``target``'s series; None when none has two points in the window."""
        total: float | None = None
        begin = self.range_start(target)
        for s in series:
            r = span_rate(self.span(s), start=begin, end=self.end)
            if r is not None:
                total = r if total is None else total + r
        return total

    def raw_increase(self, series: Series) -> float | None:
        return span_raw_increase(self.span(series))

    def raw_increase_sum(self, series: Iterable[Series]) -> float | None:
        total: float | None = None
        for s in series:
            r = span_raw_increase(self.span(s))
            if r is not None:
                total = r if total is None else total + r
        return total

    def last(self, series: Series) -> float | None:
        """The latest finite value at or before ``end`` if it is newer than ``start``."""
        p = series.last()
        if p is not None and p[0] > self.end:
            sp = self.span(series)
            p = (sp.last_t, sp.last_v) if sp is not None else None
        if p is None or p[0] <= self.start or not math.isfinite(p[1]):
            return None
        return p[1]

    def increase_ratio(self, sum_series: Series, count_series: Series) -> tuple[float, float]:
        """(Σ Δsum, Σ Δcount) over the window, restarts read off ``_count``.

        A histogram's ``_sum`` may legitimately fall (negative rewards), so
        only ``_count`` says whether the process restarted. When both series
        hold the same scrapes (the usual case) this reads only their ends and
        the count's drops; otherwise it pairs the points scrape by scrape.
        """
        ss, cs = self.span(sum_series), self.span(count_series)
        if ss is not None and cs is not None and ss.n >= 2 and (ss.n, ss.first_t, ss.last_t) == (
                cs.n, cs.first_t, cs.last_t):
            before = [sum_series.value_at(t) for t in count_series.drop_times(self.start, self.end)]
            if None not in before:
                return (ss.last_v - ss.first_v + sum(before),  # type: ignore[arg-type]
                        cs.last_v - cs.first_v + cs.resets)
        deltas = _paired_deltas(self.pts(sum_series), self.pts(count_series))
        return sum(d[1] for d in deltas), sum(d[2] for d in deltas)


def _paired_deltas(sums: Sequence[tuple[float, float]], counts: Sequence[tuple[float, float]]
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


def _histogram_pairs(store: Store, target: str, spec: MetricSpec) -> list[tuple[Series, Series]]:
    """(_sum, _count) series pairs with the same labels."""
    counts = {tuple(sorted(s.labels.items())): s for s in store.series(target, spec.count)}
    return [(s, counts[k]) for s in store.series(target, spec.sum)
            if (k := tuple(sorted(s.labels.items()))) in counts]


def _labels_key(series: Series, *, drop: str = "") -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in series.labels.items() if k != drop))


def _mean_parts(store: Store, target: str, spec: MetricSpec, w: _Window, *,
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

    Raw increases (Δ) rather than PromQL's extrapolated ones: the series of one scrape share their
    times, so the ratio is the plain mean of what was observed in the window, exact for exact inputs.
    """
    total = count = 0.0
    covered: set[tuple[tuple[str, str], ...]] = set()
    if signed is not None:
        positive = {_labels_key(s): s for s in _series(store, target, _names(signed[0]))}
        negative = {_labels_key(s): s for s in _series(store, target, _names(signed[1]))}
        for co in store.series(target, spec.count):  # store order: a deterministic float sum
            key = _labels_key(co)
            pos, neg = positive.get(key), negative.get(key)
            if pos is None or neg is None:
                continue
            covered.add(key)
            dp, dn, dc = w.raw_increase(pos), w.raw_increase(neg), w.raw_increase(co)
            if dp is not None and dn is not None and dc is not None:
                total += dp - dn
                count += dc
    for su, co in _histogram_pairs(store, target, spec):
        key = _labels_key(su)
        if key in covered:
            continue
        covered.add(key)
        s, c = w.increase_ratio(su, co)
        total += s
        count += c
    groups: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
    for bs in store.series(target, spec.bucket):
        key = _labels_key(bs, drop="le")
        le = parse_le(bs.labels.get("le", ""))
        if key in covered or le is None:
            continue
        inc = w.raw_increase(bs)
        if inc is not None:
            groups.setdefault(key, []).append((le, inc))
    for buckets in groups.values():
        est = histogram_sum_estimate(buckets)
        if est is not None:
            total += est[0]
            count += est[1]
    return total, count


def _buckets_by_le(store: Store, targets: Iterable[str], spec: MetricSpec) -> list[tuple[float, str, Series]]:
    out: list[tuple[float, str, Series]] = []
    for target in targets:
        for s in store.series(target, spec.bucket):
            le = parse_le(s.labels.get("le", ""))
            if le is not None:
                out.append((le, target, s))
    return out


def _quantiles_over_window(buckets: list[tuple[float, str, Series]], qs: Sequence[float], w: _Window
                           ) -> list[float | None]:
    """histogram_quantile(q, sum by (le) (rate(x_bucket[window]))), as PromQL computes it."""
    by_le: dict[float, float] = {}
    for le, target, s in buckets:
        r = span_rate(w.span(s), start=w.range_start(target), end=w.end)
        if r is not None:
            by_le[le] = by_le.get(le, 0.0) + r
    if not by_le:
        return [None] * len(qs)
    pairs = list(by_le.items())
    return [_finite(histogram_quantile(q, pairs)) for q in qs]


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _rate_slots(per_target: Iterable[list[Series]], w: _Window, step: float) -> list[Point]:
    """The summed rate per time slot ``(start + k*step, start + (k+1)*step]``, as ``(slot end, rate)``.

    Per target, each series' increase between the last scrapes at or before
    the slot's two bounds is added (a drop counts from zero, Prometheus's
    reset rule at slot granularity) and divided by the seconds between those
    scrapes; targets' rates then add up. Slots where no target had data are
    left out, not zero.

    Only the points at slot bounds are read: series of one target share
    their scrape times, so the bounds are bisected once per layout and every
    other series costs one memcpy of its value column and one C-level pick.
    """
    start, end = w.start, w.end
    n = max(1, math.ceil((end - start) / step - 1e-9))
    bounds = [start + k * step for k in range(n + 1)]
    totals = [0.0] * n
    seen = [False] * n
    for series in per_target:
        slot_inc = [0.0] * n
        slot_dt = [0.0] * n
        layout: tuple[int, float, float] | None = None
        pick: itemgetter[Any] = itemgetter(0)
        for s in series:
            times, values = s.columns(start, end)
            if len(times) < 2:
                continue
            key = (len(times), times[0], times[-1])
            if key != layout:
                layout = key
                # The last point at or before each bound, picked out in C for every series of the layout.
                pick = itemgetter(*(max(bisect_right(times, b) - 1, 0) for b in bounds))
                picked = pick(times)
                slot_dt = list(map(max, slot_dt, map(sub, islice(picked, 1, None), picked)))
            picked = pick(values)
            incs = list(map(sub, islice(picked, 1, None), picked))
            if min(incs) < 0:  # a restart: the counter went on from zero
                incs = [d if d >= 0 else v for d, v in zip(incs, islice(picked, 1, None), strict=False)]
            slot_inc = list(map(add, slot_inc, incs))
        for k in range(n):
            if slot_dt[k] > 0:
                totals[k] += slot_inc[k] / slot_dt[k]
                seen[k] = True
    return [(bounds[k + 1], totals[k]) for k in range(n) if seen[k]]


# --- targets, roles, cost -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Target:
    name: str
    health: TargetHealth
    role: str | None

    @property
    def down(self) -> bool:
        return self.health.up is False


def _roles(store: Store, health: Sequence[TargetHealth], settings: Settings) -> dict[str, str | None]:
    configured = {t.name: t.role for t in settings.targets}
    from_health = {h.name: h.role for h in health}
    names = list(dict.fromkeys((*(h.name for h in health), *store.targets())))
    roles: dict[str, str | None] = {}
    for name in names:
        run_roles = [s.labels.get("role", "") for n in run_info_names() for s in store.series(name, n)]
        roles[name] = detect_role(configured=configured.get(name) or from_health.get(name),
                                  run_info_roles=run_roles, names=store.names(name))
    return roles


def _targets(store: Store, health: Sequence[TargetHealth], settings: Settings) -> list[_Target]:
    roles = _roles(store, health, settings)
    urls = {t.name: t.url for t in settings.targets}
    by_name = {h.name: h for h in health}
    out: list[_Target] = []
    for name, role in roles.items():
        h = by_name.get(name)
        if h is None:  # data with no health report (a replay, a test): up is unknown
            h = TargetHealth(name=name, url=urls.get(name, ""), role=role, up=None,
                             series=store.series_count(name), dropped_series=store.dropped_series(name))
        elif h.role != role:
            h = replace(h, role=role)
        out.append(_Target(name, h, role))
    return out


def gpu_hour_price(store: Store, settings: Settings, target: str, role: str | None) -> float:
    """$/GPU-hour of GPU-seconds with ``role`` label on ``target``: config > exporter's gauge > default.

    ``role`` None or "" matches a price gauge without a role label.
    """
    price = settings.prices.get(role) if role else None
    if price is not None:
        return price
    for s in store.series(target, schema.GPU_HOUR_PRICE.name):
        if (s.labels.get("role") or None) == (role or None) and (last := s.last()) is not None \
                and math.isfinite(last[1]):
            return last[1]
    return schema.DEFAULT_GPU_HOUR_PRICE


def _cost_series(store: Store, settings: Settings, roles: Mapping[str, str | None]
                 ) -> list[tuple[str, str, Series, float]]:
    """(target, role, series, price) per GPU-seconds series. Price: config > exporter's gauge > default.

    The role is the series' ``role`` label (the exporters set it), else the target's role.
    """
    out: list[tuple[str, str, Series, float]] = []
    for target in store.targets():
        for s in _series(store, target, GPU_SECONDS):
            label = s.labels.get("role")
            role = label or roles.get(target) or "unknown"
            price = settings.prices.get(role)
            if price is None:
                price = gpu_hour_price(store, settings, target, label)
            out.append((target, role, s, price))
    return out


def _run_start(store: Store, targets: Sequence[_Target], now: float) -> float | None:
    """When the run started: the earliest ``_created`` of the trainers' posttrain counters and histograms,
    else of any target's; None when no target exposes one.

    prometheus_client stamps each counter and histogram with its creation time, so the trainer's say when
    the training process began, however late this monitor joined. Per series the earliest value held
    counts (a restarted process exposes a later one). A time after ``now`` is not used: it comes from
    another clock (a host whose clock runs ahead, a test's injected clock).
    """
    for group in ([t for t in targets if t.role == schema.ROLE_TRAINER], targets):
        times = [v for t in group for name in _CREATED for s in store.series(t.name, name)
                 if (sp := s.span()) is not None
                 for v in (sp.first_v, sp.last_v) if math.isfinite(v) and 0 < v <= now]
        if times:
            return min(times)
    return None


# --- the build ------------------------------------------------------------------------------


def build_dashboard(store: Store, health: Sequence[TargetHealth], settings: Settings, *, now: float,
                    window_s: float, baseline: Baseline | None = None, evals: EvalLog | None = None
                    ) -> Dashboard:
    """The Dashboard at ``now`` over ``(now - window_s, now]``, without alerts.

    ``baseline``: the IPD reference the caller pinned (``set_baseline_now``);
    None means the configured baseline score, else the first eval seen.
    ``evals``: the caller's running ``EvalLog``; None reads every eval in the store.
    """
    start, end = now - window_s, now
    targets = _targets(store, health, settings)
    # Where this monitor's data on each target begins (half an interval before its first scrape,
    # so that scrape sits inside the range and rate() reads the plain slope).
    firsts = {t.name: times[0] for t in targets if (times := store.scrape_times(t.name))}
    w = _Window(start, end, coverage={n: t0 - settings.interval_s / 2 for n, t0 in firsts.items()})
    roles = {t.name: t.role for t in targets}
    live = [t for t in targets if not t.down]
    th = settings.thresholds
    if evals is None:
        evals = observe_evals(store, settings)

    # identity
    run = model = algorithm = None
    for t in sorted(targets, key=lambda t: t.role != schema.ROLE_TRAINER):
        infos = [s for n in run_info_names() for s in store.series(t.name, n)]
        if infos:
            labels = infos[0].labels
            run, model, algorithm = labels.get("run"), labels.get("model"), labels.get("algorithm")
            break
    # Uptime counts from the run's start when its exporters say it, else from the earliest data seen.
    started_at = _run_start(store, targets, now)
    if started_at is None and firsts:
        started_at = min(firsts.values())

    # trainer
    names = [t.name for t in targets]
    policy_versions = [v for t in live for s in store.series(t.name, schema.POLICY_VERSION.name)
                       if (v := w.last(s)) is not None]
    policy_version = max(policy_versions) if policy_versions else None
    steps_per_s = _sum_known(w.rate_sum(n, _series(store, n, TRAINER_STEPS)) for n in names)
    trainer_tokens = _sum_known(w.rate_sum(n, _series(store, n, TRAINER_TOKENS)) for n in names)
    step_totals = [w.increase_ratio(su, co) for n in names
                   for su, co in _histogram_pairs(store, n, schema.TRAINER_STEP_SECONDS)]
    step_count = sum(c for _, c in step_totals)
    step_seconds = sum(s for s, _ in step_totals) / step_count if step_count > 0 else None
    # The median over the trainer's whole life (cumulative buckets), not the window: the stall rule
    # scales with it, and a stalled window has no steps to take a median of.
    step_buckets: dict[float, float] = {}
    for le, _, s in _buckets_by_le(store, names, schema.TRAINER_STEP_SECONDS):
        last = s.last()
        if last is not None:
            step_buckets[le] = step_buckets.get(le, 0.0) + last[1]
    step_median = _finite(histogram_quantile(0.5, list(step_buckets.items())))
    last_steps = [p[1] for n in names for s in store.series(n, schema.TRAINER_LAST_STEP_TIMESTAMP.name)
                  if (p := s.last()) is not None and math.isfinite(p[1]) and p[1] > 0]
    since_last_step = max(0.0, now - max(last_steps)) if last_steps else None
    scalars = {}
    for key, spec in schema.TRAINER_SCALARS.items():
        values = [v for t in live for s in store.series(t.name, spec.name) if (v := w.last(s)) is not None]
        scalars[key] = values[-1] if values else None

    # weight sync
    sync_buckets = _buckets_by_le(store, names, schema.WEIGHT_SYNC_SECONDS)
    p50, p90, p99 = _quantiles_over_window(sync_buckets, (0.5, 0.9, 0.99), w)
    sync_pairs = [p for n in names for p in _histogram_pairs(store, n, schema.WEIGHT_SYNC_SECONDS)]
    sync_count = w.raw_increase_sum(co for _, co in sync_pairs)
    syncs = sorted((t, v) for su, co in sync_pairs for t, ds, dc in _paired_deltas(w.pts(su), w.pts(co))
                   if math.isfinite(v := ds / dc))
    sync_last = syncs[-1][1] if syncs else None
    if sync_last is None and sync_pairs:  # no sync in the window: the last one ever is still news
        older = sorted((t, v) for su, co in sync_pairs
                       for t, ds, dc in _paired_deltas(su.points(None, end), co.points(None, end))
                       if math.isfinite(v := ds / dc))
        sync_last = older[-1][1] if older else None
    sync_bytes = _sum_known(w.rate_sum(n, _series(store, n, SYNC_BYTES)) for n in names)
    sync_failures = w.raw_increase_sum(s for n in names for s in _series(store, n, SYNC_FAILURES))

    # rollout side, per worker
    by_target_rollouts = {n: _series(store, n, ROLLOUTS) for n in names}
    median_w = _Window(end - MEDIAN_WINDOW_S, end)
    rollout_targets = [n for n in names if by_target_rollouts[n]]
    worker_targets = [t for t in targets if t.role in _WORKER_ROLES or by_target_rollouts[t.name]]
    rollout_tokens_by = {n: w.rate_sum(n, _series(store, n, ROLLOUT_TOKENS)) for n in names}
    engine_tokens_by = {n: w.rate_sum(n, _series(store, n, ENGINE_TOKENS)) for n in names}
    rows: list[dict[str, Any]] = []
    for t in worker_targets:
        n = t.name
        tokens = rollout_tokens_by[n]
        if tokens is None:  # an uninstrumented engine's throughput is the tokens it generated
            tokens = engine_tokens_by[n]
        version = None
        if not t.down:
            values = [v for s in store.series(n, schema.ROLLOUT_POLICY_VERSION.name)
                      if (v := w.last(s)) is not None]
            version = min(values) if values else None
        reward_sum, reward_n = _mean_parts(store, n, schema.ROLLOUT_REWARD, w, signed=_REWARD_SIGNED)
        rows.append(dict(name=n, role=t.role or schema.ROLE_ROLLOUT, up=t.health.up,
                         rollouts_per_s=_finite(w.rate_sum(n, by_target_rollouts[n])),
                         tokens_per_s=_finite(tokens), policy_version=version,
                         staleness=None if version is None or policy_version is None
                         else max(0.0, policy_version - version),
                         mean_reward=_finite(reward_sum / reward_n) if reward_n > 0 else None))
    engine_tokens_total = _sum_known(engine_tokens_by.values())

    rates = [r["rollouts_per_s"] for r in rows if r["rollouts_per_s"] is not None]
    typical = median(rates) if len(rates) >= 2 else None
    workers: list[WorkerRow] = []
    for r in rows:
        if r["up"] is False:
            status = "down"
            # A down worker's rates would be the slope of what it sent before it died, shown as if it were
            # still working: its row shows none (the status says why). Its samples still count in the fleet
            # totals below, as they do in PromQL's sum(rate(x[window])) until they leave the range, and in
            # the median worker rate the "slow" status compares against.
            r = {**r, "rollouts_per_s": None, "tokens_per_s": None}
        elif r["rollouts_per_s"] is None and r["tokens_per_s"] is None:
            status = "unknown"
        elif r["staleness"] is not None and r["staleness"] > th.staleness_warn:
            status = "stale"
        elif typical and r["rollouts_per_s"] is not None and r["rollouts_per_s"] <= th.rollout_drop_ratio * typical:
            status = "slow"
        else:
            status = "ok"
        workers.append(WorkerRow(status=status, **r))

    rollout_rate = _sum_known(r["rollouts_per_s"] for r in rows)
    rollout_tokens = _sum_known(rollout_tokens_by.values())
    errors = _sum_known(w.rate_sum(n, (s for s in by_target_rollouts[n] if s.labels.get("outcome") == "error"))
                        for n in rollout_targets)
    if errors is None and rollout_rate is not None:
        errors = 0.0  # rollouts are counted and none of them is an error series: a known zero
    step = chart_step_s(window_s, settings.interval_s)
    rate_series = _rate_slots((by_target_rollouts[n] for n in rollout_targets), w, step)
    median_slots = _rate_slots((by_target_rollouts[n] for n in rollout_targets), median_w,
                               median_slot_s(settings.interval_s))
    rate_series = [p for p in rate_series if math.isfinite(p[1])]
    median_slots = [p for p in median_slots if math.isfinite(p[1])]
    rate_median = median(v for _, v in median_slots) if len(median_slots) >= 3 else None
    staleness = [v for r in rows if (v := r["staleness"]) is not None]

    # engines (vLLM / SGLang)
    def engine_last(names_: Sequence[str]) -> list[float]:
        return [v for t in live for s in _series(store, t.name, names_) if (v := w.last(s)) is not None]

    running = engine_last(ENGINE_RUNNING)
    waiting = engine_last(ENGINE_WAITING)
    kv = engine_last(ENGINE_KV)

    # GPUs (DCGM): one value per GPU, keyed by host and UUID (or index)
    util: dict[tuple[str, str], float] = {}
    power: dict[tuple[str, str], float] = {}
    for t in live:
        for spec, into in ((schema.DCGM_GPU_UTIL, util), (schema.DCGM_POWER_USAGE, power)):
            for s in store.series(t.name, spec.name):
                v = w.last(s)
                if v is not None:
                    gpu = (label_ci(s.labels, "hostname") or t.name,
                           label_ci(s.labels, "uuid") or label_ci(s.labels, "gpu") or "")
                    into[gpu] = v

    # cost
    cost = _cost_series(store, settings, roles)
    by_role: dict[str, float] = {}
    for _, role, series, price in cost:
        total = span_counter_total(series.span())  # the whole history held: spend across restarts
        if total is not None:
            total += series.carried  # restarts older than the buffer still cost what they cost
        if total is not None and math.isfinite(total):
            by_role[role] = by_role.get(role, 0.0) + total * price / 3600.0
    by_role = {role: dollars for role, dollars in by_role.items() if math.isfinite(dollars)}
    spend = sum(by_role.values()) if by_role else None
    burn: float | None = None
    for target, _, series, price in cost:
        gpu_rate = span_rate(w.span(series), start=w.range_start(target), end=end)
        if gpu_rate is not None:
            burn = (burn or 0.0) + gpu_rate * price  # GPU-seconds per second x $/GPU-hour = $/hour
    tokens_now = rollout_tokens if rollout_tokens is not None else engine_tokens_total
    per_million = (burn / (tokens_now * 3600.0) * 1e6 if burn is not None and tokens_now else None)

    # intelligence per dollar
    bench = evals.primary(settings.primary_benchmark)
    curve = evals.evals.get(bench, ()) if bench is not None else ()
    curve = tuple(p for p in curve if p.timestamp <= end)
    latest = curve[-1] if curve else None
    if baseline is None:
        if settings.baseline_score is not None:
            spend0 = settings.baseline_spend_dollars if settings.baseline_spend_dollars is not None else 0.0
            baseline = Baseline(score=settings.baseline_score, spend_dollars=spend0)
        elif curve:
            baseline = Baseline(score=curve[0].score, spend_dollars=curve[0].spend_dollars,
                                timestamp=curve[0].timestamp)
    ipd = None
    if baseline is not None and latest is not None and spend is not None and (
            baseline.timestamp is None or latest.timestamp > baseline.timestamp):
        spent = spend - baseline.spend_dollars
        if spent > 0:
            ipd = (latest.score - baseline.score) / spent * 1000.0
    last_k = curve[-settings.marginal_k:] if settings.marginal_k >= 2 else ()
    slope = least_squares_slope([p.spend_dollars for p in last_k], [p.score for p in last_k])
    marginal = slope * 1000.0 if slope is not None else None
    per_point = 1.0 / slope if slope is not None and slope > 0 else None

    return _known_numbers(Dashboard(
        now=now, window_s=window_s, interval_s=settings.interval_s,
        run=run, model=model, algorithm=algorithm, started_at=started_at,
        targets=tuple(t.health for t in targets), workers=tuple(workers),
        rollout_rate_per_s=rollout_rate, rollout_tokens_per_s=rollout_tokens,
        rollout_rate_median_10m=rate_median, rollout_error_rate_per_s=errors,
        engine_tokens_per_s=engine_tokens_total,
        engine_requests_running=sum(running) if running else None,
        engine_queue_depth=sum(waiting) if waiting else None,
        engine_kv_cache_usage=max(kv) if kv else None,
        weight_sync_p50_s=p50, weight_sync_p90_s=p90, weight_sync_p99_s=p99,
        weight_sync_last_s=sync_last,
        weight_sync_max_s=max(v for _, v in syncs) if syncs else None,
        weight_sync_count=sync_count, weight_sync_bytes_per_s=sync_bytes, weight_sync_failures=sync_failures,
        policy_version=policy_version,
        staleness_max=max(staleness) if staleness else None,
        staleness_mean=mean(staleness),
        steps_per_s=steps_per_s, step_seconds=step_seconds, step_seconds_median=step_median,
        seconds_since_last_step=since_last_step, trainer_tokens_per_s=trainer_tokens,
        loss=scalars["loss"], kl=scalars["kl"], entropy=scalars["entropy"], grad_norm=scalars["grad_norm"],
        learning_rate=scalars["learning_rate"],
        gpu_util_percent=mean(util.values()), gpu_power_watts=sum(power.values()) if power else None,
        spend_dollars=spend, spend_by_role=tuple(sorted(by_role.items())), burn_dollars_per_hour=burn,
        dollars_per_million_rollout_tokens=per_million,
        benchmark=bench, score=latest.score if latest else None,
        baseline_score=baseline.score if baseline else None,
        baseline_spend_dollars=baseline.spend_dollars if baseline else None,
        eval_samples=latest.samples if latest else None,
        ipd_points_per_kilodollar=ipd, marginal_ipd_points_per_kilodollar=marginal,
        dollars_per_next_point=per_point,
        eval_curve=curve, rollout_rate_series=tuple(rate_series),
        weight_sync_series=tuple(syncs), sync_events=tuple(t for t, _ in syncs),
    ))


_NUMBER_FIELDS = tuple(f.name for f in fields(Dashboard) if f.type in ("float | None", "float"))


def _known_numbers(d: Dashboard) -> Dashboard:
    """NaN or ±Inf from a target (a NaN gauge, an Inf counter) becomes unknown, not a number to show."""
    bad: dict[str, Any] = {name: None for name in _NUMBER_FIELDS
                           if isinstance(v := getattr(d, name), float) and not math.isfinite(v)
                           and name not in _REQUIRED}
    return replace(d, **bad) if bad else d


_REQUIRED = frozenset(("now", "window_s", "interval_s"))


def _sum_known(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
