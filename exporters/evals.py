"""Eval-job metrics: latest score, policy version and sample count per benchmark.

Eval jobs are often short-lived (a batch job per checkpoint), finishing
before any Prometheus would scrape them, so besides being served they can
push to a Pushgateway. A failed push is logged and counted rather than
raised: losing one eval point must not fail the job that computed it (the
score is still in the registry, and the next push sends it again).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, push_to_gateway
from prometheus_client.exposition import basic_auth_handler, default_handler

from ptmon.exporters import _build
from ptmon.exporters._identity import BaseExporter, as_count, as_number, servable
from ptmon.exporters.cost import Clock
from ptmon.exporters.schema import EVAL_POLICY_VERSION, EVAL_SAMPLES, EVAL_SCORE, ROLE_EVAL

__all__ = ["EvalExporter"]

log = logging.getLogger("ptmon.exporters")

_Set = Callable[[float], None]


class EvalExporter(BaseExporter):
    """Instrument an eval job: serve its registry, or ``push()`` it when the job ends."""

    role = ROLE_EVAL
    calls = ("record_eval", "push", "set_gpus")

    def __init__(self, *, run: str | None = None, model: str | None = None, algorithm: str | None = None,
                 gpus: float | None = None, gpu_hour_price: float | None = None,
                 registry: CollectorRegistry | None = None, clock: Clock = time.monotonic) -> None:
        super().__init__(run=run, model=model, algorithm=algorithm, gpus=gpus, gpu_hour_price=gpu_hour_price,
                         registry=registry, clock=clock)
        self._score = _build.gauge(EVAL_SCORE, self.registry)
        self._version = _build.gauge(EVAL_POLICY_VERSION, self.registry)
        self._samples = _build.gauge(EVAL_SAMPLES, self.registry)
        self._children: dict[str, tuple[_Set, _Set, _Set]] = {}  # benchmark: score, version, samples
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")

    def record_eval(self, *, benchmark: str, score: float, policy_version: int | None = None,
                    samples: int | None = None) -> None:
        """The latest score on ``benchmark``. A bad benchmark or score drops the whole call (counted)."""
        try:
            checked_score = as_number(score)
            if (type(benchmark) is not str or not benchmark or checked_score is None
                    or (benchmark not in self._children and not servable(benchmark))):
                self._dropped("record_eval", (benchmark, score))
                return
            checked_version = None if policy_version is None else as_count(policy_version)
            checked_samples = None if samples is None else as_count(samples)
            with self._lock:
                children = self._children.get(benchmark)
                if children is None:
                    children = self._children[benchmark] = (
                        self._score.labels(benchmark=benchmark).set,
                        self._version.labels(benchmark=benchmark).set,
                        self._samples.labels(benchmark=benchmark).set)
                set_score, set_version, set_samples = children
                # Under the lock so the three gauges of one benchmark always describe the same eval.
                set_score(checked_score)
                if checked_version is not None:
                    set_version(checked_version)
                if checked_samples is not None:
                    set_samples(checked_samples)
            if (policy_version is not None and checked_version is None) or (
                    samples is not None and checked_samples is None):
                self._dropped("record_eval", (policy_version, samples))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_eval", exc)

    def push(self, *, gateway: str, job: str = "eval", grouping_key: Mapping[str, str] | None = None,
             timeout: float = 10.0, username: str | None = None, password: str | None = None) -> bool:
        """PUT this registry to a Pushgateway (``host:port`` or a URL); True on success.

        Basic auth via prometheus_client's ``basic_auth_handler`` when a
        username and password are given. A failure is logged, counted under
        ``call="push"`` and returned as False, never raised.
        """
        handler = default_handler
        if username is not None or password is not None:
            handler = functools.partial(basic_auth_handler, username=username, password=password)
        try:
            push_to_gateway(gateway, job=job, registry=self.registry, grouping_key=dict(grouping_key or {}),
                            timeout=timeout, handler=handler)
            return True
        except Exception as exc:  # noqa: BLE001
            log.warning("ptmon exporter (eval): push to Pushgateway %s failed: %s", gateway, exc)
            self._dropped("push", exc)
            return False
