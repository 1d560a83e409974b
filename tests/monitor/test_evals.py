"""The eval log over a Pushgateway's groups (issue 14, item 1): one eval per series, timed by its push.

A gateway scraped directly is one target holding every group pushed to it,
each group's series labelled with its grouping key; the push times come as
``push_time_seconds`` with the same labels. The stores here are what such a
scrape stores (a trainer next to it gives the spend), built by hand so every
number can be checked: the real gateway is in tests/test_pushgateway.py.
"""

from __future__ import annotations

from ptmon.exporters import schema
from ptmon.monitor.alerts import evaluate
from ptmon.monitor.build import build_dashboard, observe_evals
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.evals import latest_push
from ptmon.monitor.parse import Sample
from ptmon.monitor.settings import Settings, Thresholds
from ptmon.monitor.store import Store

T0, DT, PUSH_EVERY = 1000.0, 5.0, 20.0
SCORES = (0.40, 0.43, 0.45, 0.47, 0.48, 0.50)  # one checkpoint each, pushed every 20 s from T0 + 10
GATEWAY = {"job": "eval", "instance": ""}  # what a pushed series carries when its key has no instance


def S(name: str, value: float, **labels: str) -> Sample:
    return Sample(name, labels, float(value))


def trainer(t: float) -> list[Sample]:
    return [S(schema.RUN_INFO.name, 1, run="r1", model="m", algorithm="grpo", role="trainer"),
            S(schema.GPU_SECONDS.name, 8 * (t - T0 + 100), role="trainer"),
            S(schema.GPU_HOUR_PRICE.name, 3.0, role="trainer")]


def gateway(t: float, *, key: dict[str, str], scores: tuple[float, ...] = SCORES, run: str = "r1",
            first_push: float = T0 + 10.0) -> list[Sample]:
    """The gateway's exposition at ``t``: one group per eval pushed by then, each a fresh EvalExporter's
    registry (run info, one score, its policy version) with the grouping key ``key`` plus a checkpoint."""
    out: list[Sample] = []
    for i, score in enumerate(scores):
        pushed = first_push + PUSH_EVERY * i
        if pushed > t:
            break
        group = {**GATEWAY, **key, "checkpoint": f"step-{i}"}
        out += [S(schema.RUN_INFO.name, 1, **{**group, "run": group.get("run", run)}, model="m",
                  algorithm="grpo", role="eval"),
                S(schema.EVAL_SCORE.name, score, benchmark="gsm8k", **group),
                S(schema.EVAL_POLICY_VERSION.name, 10 * (i + 1), benchmark="gsm8k", **group),
                S(schema.PUSHGATEWAY_PUSH_TIME, pushed, **group)]
    return out


def fill(store: Store, *, start: float, end: float, **gateways: dict[str, str]) -> Store:
    t = start
    while t <= end:
        store.ingest("trainer", t, trainer(t))
        store.ingest("gateway", t, [s for key in gateways.values() for s in gateway(t, key=key)])
        t += DT
    return store


def test_six_groups_are_six_evals_at_their_push_times_and_spend() -> None:
    # Before issue 14: one read position per (target, benchmark), so the six groups re-read each other's
    # points as new evals every scrape (25 points from 13 evals in the run), all at one spend.
    store = fill(Store(), start=T0, end=T0 + 200, run=dict(run="r1"))
    log = observe_evals(store, Settings())
    curve = log.evals["gsm8k"]
    assert [p.score for p in curve] == list(SCORES)
    assert [p.timestamp for p in curve] == [T0 + 10.0 + PUSH_EVERY * i for i in range(6)]
    assert all(p.pushed for p in curve)
    # Spend at each push: the trainer's 8 GPUs at $3 with 100 s banked; the scrape before a push holds it
    # (pushes land between scrapes, and a group is seen at the next one).
    for p in curve:
        scraped_before = T0 + DT * ((p.timestamp - T0) // DT)
        assert p.spend_dollars == 8 * (scraped_before - T0 + 100) * 3.0 / 3600
    # Read again, and again later: nothing is counted twice.
    again = observe_evals(store, Settings(), previous=log)
    assert again.evals["gsm8k"] == curve


def test_on_a_rising_score_the_curve_gives_positive_ipd_and_no_regression() -> None:
    store = fill(Store(), start=T0, end=T0 + 200, run=dict(run="r1"))
    health = tuple(TargetHealth(name=n, url=n, role=None, up=True) for n in ("trainer", "gateway"))
    d = build_dashboard(store, health, Settings(), now=T0 + 200, window_s=300.0)
    assert len(d.eval_curve) == 6
    assert d.ipd_points_per_kilodollar is not None and d.ipd_points_per_kilodollar > 0
    assert d.marginal_ipd_points_per_kilodollar is not None and d.marginal_ipd_points_per_kilodollar > 0
    assert [a.name for a in evaluate(d, Thresholds())] == []


def test_a_group_pushed_before_the_monitor_started_is_an_eval_of_then() -> None:
    # The monitor starts at T0 + 100 with five groups already on the gateway: they are five evals, in push
    # order, not five evals at the first scrape's time.
    store = fill(Store(), start=T0 + 100, end=T0 + 200, run=dict(run="r1"))
    curve = observe_evals(store, Settings()).evals["gsm8k"]
    assert [p.timestamp for p in curve] == [T0 + 10.0 + PUSH_EVERY * i for i in range(6)]


def test_the_last_push_of_an_eval_group_and_its_age_stay_after_the_gateway_goes() -> None:
    store = fill(Store(), start=T0, end=T0 + 200, run=dict(run="r1"))
    assert latest_push(store) == T0 + 10.0 + PUSH_EVERY * 5
    store.ingest("gateway", T0 + 500, [])  # the gateway answers nothing any more (down, or emptied)
    assert latest_push(store) == T0 + 110.0
    assert latest_push(fill(Store(), start=T0, end=T0 + 50)) is None  # no gateway: no push
