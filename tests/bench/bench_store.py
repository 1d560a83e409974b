"""Store cost per scraped sample: ingest time and bytes held, today's store against an earlier commit's, side by side.

Run: ``python -m tests.bench.bench_store [--targets 8] [--capacity 600] [--seconds 2] [--rev 7c5fd71]``

Each target serves a rollout worker's page of about 1,000 samples (counters
and histograms per env, the contract's names) plus what a real process serves
beside them (prometheus_client's process and GC metrics, an app's own
counters: about a tenth of the page, read by nothing). Each version parses
the pages with its own parser (outside the timing: the store is what is
measured) and ingests them into its own Store, configured as ``ptmon watch``
configures it (today: ``keep=reads.is_read``). Printed, all measured in this
process, interleaved, best of each: ingest microseconds per sample at steady
state, and with tracemalloc the bytes the store holds per stored point and
per series once every series is full and has wrapped, and in all.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tests.bench.history import at_revision

__all__ = ["Side", "page", "main"]

BASELINE = "7c5fd71"  # main before issue 18's store work
ENVS = tuple(f"env{i:02d}" for i in range(40))
OUTCOMES = ("ok", "error", "truncated", "dropped_stale")
BUCKETS = ("0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0", "20.0", "30.0", "60.0", "120.0", "300.0", "+Inf")


def page(worker: int, k: int) -> str:
    """Worker ``worker``'s page at its ``k``-th scrape: every counter moves (as under load)."""
    lines = []
    for e, env in enumerate(ENVS):
        base = (worker + 1) * (e + 1) * (k + 1)
        for o, outcome in enumerate(OUTCOMES):
            lines.append(f'posttrain_rollouts_total{{env="{env}",outcome="{outcome}"}} {base * (4 - o)}.0')
        lines.append(f'posttrain_rollout_tokens_total{{env="{env}"}} {900 * base}.0')
        for b, le in enumerate(BUCKETS):
            lines.append(f'posttrain_rollout_seconds_bucket{{env="{env}",le="{le}"}} {base * (b + 1) // 13}.0')
        lines.append(f'posttrain_rollout_seconds_sum{{env="{env}"}} {base * 7.25}')
        lines.append(f'posttrain_rollout_seconds_count{{env="{env}"}} {base}.0')
    lines += [f"posttrain_rollout_policy_version {k // 60}.0",
              f'posttrain_gpu_seconds_total{{role="rollout"}} {8.0 * k + 0.125 * worker}',
              'posttrain_gpu_hour_price_dollars{role="rollout"} 3.0']
    for gen in range(3):  # prometheus_client's own, and an app's: nobody reads them
        lines.append(f'python_gc_objects_collected_total{{generation="{gen}"}} {k * 31 + gen}.0')
        lines.append(f'python_gc_collections_total{{generation="{gen}"}} {k + gen}.0')
    lines += [f"process_cpu_seconds_total {k * 0.01:.2f}", f"process_resident_memory_bytes {1e8 + k * 4096:.0f}"]
    lines += [f'app_requests_total{{path="/p{p}"}} {k * p}.0' for p in range(90)]
    return "\n".join(lines) + "\n"


@dataclass
class Side:
    """One version of the store: its parser, its Store and how ``ptmon watch`` configures it."""

    label: str
    parser: Callable[[], Any]
    store: Callable[[int], Any]


def _side(label: str, module: Callable[[str], ModuleType]) -> Side:
    store_mod, parse_mod = module("monitor.store"), module("monitor.parse")
    try:
        keep = module("monitor.reads").is_read
    except ImportError:
        keep = None
    kwargs = {} if keep is None else {"keep": keep}
    return Side(label, parse_mod.ExpositionParser, lambda capacity: store_mod.Store(capacity=capacity, **kwargs))


def _scrapes(side: Side, targets: int, count: int, start: int = 0) -> list[list[tuple[str, float, list[Any]]]]:
    """``count`` scrapes of every target, parsed by ``side``'s parser (one per target, warm as in a run)."""
    parsers = [side.parser() for _ in range(targets)]
    return [[(f"w{w:03d}", 1_000_000.0 + k, parsers[w].parse(page(w, k))) for w in range(targets)]
            for k in range(start, start + count)]


def _ingest_us(side: Side, *, targets: int, capacity: int, seconds: float) -> float:
    """Best microseconds per sample of ingesting one scrape of every target, at steady state (series exist)."""
    store = side.store(capacity)
    warm = _scrapes(side, targets, 3)
    for scrape in warm:
        for target, t, samples in scrape:
            store.ingest(target, t, samples)
    batches = _scrapes(side, targets, 12, start=3)
    n = sum(len(s) for scrape in batches for _, _, s in scrape)
    best = float("inf")
    deadline = time.perf_counter() + seconds
    k = 0
    while time.perf_counter() < deadline or k < len(batches):
        scrape = batches[k % len(batches)]
        shift = (k // len(batches) + 1) * 10_000.0  # times keep moving forward
        t0 = time.perf_counter()
        for target, t, samples in scrape:
            store.ingest(target, t + shift, samples)
        best = min(best, (time.perf_counter() - t0) / (n / len(batches)))
        k += 1
    return best * 1e6


def _filled(side: Side, *, targets: int, capacity: int, scrapes: int) -> tuple[Any, int]:
    """A store of ``scrapes`` scrapes of every target, and the traced bytes it holds (the parsers, whose
    caches are the parser's cost, are gone before it is measured; the Labels the store keeps are counted)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        parsers = [side.parser() for _ in range(targets)]
        store = side.store(capacity)
        for k in range(scrapes):
            for w in range(targets):
                store.ingest(f"w{w:03d}", 1_000_000.0 + k, parsers[w].parse(page(w, k)))
        del parsers
        gc.collect()
        return store, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def _memory(side: Side, *, targets: int, capacity: int) -> dict[str, float]:
    """Traced bytes the store holds once every series is full and has wrapped: in all, per point beyond each
    series' first, per scraped point (what holding every point would need), and per series at its first point
    (its labels, objects and index entries)."""
    store, first = _filled(side, targets=targets, capacity=capacity, scrapes=1)
    del store
    store, used = _filled(side, targets=targets, capacity=capacity, scrapes=capacity + capacity // 4)
    series = [s for t in store.targets() for n in list(store.names(t)) for s in store.series(t, n)]
    points = sum(len(s) for s in series)
    return {"bytes": used, "per_point": (used - first) / (points - len(series)),
            "per_scraped": used / (len(series) * capacity), "per_series": first / len(series),
            "series": len(series)}


def _long_run(side: Side, *, targets: int, capacity: int, scrapes: tuple[int, ...], traced: bool,
              timed_from: int = 0) -> dict[int, tuple[float, float, float, float]]:
    """A store of ``capacity`` filled a scrape at a time (an injected clock: 1 s a scrape, no waiting). At
    each of ``scrapes``: traced (``traced``) MB the store holds, bytes per stored point and per series; or,
    untraced, the mean ingest us per sample since ``timed_from`` (every scrape timed: the chunks frozen on the
    way are paid for)."""
    gc.collect()
    if traced:
        tracemalloc.start()
    out: dict[int, tuple[float, float, float, float]] = {}
    try:
        parsers = [side.parser() for _ in range(targets)]
        before = tracemalloc.get_traced_memory()[0] if traced else 0
        store = side.store(capacity)
        spent, samples = 0.0, 0
        for k in range(max(scrapes)):
            pages = [parsers[w].parse(page(w, k)) for w in range(targets)]
            t0 = time.perf_counter()
            for w in range(targets):
                store.ingest(f"w{w:03d}", 1_000_000.0 + k, pages[w])
            if k >= timed_from:
                spent += time.perf_counter() - t0
                samples += sum(map(len, pages))
            del pages
            if k + 1 in scrapes:
                series = [s for t in store.targets() for n in list(store.names(t)) for s in store.series(t, n)]
                points = sum(len(s) for s in series)
                used = tracemalloc.get_traced_memory()[0] - before if traced else 0
                # the parsers' caches grow too (kept label sets are shared with the store): counted, on both sides
                out[k + 1] = (used / 1e6, used / max(points, 1), used / len(series), spent / max(samples, 1) * 1e6)
        return out
    finally:
        if traced:
            tracemalloc.stop()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=8)
    p.add_argument("--capacity", type=int, default=600, help="points per series (600: ten minutes at 1 s)")
    p.add_argument("--seconds", type=float, default=2.0, help="timing per version per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rev", default=BASELINE)
    p.add_argument("--long", action="store_true",
                   help="also an hour's capacity (3,600) filled to 10 minutes and to an hour, memory side by side")
    args = p.parse_args(argv)
    rev = at_revision(args.rev)
    sides = [_side(f"{args.rev} ({rev.sha[:9]})", rev.module),
             _side("now", lambda name: importlib.import_module(f"ptmon.{name}"))]
    samples = len(sides[1].parser().parse(page(0, 0)))
    print(f"{args.targets} targets x {samples} samples, capacity {args.capacity} points")
    ingest = {s.label: _ingest_us(s, targets=args.targets, capacity=args.capacity, seconds=args.seconds)
              for s in sides}
    for _ in range(args.rounds - 1):  # interleaved: a drifting load skews neither side
        for s in sides:
            ingest[s.label] = min(ingest[s.label], _ingest_us(s, targets=args.targets, capacity=args.capacity,
                                                              seconds=args.seconds))
    memory = {s.label: _memory(s, targets=args.targets, capacity=args.capacity) for s in sides}
    base = sides[0].label
    print(f"{'':24} {'ingest us/sample':>17} {'B/stored point':>15} {'B/scraped point':>16} "
          f"{'B/new series':>13} {'store MB':>9}")
    for s in sides:
        m = memory[s.label]
        print(f"{s.label:24} {ingest[s.label]:17.3f} {m['per_point']:15.2f} {m['per_scraped']:16.2f} "
              f"{m['per_series']:13.0f} {m['bytes'] / 1e6:9.1f}")
    now = sides[1].label
    print(f"now / {base}: ingest {ingest[now] / ingest[base]:.2f}x, "
          f"memory {memory[now]['bytes'] / memory[base]['bytes']:.2f}x")
    if args.long:
        _print_long(sides, targets=args.targets)


def _print_long(sides: list[Side], *, targets: int) -> None:
    """Capacity 3,600 (an hour at 1 s), after 10 minutes and after an hour and a quarter (every series full and
    past its first cuts): traced MB (parsers included, the same on both sides), bytes per stored point and per
    series, and ingest per sample over scrapes 600.. (the chunks frozen on the way included)."""
    marks = (600, 3600, 4500)
    runs = {s.label: _long_run(s, targets=targets, capacity=3600, scrapes=marks, traced=True) for s in sides}
    for s in sides:  # untraced, for the time
        timed = _long_run(s, targets=targets, capacity=3600, scrapes=marks, traced=False, timed_from=600)
        runs[s.label] = {m: (*runs[s.label][m][:3], timed[m][3]) for m in marks}
    print(f"capacity 3600: {'':14} {'scrapes':>7} {'traced MB':>9} {'B/stored point':>15} {'B/series':>9} "
          f"{'ingest us/sample':>17}")
    for mark in marks:
        for s in sides:
            mb, per_point, per_series, us = runs[s.label][mark]
            print(f"  {s.label:27} {mark:7} {mb:9.1f} {per_point:15.2f} {per_series:9.0f} {us:17.3f}")
    base, now = (s.label for s in sides)
    print("now / base: " + ", ".join(f"{m} scrapes memory {runs[now][m][0] / runs[base][m][0]:.2f}x"
                                     for m in marks)
          + f", ingest {runs[now][marks[-1]][3] / runs[base][marks[-1]][3]:.2f}x")


if __name__ == "__main__":
    main()
