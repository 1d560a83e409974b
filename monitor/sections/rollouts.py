"""Rollouts and workers: each worker's row and status, the fleet's rates, the rate chart and its median.

A worker is a rollout or engine target, or any target with rollout series.
Its rates are the preferred primitives of the context (the server's answer
where it gave one), so its status below is judged the same way whichever
source measured them.
"""

from __future__ import annotations

import math
from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor.dashboard import Point, WorkerRow
from ptmon.monitor.derive import mean, median
from ptmon.monitor.evaluated import prefer
from ptmon.monitor.histograms import mean_parts
from ptmon.monitor.sections.context import Context
from ptmon.monitor.settings import MEDIAN_WINDOW_S, Thresholds, chart_step_s, median_slot_s
from ptmon.monitor.slots import rate_slot_steps
from ptmon.monitor.steps import Steps, run_steps
from ptmon.monitor.store import Series
from ptmon.monitor.targets import KnownTarget
from ptmon.monitor.window import finite, sum_known

__all__ = ["RolloutFields", "rollouts", "rollout_steps", "worker_status", "is_slow"]

_WORKER_ROLES = (schema.ROLE_ROLLOUT, schema.ROLE_ENGINE)
_REWARD_SIGNED = (schema.ROLLOUT_REWARD_POSITIVE, schema.ROLLOUT_REWARD_NEGATIVE)


class RolloutFields(TypedDict):
    workers: tuple[WorkerRow, ...]
    rollout_rate_per_s: float | None
    rollout_tokens_per_s: float | None
    rollout_rate_median_10m: float | None
    rollout_error_rate_per_s: float | None
    staleness_max: float | None
    staleness_mean: float | None
    rollout_rate_series: tuple[Point, ...]


def is_slow(rate: float | None, typical: float | None, ratio: float) -> bool:
    """At or below ``ratio`` of the typical (median) worker rate; no median (one worker), never slow."""
    if not typical or rate is None:
        return False
    return rate <= ratio * typical


def worker_status(*, up: bool | None, rollouts_per_s: float | None, tokens_per_s: float | None,
                  staleness: float | None, typical: float | None, thresholds: Thresholds) -> str:
    """The status column: down, unknown (no rate yet), stale, slow or ok, first that holds."""
    if up is False:
        return "down"
    if rollouts_per_s is None and tokens_per_s is None:
        return "unknown"
    if staleness is not None and staleness > thresholds.staleness_warn:
        return "stale"
    if is_slow(rollouts_per_s, typical, thresholds.rollout_drop_ratio):
        return "slow"
    return "ok"


def rollouts(ctx: Context) -> RolloutFields:
    return run_steps(rollout_steps(ctx))


def rollout_steps(ctx: Context) -> Steps[RolloutFields]:
    """``rollouts`` in two steps (the rows, then the chart with its 10-minute median: each a pass over every
    worker's series), yielding between them (``build.build_steps``)."""
    workers = [t for t in ctx.targets if t.role in _WORKER_ROLES or ctx.rollout_series[t.name]]
    rates = ctx.rollouts_per_s
    rollout_rate = sum_known(rates[t.name] for t in workers)
    errors = prefer(ctx.served("rollout_errors"), _error_rate(ctx))
    if errors is None and rollout_rate is not None:
        errors = 0.0  # rollouts are counted and none of them is an error series: a known zero
    rows = yield from _worker_rows(ctx, workers)
    staleness = [v for r in rows if (v := r.staleness) is not None]
    served_chart = ctx.evaluated.rollout_rate_series if ctx.evaluated is not None else ()
    chart, median_10m = yield from _chart_and_median(ctx)
    return RolloutFields(
        workers=rows,
        rollout_rate_per_s=rollout_rate,
        rollout_tokens_per_s=ctx.fleet_rollout_tokens_per_s,
        rollout_rate_median_10m=median_10m,
        rollout_error_rate_per_s=errors,
        staleness_max=max(staleness) if staleness else None,
        staleness_mean=mean(staleness),
        rollout_rate_series=prefer(served_chart or None, chart) or (),
    )


def _worker_rows(ctx: Context, workers: list[KnownTarget]) -> Steps[tuple[WorkerRow, ...]]:
    rates = ctx.rollouts_per_s
    known = [r for t in workers if (r := rates[t.name]) is not None]
    # The median of every worker's rate, down ones too while their samples are in the window (as in
    # PromQL's sum(rate(x[window])) until they leave the range): what "slow" compares against.
    typical = median(known) if len(known) >= 2 else None
    published = _published(ctx)
    rows: list[WorkerRow] = []
    for t in workers:
        n = t.name
        tokens = ctx.rollout_tokens_per_s[n]
        if tokens is None:  # an uninstrumented engine's throughput is the tokens it generated
            tokens = ctx.engine_tokens_per_s[n]
        sample = None if t.down else _worker_version(ctx, n)
        version = None if sample is None else sample[1]
        pv = None if sample is None else _trainer_version_at(published, sample[0])
        staleness = None if version is None or pv is None else max(0.0, pv - version)
        reward_sum, reward_n = mean_parts(ctx.store, n, schema.ROLLOUT_REWARD, ctx.w, signed=_REWARD_SIGNED)
        rate, tokens = rates[n], finite(tokens)
        status = worker_status(up=t.health.up, rollouts_per_s=rate, tokens_per_s=tokens, staleness=staleness,
                               typical=typical, thresholds=ctx.settings.thresholds)
        if t.down:
            # A down worker's rates would be the slope of what it sent before it died, shown as if it were
            # still working: its row shows none (the status says why). Its samples still count in the fleet
            # totals, as they do in PromQL's sum(rate(x[window])) until they leave the range.
            rate = tokens = None
        rows.append(WorkerRow(name=n, role=t.role or schema.ROLE_ROLLOUT, up=t.health.up, rollouts_per_s=rate,
                              tokens_per_s=tokens, policy_version=version, staleness=staleness,
                              mean_reward=finite(reward_sum / reward_n) if reward_n > 0 else None, status=status))
        yield
    return tuple(rows)


def _worker_version(ctx: Context, target: str) -> tuple[float, float] | None:
    """(when, version): the policy version a worker samples with, the oldest it reports (a pool's stalest
    live worker), with the time of that sample."""
    w = ctx.w
    samples = [(sp.last_t, sp.last_v) for s in ctx.store.series(target, schema.ROLLOUT_POLICY_VERSION.name)
               if (sp := w.span(s)) is not None]
    return min(samples, key=lambda p: p[1]) if samples else None


def _trainer_version_at(published: list[Series], t: float) -> float | None:
    """The trainer's published version at (or just before) ``t``, from the stored history: each worker is
    compared with the trainer as it was when the worker's own sample was taken. Against the trainer's latest
    sample instead, a trainer scraped after the worker reads every version published in between as lag (at
    a version a second, a healthy fleet read "15 versions behind"). None before the trainer's first sample.
    ``published``: every live target's policy-version series (``_published``)."""
    versions = [sp.last_v for s in published if (sp := s.span(None, t)) is not None]
    return max(versions) if versions else None


def _published(ctx: Context) -> list[Series]:
    """Every live target's policy-version series: looked up once per build, not once per worker (at 64
    targets, 4,096 lookups a build)."""
    return [s for k in ctx.live for s in ctx.series(k.name, (schema.POLICY_VERSION.name,))]


def _error_rate(ctx: Context) -> float | None:
    w = ctx.w
    return sum_known(
        w.rate_sum(n, (s for s in series if s.labels.get(schema.LABEL_OUTCOME) == schema.OUTCOME_ERROR))
        for n, series in ctx.rollout_series.items() if series)


def _chart_and_median(ctx: Context) -> Steps[tuple[tuple[Point, ...], float | None]]:
    """The rate chart's slots over the window, and the fleet rate's median over slots of the last 10 minutes
    (the rate-drop alert's reference): one pass over the rollout series for both, a step per target."""
    end = ctx.w.end
    chart, slots = yield from rate_slot_steps(
        (s for s in ctx.rollout_series.values() if s),
        ((ctx.w.start, end, chart_step_s(ctx.window_s, ctx.settings.interval_s)),
         (end - MEDIAN_WINDOW_S, end, median_slot_s(ctx.settings.interval_s))), memo=ctx.slot_memo)
    finite_slots = [p for p in slots if math.isfinite(p[1])]
    median_10m = median(v for _, v in finite_slots) if len(finite_slots) >= 3 else None
    return tuple(p for p in chart if math.isfinite(p[1])), median_10m
