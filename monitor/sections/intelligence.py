"""Intelligence per dollar: the primary benchmark's evals against spend, from a baseline.

Cumulative: (latest score − baseline score) / (spend now − baseline spend)
× 1000, unknown until an eval exists after the baseline. Marginal: the
least-squares slope of score against spend over the last K evals × 1000;
dollars per next point is its inverse, unknown when the slope is ≤ 0.
The last push of an eval group to a Pushgateway, when evals come that way,
says how old the newest eval is (``eval_pushed_at``).
"""

from __future__ import annotations

from typing import TypedDict

from ptmon.monitor.dashboard import EvalPoint
from ptmon.monitor.derive import least_squares_slope
from ptmon.monitor.evals import Baseline, latest_push
from ptmon.monitor.sections.context import Context

__all__ = ["IntelligenceFields", "intelligence"]


class IntelligenceFields(TypedDict):
    benchmark: str | None
    score: float | None
    baseline_score: float | None
    baseline_spend_dollars: float | None
    eval_samples: float | None
    ipd_points_per_kilodollar: float | None
    marginal_ipd_points_per_kilodollar: float | None
    dollars_per_next_point: float | None
    eval_pushed_at: float | None
    eval_curve: tuple[EvalPoint, ...]


def intelligence(ctx: Context) -> IntelligenceFields:
    settings = ctx.settings
    bench = ctx.evals.primary(settings.primary_benchmark)
    curve = tuple(p for p in ctx.evals.curve(settings.primary_benchmark) if p.timestamp <= ctx.now)
    latest = curve[-1] if curve else None
    baseline = _baseline(ctx, curve)
    ipd = None
    spend = ctx.spend
    if baseline is not None and latest is not None and spend is not None and (
            baseline.timestamp is None or latest.timestamp > baseline.timestamp):
        spent = spend - baseline.spend_dollars
        if spent > 0:
            ipd = (latest.score - baseline.score) / spent * 1000.0
    last_k = curve[-settings.marginal_k:] if settings.marginal_k >= 2 else ()
    slope = least_squares_slope([p.spend_dollars for p in last_k], [p.score for p in last_k])
    return IntelligenceFields(
        benchmark=bench,
        score=latest.score if latest else None,
        baseline_score=baseline.score if baseline else None,
        baseline_spend_dollars=baseline.spend_dollars if baseline else None,
        eval_samples=latest.samples if latest else None,
        ipd_points_per_kilodollar=ipd,
        marginal_ipd_points_per_kilodollar=slope * 1000.0 if slope is not None else None,
        dollars_per_next_point=1.0 / slope if slope is not None and slope > 0 else None,
        eval_pushed_at=latest_push(ctx.store),
        eval_curve=curve,
    )


def _baseline(ctx: Context, curve: tuple[EvalPoint, ...]) -> Baseline | None:
    """The caller's pinned baseline, else the configured score, else the first eval seen."""
    if ctx.baseline is not None:
        return ctx.baseline
    settings = ctx.settings
    if settings.baseline_score is not None:
        spend0 = settings.baseline_spend_dollars if settings.baseline_spend_dollars is not None else 0.0
        return Baseline(score=settings.baseline_score, spend_dollars=spend0)
    if curve:
        return Baseline(score=curve[0].score, spend_dollars=curve[0].spend_dollars, timestamp=curve[0].timestamp)
    return None
