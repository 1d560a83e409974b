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
- a weight sync is observed in ``posttrain_weight_sync_seconds`` whether it
  succeeded or failed (the trainer spent that time either way: a sync that
  times out after five minutes must show in the latency), while bytes and the
  policy version only move on success.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal

from prometheus_client import CollectorRegistry

from ptmon.exporters import _build
from ptmon.exporters._identity import MAX_INT, BaseExporter, as_count, as_number
from ptmon.exporters.cost import Clock
from ptmon.exporters.schema import (
    POLICY_VERSION,
    ROLE_TRAINER,
    TRAINER_LAST_STEP_TIMESTAMP,
    TRAINER_SCALARS,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    TRAINER_TOKENS,
    WEIGHT_SYNC_BYTES,
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
            exporter._sync_observe(max(0.0, exporter._clock() - self._start))
            if exc_type is not None:
                exporter._sync_failures_inc(1)
            else:
                if self._nbytes is not None:
                    exporter._sync_bytes_inc(self._nbytes)
                if self._version is not None:
                    exporter._policy_set(self._version)
        except Exception as error:  # noqa: BLE001
            exporter._dropped("weight_sync", error)
        return False  # the training code's exception, if any, propagates untouched


class TrainerExporter(BaseExporter):
    """Instrument the trainer process."""

    role = ROLE_TRAINER
    calls = ("step", "record", "publish_policy", "weight_sync", "set_gpus")

    def __init__(self, *, run: str, model: str, algorithm: str, gpus: float, gpu_hour_price: float,
                 registry: CollectorRegistry | None = None, clock: Clock = time.monotonic,
                 wall_clock: Clock = time.time) -> None:
        super().__init__(run=run, model=model, algorithm=algorithm, gpus=gpus, gpu_hour_price=gpu_hour_price,
                         registry=registry, clock=clock)
        self._wall_clock = wall_clock
        reg = self.registry
        # Fast paths (see _build.fast_inc): the values are checked or clock differences, never bad.
        self._steps_inc = _build.fast_inc(_build.counter(TRAINER_STEPS, reg))
        self._step_observe = _build.fast_observe(_build.histogram(TRAINER_STEP_SECONDS, reg))
        self._tokens_inc = _build.counter(TRAINER_TOKENS, reg).inc
        self._last_step_set = _build.gauge(TRAINER_LAST_STEP_TIMESTAMP, reg, multiprocess_mode="max").set
        self._policy_set = _build.gauge(POLICY_VERSION, reg, multiprocess_mode="max").set
        self._sync_observe = _build.fast_observe(_build.histogram(WEIGHT_SYNC_SECONDS, reg))
        self._sync_bytes_inc = _build.fast_inc(_build.counter(WEIGHT_SYNC_BYTES, reg))
        self._sync_failures_inc = _build.fast_inc(_build.counter(WEIGHT_SYNC_FAILURES, reg))
        # Before the first step the timestamp holds the start time: a trainer stuck in its first step
        # (or still loading) then ages like a stalled one instead of looking 56 years stale.
        self._last_step_set(wall_clock())
        # The optional scalars appear on first report: a gauge at 0 would claim a loss nobody reported.
        self._scalar_set: dict[str, Callable[[float], None]] = {}
        self._scalar_lock = threading.Lock()

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
               learning_rate: float | None = None) -> None:
        """Tokens trained on and the step's scalars; every argument optional, bad ones dropped and counted."""
        try:
            bad = False
            if tokens is not None:
                checked = tokens if type(tokens) is int and 0 <= tokens < MAX_INT else as_count(tokens)
                if checked is None:
                    bad = True
                else:
                    self._tokens_inc(checked)
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
                                             grad_norm=grad_norm, learning_rate=learning_rate))
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
