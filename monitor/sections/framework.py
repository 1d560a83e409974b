"""The framework's own numbers, next to ptmon's: the staleness of the samples it consumed and the time the
loop spent waiting (bubbles), each labelled with the framework's definition.

A framework's staleness (``posttrain_sample_staleness{source}``) is not ptmon's version difference: prime-rl
counts the trainer step minus each sample's version, NeMo RL the age of a trajectory group in steps, ROLL a
mean of sampling-start lags. They are shown apart, by source, with the definition the bridge's table gives.
A bubble (``posttrain_idle_seconds_total{reason}``) is a share of wall time; where the GPUs that wait have a
known burn, it is also dollars per hour burnt waiting.
"""

from __future__ import annotations

from typing import TypedDict

from ptmon.exporters import schema
from ptmon.exporters.bridges.tables import TABLES
from ptmon.monitor import exposed
from ptmon.monitor.derive import span_rate
from ptmon.monitor.sections.context import Context
from ptmon.monitor.store import Series
from ptmon.monitor.window import sum_known

__all__ = ["FrameworkFields", "framework", "staleness_definition", "BUBBLE_DEFINITIONS"]

StalenessRow = tuple[str, float | None, float | None, str]  # (source, mean, max, definition)
BubbleRow = tuple[str, float, float | None, str]  # (reason, share of wall time, $/h burnt waiting, definition)

BUBBLE_DEFINITIONS: dict[str, str] = {
    schema.IDLE_WAIT_FOR_BATCH: "share of wall time the trainer waited for a batch (its GPUs idle)",
    schema.IDLE_WAIT_FOR_POLICY: "share of wall time inference waited for a new policy (the rollout GPUs idle)",
}
_TRAINER_DEFINITION = "last published policy version minus each consumed sample's version (record_staleness)"


class FrameworkFields(TypedDict):
    framework_staleness: tuple[StalenessRow, ...]
    bubbles: tuple[BubbleRow, ...]


def framework(ctx: Context) -> FrameworkFields:
    return FrameworkFields(framework_staleness=_staleness(ctx), bubbles=_bubbles(ctx))


def staleness_definition(source: str) -> str:
    """How ``source`` (a framework's name, or the trainer) defines the staleness it reports."""
    table = TABLES.get(source)
    if table is not None and table.staleness:
        return table.staleness
    return _TRAINER_DEFINITION if source == "trainer" else f"as {source} measures it"


def _staleness(ctx: Context) -> tuple[StalenessRow, ...]:
    stats: dict[str, dict[str, float]] = {}
    for t in ctx.live:
        for s in ctx.series(t.name, (schema.SAMPLE_STALENESS.name,)):
            value = ctx.w.last(s)
            source, stat = s.labels.get(schema.LABEL_SOURCE), s.labels.get(schema.LABEL_STAT)
            if value is not None and source and stat in schema.STALENESS_STATS:
                stats.setdefault(source, {})[stat] = value
    return tuple((source, by.get("mean"), by.get("max"), staleness_definition(source))
                 for source, by in sorted(stats.items()))


def _bubbles(ctx: Context) -> tuple[BubbleRow, ...]:
    by_reason: dict[str, list[tuple[str, Series]]] = {}
    for n in ctx.names:
        for s in ctx.series(n, exposed.IDLE_SECONDS):
            reason = s.labels.get(schema.LABEL_REASON, "")
            if reason in BUBBLE_DEFINITIONS and _ever_moved(s, ctx.w.end):
                by_reason.setdefault(reason, []).append((n, s))
    out: list[BubbleRow] = []
    for reason, series in sorted(by_reason.items()):
        share = sum_known(ctx.w.rate_sum(n, [s]) for n, s in series)
        if share is None:
            continue
        burn = _role_burn(ctx, schema.IDLE_ROLES[reason])
        # A role billed no GPUs (colocated: its GPUs are counted under the trainer) has no burn of its own to
        # split off: unknown, not $0.
        out.append((reason, share, share * burn if burn else None, BUBBLE_DEFINITIONS[reason]))
    return tuple(out)


def _role_burn(ctx: Context, role: str) -> float | None:
    """$/hour of the GPUs billed as ``role`` now; None while unknown (no such GPUs, or some GPU count unknown)."""
    if ctx.gpus_unknown:
        return None
    w = ctx.w
    return sum_known(r * c.price for c in ctx.cost if c.role == role
                     and (r := span_rate(w.rate_span(c.series, c.target), start=w.range_start(c.target),
                                         end=w.end)) is not None)


def _ever_moved(s: Series, end: float) -> bool:
    """The counter has read above 0 (it exists at 0 from the start: a reason never timed is no bubble)."""
    last = s.last()
    if last is not None and last[0] <= end and last[1] > 0:
        return True
    return any(v > 0 for _, v in s.points(None, end))
