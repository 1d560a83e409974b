"""Turn a contract ``MetricSpec`` into a prometheus_client collector.

The contract spells names as exposed (``x_total`` for counters,
``x_info`` for info); prometheus_client wants the base name and re-adds the
suffix itself. Doing that translation here, once, keeps every exporter
building its collectors from the spec and never from a loose string.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily

from ptmon.exporters.schema import MAX_LABEL_VALUE_BYTES, MetricSpec

__all__ = [
    "base_name",
    "counter",
    "gauge",
    "histogram",
    "counter_family",
    "gauge_family",
    "info_family",
    "fast_inc",
    "fast_observe",
    "histogram_parts",
    "exposed_bytes",
    "label_fits",
    "fork_safe",
]


def base_name(spec: MetricSpec) -> str:
    """The name prometheus_client wants: the exposed name without its type suffix."""
    if spec.kind == "counter" and spec.name.endswith("_total"):
        return spec.name[: -len("_total")]
    if spec.kind == "info" and spec.name.endswith("_info"):
        return spec.name[: -len("_info")]
    return spec.name


def _check(spec: MetricSpec, kind: str) -> None:
    if spec.kind != kind:
        raise TypeError(f"{spec.name} is a {spec.kind} in the contract, not a {kind}")


def exposed_bytes(value: str) -> int | None:
    """The bytes ``value`` takes on /metrics as a label value (UTF-8, ``\\``, ``"`` and newline escaped);
    None when it cannot be encoded at all (a lone surrogate)."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None
    return size + value.count("\\") + value.count('"') + value.count("\n")


def label_fits(value: str) -> bool:
    """Whether the monitor (and the contract) accept ``value`` as a label value: encodable, and at most
    ``schema.MAX_LABEL_VALUE_BYTES`` as exposed. One value over it would make ptmon refuse the whole page."""
    if len(value) * 8 <= MAX_LABEL_VALUE_BYTES:  # even all escapes of 4-byte characters fit: skip the count
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    size = exposed_bytes(value)
    return size is not None and size <= MAX_LABEL_VALUE_BYTES


def counter(spec: MetricSpec, registry: CollectorRegistry) -> Counter:
    _check(spec, "counter")
    return _fork_safe_metric(Counter(base_name(spec), spec.help, labelnames=spec.labels, unit=spec.unit,
                                     registry=registry))


def gauge(spec: MetricSpec, registry: CollectorRegistry, *, multiprocess_mode: str = "all") -> Gauge:
    _check(spec, "gauge")
    return _fork_safe_metric(Gauge(base_name(spec), spec.help, labelnames=spec.labels, unit=spec.unit,
                                   registry=registry, multiprocess_mode=multiprocess_mode))  # type: ignore[arg-type]


def histogram(spec: MetricSpec, registry: CollectorRegistry, *,
              buckets: Sequence[float] | None = None) -> Histogram:
    _check(spec, "histogram")
    return _fork_safe_metric(Histogram(base_name(spec), spec.help, labelnames=spec.labels, unit=spec.unit,
                                       registry=registry,
                                       buckets=tuple(buckets) if buckets is not None else spec.buckets))


# --- fork ---------------------------------------------------------------------------------------------
# fork() copies only the calling thread: a lock another thread held at that moment stays held in the
# child, forever, and the child's first recording call blocks on it (a rollout worker forking a code
# sandbox or a multiprocessing pool while its threads record). So every lock the exporters rely on is
# replaced by a fresh one in the child: the exporters' own (registered with ``fork_safe``), and
# prometheus_client's on every registry and metric they built (the registry's, a labelled metric's
# children table, each value's). Those guard plain Python objects, consistent between bytecodes; a
# value being changed by another thread at the fork keeps whichever of its old or new number the child
# saw. Multiprocess mode is different: its one value lock also guards the mmap'd files, whose buffered
# file objects have locks of their own (a thread growing a file at the fork would leave the child's copy
# locked, and the child's first value hangs closing it). So that lock is taken before the fork, so that
# no thread is inside, and released in the parent and replaced in the child after it.

_LOCK_TYPE = type(threading.Lock())
_LOCKED: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()
_METRICS: weakref.WeakSet[Counter | Gauge | Histogram] = weakref.WeakSet()
_Metric = TypeVar("_Metric", Counter, Gauge, Histogram)
_held_over_fork: list[Any] = []  # the multiprocess lock, while a fork is under way


def fork_safe(owner: object, *locks: str) -> None:
    """Give ``owner`` a fresh lock in each attribute named in ``locks`` in a forked child."""
    _LOCKED[owner] = locks


def _fork_safe_metric(metric: _Metric) -> _Metric:
    _METRICS.add(metric)
    return metric


def _fresh_locks(obj: object) -> None:
    """Replace every lock ``obj`` holds directly, in a value it holds, or in a list of values."""
    for name, held in list(getattr(obj, "__dict__", {}).items()):
        if isinstance(held, _LOCK_TYPE):
            setattr(obj, name, threading.Lock())
        for item in held if isinstance(held, list) else (held,):
            if isinstance(getattr(item, "_lock", None), _LOCK_TYPE):
                item._lock = threading.Lock()


def _multiprocess_lock_cell() -> Any:
    """The cell holding prometheus_client's multiprocess value lock (a closure variable of the value
    class), or None in the default mode, whose locks are per value."""
    inc = getattr(values.ValueClass, "inc", None)
    code, cells = getattr(inc, "__code__", None), getattr(inc, "__closure__", None)
    if code is None or cells is None or "lock" not in code.co_freevars:
        return None
    cell = cells[code.co_freevars.index("lock")]
    return cell if isinstance(cell.cell_contents, _LOCK_TYPE) else None


def _before_fork() -> None:
    cell = _multiprocess_lock_cell()
    if cell is not None:
        cell.cell_contents.acquire()  # held for microseconds by a value operation; none calls fork()
        _held_over_fork.append(cell.cell_contents)


def _after_fork_in_parent() -> None:
    while _held_over_fork:
        _held_over_fork.pop().release()


def _after_fork_in_child() -> None:
    _held_over_fork.clear()
    for owner, locks in list(_LOCKED.items()):
        for name in locks:
            setattr(owner, name, threading.Lock())
    for metric in list(_METRICS):
        _fresh_locks(metric)
        for child in list(getattr(metric, "_metrics", {}).values()):
            _fresh_locks(child)
    cell = _multiprocess_lock_cell()
    if cell is not None:
        cell.cell_contents = threading.Lock()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)


def counter_family(spec: MetricSpec) -> CounterMetricFamily:
    _check(spec, "counter")
    return CounterMetricFamily(base_name(spec), spec.help, labels=spec.labels, unit=spec.unit)


def gauge_family(spec: MetricSpec) -> GaugeMetricFamily:
    _check(spec, "gauge")
    return GaugeMetricFamily(base_name(spec), spec.help, labels=spec.labels, unit=spec.unit)


def info_family(spec: MetricSpec) -> InfoMetricFamily:
    _check(spec, "info")
    return InfoMetricFamily(base_name(spec), spec.help, labels=spec.labels)


def fast_inc(child: Counter) -> Callable[[float], None]:
    """``child.inc`` without the per-call checks a resolved, validated child does not need.

    Reaches for the child's value object (``_value``, stable in prometheus_client
    for years, the mmap'd value in multiprocess mode); falls back to the public
    ``inc`` if a future release renames it. tests/exporters/test_build.py
    checks the exposition is identical to the public API's.
    """
    value = getattr(child, "_value", None)
    inc = getattr(value, "inc", None)
    return inc if callable(inc) else child.inc


def histogram_parts(child: Histogram) -> tuple[Callable[[float], None], tuple[float, ...],
                                                tuple[Callable[[float], None], ...]]:
    """``(sum_inc, bounds, bucket_incs)``: observe ``x`` as ``sum_inc(x); bucket_incs[bisect_left(bounds, x)](1)``.

    One bisect and two value increments instead of prometheus_client's linear
    bucket scan plus checks; for a finite ``x`` (checked by the caller)
    ``bisect_left`` finds the first bound >= x, the bucket prometheus_client's
    own loop would pick. Same fallback rule as ``fast_inc``: if the internals
    are not what they were, the parts degrade to the public ``observe`` (called
    as ``sum_inc``) and a no-op bucket, so callers keep one code path.
    """
    bounds = getattr(child, "_upper_bounds", None)
    buckets = getattr(child, "_buckets", None)
    total = getattr(child, "_sum", None)
    if not (isinstance(bounds, list) and isinstance(buckets, list) and len(bounds) == len(buckets)
            and bounds and bounds[-1] == math.inf and callable(getattr(total, "inc", None))):
        return child.observe, (math.inf,), (_ignore,)
    return total.inc, tuple(bounds), tuple(bucket.inc for bucket in buckets)  # type: ignore[union-attr]


def _ignore(amount: float) -> None:
    pass


def fast_observe(child: Histogram) -> Callable[[float], None]:
    """``child.observe`` built on ``histogram_parts``, for callers off the hottest path."""
    total_inc, bounds, bucket_incs = histogram_parts(child)

    def observe(value: float) -> None:
        total_inc(value)
        bucket_incs[bisect_left(bounds, value)](1)

    return observe
