"""Training loops that serve their own state: prime-rl's trainer gauges, verl's RL-Insight gauges, SkyRL's
Ray gauges (``schema.PRIME_RL_TRAINER``, ``schema.VERL_*``, ``schema.SKYRL_*``).

Their numbers stand in where ptmon's own exporters say nothing (``prefer``-style, the trainer and sync
sections call the helpers here); what only a loop serves, its current phase and its generation buffer,
is this section's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor.derive import changed_at, step_gauge_rate
from ptmon.monitor.sections.context import Context
from ptmon.monitor.window import sum_known

__all__ = ["LoopFields", "loop", "loop_steps_per_s", "loop_step_time", "loop_last_step_at", "loop_scalar",
           "loop_sync_last_s"]

_STEP_GAUGES = (schema.PRIME_RL_TRAINER_STEP.name, schema.VERL_GLOBAL_STEP.name)


class LoopFields(TypedDict):
    trainer_phase: str | None
    generation_buffer: float | None
    generation_buffer_max: float | None


def loop(ctx: Context) -> LoopFields:
    queued = ctx.live_lasts((schema.SKYRL_GEN_BUFFER_QSIZE.name,))
    capacity = ctx.live_lasts((schema.SKYRL_GEN_BUFFER_MAXSIZE.name,))
    return LoopFields(
        trainer_phase=_phase(ctx),
        generation_buffer=sum(queued) if queued else None,
        generation_buffer_max=sum(capacity) if capacity else None,
    )


def _phase(ctx: Context) -> str | None:
    """The phase whose gauge reads 1 (the most recently set where two do, mid-switch); None between phases."""
    active: list[tuple[float, str]] = []
    for t in ctx.live:
        for s in ctx.series(t.name, (schema.SKYRL_TRAINING_PHASE.name,)):
            last = s.last()
            if ctx.w.last(s) == 1.0 and last is not None:
                active.append((last[0], s.labels.get(schema.LABEL_PHASE, "")))
    return max(active)[1] or None if active else None


def loop_steps_per_s(ctx: Context) -> float | None:
    """Σ over targets of the slope of their step-number gauge in the window."""
    return sum_known(step_gauge_rate(ctx.w.pts(s)) for n in ctx.names for s in ctx.series(n, _STEP_GAUGES))


def loop_last_step_at(ctx: Context) -> float | None:
    """Unix time of the latest step: prime-rl's timestamp gauge, else when a step-number gauge last moved."""
    stamps = [p[1] for n in ctx.names for s in ctx.series(n, (schema.PRIME_RL_TRAINER_LAST_STEP_TIMESTAMP.name,))
              if (p := s.last()) is not None and math.isfinite(p[1]) and p[1] > 0]
    if stamps:
        return max(stamps)
    moved = [t for n in ctx.names for s in ctx.series(n, (schema.VERL_GLOBAL_STEP.name,))
             if (t := changed_at(s.points(None, ctx.w.end))) is not None]
    return max(moved) if moved else None


def loop_step_time(ctx: Context) -> float | None:
    """verl's ``timing_s/step`` of the latest step in the window."""
    return _latest(ctx, (schema.VERL_STEP_SECONDS.name,))


def loop_sync_last_s(ctx: Context) -> float | None:
    """verl's ``timing_s/update_weights`` of the latest step in the window."""
    return _latest(ctx, (schema.VERL_UPDATE_WEIGHTS_SECONDS.name,))


def loop_scalar(ctx: Context, key: str) -> float | None:
    """A trainer scalar (``schema.LOOP_SCALARS`` key: loss, kl, ...) as a loop serves it."""
    values = ctx.live_lasts(tuple(spec.name for spec in schema.LOOP_SCALARS.get(key, ())))
    return values[-1] if values else None


def _latest(ctx: Context, names: Sequence[str]) -> float | None:
    values = [v for v in ctx.live_lasts(names) if math.isfinite(v) and v >= 0]
    return values[-1] if values else None
