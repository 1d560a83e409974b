"""Cost: dollars spent (per role), the burn rate now, and dollars per million rollout tokens.

Burn is GPUs in use times each one's price: GPUs in use are the server's
answer where it gave one (``rate`` of GPU-seconds per target and role), else
the stored series' rates; either way priced by ``ptmon.monitor.pricing``, so
``[prices]`` overrides apply to both. A GPU count outside [0, ``MAX_GPUS``]
is left out (``pricing.gpus_ok``): a counter that jumped by 1e20 is no fleet.
"""

from __future__ import annotations

from typing import TypedDict

from ptmon.monitor.derive import span_rate
from ptmon.monitor.evaluated import prefer
from ptmon.monitor.pricing import burn_per_hour, gpu_price, gpus_ok
from ptmon.monitor.sections.context import Context

__all__ = ["CostFields", "cost"]


class CostFields(TypedDict):
    spend_dollars: float | None
    spend_by_role: tuple[tuple[str, float], ...]
    gpus_unknown: tuple[str, ...]
    burn_dollars_per_hour: float | None
    dollars_per_million_rollout_tokens: float | None


def cost(ctx: Context) -> CostFields:
    burn = None if ctx.gpus_unknown else burn_per_hour(prefer(_served_gpus(ctx), _stored_gpus(ctx)) or ())
    tokens = ctx.fleet_rollout_tokens_per_s
    if tokens is None:
        tokens = ctx.fleet_engine_tokens_per_s
    return CostFields(
        spend_dollars=ctx.spend,
        spend_by_role=tuple(sorted(ctx.spend_by_role.items())),
        gpus_unknown=ctx.gpus_unknown,
        burn_dollars_per_hour=burn,
        # The whole loop's cost per token generated: right for colocated setups too.
        dollars_per_million_rollout_tokens=burn / (tokens * 3600.0) * 1e6 if burn is not None and tokens else None,
    )


def _stored_gpus(ctx: Context) -> list[tuple[float, float]]:
    """(GPUs in use, $/GPU-hour) per stored GPU-seconds series with a rate in the window."""
    w = ctx.w
    return [(r, c.price) for c in ctx.cost
            if (r := span_rate(w.rate_span(c.series, c.target), start=w.range_start(c.target), end=w.end)) is not None
            and gpus_ok(r)]


def _served_gpus(ctx: Context) -> list[tuple[float, float]] | None:
    """(GPUs in use, $/GPU-hour) per target and role label as the server evaluated them; None without."""
    if ctx.evaluated is None or not ctx.evaluated.gpus:
        return None
    roles = ctx.roles
    return [(gpus, gpu_price(ctx.store, ctx.settings, target, label, roles.get(target)))
            for target, label, gpus in ctx.evaluated.gpus if gpus_ok(gpus)]
