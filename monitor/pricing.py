"""What a GPU-hour costs: the one price rule, for spend, for burn and for the evals' spend axis.

Price of GPU-seconds with a ``role`` label on a target: ptmon's ``[prices]``
for that role (the label, else the target's role, else "unknown"), else the
exporter's own ``posttrain_gpu_hour_price_dollars`` for that label, else
``schema.DEFAULT_GPU_HOUR_PRICE``. Stored GPU-seconds series and a Prometheus
server's GPUs-in-use answers are priced by the same function.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from ptmon.exporters import schema
from ptmon.monitor.exposed import GPU_SECONDS
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Series, Store
from ptmon.monitor.window import series_of, sum_known

__all__ = ["CostSeries", "gpu_hour_price", "gpu_price", "cost_series", "burn_per_hour"]

_UNKNOWN_ROLE = "unknown"


class CostSeries(NamedTuple):
    """One GPU-seconds series with what it is billed as."""

    target: str
    role: str  # the series' role label, else its target's role, else "unknown"
    series: Series
    price: float  # $/GPU-hour


def gpu_hour_price(store: Store, settings: Settings, target: str, role: str | None) -> float:
    """$/GPU-hour of GPU-seconds with ``role`` label on ``target``: config > exporter's gauge > default.

    ``role`` None or "" matches a price gauge without a role label.
    """
    price = settings.prices.get(role) if role else None
    if price is not None:
        return price
    for s in store.series(target, schema.GPU_HOUR_PRICE.name):
        if (s.labels.get(schema.LABEL_ROLE) or None) == (role or None) and (last := s.last()) is not None \
                and math.isfinite(last[1]):
            return last[1]
    return schema.DEFAULT_GPU_HOUR_PRICE


def gpu_price(store: Store, settings: Settings, target: str, label: str | None, target_role: str | None) -> float:
    """$/GPU-hour of ``target``'s GPU-seconds with role label ``label`` (None or "": none)."""
    configured = settings.prices.get(label or target_role or _UNKNOWN_ROLE)
    return configured if configured is not None else gpu_hour_price(store, settings, target, label)


def cost_series(store: Store, settings: Settings, roles: Mapping[str, str | None]) -> list[CostSeries]:
    """Every stored GPU-seconds series, with its role and price."""
    out: list[CostSeries] = []
    for target in store.targets():
        for s in series_of(store, target, GPU_SECONDS):
            label = s.labels.get(schema.LABEL_ROLE)
            out.append(CostSeries(target, label or roles.get(target) or _UNKNOWN_ROLE, s,
                                  gpu_price(store, settings, target, label, roles.get(target))))
    return out


def burn_per_hour(gpus_at_price: Iterable[tuple[float, float]]) -> float | None:
    """$/hour of (GPUs in use, $/GPU-hour) pairs: GPU-seconds per second x $/GPU-hour, summed."""
    return sum_known(gpus * price for gpus, price in gpus_at_price)
