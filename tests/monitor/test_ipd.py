"""ptmon.monitor.ipd: the IPD error bars and the budget ETA against arithmetic done by hand."""

from __future__ import annotations

import math

import pytest

from ptmon.monitor.ipd import (
    BudgetEta,
    NextPoint,
    binomial_se,
    budget_eta,
    ipd_se,
    is_fraction,
    next_point_cost,
    slope_se,
)


def test_binomial_se() -> None:
    assert binomial_se(0.5, 100) == pytest.approx(0.05)  # sqrt(0.25 / 100)
    assert binomial_se(0.9, 400) == pytest.approx(0.015)  # sqrt(0.09 / 400)
    assert binomial_se(1.0, 50) == 0.0
    assert binomial_se(0.5, None) is None  # no sample count: unknown, not 0
    assert binomial_se(0.5, 0) is None
    assert binomial_se(42.0, 100) is None  # a score in points is no fraction: no binomial error
    assert binomial_se(None, 100) is None


def test_is_fraction() -> None:
    assert is_fraction([0.2, 0.5], 100)
    assert not is_fraction([0.2, 0.5], None)
    assert not is_fraction([20.0, 50.0], 100)
    assert not is_fraction([], 100)


def test_ipd_se() -> None:
    assert ipd_se(0.03, 0.04, 500.0) == pytest.approx(0.1)  # hypot 0.05 / $500 x 1000
    assert ipd_se(0.03, 0.0, 300.0) == pytest.approx(0.1)  # a configured baseline is exact
    assert ipd_se(None, 0.04, 500.0) is None
    assert ipd_se(0.03, 0.04, 0.0) is None


def test_slope_se() -> None:
    # x = 0, 100, 200 (mean 100, Sxx 20000), each se 0.03: sqrt((1e4 + 0 + 1e4) x 0.0009) / 20000
    assert slope_se([0.0, 100.0, 200.0], [0.03, 0.03, 0.03]) == pytest.approx(math.sqrt(18) / 20000)
    assert slope_se([0.0, 100.0, 200.0], [0.03, 0.03, 0.03]) == pytest.approx(0.03 / math.sqrt(20000))
    # unequal errors: the middle point (at the mean) adds nothing
    assert slope_se([0.0, 100.0, 200.0], [0.03, 9.0, 0.04]) == pytest.approx(100 * 0.05 / 20000)
    assert slope_se([0.0, 100.0], [0.03, None]) is None
    assert slope_se([5.0, 5.0], [0.03, 0.03]) is None
    assert slope_se([5.0], [0.03]) is None


def test_next_point_cost() -> None:
    assert next_point_cost(0.0004, 0.01).dollars == pytest.approx(25.0)  # 0.01 / 0.0004 per $
    assert next_point_cost(0.0004, 1.0).dollars == pytest.approx(2500.0)
    assert not next_point_cost(0.0004, 0.01).never
    assert next_point_cost(-0.0001, 0.01) == NextPoint(None, never=True)
    assert next_point_cost(0.0, 0.01) == NextPoint(None, never=True)
    assert next_point_cost(None, 0.01) == NextPoint(None, never=False)  # unknown, not never


def eta(**kw: object) -> BudgetEta:
    args: dict = {"target": 0.8, "score": 0.6, "score_se": 0.02, "slope": 0.0004, "slope_se_": 0.0001,
                  "burn_per_hour": 50.0, "fraction": True}
    args.update(kw)
    return budget_eta(**args)


def test_budget_eta_by_hand() -> None:
    e = eta()
    # gap 0.2 at 0.0004/$: $500, at $50/h: 10 h
    assert e.status == "estimated" and not e.maybe_never
    assert e.dollars == pytest.approx(500.0) and e.hours == pytest.approx(10.0)
    # se = hypot(0.02 / 0.0004, 0.2 x 0.0001 / 0.0004²) = hypot(50, 125)
    assert e.dollars_se == pytest.approx(math.sqrt(50**2 + 125**2)) and e.dollars_se == pytest.approx(134.629, abs=1e-3)
    assert e.hours_se == pytest.approx(134.629 / 50, abs=1e-4)


def test_budget_eta_unreachable_target() -> None:
    assert eta(target=1.2) == BudgetEta("unreachable")  # a fraction of samples never passes 1
    assert eta(target=1.2, fraction=False).status == "estimated"  # a score in points may


def test_budget_eta_negative_or_zero_slope_is_never() -> None:
    assert eta(slope=-0.0002) == BudgetEta("never")
    assert eta(slope=0.0) == BudgetEta("never")


def test_budget_eta_edges() -> None:
    assert eta(score=0.85) == BudgetEta("reached", dollars=0.0, hours=0.0)
    assert eta(score=None) == BudgetEta("unknown")
    assert eta(slope=None) == BudgetEta("unknown")
    no_burn = eta(burn_per_hour=None)
    assert no_burn.dollars == pytest.approx(500.0) and (no_burn.hours, no_burn.hours_se) == (None, None)
    no_errors = eta(score_se=None)
    assert no_errors.dollars == pytest.approx(500.0) and no_errors.dollars_se is None
    # a slope within one standard error of zero: it may never get there
    assert eta(slope=0.0001, slope_se_=0.0002).maybe_never
