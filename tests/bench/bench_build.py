"""build_dashboard cost and store memory: the compact store + spans against the deque store + scans.

Run: ``/work/venv/bin/python -m tests.bench.bench_build [--workers 56] [--history 900] [--window 300]``

The TUI builds a Dashboard every second on its event loop. Two stores are
filled with the same fleet: ``ptmon.monitor.store`` (two float columns a series,
counter resets indexed) and the baseline kept in ``tests/bench/baseline``
(the store, derive and build as they were before: a deque of (t, v) tuples a
series, rates scanning every point of the window). Printed, all measured in
this process: one build on each and their ratio, one read of every window
point (the old design's floor), and the bytes a stored point costs in each
store (tracemalloc, at steady state: every series full and wrapping).
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from ptmon.exporters import schema
from ptmon.monitor.build import EvalLog, build_dashboard, observe_evals
from ptmon.monitor.derive import in_window
from ptmon.monitor.parse import Sample
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Store
from tests.bench.baseline import build as old_build
from tests.bench.baseline import store as old_store

__all__ = ["fill_fleet", "bytes_per_point", "main"]

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


_S = TypeVar("_S", Store, old_store.Store)  # the default first: what a call without store_type gives


def fill_fleet(*, workers: int, history: int,
               store_type: Callable[..., _S] = Store,  # type: ignore[assignment]  # python/mypy#3737
               capacity: int | None = None) -> _S:
    gens = {"trainer": _trainer, "eval": _eval, **{f"w{i:02d}": _worker(i) for i in range(workers)}}
    store = store_type(capacity=max(capacity or history, 2))
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


def bytes_per_point(store_type: Callable[..., _S], *, workers: int = 8, capacity: int = 600) -> float:
    """Traced bytes per stored point once every series is full and has wrapped (front cuts included)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = fill_fleet(workers=workers, history=capacity + capacity // 4, store_type=store_type,
                           capacity=capacity)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    points = sum(len(s) for t in store.targets() for n in list(store.names(t)) for s in store.series(t, n))
    return used / points


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=56)
    p.add_argument("--history", type=int, default=900, help="stored points per series (1 s apart)")
    p.add_argument("--window", type=float, default=300.0)
    p.add_argument("--seconds", type=float, default=1.5, help="time spent measuring each side")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    baseline = fill_fleet(workers=args.workers, history=args.history, store_type=old_store.Store)
    t1 = time.perf_counter()
    store = fill_fleet(workers=args.workers, history=args.history)
    t2 = time.perf_counter()
    now = 1_000_000.0 + args.history - 1
    settings = Settings()
    log = observe_evals(store, settings, previous=EvalLog())
    old_log = old_build.observe_evals(baseline, settings, previous=old_build.EvalLog())
    points = sum(len(in_window(s, now - args.window, now)) for t in store.targets() for n in list(store.names(t))
                 for s in store.series(t, n))
    new = build_dashboard(store, (), settings, now=now, window_s=args.window, evals=log)
    old = old_build.build_dashboard(baseline, (), settings, now=now, window_s=args.window, evals=old_log)
    if new != old:  # the benchmark compares two implementations of the same numbers
        raise SystemExit(f"the dashboards differ:\n{new}\n{old}")
    gc.collect()
    floor = _best(lambda: _floor(store, now - args.window, now), args.seconds)
    before = _best(lambda: old_build.build_dashboard(baseline, (), settings, now=now, window_s=args.window,
                                                     evals=old_log), args.seconds)
    after = _best(lambda: build_dashboard(store, (), settings, now=now, window_s=args.window, evals=log),
                  args.seconds)
    old_bytes = bytes_per_point(old_store.Store)
    new_bytes = bytes_per_point(Store)
    print(f"fleet: {args.workers + 2} targets, {args.history} points per series, window {args.window:g} s, "
          f"{points:,} points in the window (same Dashboard from both)")
    print(f"read every window point once:         {floor * 1e3:9.2f} ms")
    print(f"build_dashboard before (deque, scan): {before * 1e3:9.2f} ms  ({before / floor:5.2f}x one read)")
    print(f"build_dashboard after (arrays, span): {after * 1e3:9.2f} ms  ({after / floor:5.2f}x one read)")
    print(f"speed-up:                             {before / after:9.1f}x")
    print(f"filling the store (samples made + ingested): before {t1 - t0:6.2f} s, after {t2 - t1:6.2f} s "
          f"({(t2 - t1) / (t1 - t0):.2f}x; one pass each, same samples)")
    print(f"memory per stored point: before {old_bytes:6.1f} B, after {new_bytes:5.1f} B "
          f"({old_bytes / new_bytes:.1f}x less; tracemalloc, 10 targets, every series wrapped)")


if __name__ == "__main__":
    main()
