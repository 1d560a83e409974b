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
                          targets=tuple(_shown(t.health, ctx) for t in ctx.targets),
                          stale_after_s=stale_after_s(ctx.settings.interval_s, ctx.settings.timeout_s))


def _shown(health: TargetHealth, ctx: Context) -> TargetHealth:
    """The target's row as shown, in one copy (a build makes one per target, each second): how old its
    numbers are (now - its last good scrape; never negative: clocks step); its URL and error with secret
    query values masked (``?token=***``), as the screen, the table and JSON show them; and the cost
    numbers it sends that are refused (``pricing.cost_warnings``)."""
    changes: dict[str, object] = {"url": mask_secrets(health.url)}
    if health.error is not None:
        changes["error"] = mask_secrets(health.error)
    if health.last_success is not None:
        changes["age_s"] = max(0.0, ctx.now - health.last_success)
    warnings = cost_warnings(ctx.store, health.name)
    if warnings:
        changes["warning"] = "; ".join(warnings)
    return replace(health, **changes)  # type: ignore[arg-type]
