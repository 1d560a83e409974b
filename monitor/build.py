"""Build the Dashboard: every number the UI shows, from the store at one time.

``build_dashboard`` is a pure function of the stored points, the targets'
health, the settings, an explicit ``now`` and a window, so the TUI, ``ptmon
snapshot`` and the tests all get the same numbers for the same data. The
definitions are README.md's "What the numbers mean"; where it is silent, the
choice is written next to the code.

The work is done by the sections of ``ptmon.monitor.sections`` (identity,
trainer, policy progress, weight sync, rollouts and workers, engines and GPUs, cost,
intelligence), each a pure function of one shared ``Context`` returning its
own fields; this module joins them. A Prometheus server's evaluated answers
(``ptmon.monitor.evaluated``) enter through the context, before anything is
derived from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, get_type_hints

from ptmon.monitor.dashboard import Dashboard, TargetHealth
from ptmon.monitor.evals import Baseline, EvalLog, observe_evals
from ptmon.monitor.evaluated import Evaluated
from ptmon.monitor.sections.context import Context
from ptmon.monitor.sections.cost import cost
from ptmon.monitor.sections.engines import engines
from ptmon.monitor.sections.framework import framework
from ptmon.monitor.sections.identity import identity
from ptmon.monitor.sections.intelligence import budget, intelligence
from ptmon.monitor.sections.loops import loop
from ptmon.monitor.sections.policy import policy_progress
from ptmon.monitor.sections.rollouts import rollout_steps
from ptmon.monitor.sections.sync import weight_sync
from ptmon.monitor.sections.trainer import trainer
from ptmon.monitor.settings import Settings
from ptmon.monitor.slots import SlotMemo
from ptmon.monitor.steps import Steps, run_steps
from ptmon.monitor.store import Store

__all__ = ["build_dashboard", "build_steps", "run_steps", "Baseline", "EvalLog", "observe_evals"]


def build_dashboard(store: Store, health: Sequence[TargetHealth], settings: Settings, *, now: float,
                    window_s: float, baseline: Baseline | None = None, evals: EvalLog | None = None,
                    evaluated: Evaluated | None = None, rates_since: float | None = None,
                    slot_memo: SlotMemo | None = None) -> Dashboard:
    """The Dashboard at ``now`` over ``(now - window_s, now]``, without alerts.

    ``baseline``: the IPD reference the caller pinned (``set_baseline_now``);
    None means the configured baseline score, else the first eval seen.
    ``evals``: the caller's running ``EvalLog``; None reads every eval in the store.
    ``evaluated``: a Prometheus server's answers for the window (``--prometheus``): where they are for
    this window and no older than ``settings.evaluated_max_age_s``, its rates, quantiles and GPUs in use
    replace the stored data's own before anything is derived from them.
    ``rates_since``: the last change of the scrape interval; rates use no sample before it (samples of two
    spacings make PromQL's extrapolation read low), as a fresh monitor's rates start at its first scrape.
    ``slot_memo``: the caller's ``SlotMemo``, kept from one build to the next (the same numbers, cheaper).
    """
    return run_steps(build_steps(store, health, settings, now=now, window_s=window_s, baseline=baseline,
                                 evals=evals, evaluated=evaluated, rates_since=rates_since, slot_memo=slot_memo))


def build_steps(store: Store, health: Sequence[TargetHealth], settings: Settings, *, now: float,
                window_s: float, baseline: Baseline | None = None, evals: EvalLog | None = None,
                evaluated: Evaluated | None = None, rates_since: float | None = None,
                slot_memo: SlotMemo | None = None) -> Steps[Dashboard]:
    """``build_dashboard`` in steps: it yields between sections (and inside the costly ones) and returns
    the Dashboard, so a caller on an event loop can let scrapes run in between (``LiveFeed``) instead of
    blocking them for the whole build (hundreds of ms at 64 targets of 1,000 series). Same arguments."""
    ctx = yield from Context.steps(store, health, settings, now=now, window_s=window_s, baseline=baseline,
                                   evals=evals, evaluated=evaluated, rates_since=rates_since,
                                   slot_memo=slot_memo)
    spend = cost(ctx)
    ipd = intelligence(ctx)
    yield
    ident, train, loops, policy, sync = identity(ctx), trainer(ctx), loop(ctx), policy_progress(ctx), weight_sync(ctx)
    yield
    fleet = yield from rollout_steps(ctx)
    yield
    gpus, fw = engines(ctx), framework(ctx)
    return _known_numbers(Dashboard(
        now=now, window_s=window_s, interval_s=settings.interval_s,
        **ident, **train, **loops, **policy, **sync,
        **fleet, **gpus, **spend, **ipd, **budget(ipd, spend["burn_dollars_per_hour"], settings),
        **fw,
    ))


_REQUIRED = frozenset(("now", "window_s", "interval_s"))
_NUMBER_FIELDS = tuple(name for name, hint in get_type_hints(Dashboard).items()
                       if hint in (float, float | None) and name not in _REQUIRED)


def _known_numbers(d: Dashboard) -> Dashboard:
    """NaN or ±Inf from a target (a NaN gauge, an Inf counter) becomes unknown, not a number to show."""
    bad: dict[str, Any] = {name: None for name in _NUMBER_FIELDS
                           if isinstance(v := getattr(d, name), float) and not math.isfinite(v)}
    return replace(d, **bad) if bad else d
