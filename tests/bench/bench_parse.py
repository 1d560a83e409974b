"""Parser throughput: ptmon's ExpositionParser against prometheus_client's parser.

Run: ``/work/venv/bin/python -m tests.bench.bench_parse [--workers 64] [--seconds 1.0]``

The exposition is what a 64-worker rollout fleet looks like behind one
target: real prometheus_client collectors on a registry, rendered by
``generate_latest``. Between scrapes the collectors move on (rollouts finish,
histograms fill), so steady state means warm cache *and* new values, as in
reality. Both parsers run in the same process on the same bodies; the figure
that matters is the ratio.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_latest_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from ptmon.exporters.schema import (
    POLICY_VERSION,
    ROLLOUT_OUTCOMES,
    ROLLOUT_POLICY_VERSION,
    ROLLOUT_SECONDS,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    TRAINER_STEP_SECONDS,
    TRAINER_STEPS,
    WEIGHT_SYNC_SECONDS,
)
from ptmon.monitor.parse import ExpositionParser, parse

__all__ = ["build_scrapes", "main"]

ENVS = ("math", "code", "search", "chat")


def build_scrapes(*, workers: int = 64, scrapes: int = 8, seed: int = 0, openmetrics: bool = False) -> list[str]:
    """Successive bodies of one exposition, the collectors advancing between them.

    Each worker runs one environment (rollout counters per outcome, tokens, a
    12-bucket rollout-time histogram, its policy version); a trainer block
    adds steps, step time and weight-sync histograms.
    """
    rng = random.Random(seed)
    reg = CollectorRegistry()
    wl = ("worker",)
    rollouts = Counter(ROLLOUTS.name, ROLLOUTS.help, wl + ROLLOUTS.labels, registry=reg)
    tokens = Counter(ROLLOUT_TOKENS.name, ROLLOUT_TOKENS.help, wl + ROLLOUT_TOKENS.labels, registry=reg)
    seconds = Histogram(ROLLOUT_SECONDS.name, ROLLOUT_SECONDS.help, wl + ROLLOUT_SECONDS.labels,
                        buckets=ROLLOUT_SECONDS.buckets, registry=reg)
    version = Gauge(ROLLOUT_POLICY_VERSION.name, ROLLOUT_POLICY_VERSION.help, wl, registry=reg)
    steps = Counter(TRAINER_STEPS.name, TRAINER_STEPS.help, registry=reg)
    step_s = Histogram(TRAINER_STEP_SECONDS.name, TRAINER_STEP_SECONDS.help, buckets=TRAINER_STEP_SECONDS.buckets,
                       registry=reg)
    sync_s = Histogram(WEIGHT_SYNC_SECONDS.name, WEIGHT_SYNC_SECONDS.help, buckets=WEIGHT_SYNC_SECONDS.buckets,
                       registry=reg)
    policy = Gauge(POLICY_VERSION.name, POLICY_VERSION.help, registry=reg)
    names = [f"w{i:02d}" for i in range(workers)]
    for i, w in enumerate(names):  # every series exists from the first scrape
        env = ENVS[i % len(ENVS)]
        for outcome in ROLLOUT_OUTCOMES:
            rollouts.labels(w, env, outcome)
        tokens.labels(w, env)
        seconds.labels(w, env)
    bodies = []
    for n in range(scrapes):
        for i, w in enumerate(names):
            env = ENVS[i % len(ENVS)]
            for _ in range(rng.randint(1, 6)):
                rollouts.labels(w, env, rng.choice(ROLLOUT_OUTCOMES)).inc()
                tokens.labels(w, env).inc(rng.randint(200, 4000))
                seconds.labels(w, env).observe(rng.lognormvariate(2.0, 1.0))
            version.labels(w).set(n - rng.randint(0, 2))
        steps.inc()
        step_s.observe(rng.uniform(5, 40))
        sync_s.observe(rng.uniform(0.5, 3))
        policy.set(n)
        bodies.append((generate_latest_openmetrics if openmetrics else generate_latest)(reg).decode())
    return bodies


def _rate(fn: Callable[[str], int], bodies: Sequence[str], *, passes: int = 1) -> float:
    """Samples per second over ``passes`` whole passes through ``bodies``."""
    samples = 0
    start = time.perf_counter()
    for _ in range(passes):
        for body in bodies:
            samples += fn(body)
    return samples / (time.perf_counter() - start)


def _oracle_count(body: str) -> int:
    return sum(len(family.samples) for family in text_string_to_metric_families(body))


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=15,
                    help="interleaved measurement rounds; the best of each is kept (a shared machine is noisy)")
    args = ap.parse_args(argv)

    bodies = build_scrapes(workers=args.workers)
    n_samples = len(parse(bodies[0]))
    assert n_samples == _oracle_count(bodies[0]), "parsers disagree on the sample count"

    parser = ExpositionParser()
    parser.parse(bodies[-1])  # warm the series cache, as after a target's first scrape
    om_bodies = build_scrapes(workers=args.workers, openmetrics=True)
    om_parser = ExpositionParser()
    om_parser.parse(om_bodies[-1], openmetrics=True)
    ptmon_warm = ptmon_cold = oracle = om_warm = 0.0
    gc.collect()
    # Short windows, interleaved, best of each: on a shared machine the best window is the
    # one least disturbed by others, and all three get the same chances.
    for _ in range(args.rounds):
        ptmon_warm = max(ptmon_warm, _rate(lambda b: len(parser.parse(b)), bodies, passes=2))
        oracle = max(oracle, _rate(_oracle_count, bodies[:1]))
        ptmon_cold = max(ptmon_cold, _rate(lambda b: len(ExpositionParser().parse(b)), bodies[:2]))
        om_warm = max(om_warm, _rate(lambda b: len(om_parser.parse(b, openmetrics=True)), om_bodies))

    print(f"exposition: {args.workers} workers, {n_samples} samples, {len(bodies[0]) / 1024:.0f} KiB "
          f"(prometheus_client generate_latest), {len(bodies)} successive scrapes")
    print(f"prometheus_client text_string_to_metric_families: {oracle:12,.0f} samples/s")
    print(f"ptmon ExpositionParser, steady state (warm cache): {ptmon_warm:12,.0f} samples/s"
          f"   ratio {ptmon_warm / oracle:5.1f}x")
    print(f"ptmon parse(), cold (new parser every scrape):    {ptmon_cold:12,.0f} samples/s"
          f"   ratio {ptmon_cold / oracle:5.1f}x")
    print(f"ptmon ExpositionParser, OpenMetrics body, steady: {om_warm:12,.0f} samples/s"
          f"   ratio {om_warm / oracle:5.1f}x")
    print(f"scrape of {n_samples} samples: steady {n_samples / ptmon_warm * 1e3:.2f} ms, "
          f"cold {n_samples / ptmon_cold * 1e3:.2f} ms, prometheus_client {n_samples / oracle * 1e3:.2f} ms")
    return {"samples": n_samples, "oracle": oracle, "warm": ptmon_warm, "cold": ptmon_cold, "openmetrics": om_warm}


if __name__ == "__main__":
    main()
