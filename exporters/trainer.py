"""Trainer metrics: steps, step time, tokens, scalars, policy version and weight sync.

The context managers are small classes rather than ``@contextmanager``
generators: a generator frame per step costs more than everything the step
records, and ``__exit__`` returning False is the plainest way to let the
training code's exception through untouched (same object, same traceback).

Choices where the contract is silent:

- a step whose body raises is not counted (``steps_total`` counts completed
  optimizer steps, and the last-step timestamp is what stall detection reads);
- before the first step, the last-step timestamp holds the exporter's start
  time, so a trainer stuck in its first step still ages like a stalled one;
- loss/kl/entropy/grad_norm/learning_rate appear on their first report;
- a successful weight sync is observed in ``posttrain_weight_sync_seconds``; a
  failed one counts in ``posttrain_weight_sync_failures_total`` and its time in
  ``posttrain_weight_sync_failure_seconds_total`` (the trainer spent it: a sync
  that times out after five minutes must show), never in the latency histogram
  (a broadcast failing at once would pull the quantiles down); bytes and the
  policy version only move on success.

Numbers measured elsewhere (a framework's per-step log, a callback) go in
through ``record_step``, ``record_weight_sync``, ``record_dropped`` and
``record_staleness``, with the same rules; running totals (``tokens_total=``,
``total=``) are set, not added (``ptmon.exporters._cumulative``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Literal

from prometheus_client import CollectorRegistry

from ptmon.exporters import _build
from ptmon.exporters._cumulative import Cumulative
from ptmon.exporters._identity import MAX_INT, BaseExporter, as_count, as_number, servable
from ptmon.exporters.cost import Clock
from ptmon.exporters.schema import (
    DROP_REASONS,
    IDLE_REASONS,
    IDLE_SECONDS,
    POLICY_VERSION,
    ROLE_TRAINER,
    SAMPLE_STALENESS,
    TRAINER_DROPPED,
    TRAINER_LAST_STEP_TIMESTAMP,
    TRAINER_SCALARS,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    TRAINER_TOKENS,
    WEIGHT_SYNC_BYTES,
    WEIGHT_SYNC_FAILURE_SECONDS,
    WEIGHT_SYNC_FAILURES,
    WEIGHT_SYNC_SECONDS,
)

__all__ = ["TrainerExporter"]


class _Step:
    __slots__ = ("_exporter", "_start")

    def __init__(self, exporter: TrainerExporter) -> None:
        self._exporter = exporter
        self._start = 0.0

    def __enter__(self) -> _Step:
        self._start = self._exporter._clock()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if exc_type is None:
            exporter = self._exporter
            try:
                exporter._steps_inc(1)
                exporter._step_observe(max(0.0, exporter._clock() - self._start))
                exporter._last_step_set(exporter._wall_clock())
            except Exception as error:  # noqa: BLE001 - never raise into the training loop
                exporter._dropped("step", error)
        return False


class _WeightSync:
    __slots__ = ("_exporter", "_start", "_version", "_nbytes")

    def __init__(self, exporter: TrainerExporter, version: float | None, nbytes: float | None) -> None:
        self._exporter = exporter
        self._version = version
        self._nbytes = nbytes
        self._start = 0.0

    def __enter__(self) -> _WeightSync:
        self._start = self._exporter._clock()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        exporter = self._exporter
        try:
            seconds = max(0.0, exporter._clock() - self._start)
            if exc_type is not None:
                exporter._sync_failures_inc(1)
                exporter._sync_failure_seconds_inc(seconds)
            else:
                exporter._sync_observe(seconds)
                if self._nbytes is not None:
                    exporter._sync_bytes_inc(self._nbytes)
                if self._version is not None:
                    exporter._policy_set(self._version)
        except Exception as error:  # noqa: BLE001
            exporter._dropped("weight_sync", error)
        return False  # the training code's exception, if any, propagates untouched


def _sync_buckets(buckets: Iterable[float] | None) -> tuple[float, ...]:
    """The sync histogram's bounds: the contract's, or the caller's when they are usable (else ValueError,
    at construction, never in the loop)."""
    if buckets is None:
        return WEIGHT_SYNC_SECONDS.buckets
    bounds = tuple(float(b) for b in buckets)
    if bounds and bounds[-1] == float("inf"):
        bounds = bounds[:-1]
    if not bounds or any(not 0.0 < b < float("inf") for b in bounds) or any(
            a >= b for a, b in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"weight_sync_buckets must be increasing, finite and positive seconds, got {buckets!r}")
    return bounds


class TrainerExporter(BaseExporter):
    """Instrument the trainer process."""

    role = ROLE_TRAINER
    calls = ("step", "record", "publish_policy", "weight_sync", "set_gpus", "record_step", "record_weight_sync",
             "record_dropped", "record_staleness", "record_idle")

    def __init__(self, *, run: str | None = None, model: str | None = None, algorithm: str | None = None,
                 gpus: float | None = None, gpu_hour_price: float | None = None,
                 registry: CollectorRegistry | None = None, clock: Clock = time.monotonic,
                 wall_clock: Clock = time.time, weight_sync_buckets: Iterable[float] | None = None) -> None:
        """``weight_sync_buckets``: the latency histogram's upper bounds in seconds (increasing, finite,
        positive; +Inf is added), for syncs outside ``schema.WEIGHT_SYNC_SECONDS_BUCKETS``' 1 ms-17 min."""
        buckets = _sync_buckets(weight_sync_buckets)
        super().__init__(run=run, model=model, algorithm=algorithm, gpus=gpus, gpu_hour_price=gpu_hour_price,
                         registry=registry, clock=clock)
        self._wall_clock = wall_clock
        reg = self.registry
        # Fast paths (see _build.fast_inc): the values are checked or clock differences, never bad.
        self._steps_inc = _build.fast_inc(_build.counter(TRAINER_STEPS, reg))
        self._step_observe = _build.fast_observe(_build.histogram(TRAINER_STEP_SECONDS, reg))
        self._tokens_inc = _build.counter(TRAINER_TOKENS, reg).inc
        self._last_step_set = _build.gauge(TRAINER_LAST_STEP_TIMESTAMP, reg, multiprocess_mode="max").set
        self._policy_gauge_set = _build.gauge(POLICY_VERSION, reg, multiprocess_mode="max").set
        self._policy_now: float | None = None  # staleness of consumed samples is measured against it
        self._policy_set: Callable[[float], None] = self._set_policy
        self._sync_observe = _build.fast_observe(_build.histogram(WEIGHT_SYNC_SECONDS, reg, buckets=buckets))
        self._sync_bytes_inc = _build.fast_inc(_build.counter(WEIGHT_SYNC_BYTES, reg))
        self._sync_failures_inc = _build.fast_inc(_build.counter(WEIGHT_SYNC_FAILURES, reg))
        self._sync_failure_seconds_inc = _build.fast_inc(_build.counter(WEIGHT_SYNC_FAILURE_SECONDS, reg))
        # Before the first step the timestamp holds the start time: a trainer stuck in its first step
        # (or still loading) then ages like a stalled one instead of looking 56 years stale.
        self._last_step_set(wall_clock())
        # The optional scalars appear on first report: a gauge at 0 would claim a loss nobody reported.
        self._scalar_set: dict[str, Callable[[float], None]] = {}
        self._scalar_lock = threading.Lock()
        _build.fork_safe(self, "_scalar_lock")
        self._tokens_total = Cumulative()
        self._dropped_counter = _build.counter(TRAINER_DROPPED, reg)
        self._dropped_children: dict[str, tuple[Callable[[float], None], Cumulative]] = {}
        self._staleness = _build.gauge(SAMPLE_STALENESS, reg)
        idle = _build.counter(IDLE_SECONDS, reg)
        self._idle_inc = {reason: _build.fast_inc(idle.labels(reason=reason)) for reason in IDLE_REASONS}

    def _set_policy(self, version: float) -> None:
        self._policy_now = version
        self._policy_gauge_set(version)

    def _scalar(self, key: str) -> Callable[[float], None]:
        setter = self._scalar_set.get(key)
        if setter is None:
            with self._scalar_lock:
                setter = self._scalar_set.get(key)
                if setter is None:
                    setter = self._scalar_set[key] = _build.gauge(TRAINER_SCALARS[key], self.registry).set
        return setter

    def step(self) -> _Step:
        """``with trainer.step(): ...`` counts a completed step, its wall time and when it ended."""
        return _Step(self)

    def record(self, *, tokens: int | None = None, loss: float | None = None, kl: float | None = None,
               entropy: float | None = None, grad_norm: float | None = None,
               learning_rate: float | None = None, tokens_total: float | None = None) -> None:
        """Tokens trained on and the step's scalars; every argument optional, bad ones dropped and counted.

        ``tokens`` adds; ``tokens_total`` is a running total reported by someone else, and sets.
        """
        try:
            bad = False
            if tokens is not None:
                checked = tokens if type(tokens) is int and 0 <= tokens < MAX_INT else as_count(tokens)
                if checked is None:
                    bad = True
                else:
                    self._tokens_inc(checked)
            if tokens_total is not None and not self._add_tokens_total(tokens_total):
                bad = True
            for key, value in (("loss", loss), ("kl", kl), ("entropy", entropy), ("grad_norm", grad_norm),
                               ("learning_rate", learning_rate)):
                if value is not None:
                    checked = as_number(value)
                    if checked is None:
                        bad = True
                    else:
                        self._scalar(key)(checked)
            if bad:
                self._dropped("record", dict(tokens=tokens, loss=loss, kl=kl, entropy=entropy,
                                             grad_norm=grad_norm, learning_rate=learning_rate,
                                             tokens_total=tokens_total))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record", exc)

    def publish_policy(self, version: int) -> None:
        """The policy version the trainer just made available to the rollout side."""
        try:
            checked = as_count(version)
            if checked is None:
                self._dropped("publish_policy", version)
            else:
                self._policy_set(checked)
        except Exception as exc:  # noqa: BLE001
            self._dropped("publish_policy", exc)

    def weight_sync(self, *, version: int | None = None, nbytes: float | None = None) -> _WeightSync:
        """``with trainer.weight_sync(version=8, nbytes=16e9): ...`` times one sync end to end.

        On success the bytes are counted and the policy version set; on an
        exception the failure is counted and the exception re-raised untouched.
        A bad ``version`` or ``nbytes`` is dropped (and counted) up front; the
        sync is still timed.
        """
        checked_version = checked_bytes = None
        try:
            if version is not None:
                checked_version = as_count(version)
            if nbytes is not None:
                checked_bytes = as_count(nbytes)
            if (version is not None and checked_version is None) or (nbytes is not None and checked_bytes is None):
                self._dropped("weight_sync", (version, nbytes))
        except Exception as exc:  # noqa: BLE001
            self._dropped("weight_sync", exc)
        return _WeightSync(self, checked_version, checked_bytes)

    # --- numbers measured elsewhere -------------------------------------------------------------------

    def _add_tokens_total(self, total: object) -> bool:
        checked = as_count(total)
        if checked is None:
            return False
        self._tokens_inc(self._tokens_total.advance(checked))
        return True

    def record_step(self, *, seconds: float | None = None, tokens: float | None = None,
                    tokens_total: float | None = None) -> None:
        """One completed step measured elsewhere: counted, stamped now, and timed when ``seconds`` is given.

        A bad ``seconds`` or token count drops just that value (counted); the step still counts.
        """
        try:
            self._steps_inc(1)
            self._last_step_set(self._wall_clock())
            bad = False
            if seconds is not None:
                checked = as_count(seconds)
                if checked is None:
                    bad = True
                else:
                    self._step_observe(checked)
            if tokens is not None:
                counted = as_count(tokens)
                if counted is None:
                    bad = True
                else:
                    self._tokens_inc(counted)
            if tokens_total is not None and not self._add_tokens_total(tokens_total):
                bad = True
            if bad:
                self._dropped("record_step", dict(seconds=seconds, tokens=tokens, tokens_total=tokens_total))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_step", exc)

    def record_weight_sync(self, *, seconds: float, nbytes: float | None = None, version: float | None = None,
                           ok: bool = True) -> None:
        """One weight sync timed elsewhere, with ``weight_sync()``'s rules: on success the time is observed,
        the bytes counted and the policy version set; on failure the failure and its time are counted."""
        try:
            bad = False
            checked = as_count(seconds)
            if checked is None:
                bad = True
            if not ok:
                self._sync_failures_inc(1)
                if checked is not None:
                    self._sync_failure_seconds_inc(checked)
            else:
                if checked is not None:
                    self._sync_observe(checked)
                if nbytes is not None:
                    sent = as_count(nbytes)
                    if sent is None:
                        bad = True
                    else:
                        self._sync_bytes_inc(sent)
                if version is not None:
                    published = as_count(version)
                    if published is None:
                        bad = True
                    else:
                        self._policy_set(published)
            if bad:
                self._dropped("record_weight_sync", dict(seconds=seconds, nbytes=nbytes, version=version))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_weight_sync", exc)

    def record_dropped(self, count: float | None = None, reason: str = "stale", *,
                       total: float | None = None) -> None:
        """Samples the trainer discarded (``count`` of them, 1 by default), or a running ``total`` of them.

        ``reason`` is one of ``schema.DROP_REASONS``; anything else drops the call (counted).
        """
        try:
            children = self._dropped_children.get(reason) if type(reason) is str else None
            if children is None:
                if reason not in DROP_REASONS:
                    self._dropped("record_dropped", reason)
                    return
                with self._scalar_lock:
                    children = self._dropped_children.setdefault(
                        reason, (_build.fast_inc(self._dropped_counter.labels(reason=reason)), Cumulative()))
            inc, running = children
            if total is not None:
                checked = as_count(total) if count is None else None
                if checked is not None:
                    inc(running.advance(checked))
            else:
                checked = 1.0 if count is None else as_count(count)
                if checked is not None:
                    inc(checked)
            if checked is None:
                self._dropped("record_dropped", dict(count=count, total=total))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_dropped", exc)

    def record_idle(self, seconds: float, *, reason: str) -> None:
        """Seconds the loop waited instead of working, as a framework timed them: ``reason`` is one of
        ``schema.IDLE_REASONS`` (the trainer waiting for a batch, inference waiting for a policy)."""
        try:
            inc = self._idle_inc.get(reason) if type(reason) is str else None
            checked = as_count(seconds)
            if inc is None or checked is None:
                self._dropped("record_idle", dict(seconds=seconds, reason=reason))
                return
            inc(checked)
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_idle", exc)

    def record_staleness(self, *, mean: float | None = None, max: float | None = None,  # noqa: A002
                         versions: Iterable[float] | None = None, source: str = "trainer") -> None:
        """Staleness of the samples the last step consumed, in policy versions, as ``source`` measures it.

        Give ``mean``/``max`` as measured (a framework's own number; ``source`` names it, since definitions
        differ), or the consumed samples' policy ``versions``: each one's staleness is then the last
        published policy version minus it (never below 0).
        """
        try:
            if type(source) is not str or not 0 < len(source) <= 40 or not servable(source):
                self._dropped("record_staleness", source)
                return
            if versions is not None:
                mean, max = self._staleness_of(versions)
                if mean is None:
                    self._dropped("record_staleness", "versions")
                    return
            bad = False
            for stat, value in (("mean", mean), ("max", max)):
                if value is not None:
                    checked = as_count(value)
                    if checked is None:
                        bad = True
                    else:
                        self._staleness.labels(stat=stat, source=source).set(checked)
            if bad:
                self._dropped("record_staleness", dict(mean=mean, max=max))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_staleness", exc)

    def _staleness_of(self, versions: Iterable[float]) -> tuple[float | None, float | None]:
        """(mean, max) staleness of ``versions`` against the last published policy, or (None, None)."""
        current = self._policy_now
        total, worst, n = 0.0, 0.0, 0
        if current is None:
            return None, None
        for version in versions:
            checked = as_count(version)
            if checked is None:
                return None, None
            lag = current - checked if checked < current else 0.0
            total += lag
            worst = lag if lag > worst else worst
            n += 1
        return (total / n, worst) if n else (None, None)
