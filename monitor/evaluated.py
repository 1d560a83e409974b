"""Numbers a Prometheus server evaluated: an input of the Dashboard build, preferred where it answered.

With ``--prometheus``, rate, increase and histogram_quantile run in the
server (``ptmon.monitor.promql``), next to the data: the Dashboard then shows
Prometheus's own answer, the one a Grafana panel or a recording rule over the
same data gives. ``build_dashboard`` takes these primitives (rates,
quantiles, GPUs in use) in place of the ones it would compute from the store,
*before* anything is derived from them, so a worker's status, $ per million
tokens, burn and the known-zero error rate follow one rule whichever source
gave the rates. Everything else (identity, health, gauges, spend, evals, the
per-sync chart) is built from the raw samples the source stores, so one
Dashboard type serves both sources and the TUI cannot tell them apart.

Where the server had nothing (no such series in the window, a NaN quantile)
the stored data's number stands (``prefer``), so a metric Prometheus cannot
evaluate never blanks a card.

Syncs and failures in the window stay the stored samples' exact counts, as
with direct scraping: PromQL's ``increase()`` extrapolates to the range's
edges, so one failure in a young range reads 1.5, which no rounding fixes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from ptmon.monitor.dashboard import Point

__all__ = ["Evaluated", "prefer", "PER_TARGET"]

PER_TARGET = frozenset(("rollouts", "rollout_tokens", "engine_tokens"))  # answers kept per target

_EMPTY: Mapping[str, float] = MappingProxyType({})
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Evaluated:
    """One poll's server-side answers, at ``at`` over ``window_s``."""

    at: float  # the evaluation time: ptmon's clock when it asked
    window_s: float  # the window asked for
    range_s: float  # the range evaluated: the window, or less while the data held is younger than it
    fleet: Mapping[str, float] = field(default_factory=dict)  # query key -> value (finite only)
    by_target: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # key -> target name -> value
    gpus: tuple[tuple[str, str, float], ...] = ()  # (target, role, GPUs in use over the window)
    rollout_rate_series: tuple[Point, ...] = ()  # the range query's (t, rollouts/s)

    def fresh(self, *, now: float, window_s: float, max_age_s: float) -> bool:
        """Answers for this window, recent enough to stand for "now" (else the stored data speaks)."""
        return self.window_s == window_s and 0.0 <= now - self.at <= max_age_s

    def per_target(self, key: str) -> Mapping[str, float]:
        """The answers to one per-target query (``PER_TARGET``), by target name; empty when none came."""
        return self.by_target.get(key, _EMPTY)


def prefer(served: _T | None, stored: _T | None) -> _T | None:
    """The server's answer where it gave one, else the number computed from the stored samples."""
    return stored if served is None else served
