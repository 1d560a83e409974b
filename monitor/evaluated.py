"""Numbers a Prometheus server evaluated, laid over the Dashboard built from the store.

With ``--prometheus``, rate, increase and histogram_quantile run in the
server (``ptmon.monitor.promql``), next to the data: the Dashboard then shows
Prometheus's own answer, the one a Grafana panel or a recording rule over the
same data gives. Everything else (identity, health, gauges, spend, evals,
the per-sync chart) is still built from the raw samples the source stores, so
one Dashboard type serves both sources and the TUI cannot tell them apart.

``overlay`` is pure: where the server answered it wins, where it had nothing
(no such series in the window, a NaN quantile) the stored data's number
stays, so a metric Prometheus cannot evaluate never blanks a card.

Syncs and failures in the window stay the stored samples' exact counts, as
with direct scraping: PromQL's ``increase()`` extrapolates to the range's
edges, so one failure in a young range reads 1.5, which no rounding fixes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeVar

from ptmon.monitor.dashboard import Dashboard, Point
from ptmon.monitor.derive import median

__all__ = ["Evaluated", "overlay", "prefer", "PER_TARGET"]

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


def _sum(values: Iterable[float]) -> float | None:
    values = list(values)
    return math.fsum(values) if values else None


def overlay(d: Dashboard, ev: Evaluated, *, price: Callable[[str, str], float], slow_ratio: float = 0.5
            ) -> Dashboard:
    """``d`` with every number the server evaluated replaced by the server's value.

    ``price(target, role)``: $/GPU-hour for burn (ptmon's config overrides,
    else the exporter's gauge), which a PromQL query cannot know; ``role``
    is the series' label, "" when it has none. ``slow_ratio``: a worker at or
    below this fraction of the median worker rate is "slow" (as built).
    A down worker keeps no rate (as in ``build_dashboard``); fleet totals
    include it while its samples are in the window, as PromQL's sum does.
    """
    fleet = ev.fleet

    def pick(key: str, local: float | None) -> float | None:
        v = fleet.get(key)
        return local if v is None else v

    rollouts = ev.by_target.get("rollouts", _EMPTY)
    tokens = ev.by_target.get("rollout_tokens", _EMPTY)
    engine = ev.by_target.get("engine_tokens", _EMPTY)
    workers = tuple(
        w if w.up is False else replace(
            w, rollouts_per_s=rollouts.get(w.name, w.rollouts_per_s),
            tokens_per_s=tokens.get(w.name, engine.get(w.name, w.tokens_per_s)))
        for w in d.workers)
    if rollouts:  # "slow" is judged on the rates shown, against the median of every worker's (down ones too)
        rates = [r for w in d.workers if (r := rollouts.get(w.name, w.rollouts_per_s)) is not None]
        typical = median(rates) if len(rates) >= 2 else None
        workers = tuple(
            replace(w, status="slow" if typical and w.rollouts_per_s is not None
                    and w.rollouts_per_s <= slow_ratio * typical else "ok")
            if w.status in ("ok", "slow") else w
            for w in workers)

    rollout_rate = _sum(rollouts.values())
    rollout_tokens = _sum(tokens.values())
    engine_tokens = _sum(engine.values())
    burn = _sum(gpus * price(target, role) for target, role, gpus in ev.gpus)
    out = replace(
        d,
        workers=workers,
        rollout_rate_per_s=d.rollout_rate_per_s if rollout_rate is None else rollout_rate,
        rollout_tokens_per_s=d.rollout_tokens_per_s if rollout_tokens is None else rollout_tokens,
        engine_tokens_per_s=d.engine_tokens_per_s if engine_tokens is None else engine_tokens,
        rollout_error_rate_per_s=pick("rollout_errors", d.rollout_error_rate_per_s),
        weight_sync_p50_s=pick("sync_p50", d.weight_sync_p50_s),
        weight_sync_p90_s=pick("sync_p90", d.weight_sync_p90_s),
        weight_sync_p99_s=pick("sync_p99", d.weight_sync_p99_s),
        weight_sync_bytes_per_s=pick("sync_bytes", d.weight_sync_bytes_per_s),
        steps_per_s=pick("steps", d.steps_per_s),
        trainer_tokens_per_s=pick("trainer_tokens", d.trainer_tokens_per_s),
        step_seconds=pick("step_seconds", d.step_seconds),
        burn_dollars_per_hour=d.burn_dollars_per_hour if burn is None else burn,
        rollout_rate_series=ev.rollout_rate_series or d.rollout_rate_series,
    )
    if out.rollout_error_rate_per_s is None and out.rollout_rate_per_s is not None:
        out = replace(out, rollout_error_rate_per_s=0.0)  # rollouts counted, none an error: a known zero
    if burn is None and rollout_tokens is None and engine_tokens is None:
        return out
    tokens_now = out.rollout_tokens_per_s if out.rollout_tokens_per_s is not None else out.engine_tokens_per_s
    burn_now = out.burn_dollars_per_hour
    per_million = burn_now / (tokens_now * 3600.0) * 1e6 if burn_now is not None and tokens_now else None
    return replace(out, dollars_per_million_rollout_tokens=per_million)
