"""build_dashboard cost: one Dashboard over a fleet, against one read of every point in the window.

Run: ``/work/venv/bin/python -m tests.bench.bench_build [--workers 56] [--history 900] [--window 300]``

The TUI builds a Dashboard every second. The floor for any number that
depends on the window is reading each point of the window once; the figure
that matters is how many such reads one build costs (the ratio), measured
side by side in the same process on the same store. A ratio that grows with
the window or the worker count would mean non-linear work.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from exporters import schema
from monitor.build import EvalLog, build_dashboard, observe_evals
from monitor.derive import in_window
from monitor.parse import Sample
from monitor.settings import Settings
from monitor.store import Store

__all__ = ["fill_fleet", "main"]

ENVS = ("math", "code", "search", "chat")


def _trainer(t: float) -> list[Sample]:
    steps = t / 4
    out = [Sample(schema.TRAINER_STEPS.name, {}, steps), Sample(schema.POLICY_VERSION.name, {}, t // 60),
           Sample(schema.TRAINER_LAST_STEP_TIMESTAMP.name, {}, t),
           Sample(schema.GPU_SECONDS.name, {"role": "trainer"}, 64 * t),
           Sample(schema.GPU_HOUR_PRICE.name, {"role": "trainer"}, 3.0)]
    syncs = t // 60
    for le in (*schema.WEIGHT_SYNC_SECONDS_BUCKETS, float("inf")):
        out.append(Sample(schema.WEIGHT_SYNC_SECONDS.bucket, {"le": "+Inf" if le == float("inf") else str(le)},
                          syncs if le >= 2.0 else 0))
    out += [Sample(schema.WEIGHT_SYNC_SECONDS.count, {}, syncs),
            Sample(schema.WEIGHT_SYNC_SECONDS.sum, {}, 1.5 * syncs)]
    return out


def _worker(i: int) -> Callable[[float], list[Sample]]:
    def gen(t: float) -> list[Sample]:
        out = [Sample(schema.ROLLOUT_POLICY_VERSION.name, {}, t // 60 - i % 3),
               Sample(schema.GPU_SECONDS.name, {"role": "rollout"}, 8 * t),
               Sample(schema.GPU_HOUR_PRICE.name, {"role": "rollout"}, 3.0)]
        for env in ENVS:
            out.append(Sample(schema.ROLLOUT_TOKENS.name, {"env": env}, 900 * t))
            for outcome in schema.ROLLOUT_OUTCOMES:
                out.append(Sample(schema.ROLLOUTS.name, {"env": env, "outcome": outcome}, (i % 5 + 1) * t))
        return out
    return gen


def _eval(t: float) -> list[Sample]:
    score = 0.3 + 0.01 * (t // 300)
    return [Sample(schema.EVAL_SCORE.name, {"benchmark": "gsm8k"}, score),
            Sample(schema.EVAL_POLICY_VERSION.name, {"benchmark": "gsm8k"}, t // 300)]


def fill_fleet(*, workers: int, history: int) -> Store:
    gens = {"trainer": _trainer, "eval": _eval, **{f"w{i:02d}": _worker(i) for i in range(workers)}}
    store = Store(capacity=max(history, 2))
    for k in range(history):
        t = 1_000_000.0 + k
        for name, gen in gens.items():
            store.ingest(name, t, gen(t))
    return store


def _floor(store: Store, start: float, end: float) -> float:
    """Read every point of the window once: the least any window-wide number can cost."""
    total = 0.0
    for target in store.targets():
        for name in list(store.names(target)):
            for s in store.series(target, name):
                for _, v in in_window(s, start, end):
                    total += v
    return total


def _best(fn: Callable[[], object], seconds: float) -> float:
    best = float("inf")
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=56)
    p.add_argument("--history", type=int, default=900, help="stored points per series (1 s apart)")
    p.add_argument("--window", type=float, default=300.0)
    p.add_argument("--seconds", type=float, default=1.5, help="time spent measuring each side")
    args = p.parse_args(argv)
    store = fill_fleet(workers=args.workers, history=args.history)
    now = 1_000_000.0 + args.history - 1
    settings = Settings()
    log = observe_evals(store, settings, previous=EvalLog())
    points = sum(len(in_window(s, now - args.window, now)) for t in store.targets() for n in list(store.names(t))
                 for s in store.series(t, n))
    gc.collect()
    floor = _best(lambda: _floor(store, now - args.window, now), args.seconds)
    build = _best(lambda: build_dashboard(store, (), settings, now=now, window_s=args.window, evals=log),
                  args.seconds)
    print(f"fleet: {args.workers + 2} targets, {args.history} points per series, window {args.window:g} s, "
          f"{points:,} points in the window")
    print(f"read every window point once: {floor * 1e3:8.2f} ms")
    print(f"build_dashboard:              {build * 1e3:8.2f} ms")
    print(f"ratio build / one read:       {build / floor:8.2f}x")


if __name__ == "__main__":
    main()
