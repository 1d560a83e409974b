"""``ptmon compare --prometheus URL --run a --run b``: runs compared at equal spend, read from one server.

The same comparison as for recordings (``ptmon.monitor.compare``: S*, score,
IPD and marginal IPD at S*, and the Dashboard at the moment a run's spend
reached S*), with each run read whole from the server: its raw samples of
the last ``--since`` (one query per run, filtered by the run label of its
targets' run info, as ``ptmon watch --prometheus --run`` does) go into a Store
of its own, deep enough to hold them all, so the eval curve covers the run
from its first eval, not only the last window.

A Dashboard's spend is the whole history held, so the moment a run reached
S* is found on its spend clock (spend at any time, as evals are placed),
by bisection (spend only grows), and the Dashboard is built there for the
window's numbers: burn, weight-sync p99, rollouts/s, $ per million tokens.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ptmon.monitor.build import build_dashboard
from ptmon.monitor.compare import RunAtSpend, RunCurve, at_spend, equal_spend, with_dashboard
from ptmon.monitor.dashboard import Dashboard, TargetHealth
from ptmon.monitor.evals import spend_clock
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.sources.prometheus import PrometheusSource
from ptmon.monitor.store import Store

__all__ = ["summarize_prometheus", "reached_at", "DEFAULT_SINCE_S"]

DEFAULT_SINCE_S = 7 * 86400.0  # a week of history per run: the server's answer cap says when that is too much
_CAPACITY = 10**9  # points per series: every sample of the answer is kept (the answer's byte cap bounds them)
_REL = 1e-9


@dataclass(frozen=True, slots=True)
class _Run:
    name: str
    store: Store
    health: tuple[TargetHealth, ...]
    settings: Settings
    first: float
    last: float


async def _read_run(server: Target, run: str, settings: Settings, since_s: float) -> _Run:
    """Every raw sample of ``run`` in the last ``since_s``; ValueError saying why when there is none."""
    store = Store(capacity=_CAPACITY, max_series=settings.max_series)
    source = PrometheusSource(server, store=store, interval_s=settings.interval_s, timeout_s=settings.timeout_s,
                              window_s=since_s, max_body_bytes=settings.max_body_bytes, evaluate=False, run=run)
    try:
        await source.scrape_once()
    finally:
        await source.aclose()
    health = source.health()
    if not source.history_kept:
        raise ValueError(f"run {run!r}: its last {since_s:g} s are more than one answer may hold "
                         f"({settings.max_body_bytes} bytes): try a shorter --since")
    times = [ts for target in store.targets() if (ts := store.scrape_times(target))]
    if not times:
        why = "; ".join(h.error for h in health if h.error) or "no samples"
        raise ValueError(f"run {run!r} on Prometheus {server.name}: {why}")
    return _Run(name=run, store=store, health=health, settings=replace(settings, run=run),
                first=min(t[0] for t in times), last=max(t[-1] for t in times))


def reached_at(spend_at: Callable[[float], float | None], start: float, end: float, spend: float, *,
               tolerance: float) -> float | None:
    """The first time in ``[start, end]`` (to within ``tolerance``) at which ``spend_at`` reached ``spend``;
    None when it never did. ``spend_at`` only grows."""
    def reached(t: float) -> bool:
        s = spend_at(t)
        return s is not None and s >= spend * (1 - _REL)

    if not reached(end):
        return None
    if reached(start):
        return start
    lo, hi = start, end
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if reached(mid) else (mid, hi)
    return hi


def _dashboard(run: _Run, now: float) -> Dashboard:
    return build_dashboard(run.store, run.health, run.settings, now=now, window_s=run.settings.window_s)


def _curve(run: _Run) -> RunCurve:
    end = _dashboard(run, run.last)
    s = run.settings
    return RunCurve(name=run.name, curve=end.eval_curve, spend_dollars=end.spend_dollars, marginal_k=s.marginal_k,
                    baseline_score=s.baseline_score, baseline_spend_dollars=s.baseline_spend_dollars or 0.0)


def _row(run: _Run, curve: RunCurve, spend: float) -> RunAtSpend:
    t = reached_at(spend_clock(run.store, run.settings), run.first, run.last, spend,
                   tolerance=min(run.settings.interval_s, max(1e-3, (run.last - run.first) / 1000.0)))
    return with_dashboard(at_spend(curve, spend), None if t is None else _dashboard(run, t))


async def _read_all(runs: Sequence[str], settings: Settings, since_s: float) -> list[_Run]:
    assert settings.prometheus is not None
    server = settings.prometheus
    return list(await asyncio.gather(*(_read_run(server, name, settings, since_s) for name in runs)))


def summarize_prometheus(settings: Settings, runs: Sequence[str], *, since_s: float = DEFAULT_SINCE_S
                         ) -> tuple[float | None, list[RunCurve], list[RunAtSpend]]:
    """(S*, each run's curve, each run at S*) for ``runs`` on ``settings.prometheus``."""
    if settings.prometheus is None:
        raise ValueError("--prometheus URL is needed to compare runs by name")
    if len(set(runs)) < 2:
        raise ValueError("name at least two different runs to compare (--run a --run b)")
    if not (since_s > 0 and math.isfinite(since_s)):
        raise ValueError(f"--since must be a positive duration, got {since_s!r}")
    read = asyncio.run(_read_all(runs, settings, since_s))
    curves = [_curve(r) for r in read]
    target = equal_spend(curves)
    rows = [RunAtSpend(name=c.name, spend_dollars=c.spend_dollars, score=None, ipd_points_per_kilodollar=None,
                       marginal_ipd_points_per_kilodollar=None) if target is None else _row(r, c, target)
            for r, c in zip(read, curves, strict=True)]
    return target, curves, rows
