"""A demo rollout worker: a pool of in-flight episodes over a few environments.

The worker is an event simulation in simulated time: ``concurrency``
episodes are in flight, each finishes at its own time and is replaced by a
new one sampled with the policy the worker holds right now. When the
trainer publishes a new version the worker adopts it only after a pickup
delay (drain, load weights), which is the staleness the monitor shows.
Episodes finishing more than ``max_staleness`` versions behind the trainer
are counted as ``dropped_stale``, as async RL frameworks do.
"""

from __future__ import annotations

import heapq
import itertools
import os
import sys

from ptmon.demo import model
from ptmon.demo.proc import CRASH_EXIT_CODE, ChildOptions, Runtime, read_state, serve_and_announce

__all__ = ["run_rollout", "worker_name"]

_TICK_SIM_MAX_REAL_S = 0.05  # at most this much real time between passes over the pool


def worker_name(index: int) -> str:
    return f"rollout-{index}"


def run_rollout(opts: ChildOptions, rt: Runtime) -> int:
    from ptmon.exporters import RolloutExporter

    spec, scenario, index = opts.spec, opts.scenario, opts.index
    exporter = RolloutExporter(run=spec.run, model=spec.model, algorithm=spec.algorithm, gpus=spec.rollout_gpus,
                               gpu_hour_price=spec.gpu_hour_price, clock=rt.clock)
    server = serve_and_announce(exporter.registry, opts, worker_name(index))
    rng = model.seeded_rng(opts.seed, "rollout", index, opts.life)
    crash_at = scenario.crash_every_s if scenario.crash_index == index and scenario.crash_every_s > 0 else None

    state = read_state(opts.run_dir)
    trainer_version = version = state.version if state else 0
    exporter.set_policy_version(version)
    pickup_at: float | None = None
    seq = itertools.count()

    def start(t: float) -> tuple[float, int, int, model.Rollout]:
        env = model.choose_env(rng, spec)
        episode = model.sample_rollout(rng, env, spec, version=version,
                                       speed=model.worker_speed(scenario, index, t))
        return (t + episode.seconds, next(seq), version, episode)

    # The pool is already busy when the process starts: stagger the first finishes.
    pool: list[tuple[float, int, int, model.Rollout]] = []
    for _ in range(spec.concurrency):
        finish, n, v, episode = start(0.0)
        pool.append((finish * rng.random(), n, v, episode))
    heapq.heapify(pool)

    try:
        while not rt.stopping:
            t = rt.clock.elapsed()
            if crash_at is not None and t >= crash_at:
                print(f"demo: {worker_name(index)} simulating a crash", file=sys.stderr, flush=True)
                os._exit(CRASH_EXIT_CODE)
            state = read_state(opts.run_dir)
            if state is not None:
                trainer_version = max(trainer_version, state.version)
            if trainer_version > version and pickup_at is None:
                pickup_at = t + model.pickup_delay(rng, spec, model.worker_speed(scenario, index, t))
            if pickup_at is not None and t >= pickup_at:
                version, pickup_at = trainer_version, None
                exporter.set_policy_version(version)
            while pool and pool[0][0] <= t:
                finish, _, sampled_with, episode = heapq.heappop(pool)
                outcome, reward = episode.outcome, episode.reward
                if outcome == "ok" and trainer_version - sampled_with > spec.max_staleness:
                    outcome, reward = "dropped_stale", None
                exporter.record_rollout(env=episode.env, tokens=episode.tokens, reward=reward,
                                        seconds=episode.seconds, outcome=outcome)
                heapq.heappush(pool, start(finish))
            wait = (pool[0][0] - t) if pool else 1.0
            rt.sleep(min(max(wait, 0.0), _TICK_SIM_MAX_REAL_S * rt.clock.speed))
    finally:
        server.close()
    return 0
