"""Intelligence per dollar with its uncertainty, and the budget to a target score: pure functions.

An eval that scored p (the fraction of n samples right) is a binomial
estimate of the policy's true score: its standard error is sqrt(p(1 − p)/n).
That is the error bar of each eval on the chart, and everything derived from
evals carries it forward by first-order error propagation (independent evals):

- cumulative IPD = (latest − baseline) / spent: its error is
  sqrt(se_latest² + se_baseline²) / spent (a configured baseline is exact);
- marginal IPD = the least-squares slope b of score on spend over the last K
  evals: b = Σ (x_i − x̄) y_i / Sxx, so se_b = sqrt(Σ (x_i − x̄)² se_i²) / Sxx
  (the same slope as without errors, its spread from the evals' own noise);
- $ per next point = point / b (a point being ``[eval] point`` of score);
  ``never`` when b ≤ 0, unknown when b is;
- the budget ETA: dollars D = (target − score) / b and hours D / burn, with
  se_D = sqrt((se_score / b)² + ((target − score) se_b / b²)²).

Every ± is one standard error. Scores outside [0, 1] or evals without a
sample count have no binomial error: their ± is unknown, never a made-up 0.
A score of exactly 0 or 1 has a binomial error of 0 (the usual estimate's
known blind spot at the edges); the error bar says so by having no length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["binomial_se", "is_fraction", "ipd_se", "slope_se", "next_point_cost", "NextPoint", "budget_eta",
           "BudgetEta", "EtaStatus"]

EtaStatus = Literal["unknown", "reached", "estimated", "never", "unreachable"]


def binomial_se(score: float | None, samples: float | None) -> float | None:
    """One eval's standard error, sqrt(p(1 − p)/n); None without a sample count or for a score not in [0, 1]."""
    if score is None or samples is None or not math.isfinite(samples) or samples < 1:
        return None
    if not (math.isfinite(score) and 0.0 <= score <= 1.0):
        return None
    return math.sqrt(score * (1.0 - score) / samples)


def is_fraction(scores: Sequence[float], samples: float | None) -> bool:
    """The benchmark scores fractions of samples (every score in [0, 1] and a sample count exported):
    a score above 1 cannot be reached."""
    return samples is not None and bool(scores) and all(0.0 <= s <= 1.0 for s in scores)


def ipd_se(latest_se: float | None, baseline_se: float | None, spent: float | None) -> float | None:
    """The cumulative IPD's standard error in points per $1k; None when an error or the spend is unknown."""
    if latest_se is None or baseline_se is None or spent is None or not spent > 0:
        return None
    return math.hypot(latest_se, baseline_se) / spent * 1000.0


def slope_se(xs: Sequence[float], errors: Sequence[float | None]) -> float | None:
    """The least-squares slope's standard error from each point's own (independent) error; None when a
    point's error is unknown, there are fewer than two points or all sit at one x."""
    if len(xs) < 2 or len(xs) != len(errors) or any(e is None for e in errors):
        return None
    mean_x = sum(xs) / len(xs)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if not sxx > 0:
        return None
    spread = sum((x - mean_x) ** 2 * e * e for x, e in zip(xs, errors, strict=True) if e is not None)
    return math.sqrt(spread) / sxx


@dataclass(frozen=True, slots=True)
class NextPoint:
    """Dollars for the next ``point`` of score at the marginal slope; ``never`` when the slope is ≤ 0."""

    dollars: float | None
    never: bool = False


def next_point_cost(slope: float | None, point: float) -> NextPoint:
    """``point`` / slope (slope in score per dollar): unknown without a slope, never when it is ≤ 0."""
    if slope is None or not math.isfinite(slope):
        return NextPoint(None)
    if slope <= 0:
        return NextPoint(None, never=True)
    return NextPoint(point / slope)


@dataclass(frozen=True, slots=True)
class BudgetEta:
    """Dollars and hours from now to the target score, each with one standard error.

    ``maybe_never``: the slope is within one standard error of zero, so the
    target may never be reached at this rate (the ± is then a lower bound's).
    """

    status: EtaStatus
    dollars: float | None = None
    dollars_se: float | None = None
    hours: float | None = None
    hours_se: float | None = None
    maybe_never: bool = False


def budget_eta(*, target: float, score: float | None, score_se: float | None, slope: float | None,
               slope_se_: float | None, burn_per_hour: float | None, fraction: bool) -> BudgetEta:
    """The ETA to ``target`` at the marginal ``slope`` (score per dollar) and the burn ($/h).

    ``fraction``: the scores are fractions of samples, so a target above 1 is ``unreachable``.
    """
    if fraction and target > 1.0:
        return BudgetEta("unreachable")
    if score is None:
        return BudgetEta("unknown")
    if score >= target:
        return BudgetEta("reached", dollars=0.0, dollars_se=None, hours=0.0, hours_se=None)
    if slope is None or not math.isfinite(slope):
        return BudgetEta("unknown")
    if slope <= 0:
        return BudgetEta("never")
    gap = target - score
    dollars = gap / slope
    dollars_se = None
    if score_se is not None and slope_se_ is not None:
        dollars_se = math.hypot(score_se / slope, gap * slope_se_ / (slope * slope))
    hours = hours_se = None
    if burn_per_hour is not None and burn_per_hour > 0:
        hours = dollars / burn_per_hour
        hours_se = None if dollars_se is None else dollars_se / burn_per_hour
    return BudgetEta("estimated", dollars=dollars, dollars_se=dollars_se, hours=hours, hours_se=hours_se,
                     maybe_never=slope_se_ is not None and slope <= slope_se_)
