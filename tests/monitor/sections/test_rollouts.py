"""Staleness at matching times (issue 13 item 6): each worker against the trainer as it was at the worker's sample.

The trainer publishes a new version every 0.2 s (the demo at 40x publishes one a second, a fast real loop
several); the trainer and the workers are scraped each second at different phases. Taking each target's
latest sample, a trainer scraped 0.9 s after a worker reads 4-5 versions of "lag" on a fleet that has none.
"""

from __future__ import annotations

import math

from ptmon.exporters import schema
from ptmon.monitor.alerts import evaluate
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.settings import Settings, Target, Thresholds
from ptmon.monitor.store import Store
from tests.monitor.test_build import S

T0 = 1000.0
PER_S = 5.0  # versions the trainer publishes a second


def published(t: float) -> float:
    return math.floor(PER_S * (t - T0))


def fleet(*, lag_of: dict[str, float], phases: dict[str, float], seconds: int = 30) -> Dashboard:
    """A trainer scraped at whole seconds, each worker at its phase after them, sampling with the trainer's
    version at its own sample time minus its lag; the Dashboard at the last scrape."""
    store = Store()
    names = ["trainer", *phases]
    settings = Settings(targets=tuple(Target(name=n, url=f"http://{n}/metrics",
                                             role="trainer" if n == "trainer" else "rollout") for n in names))
    now = T0
    for i in range(seconds):
        t = T0 + i
        store.ingest("trainer", t, [S(schema.POLICY_VERSION.name, published(t))])
        for name, phase in phases.items():
            tw = t + phase
            version = max(0.0, published(tw) - lag_of.get(name, 0))
            store.ingest(name, tw, [S(schema.ROLLOUT_POLICY_VERSION.name, version)])
            now = max(now, t, tw)
    return build_dashboard(store, (), settings, now=now, window_s=20.0)


def test_scrape_skew_never_reads_as_lag() -> None:
    # Workers scraped 0.9 s and 0.5 s before the trainer, sampling with exactly its version: no lag at all.
    # Against the trainer's latest sample they read published(29) - published(28.1) = 5 and 3 behind (critical).
    d = fleet(lag_of={}, phases={"rollout-0": -0.9, "rollout-1": -0.5})
    assert d.policy_version == published(T0 + 29)  # the trainer's latest, as before
    assert [(w.name, w.staleness) for w in d.workers] == [("rollout-0", 0.0), ("rollout-1", 0.0)]
    assert d.staleness_max == 0.0
    assert "staleness" not in {a.name for a in evaluate(d, Thresholds())}


def test_a_worker_scraped_after_the_trainer_is_never_ahead() -> None:
    # Scraped 0.9 s after the trainer (0.1 s before its next scrape): the trainer's sample just before it
    # is 0.9 s old and 4 versions behind the worker, who reads 0 behind (never negative).
    d = fleet(lag_of={}, phases={"rollout-0": 0.9})
    assert d.workers[0].staleness == 0.0


def test_real_lag_still_reads_and_the_alert_names_the_worst_worker() -> None:
    # rollout-1 samples 6 versions behind, rollout-2 3 behind, rollout-0 none, all scraped with the trainer.
    d = fleet(lag_of={"rollout-1": 6, "rollout-2": 3}, phases={"rollout-0": 0.0, "rollout-1": 0.0, "rollout-2": 0.0})
    assert {w.name: w.staleness for w in d.workers} == {"rollout-0": 0.0, "rollout-1": 6.0, "rollout-2": 3.0}
    alerts = [a for a in evaluate(d, Thresholds()) if a.name == "staleness"]
    assert [(a.level, a.subject) for a in alerts] == [("critical", "rollout-1")]
    assert alerts[0].message == ("rollout-1 samples 6 policy versions behind the trainer (> 4); "
                                 "1 of 3 workers over 4")


def test_the_count_is_of_workers_over_the_limit_that_fired() -> None:
    d = fleet(lag_of={"rollout-1": 3, "rollout-2": 3}, phases={"rollout-0": 0.0, "rollout-1": 0.0, "rollout-2": 0.0})
    alerts = [a for a in evaluate(d, Thresholds()) if a.name == "staleness"]
    assert [(a.level, a.subject) for a in alerts] == [("warn", "rollout-1")]  # ties: the first name
    assert alerts[0].message.endswith("; 2 of 3 workers over 2")


def test_no_trainer_sample_before_the_workers_is_unknown_not_lag() -> None:
    store = Store()
    store.ingest("rollout-0", T0, [S(schema.ROLLOUT_POLICY_VERSION.name, 3)])
    store.ingest("trainer", T0 + 0.5, [S(schema.POLICY_VERSION.name, 9)])
    settings = Settings(targets=(Target(name="trainer", url="http://t/metrics", role="trainer"),
                                 Target(name="rollout-0", url="http://r/metrics", role="rollout")))
    d = build_dashboard(store, (), settings, now=T0 + 0.5, window_s=20.0)
    assert d.workers[0].policy_version == 3 and d.workers[0].staleness is None
