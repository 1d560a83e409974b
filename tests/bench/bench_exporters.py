"""Per-call cost of the exporters next to a bare prometheus_client Counter.inc.

Run: ``/work/venv/bin/python -m tests.bench.bench_exporters``. Each figure is
the median over several rounds of the mean cost per call in a round, all
measured in this process, so the ratios hold on any machine; the absolute
numbers move with the machine. Goal from the issue: ``record_rollout`` under
10 µs and at most 8x ``Counter.inc``.
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter

from ptmon.exporters import RolloutExporter, TrainerExporter

__all__ = ["measure", "main"]


def measure(call: Callable[[], object], *, number: int, rounds: int) -> float:
    """Median over ``rounds`` of the mean seconds per call over ``number`` calls."""
    timer = timeit.Timer(call)
    timer.timeit(number=min(number, 1000))  # warm-up: caches, children, branch predictors
    return statistics.median(timer.timeit(number=number) / number for _ in range(rounds))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    n, rounds = args.number, args.rounds

    bare = Counter("bench_bare", "A bare counter, the baseline.", registry=CollectorRegistry())
    trainer = TrainerExporter(run="bench", model="m", algorithm="grpo", gpus=8, gpu_hour_price=3.0)
    rollout = RolloutExporter(run="bench", model="m", algorithm="grpo", gpus=2, gpu_hour_price=3.0)
    record_rollout = rollout.record_rollout

    def one_rollout() -> None:
        record_rollout(env="math", tokens=812, reward=1.0, seconds=3.2, policy_version=7, outcome="ok")

    def one_step() -> None:
        with trainer.step():
            pass

    def one_sync() -> None:
        with trainer.weight_sync(version=8, nbytes=16e9):
            pass

    # Interleave the measurements round by round so machine noise hits all of them alike, and also
    # report each call's median *paired* ratio (this round's cost / this round's baseline), which is
    # what stays put on a shared machine whose load drifts between rounds.
    calls = {"Counter.inc (baseline)": bare.inc, "record_rollout": one_rollout, "step()": one_step,
             "weight_sync()": one_sync}
    results: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            results[name].append(measure(call, number=n, rounds=1))
    baseline = results["Counter.inc (baseline)"]
    medians = {name: statistics.median(values) for name, values in results.items()}
    paired = {name: statistics.median(v / b for v, b in zip(values, baseline, strict=False))
              for name, values in results.items()}
    base = medians["Counter.inc (baseline)"]
    print(f"median per-call cost over {rounds} rounds of {n:,} calls (same process, interleaved)")
    print(f"{'call':<24}{'µs/call':>10}{'x Counter.inc':>16}{'paired ratio':>15}")
    for name, seconds in medians.items():
        print(f"{name:<24}{seconds * 1e6:>10.2f}{seconds / base:>16.1f}{paired[name]:>15.1f}")
    rollout_us, ratio = medians["record_rollout"] * 1e6, paired["record_rollout"]
    verdict = "meets" if rollout_us < 10 and ratio <= 8 else "MISSES"
    print(f"record_rollout {verdict} the goal (< 10 µs and <= 8x Counter.inc): {rollout_us:.2f} µs, "
          f"{ratio:.1f}x (paired)")

if __name__ == "__main__":
    main()
