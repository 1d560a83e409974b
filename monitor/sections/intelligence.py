"""Intelligence per dollar: the primary benchmark's evals against spend, from a baseline.

Cumulative: (latest score − baseline score) / (spend now − baseline spend)
× 1000, unknown until an eval exists after the baseline. Marginal: the
least-squares slope of score against spend over the last K evals × 1000;
dollars per next point is ``[eval] point`` over the slope: never when the
slope is ≤ 0, unknown without one. Each carries its ± (one standard error
from the evals' binomial errors, ``ptmon.monitor.ipd``); the budget ETA to
``[eval] target_score`` is joined in by ``budget`` once the burn is known.
The last push of an eval group to a Pushgateway, when evals come that way,
says how old the newest eval is (``eval_pushed_at``).
"""

from __future__ import annotations

from typing import TypedDict

from ptmon.monitor.dashboard import EvalPoint
from ptmon.monitor.derive import least_squares_slope
from ptmon.monitor.evals import Baseline, latest_push
from ptmon.monitor.ipd import binomial_se, budget_eta, ipd_se, is_fraction, next_point_cost, slope_se
from ptmon.monitor.sections.context import Context
from ptmon.monitor.settings import Settings

__all__ = ["IntelligenceFields", "BudgetFields", "intelligence", "budget"]


class IntelligenceFields(TypedDict):
    benchmark: str | None
    score: float | None
    baseline_score: float | None
    baseline_spend_dollars: float | None
    eval_samples: float | None
    ipd_points_per_kilodollar: float | None
    marginal_ipd_points_per_kilodollar: float | None
    dollars_per_next_point: float | None
    score_se: float | None
    ipd_se_points_per_kilodollar: float | None
    marginal_ipd_se_points_per_kilodollar: float | None
    eval_point: float
    next_point_never: bool
    eval_pushed_at: float | None
    eval_curve: tuple[EvalPoint, ...]


class BudgetFields(TypedDict):
    target_score: float | None
    eta_status: str | None
    eta_dollars: float | None
    eta_dollars_se: float | None
    eta_hours: float | None
    eta_hours_se: float | None
    eta_maybe_never: bool


def intelligence(ctx: Context) -> IntelligenceFields:
    settings = ctx.settings
    bench = ctx.evals.primary(settings.primary_benchmark)
    curve = tuple(p for p in ctx.evals.curve(settings.primary_benchmark) if p.timestamp <= ctx.now)
    latest = curve[-1] if curve else None
    baseline = _baseline(ctx, curve)
    ipd = ipd_err = None
    spend = ctx.spend
    latest_se = binomial_se(latest.score, latest.samples) if latest else None
    if baseline is not None and latest is not None and spend is not None and (
            baseline.timestamp is None or latest.timestamp > baseline.timestamp):
        spent = spend - baseline.spend_dollars
        if spent > 0:
            ipd = (latest.score - baseline.score) / spent * 1000.0
            ipd_err = ipd_se(latest_se, _baseline_se(baseline, curve), spent)
    last_k = curve[-settings.marginal_k:] if settings.marginal_k >= 2 else ()
    xs = [p.spend_dollars for p in last_k]
    slope = least_squares_slope(xs, [p.score for p in last_k])
    slope_err = slope_se(xs, [binomial_se(p.score, p.samples) for p in last_k]) if slope is not None else None
    nxt = next_point_cost(slope, settings.eval_point)
    return IntelligenceFields(
        benchmark=bench,
        score=latest.score if latest else None,
        baseline_score=baseline.score if baseline else None,
        baseline_spend_dollars=baseline.spend_dollars if baseline else None,
        eval_samples=latest.samples if latest else None,
        ipd_points_per_kilodollar=ipd,
        marginal_ipd_points_per_kilodollar=slope * 1000.0 if slope is not None else None,
        dollars_per_next_point=nxt.dollars,
        score_se=latest_se,
        ipd_se_points_per_kilodollar=ipd_err,
        marginal_ipd_se_points_per_kilodollar=slope_err * 1000.0 if slope_err is not None else None,
        eval_point=settings.eval_point,
        next_point_never=nxt.never,
        eval_pushed_at=latest_push(ctx.store),
        eval_curve=curve,
    )


def budget(fields: IntelligenceFields, burn_per_hour: float | None, settings: Settings) -> BudgetFields:
    """The budget ETA to ``settings.target_score`` from the intelligence fields and the burn; all None
    (status too) when no target is configured."""
    target = settings.target_score
    if target is None:
        return BudgetFields(target_score=None, eta_status=None, eta_dollars=None, eta_dollars_se=None,
                            eta_hours=None, eta_hours_se=None, eta_maybe_never=False)
    marginal = fields["marginal_ipd_points_per_kilodollar"]
    marginal_se = fields["marginal_ipd_se_points_per_kilodollar"]
    eta = budget_eta(target=target, score=fields["score"], score_se=fields["score_se"],
                     slope=None if marginal is None else marginal / 1000.0,
                     slope_se_=None if marginal_se is None else marginal_se / 1000.0, burn_per_hour=burn_per_hour,
                     fraction=is_fraction([p.score for p in fields["eval_curve"]], fields["eval_samples"]))
    return BudgetFields(target_score=target, eta_status=eta.status, eta_dollars=eta.dollars,
                        eta_dollars_se=eta.dollars_se, eta_hours=eta.hours, eta_hours_se=eta.hours_se,
                        eta_maybe_never=eta.maybe_never)


def _baseline_se(baseline: Baseline, curve: tuple[EvalPoint, ...]) -> float | None:
    """The baseline's own error: 0 for a configured score, the binomial error of the eval it was taken from."""
    if baseline.timestamp is None:
        return 0.0
    same = [p for p in curve if p.timestamp == baseline.timestamp]
    return binomial_se(same[0].score, same[0].samples) if same else None


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
