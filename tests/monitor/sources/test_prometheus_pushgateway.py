"""The Prometheus source over a Pushgateway's groups (issue 14, items 2 and 4), on hand-written answers.

Scraped with ``honor_labels``, a gateway's groups arrive under the pushing
job with no instance, each series labelled with its group's grouping key; the
gateway itself is the target exposing ``pushgateway_build_info``, with an
``up`` of its own. The real gateway behind a real Prometheus is in
tests/test_pushgateway.py.
"""

from __future__ import annotations

from typing import Any

from ptmon.exporters import schema
from ptmon.monitor.store import Store
from tests.monitor.sources.test_prometheus import Answers, matrix, source

T0 = 1_700_000_000.0
GW = {"job": "pushgateway", "instance": "gw:9091"}
EVAL = {"job": "eval"}  # a pushed group's job; no instance label (the gateway's empty one is dropped)
TRAINER = {"job": "t", "instance": "b:1"}


def group(run: str, *, key: dict[str, str], score: float, gpu_seconds: float, pushed: float,
          t: float) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    """One pushed group as Prometheus returns it at scrape ``t``: run info, score, GPU-seconds, push time."""
    labels = {**EVAL, **key}
    return [({"__name__": schema.RUN_INFO.name, **labels, "run": key.get("run", run), "model": "m",
              "algorithm": "grpo", "role": "eval"}, [(t, 1)]),
            ({"__name__": schema.EVAL_SCORE.name, **labels, "benchmark": "gsm8k"}, [(t, score)]),
            ({"__name__": schema.GPU_SECONDS.name, **labels, "role": "eval"}, [(t, gpu_seconds)]),
            ({"__name__": schema.PUSHGATEWAY_PUSH_TIME, **labels}, [(t, pushed)])]


def answer(t: float, *, gateway_up: float, groups: list[Any]) -> bytes:
    return matrix(
        ({"__name__": schema.PUSHGATEWAY_BUILD_INFO, **GW, "version": "1.5.1"}, [(t, 1)]),
        ({"__name__": "up", **GW}, [(t, gateway_up)]),
        ({"__name__": schema.RUN_INFO.name, **TRAINER, "run": "a", "model": "m", "algorithm": "grpo",
          "role": "trainer"}, [(t, 1)]),
        ({"__name__": schema.GPU_SECONDS.name, **TRAINER, "role": "trainer"}, [(t, 100.0)]),
        ({"__name__": "up", **TRAINER}, [(t, 1)]),
        *groups)


def two_runs(t: float) -> list[Any]:
    return [*group("a", key={"run": "a"}, score=0.5, gpu_seconds=10.0, pushed=T0 - 60, t=t),
            *group("b", key={"run": "b"}, score=0.9, gpu_seconds=99.0, pushed=T0 - 30, t=t),
            # a group of run a pushed without run in its key: its run info says a
            *group("a", key={"checkpoint": "3"}, score=0.55, gpu_seconds=1.0, pushed=T0 - 90, t=t),
            # and one of run b the same way
            *group("b", key={"checkpoint": "7"}, score=0.95, gpu_seconds=7.0, pushed=T0 - 20, t=t)]


async def test_pushed_groups_are_down_when_the_gateway_scraping_them_is() -> None:
    # Before issue 14: a target seen only through pushed series was set up once and never went down.
    store = Store()
    answers = Answers(answer(T0, gateway_up=1, groups=two_runs(T0)),
                      answer(T0 + 5, gateway_up=0, groups=[]))
    src = source(answers, store)
    await src.scrape_once()
    health = {h.name: h for h in src.health()}
    assert set(health) == {"eval", "b:1"}  # the gateway's own target is not one of ptmon's
    assert health["eval"].up is True and health["eval"].last_scrape == T0
    await src.scrape_once()
    health = {h.name: h for h in src.health()}
    assert health["eval"].up is False and health["b:1"].up is True
    assert health["eval"].error == "its Pushgateway is down according to Prometheus (pushgateway/gw:9091)"
    assert health["eval"].last_scrape == T0 + 5
    await src.aclose()


async def test_the_push_times_reach_the_store_for_the_eval_log() -> None:
    store = Store()
    answers = Answers(answer(T0, gateway_up=1, groups=two_runs(T0)))
    src = source(answers, store)
    await src.scrape_once()
    # The raw query asks for them, and for the gateways' own build info (which tells a gateway target).
    assert f"|{schema.PUSHGATEWAY_PUSH_TIME}|" in answers.queries[0]
    assert f"{schema.PUSHGATEWAY_BUILD_INFO}|" in answers.queries[0]
    pushes = {tuple(sorted(s.labels.items())): s.last() for s in store.series("eval", schema.PUSHGATEWAY_PUSH_TIME)}
    assert pushes[(("run", "a"),)] == (T0, T0 - 60) and pushes[(("checkpoint", "7"),)] == (T0, T0 - 20)
    await src.aclose()


async def test_a_run_filter_keeps_that_runs_groups_on_a_shared_gateway() -> None:
    # Before issue 14 the run filter went by (job, instance): every group on the gateway is one, so run a
    # got run b's evals and GPU-seconds too.
    store = Store()
    src = source(Answers(answer(T0, gateway_up=1, groups=two_runs(T0))), store, run="a")
    await src.scrape_once()
    scores = sorted(s.last()[1] for s in store.series("eval", schema.EVAL_SCORE.name))  # type: ignore[index]
    assert scores == [0.5, 0.55]
    gpu = sorted(s.last()[1] for s in store.series("eval", schema.GPU_SECONDS.name))  # type: ignore[index]
    assert gpu == [1.0, 10.0]
    assert {h.name: h.up for h in src.health()} == {"eval": True, "b:1": True}  # the gateway's up still counts
    await src.aclose()
