"""Is the published policy moving: how long the trainer's version has held, and what happened meanwhile.

A failed sync publishes no version, and a sync that "succeeds" without
publishing (a wrong ``version=``) publishes the same one: in both cases the
rollout fleet keeps sampling old weights while the trainer keeps stepping.
Staleness cannot show it (the workers still match the version the trainer
published), so the policy_not_advancing alert reads these three numbers.

From the stored history, not the window: a version that held for longer than
the window is still news. The time the version changed is known to a scrape:
it is taken as the first scrape showing it, so the time held is never over-stated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor import exposed
from ptmon.monitor.derive import raw_increase
from ptmon.monitor.sections.context import Context
from ptmon.monitor.store import Series

__all__ = ["PolicyFields", "policy_progress", "held_since", "increase_since"]


class PolicyFields(TypedDict):
    policy_held_s: float | None
    policy_held_steps: float | None
    policy_held_sync_attempts: float | None


def held_since(series: Series) -> float | None:
    """The time of the first point of the trailing run of equal finite values: since when it has held.

    With no change in the stored history, its first point (a lower bound on the time held). None when empty.
    """
    times, values = series.columns()
    since: float | None = None
    current: float | None = None
    for i in range(len(values) - 1, -1, -1):
        v = values[i]
        if not math.isfinite(v):
            continue
        if current is None:
            current = v
        elif v != current:
            break
        since = times[i]
    return since


def increase_since(series: Iterable[Series], since: float) -> float | None:
    """How much the counters grew over the scrapes from ``since`` on (resets handled, no extrapolation);
    None when none has two points there."""
    total: float | None = None
    for s in series:
        r = raw_increase(s.points(since))
        if r is not None:
            total = r if total is None else total + r
    return total


def policy_progress(ctx: Context) -> PolicyFields:
    """Since the trainer's published version last moved: how long, the steps taken, the syncs tried."""
    versions = [(p[1], s) for t in ctx.live for s in ctx.series(t.name, (schema.POLICY_VERSION.name,))
                if (p := s.last()) is not None and math.isfinite(p[1])]
    if not versions:
        return PolicyFields(policy_held_s=None, policy_held_steps=None, policy_held_sync_attempts=None)
    top = max(v for v, _ in versions)
    # The published version is the highest any trainer reports: it moved when the one holding it moved.
    starts = [t for v, s in versions if v == top and (t := held_since(s)) is not None]
    since = max(starts)
    names = ctx.names
    steps = increase_since((s for n in names for s in ctx.series(n, exposed.TRAINER_STEPS)), since)
    syncs = [s for n in names for s in (*ctx.series(n, (schema.WEIGHT_SYNC_SECONDS.count,)),
                                        *ctx.series(n, exposed.SYNC_FAILURES))]
    return PolicyFields(policy_held_s=max(0.0, ctx.now - since), policy_held_steps=steps,
                        policy_held_sync_attempts=increase_since(syncs, since))
