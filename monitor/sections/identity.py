"""Identity: which run this is (``posttrain_run_info``), since when, and every target's health."""

from __future__ import annotations

from dataclasses import replace
from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.pricing import cost_warnings
from ptmon.monitor.roles import run_info_names
from ptmon.monitor.sections.context import Context
from ptmon.monitor.settings import stale_after_s
from ptmon.monitor.targets import run_start
from ptmon.monitor.text import mask_secrets

__all__ = ["IdentityFields", "identity"]


class IdentityFields(TypedDict):
    run: str | None
    model: str | None
    algorithm: str | None
    started_at: float | None
    targets: tuple[TargetHealth, ...]
    stale_after_s: float


def identity(ctx: Context) -> IdentityFields:
    """Run, model and algorithm from the trainer's run info (else the first target's that has one); the
    run's start from its exporters' creation times, else the earliest data seen."""
    run = model = algorithm = None
    for t in sorted(ctx.targets, key=lambda t: t.role != schema.ROLE_TRAINER):
        infos = [s for n in run_info_names() for s in ctx.store.series(t.name, n)]
        if infos:
            labels = infos[0].labels
            run = labels.get(schema.LABEL_RUN)
            model = labels.get(schema.LABEL_MODEL)
            algorithm = labels.get(schema.LABEL_ALGORITHM)
            break
    started_at = run_start(ctx.store, ctx.targets, ctx.now)
    if started_at is None and ctx.firsts:
        started_at = min(ctx.firsts.values())
    return IdentityFields(run=run, model=model, algorithm=algorithm, started_at=started_at,
                          targets=tuple(_warned(_aged(t.health, ctx.now), ctx) for t in ctx.targets),
                          stale_after_s=stale_after_s(ctx.settings.interval_s, ctx.settings.timeout_s))


def _warned(health: TargetHealth, ctx: Context) -> TargetHealth:
    """The cost numbers this target sends that are refused (``pricing.cost_warnings``), on its row."""
    warnings = cost_warnings(ctx.store, health.name)
    return replace(health, warning="; ".join(warnings)) if warnings else health


def _aged(health: TargetHealth, now: float) -> TargetHealth:
    """How old the target's numbers are: now - its last good scrape (never negative: clocks step); its URL
    and error with secret query values masked (``?token=***``): the screen, the table and JSON show these."""
    masked = replace(health, url=mask_secrets(health.url),
                     error=None if health.error is None else mask_secrets(health.error))
    if masked.last_success is None:
        return masked
    return replace(masked, age_s=max(0.0, now - masked.last_success))
