"""Rollout-worker metrics: rollouts, tokens, rollout time and reward per environment.

``record_rollout`` is on the hot path of every worker thread, so it does as
little as it can: the labelled children of every metric are resolved once per
(env, outcome) and cached in a plain dict (a dict read is atomic under the
GIL, and a racing first resolution just resolves the same children twice),
the checks are ``type() is`` tests, and the policy-version gauge is only
written when the version changes. prometheus_client's own value locks make
the increments exact from any number of threads.

The reward's sum travels in two monotonic counters split by sign
(``posttrain_rollout_reward_positive_total``/``_negative_total``): with the
default buckets reaching below zero prometheus_client exposes no ``_sum``
(OpenMetrics: a sum that can fall is not a counter), and a bucket-midpoint
estimate reads 50 % of exact 0/1 rewards as 0.35. Both children are created
with the env's other children, so both series exist (at 0) from the first
rollout and ``increase()`` sees every later reward; each reward adds to
exactly one of them (0 goes to the positive one).

Multiprocess pools (prometheus_client's multiprocess mode) work unchanged:
the counters and histograms are aggregated across children by
``MultiProcessCollector``; the policy-version gauge uses ``livemin`` so the
pool reports its stalest live worker. Run info and GPU cost are exported by
the parent (``ptmon.exporters.serve.multiprocess_registry``).
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry

from ptmon.exporters import _build
from ptmon.exporters._identity import MAX_INT, BaseExporter, as_count, as_number, servable
from ptmon.exporters.cost import Clock
from ptmon.exporters.schema import (
    ROLE_ROLLOUT,
    ROLLOUT_OUTCOMES,
    ROLLOUT_POLICY_VERSION,
    ROLLOUT_REWARD,
    ROLLOUT_REWARD_NEGATIVE,
    ROLLOUT_REWARD_POSITIVE,
    ROLLOUT_SECONDS,
    ROLLOUT_TOKENS,
    ROLLOUTS,
)

__all__ = ["RolloutExporter"]

_OUTCOMES = frozenset(ROLLOUT_OUTCOMES)
_INF = math.inf

_Inc = Callable[[float], None]
# What one (env, outcome) resolves to (see _resolve): two counters, two histograms in the three
# parts of _build.histogram_parts (sum, bounds, buckets), two counters.
_Children = tuple[_Inc, _Inc, _Inc, tuple[float, ...], tuple[_Inc, ...], _Inc, tuple[float, ...], tuple[_Inc, ...],
                  _Inc, _Inc]


class RolloutExporter(BaseExporter):
    """Instrument one rollout worker (or one process of a pool)."""

    role = ROLE_ROLLOUT
    calls = ("record_rollout", "set_policy_version", "set_gpus", "record_rollouts")

    def __init__(self, *, run: str | None = None, model: str | None = None, algorithm: str | None = None,
                 gpus: float | None = None, gpu_hour_price: float | None = None,
                 reward_buckets: Sequence[float] | None = None, registry: CollectorRegistry | None = None,
                 clock: Clock = time.monotonic) -> None:
        super().__init__(run=run, model=model, algorithm=algorithm, gpus=gpus, gpu_hour_price=gpu_hour_price,
                         registry=registry, clock=clock)
        if reward_buckets is not None:
            buckets = tuple(float(b) for b in reward_buckets)
            if not buckets or any(b != b for b in buckets) or list(buckets) != sorted(set(buckets)):
                raise ValueError(f"reward_buckets must be distinct increasing numbers, got {reward_buckets!r}")
            reward_buckets = buckets
        self._rollouts = _build.counter(ROLLOUTS, self.registry)
        self._tokens = _build.counter(ROLLOUT_TOKENS, self.registry)
        self._seconds = _build.histogram(ROLLOUT_SECONDS, self.registry)
        self._reward = _build.histogram(ROLLOUT_REWARD, self.registry, buckets=reward_buckets)
        self._reward_positive = _build.counter(ROLLOUT_REWARD_POSITIVE, self.registry)
        self._reward_negative = _build.counter(ROLLOUT_REWARD_NEGATIVE, self.registry)
        self._version = _build.gauge(ROLLOUT_POLICY_VERSION, self.registry, multiprocess_mode="livemin")
        self._version_set = self._version.set
        self._last_version: object = None
        self._children: dict[tuple[str, str], _Children] = {}
        self._resolve_lock = threading.Lock()
        _build.fork_safe(self, "_resolve_lock")

    def _resolve(self, env: object, outcome: object) -> _Children | None:
        """Children for (env, outcome), or None when either label is bad (nothing can be attributed)."""
        if type(env) is not str or not env or outcome not in _OUTCOMES or not servable(env):
            return None
        with self._resolve_lock:
            children = self._children.get((env, outcome))
            if children is None:
                children = (_build.fast_inc(self._rollouts.labels(env=env, outcome=outcome)),
                            _build.fast_inc(self._tokens.labels(env=env)),
                            *_build.histogram_parts(self._seconds.labels(env=env)),
                            *_build.histogram_parts(self._reward.labels(env=env)),
                            _build.fast_inc(self._reward_positive.labels(env=env)),
                            _build.fast_inc(self._reward_negative.labels(env=env)))
                self._children[(env, outcome)] = children
            return children

    def record_rollout(self, *, env: str, tokens: int, reward: float | None = None, seconds: float | None = None,
                       policy_version: int | None = None, outcome: str = "ok") -> None:
        """Record one finished rollout. Bad values are dropped one by one and counted; never raises.

        A bad ``env`` or ``outcome`` drops the whole rollout (it cannot be
        attributed); a bad ``tokens``/``reward``/``seconds``/``policy_version``
        drops just that value.
        """
        try:
            children = self._children.get((env, outcome))
            if children is None:
                children = self._resolve(env, outcome)
                if children is None:
                    self._dropped("record_rollout", (env, outcome))
                    return
            (inc_rollouts, inc_tokens, seconds_sum, seconds_bounds, seconds_buckets,
             reward_sum, reward_bounds, reward_buckets, reward_positive, reward_negative) = children
            inc_rollouts(1)
            bad = False
            if type(tokens) is int and 0 <= tokens < MAX_INT:
                inc_tokens(tokens)
            else:
                checked = as_count(tokens)
                if checked is None:
                    bad = True
                else:
                    inc_tokens(checked)
            # Histograms observed inline (see _build.histogram_parts): a sum and one bucket each.
            if seconds is not None:
                checked = seconds if type(seconds) is float and 0.0 <= seconds < _INF else as_count(seconds)
                if checked is None:
                    bad = True
                else:
                    seconds_sum(checked)
                    seconds_buckets[bisect_left(seconds_bounds, checked)](1)
            if reward is not None:
                checked = reward if type(reward) is float and -_INF < reward < _INF else as_number(reward)
                if checked is None:
                    bad = True
                else:
                    reward_sum(checked)
                    reward_buckets[bisect_left(reward_bounds, checked)](1)
                    if checked >= 0.0:
                        reward_positive(checked)
                    else:
                        reward_negative(-checked)
            if policy_version is not None and policy_version != self._last_version:
                if not self._set_version(policy_version):
                    bad = True
            if bad:
                self._dropped("record_rollout", dict(tokens=tokens, reward=reward, seconds=seconds,
                                                     policy_version=policy_version))
        except Exception as exc:  # noqa: BLE001 - a metrics problem never reaches the rollout loop
            self._dropped("record_rollout", exc)

    def _set_version(self, version: object) -> bool:
        checked = as_count(version)
        if checked is None:
            return False
        self._version_set(checked)
        self._last_version = version
        return True

    def set_policy_version(self, version: int) -> None:
        """The policy version this worker now samples with (e.g. right after loading new weights)."""
        try:
            if not self._set_version(version):
                self._dropped("set_policy_version", version)
        except Exception as exc:  # noqa: BLE001
            self._dropped("set_policy_version", exc)

    def record_rollouts(self, *, env: str, count: float, tokens: float | None = None,
                        reward_mean: float | None = None, policy_version: int | None = None,
                        outcome: str = "ok") -> None:
        """``count`` rollouts reported together (a framework's per-step numbers): their tokens and mean reward.

        The reward histogram gets ``count`` observations at the mean, since the
        distribution is not known: its count and sum, and so the mean reward the
        monitor shows, are exact; its buckets are not. A bad ``env``, ``outcome``
        or ``count`` drops the call; a bad ``tokens``/``reward_mean``/``policy_version``
        drops that value (each counted). Rollout time is not known here.
        """
        try:
            n = as_count(count)
            children = self._children.get((env, outcome)) or self._resolve(env, outcome)
            if children is None or n is None or n != int(n):
                self._dropped("record_rollouts", (env, outcome, count))
                return
            if n == 0:
                return
            (inc_rollouts, inc_tokens, _seconds_sum, _seconds_bounds, _seconds_buckets,
             reward_sum, reward_bounds, reward_buckets, reward_positive, reward_negative) = children
            inc_rollouts(n)
            bad = False
            if tokens is not None:
                checked = as_count(tokens)
                if checked is None:
                    bad = True
                else:
                    inc_tokens(checked)
            if reward_mean is not None:
                mean = as_number(reward_mean)
                if mean is None:
                    bad = True
                else:
                    reward_sum(mean * n)
                    reward_buckets[bisect_left(reward_bounds, mean)](n)
                    if mean >= 0.0:
                        reward_positive(mean * n)
                    else:
                        reward_negative(-mean * n)
            if policy_version is not None and policy_version != self._last_version:
                if not self._set_version(policy_version):
                    bad = True
            if bad:
                self._dropped("record_rollouts", dict(tokens=tokens, reward_mean=reward_mean,
                                                      policy_version=policy_version))
        except Exception as exc:  # noqa: BLE001
            self._dropped("record_rollouts", exc)
