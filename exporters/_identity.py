"""What every exporter shares: run identity, cost, and the count of dropped values.

Several exporters may share one registry (a colocated trainer that also
generates rollouts, a trainer that runs its own evals). ``posttrain_run_info``,
the cost metrics and ``posttrain_exporter_errors_total`` are then one metric
each with one series per role or call, so they live once per registry here
rather than once per exporter (prometheus_client would reject the duplicate).

The value checks are deliberately tiny: a recording call's fast path is two
``type() is`` tests and a comparison, and only unusual input (numpy scalars,
bools, strings, NaN) takes the slow path.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
import weakref
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ptmon.exporters import _build, _defaults
from ptmon.exporters.cost import Clock, GpuCostCollector, GpuMeter
from ptmon.exporters.schema import EXPORTER_ERRORS, MAX_GPUS, MAX_LABEL_VALUE_BYTES, MAX_SERIES_BYTES, RUN_INFO

__all__ = ["RunInfoCollector", "ProcessMetrics", "process_metrics", "BaseExporter", "as_number",
           "as_count", "servable", "MAX_INT"]

log = logging.getLogger("ptmon.exporters")

# Integers beyond this are refused: past ~2**1024 they overflow float() inside prometheus_client, and a
# count that large is a bug upstream, not a measurement.
MAX_INT = 2**63


def as_number(value: object) -> float | None:
    """A finite real number, or None. Accepts numpy/torch scalars via ``float()``; refuses bool and str."""
    kind = type(value)
    if kind is float:
        return value if -math.inf < value < math.inf else None  # type: ignore[return-value,operator]
    if kind is int:
        return value if -MAX_INT < value < MAX_INT else None  # type: ignore[return-value,operator]
    if kind is bool or isinstance(value, (str, bytes)):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    return number if -math.inf < number < math.inf else None


def as_count(value: object) -> float | None:
    """A finite real number >= 0, or None."""
    number = as_number(value)
    return number if number is not None and number >= 0 else None


def servable(text: str) -> bool:
    """Whether ``text`` can be a label value: it must encode as UTF-8 and fit the contract's size.

    A lone surrogate (a file name decoded with ``surrogateescape``) cannot,
    and prometheus_client only finds out when it encodes the whole exposition:
    every later scrape of the registry would fail, losing every metric. A
    value over ``schema.MAX_LABEL_VALUE_BYTES`` is served, but ptmon refuses
    the page that holds it (every metric of the process off the screen). So
    each new label value is checked once, when its series is created.
    """
    return _build.label_fits(text)


class RunInfoCollector(Collector):
    """``posttrain_run_info``: one series per role in this registry."""

    def __init__(self) -> None:
        self._roles: dict[str, tuple[str, str, str]] = {}
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")

    def add(self, *, run: str, model: str, algorithm: str, role: str) -> None:
        values = (("run", run), ("model", model), ("algorithm", algorithm), ("role", role))
        for name, value in values:
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
            size = _build.exposed_bytes(value)
            if size is None:
                raise ValueError(f"{name} must be valid Unicode (it cannot be encoded as UTF-8), got {value!r}")
            if size > MAX_LABEL_VALUE_BYTES:
                raise ValueError(f"{name} of {size:,} bytes exceeds the label value limit of "
                                 f"{MAX_LABEL_VALUE_BYTES:,} (ptmon would refuse every metric of this process)")
        series = len(RUN_INFO.name) + 2 + sum(len(n) + 3 + (_build.exposed_bytes(v) or 0) + 1 for n, v in values)
        if series > MAX_SERIES_BYTES:
            raise ValueError(f"run, model, algorithm and role take {series:,} bytes on {RUN_INFO.name}, over the "
                             f"series limit of {MAX_SERIES_BYTES:,}")
        with self._lock:
            if role in self._roles:
                raise ValueError(f"this registry already has an exporter with role={role!r}")
            self._roles[role] = (run, model, algorithm)

    def describe(self) -> Iterator[Metric]:
        yield _build.info_family(RUN_INFO)

    def collect(self) -> Iterator[Metric]:
        family = _build.info_family(RUN_INFO)
        with self._lock:
            roles = sorted(self._roles.items())
        by_label = dict.fromkeys(RUN_INFO.labels, "")
        for role, (run, model, algorithm) in roles:
            by_label.update(run=run, model=model, algorithm=algorithm, role=role)
            family.add_metric([by_label[name] for name in RUN_INFO.labels], {})
        yield family


class ProcessMetrics:
    """The per-registry shared part: run info, cost per role, and (lazily) the error counter.

    The error counter is lazy because a multiprocess pool's parent registry
    must not hold one of its own: the children's counts reach it through the
    mmap files, and a second copy would expose the series twice.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.info = RunInfoCollector()
        self.cost = GpuCostCollector()
        registry.register(self.info)
        registry.register(self.cost)
        self._errors: Counter | None = None
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")
        _build.fork_safe(registry, "_lock")  # prometheus_client's: register, collect and scrape take it

    def add_role(self, *, run: str, model: str, algorithm: str, role: str, gpus: float | None,
                 gpu_hour_price: float, clock: Clock) -> GpuMeter:
        meter = GpuMeter(gpus=gpus, gpu_hour_price=gpu_hour_price, clock=clock)
        self.info.add(run=run, model=model, algorithm=algorithm, role=role)
        self.cost.add(role, meter)
        return meter

    def errors(self) -> Counter:
        with self._lock:
            if self._errors is None:
                self._errors = _build.counter(EXPORTER_ERRORS, self.registry)
            return self._errors


_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, ProcessMetrics] = weakref.WeakKeyDictionary()
_BY_REGISTRY_LOCK = threading.Lock()
_build.fork_safe(sys.modules[__name__], "_BY_REGISTRY_LOCK")


def process_metrics(registry: CollectorRegistry) -> ProcessMetrics:
    """The one ProcessMetrics of ``registry``, created on first use."""
    with _BY_REGISTRY_LOCK:
        shared = _BY_REGISTRY.get(registry)
        if shared is None:
            shared = _BY_REGISTRY[registry] = ProcessMetrics(registry)
        return shared


class BaseExporter:
    """Run identity, cost and error counting for one role; subclasses add their metrics.

    Identity and cost arguments may be left out (``ptmon.exporters._defaults``: the
    environment, else "unknown", 0 GPUs and the default price). Constructor
    arguments are configuration: bad ones raise at once (a typo in
    a price should stop a launch, not be silently counted). Recording calls are
    the opposite: they never raise for a metrics problem.
    """

    role: str = ""
    calls: tuple[str, ...] = ("set_gpus",)

    def __init__(self, *, run: str | None = None, model: str | None = None, algorithm: str | None = None,
                 gpus: float | None = None, gpu_hour_price: float | None = None,
                 registry: CollectorRegistry | None = None, clock: Clock = time.monotonic) -> None:
        self.registry = CollectorRegistry() if registry is None else registry
        self._clock = clock
        shared = process_metrics(self.registry)
        # Left-out identity and cost come from the environment (see _defaults), so a callback can build one.
        self._meter = shared.add_role(
            run=_defaults.resolve_run(run), model=_defaults.resolve_label(model),
            algorithm=_defaults.resolve_label(algorithm), role=self.role,
            gpus=_defaults.resolve_gpus(gpus, role=self.role),
            gpu_hour_price=_defaults.resolve_price(gpu_hour_price), clock=clock)
        errors = shared.errors()
        # Pre-resolved children: the series exist at 0 from the start, and counting an error is one inc().
        self._errors = {call: errors.labels(call=call) for call in self.calls}
        self._logged: set[str] = set()

    @property
    def gpus(self) -> float:
        return self._meter.gpus

    def set_gpus(self, n: float) -> None:
        """Change the GPU count; GPU-seconds so far are banked at the old count."""
        try:
            gpus = as_count(n)
            if gpus is None or gpus > MAX_GPUS:
                self._dropped("set_gpus", n)
                return
            self._meter.set_gpus(gpus)
        except Exception as exc:  # noqa: BLE001 - a metrics problem never reaches the caller
            self._dropped("set_gpus", exc)

    def _dropped(self, call: str, why: object) -> None:
        """Count a dropped value; log the first one per call so the reason is findable, never spam."""
        try:
            self._errors[call].inc()
            if call not in self._logged:
                self._logged.add(call)
                text = repr(why)
                log.warning("ptmon exporter (%s): %s dropped a bad value or hit an internal error: %s "
                            "(counted in %s; further ones are counted, not logged)",
                            self.role, call, text[:200], EXPORTER_ERRORS.name)
        except Exception:  # noqa: BLE001
            pass

