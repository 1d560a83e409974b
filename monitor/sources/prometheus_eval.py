"""What the Prometheus source asks the server to evaluate, over which range, and how answers are keyed.

Pure functions: the source does the HTTP. Rates, increases and quantiles are
evaluated where the data is (``ptmon.monitor.promql``), over a range that
follows the data's age as the stored path's does, so a young run's rates do
not read low by the ratio of the window it has not lived yet.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ptmon.exporters import schema
from ptmon.monitor import promql
from ptmon.monitor.dashboard import Point
from ptmon.monitor.evaluated import PER_TARGET, Evaluated
from ptmon.monitor.settings import chart_step_s
from ptmon.monitor.sources.prometheus_api import points

__all__ = ["EvaluationPlan", "plan_evaluation", "read_evaluation"]


@dataclass(frozen=True, slots=True)
class EvaluationPlan:
    """One poll's two evaluation requests: the instant query's and the chart's range query's parameters."""

    range_s: float
    instant: Mapping[str, str]
    ranged: Mapping[str, str]


def evaluation_range(*, at: float, window: float, firsts: Sequence[float], scrape: float) -> float:
    """The range to evaluate over at ``at``: the window, or less while the data held is younger than it.

    PromQL divides an increase by the whole range: over a window longer than
    the data held (a run younger than the window) rate() reads low by that
    ratio, and a target whose first sample is over 1.1 scrapes after the
    range's start is extrapolated back only half a scrape. Prometheus scrapes
    each target at its own offset in the interval, so the range starts half a
    scrape before the newest first sample of the targets there from the start
    (within 1.5 scrapes of the oldest); a target that joins later does not
    shorten everyone's range.
    """
    oldest = min(firsts)
    if at - oldest >= window:
        return window
    start = max(t for t in firsts if t <= oldest + 1.5 * scrape) - scrape / 2
    return min(window, max(at - start, 2 * scrape))


def plan_evaluation(*, at: float, window: float, firsts: Sequence[float], spacing: float, interval: float,
                    run: str | None) -> EvaluationPlan:
    """The queries for ``at`` over ``window``: every windowed number in one instant query, and the
    rollout-rate chart as a range query. ``firsts``: each target's oldest stored scrape time (not empty);
    ``spacing``: the longest spacing seen between a target's scrapes (0 before two)."""
    range_s = evaluation_range(at=at, window=window, firsts=firsts, scrape=max(spacing, interval))
    step = chart_step_s(range_s, interval)  # the same chart as the stored path's
    # Each chart point is a rate over two steps, or over enough scrapes for rate() to have two samples.
    chart_range = max(2 * step, 2.5 * spacing)
    instant = {"query": promql.combine(promql.instant_queries(range_s, run=run)), "time": f"{at:.3f}"}
    ranged = {"query": promql.rollout_rate_chart(chart_range, run=run), "start": f"{at - range_s:.3f}",
              "end": f"{at:.3f}", "step": f"{step:.3f}"}
    return EvaluationPlan(range_s=range_s, instant=instant, ranged=ranged)


def read_evaluation(*, at: float, window: float, range_s: float, vector: list[dict[str, Any]],
                    matrix: list[dict[str, Any]], name_of: Callable[[Mapping[str, Any]], str | None]) -> Evaluated:
    """The answers keyed for the Dashboard: per-target ones by the target's name (``name_of`` a series'
    labels; None: not a listed target, dropped); non-finite ones dropped."""
    fleet: dict[str, float] = {}
    by_target: dict[str, dict[str, float]] = defaultdict(dict)
    gpus: list[tuple[str, str, float]] = []
    for item in vector:
        try:
            metric, (_, text) = item["metric"], item["value"]
            key, value = metric.get(promql.Q_LABEL), float(text)
        except (TypeError, KeyError, ValueError, AttributeError):
            continue  # not ours, or malformed: the stored data's number stands
        if not isinstance(key, str) or not math.isfinite(value):
            continue
        if key in PER_TARGET or key == "gpus":
            name = name_of(metric)
            if name is None:
                continue
            if key == "gpus":
                gpus.append((name, str(metric.get(schema.LABEL_ROLE) or ""), value))
            else:
                by_target[key][name] = value
        else:
            fleet[key] = value
    chart: list[Point] = []
    for item in matrix[:1]:  # sum(...) answers one series (none while nothing rolls out)
        if isinstance(item, dict):
            chart = [p for p in points(item.get("values") or []) if math.isfinite(p[1])]
    return Evaluated(at=at, window_s=window, range_s=range_s, fleet=MappingProxyType(fleet),
                     by_target=MappingProxyType({k: MappingProxyType(v) for k, v in by_target.items()}),
                     gpus=tuple(gpus), rollout_rate_series=tuple(chart))
