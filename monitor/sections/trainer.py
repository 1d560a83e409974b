"""The trainer: step rate and time, time since the last step, its latest scalars and published policy.

ptmon's own trainer metrics first; where they say nothing, what a training loop serves itself
(``ptmon.monitor.sections.loops``: prime-rl's trainer gauges, verl's RL-Insight gauges).
"""

from __future__ import annotations

import math
from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor import exposed
from ptmon.monitor.derive import histogram_quantile
from ptmon.monitor.evaluated import prefer
from ptmon.monitor.histograms import buckets_by_le, histogram_pairs, increase_ratio
from ptmon.monitor.sections.context import Context
from ptmon.monitor.sections.loops import loop_last_step_at, loop_scalar, loop_step_time, loop_steps_per_s
from ptmon.monitor.store import Series
from ptmon.monitor.window import finite

__all__ = ["TrainerFields", "trainer"]


class TrainerFields(TypedDict):
    policy_version: float | None
    steps_per_s: float | None
    step_seconds: float | None
    step_seconds_median: float | None
    seconds_since_last_step: float | None
    trainer_tokens_per_s: float | None
    loss: float | None
    kl: float | None
    entropy: float | None
    grad_norm: float | None
    learning_rate: float | None


def trainer(ctx: Context) -> TrainerFields:
    scalars = {key: values[-1] if (values := ctx.live_lasts((spec.name,))) else loop_scalar(ctx, key)
               for key, spec in schema.TRAINER_SCALARS.items()}
    steps = prefer(ctx.served("steps"), ctx.rate_sum(exposed.TRAINER_STEPS))
    step_seconds = prefer(ctx.served("step_seconds"), _mean_step_seconds(ctx))
    return TrainerFields(
        policy_version=ctx.policy_version,
        steps_per_s=steps if steps is not None else loop_steps_per_s(ctx),
        step_seconds=step_seconds if step_seconds is not None else loop_step_time(ctx),
        step_seconds_median=_median_step_seconds(ctx),
        seconds_since_last_step=_since_last_step(ctx),
        trainer_tokens_per_s=_tokens_per_s(ctx),
        loss=scalars["loss"], kl=scalars["kl"], entropy=scalars["entropy"], grad_norm=scalars["grad_norm"],
        learning_rate=scalars["learning_rate"],
    )


def _tokens_per_s(ctx: Context) -> float | None:
    """Trained tokens/s; unknown, not 0, while no trainer has ever counted a token: the exporter's counter
    exists at 0 from the start, so a trainer that logs no tokens (a bridge for a framework that does not, a
    callback before TRL's first num_tokens) would otherwise read as a trainer training on nothing."""
    series = [s for n in ctx.names for s in ctx.series(n, exposed.TRAINER_TOKENS)]
    if series and not any(_ever_counted(s, ctx.w.end) for s in series):
        return None  # (no series stored at all: nothing to judge by, a server's answer stands)
    return prefer(ctx.served("trainer_tokens"), ctx.rate_sum(exposed.TRAINER_TOKENS))


def _ever_counted(s: Series, end: float) -> bool:
    """Whether the counter has read above 0 by ``end`` (its last point, else any: a restart reads 0 again)."""
    last = s.last()
    if last is not None and last[0] <= end and last[1] > 0:
        return True
    return any(v > 0 for _, v in s.points(None, end))


def _mean_step_seconds(ctx: Context) -> float | None:
    """Δsum / Δcount of the step histogram over the window."""
    totals = [increase_ratio(ctx.w, su, co) for n in ctx.names
              for su, co in histogram_pairs(ctx.store, n, schema.TRAINER_STEP_SECONDS)]
    count = sum(c for _, c in totals)
    return sum(s for s, _ in totals) / count if count > 0 else None


def _median_step_seconds(ctx: Context) -> float | None:
    """The median over the trainer's whole life (cumulative buckets), not the window: the stall rule
    scales with it, and a stalled window has no steps to take a median of."""
    buckets: dict[float, float] = {}
    for le, _, s in buckets_by_le(ctx.store, ctx.names, schema.TRAINER_STEP_SECONDS):
        last = s.last()
        if last is not None:
            buckets[le] = buckets.get(le, 0.0) + last[1]
    return finite(histogram_quantile(0.5, list(buckets.items())))


def _since_last_step(ctx: Context) -> float | None:
    lasts = [p[1] for n in ctx.names for s in ctx.store.series(n, schema.TRAINER_LAST_STEP_TIMESTAMP.name)
             if (p := s.last()) is not None and math.isfinite(p[1]) and p[1] > 0]
    last = max(lasts) if lasts else loop_last_step_at(ctx)
    return max(0.0, ctx.now - last) if last is not None else None
