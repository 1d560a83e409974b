"""What a GPU-hour costs: the one price rule, for spend, for burn and for the evals' spend axis.

Price of GPU-seconds with a ``role`` label on a target: ptmon's ``[prices]``
for that role (the label, else the target's role, else "unknown"), else the
exporter's own ``posttrain_gpu_hour_price_dollars`` for that label, else
``schema.DEFAULT_GPU_HOUR_PRICE``. Stored GPU-seconds series and a Prometheus
server's GPUs-in-use answers are priced by the same function.

Numbers that cannot be right are not used: a price gauge below zero or above
``schema.MAX_GPU_HOUR_PRICE`` is passed over (the default price applies, as if
the exporter had sent none), and a GPU-seconds counter below zero or beyond
what ``schema.MAX_GPUS`` GPUs could run up in a year is left out of spend and
burn; ``cost_warnings`` says which target sent what, for its row in the
targets table (negative GPU-seconds times a negative price once read as a
positive spend of $5.6e9).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from ptmon.exporters import schema
from ptmon.monitor.exposed import GPU_SECONDS
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Series, Store
from ptmon.monitor.window import series_of, sum_known

__all__ = ["CostSeries", "gpu_hour_price", "gpu_price", "cost_series", "burn_per_hour", "cost_warnings",
           "gpus_ok", "MAX_GPU_SECONDS"]

_UNKNOWN_ROLE = "unknown"
# A GPU-seconds counter beyond what MAX_GPUS GPUs run up in a year is a unit error or a uint64 wrap.
MAX_GPU_SECONDS = schema.MAX_GPUS * 365 * 86400.0


def _price_ok(price: float) -> bool:
    return 0.0 <= price <= schema.MAX_GPU_HOUR_PRICE


def _gpu_seconds_ok(value: float) -> bool:
    return 0.0 <= value <= MAX_GPU_SECONDS


def gpus_ok(gpus: float) -> bool:
    """A number of GPUs in use that can be right: in [0, schema.MAX_GPUS]."""
    return 0.0 <= gpus <= schema.MAX_GPUS


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
                and math.isfinite(last[1]) and _price_ok(last[1]):
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
            if not _held_ok(s, _gpu_seconds_ok):
                continue
            label = s.labels.get(schema.LABEL_ROLE)
            out.append(CostSeries(target, label or roles.get(target) or _UNKNOWN_ROLE, s,
                                  gpu_price(store, settings, target, label, roles.get(target))))
    return out


def burn_per_hour(gpus_at_price: Iterable[tuple[float, float]]) -> float | None:
    """$/hour of (GPUs in use, $/GPU-hour) pairs: GPU-seconds per second x $/GPU-hour, summed."""
    return sum_known(gpus * price for gpus, price in gpus_at_price)


def _held_ok(series: Series, ok: Callable[[float], bool]) -> bool:
    """Every finite value the series holds passes ``ok`` (a span's ends and its newest point)."""
    span = series.span()
    return span is None or (ok(span.first_v) and ok(span.last_v))


def cost_warnings(store: Store, target: str) -> list[str]:
    """What ``target`` sends about cost that ptmon refuses to use, in words for its row; [] when nothing."""
    out: list[str] = []
    for s in store.series(target, schema.GPU_HOUR_PRICE.name):
        last = s.last()
        if last is not None and math.isfinite(last[1]) and not _price_ok(last[1]):
            out.append(f"GPU-hour price ${last[1]:.6g} ignored (expected $0 to ${schema.MAX_GPU_HOUR_PRICE:,.0f}); "
                       "the default price is used")
    bad = [s for s in series_of(store, target, GPU_SECONDS) if not _held_ok(s, _gpu_seconds_ok)]
    if bad:
        span = bad[0].span()
        value = f" ({span.last_v:.6g})" if span is not None else ""
        out.append(f"GPU-seconds counter{value} below zero or beyond {schema.MAX_GPUS:,} GPUs for a year: "
                   "left out of spend and burn")
    return out
