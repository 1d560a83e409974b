"""What a process's GPUs cost: GPU count, price, and GPU-seconds exact at scrape time.

GPU-seconds are not accumulated by a ticking thread: a thread would cost the
training process a wake-up per tick and would always be up to one tick behind.
Instead the meter keeps the GPU-seconds banked at the last change of the GPU
count plus the time of that change, and the collector computes
``banked + gpus * (now - since)`` from the injected monotonic clock whenever
it is scraped. So the counter is exact at every scrape, stays exact across
``set_gpus`` changes, and costs nothing between scrapes.

In prometheus_client's multiprocess mode a custom collector in a child process
is never seen (only the mmap'd values of standard metrics are), so a rollout
pool exports its cost from the parent; see ``ptmon.exporters.serve.multiprocess_registry``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ptmon.exporters import _build
from ptmon.exporters.schema import GPU_HOUR_PRICE, GPU_SECONDS, GPUS, MAX_GPU_HOUR_PRICE, MAX_GPUS

__all__ = ["GpuMeter", "GpuCostCollector", "gpu_seconds", "check_gpus", "check_price"]

Clock = Callable[[], float]


def gpu_seconds(*, banked: float, gpus: float, since: float, now: float) -> float:
    """GPU-seconds at ``now``: what was banked plus the current GPUs over the elapsed time.

    A clock that steps back (a badly injected one) adds nothing rather than
    making a counter decrease.
    """
    return banked + gpus * max(0.0, now - since)


def check_gpus(gpus: object) -> float:
    """A GPU count is a number in [0, schema.MAX_GPUS] (fractions allowed: MIG slices, shared GPUs)."""
    if isinstance(gpus, bool) or not isinstance(gpus, (int, float)) or not 0 <= gpus <= MAX_GPUS:
        raise ValueError(f"gpus must be a number from 0 to {MAX_GPUS:,}, got {gpus!r}")
    return gpus


def check_price(price: object) -> float:
    """A price is dollars per GPU-hour in [0, schema.MAX_GPU_HOUR_PRICE]: beyond it, a unit error."""
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 <= price <= MAX_GPU_HOUR_PRICE:
        raise ValueError(f"gpu_hour_price must be dollars per GPU-hour from 0 to {MAX_GPU_HOUR_PRICE:,.0f}, "
                         f"got {price!r}")
    return float(price)


class GpuMeter:
    """GPU count and GPU-seconds of one role; thread-safe, no background thread."""

    __slots__ = ("_clock", "_lock", "_gpus", "_banked", "_since", "price", "known", "__weakref__")

    def __init__(self, *, gpus: float | None, gpu_hour_price: float, clock: Clock) -> None:
        """``gpus`` None: unknown (counted as 0, and not exposed) until ``set_gpus`` gives a count."""
        self._clock = clock
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")
        self.known = gpus is not None
        self._gpus = 0.0 if gpus is None else check_gpus(gpus)
        self.price = check_price(gpu_hour_price)
        self._banked = 0.0
        self._since = clock()

    @property
    def gpus(self) -> float:
        return self._gpus

    def set_gpus(self, gpus: float) -> None:
        """Bank the GPU-seconds so far at the old count, then switch to the new one."""
        with self._lock:
            now = self._clock()
            self._banked = gpu_seconds(banked=self._banked, gpus=self._gpus, since=self._since, now=now)
            self._since = max(now, self._since)
            self._gpus = gpus
            self.known = True

    def read(self) -> tuple[float, float]:
        """(GPUs now, GPU-seconds now), consistent with each other."""
        with self._lock:
            return self._gpus, gpu_seconds(banked=self._banked, gpus=self._gpus, since=self._since,
                                           now=self._clock())


class GpuCostCollector(Collector):
    """``posttrain_gpus``, ``posttrain_gpu_seconds_total`` and the price gauge, per role."""

    def __init__(self) -> None:
        self._meters: dict[str, GpuMeter] = {}
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")

    def add(self, role: str, meter: GpuMeter) -> None:
        with self._lock:
            if role in self._meters:
                raise ValueError(f"this registry already has an exporter with role={role!r}")
            self._meters[role] = meter

    def describe(self) -> Iterator[Metric]:
        yield _build.gauge_family(GPUS)
        yield _build.counter_family(GPU_SECONDS)
        yield _build.gauge_family(GPU_HOUR_PRICE)

    def collect(self) -> Iterator[Metric]:
        gpus, seconds, price = (_build.gauge_family(GPUS), _build.counter_family(GPU_SECONDS),
                                _build.gauge_family(GPU_HOUR_PRICE))
        with self._lock:
            meters = sorted(self._meters.items())
        for role, meter in meters:
            count, total = meter.read()
            if meter.known:
                gpus.add_metric([role], count)
                seconds.add_metric([role], total)
            else:  # unknown: NaN GPUs (the monitor says spend is unknown) and no GPU-seconds to bill as $0
                gpus.add_metric([role], math.nan)
            price.add_metric([role], meter.price)
        yield gpus
        yield seconds
        yield price
