"""build_dashboard cost and store memory, against earlier commits run side by side in this process.

Run: ``python -m tests.bench.bench_build [--workers 56] [--history 900] [--window 300] [--rev REV ...]``

The TUI builds a Dashboard every second on its event loop. The same fleet is
stored and built by today's code and by each ``--rev`` (default: the commit
before the compact store, a deque of (t, v) tuples a series with rates
scanning every point of the window), extracted whole from git history by
``tests/bench/history.py``, so the "before" is the code that really ran.
Printed, all measured in this process: one build on each, interleaved, and its
ratio to today's, one read of every window point (the floor of any design),
and the bytes a stored point costs (tracemalloc, every series full and
wrapping). Every version must give the same Dashboard numbers (fields it
shares with today's), or the run stops.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tests.bench.history import at_revision

__all__ = ["Code", "current", "at", "fill_fleet", "bytes_per_point", "main"]

ENVS = ("math", "code", "search", "chat")
# The store and build before compact arrays and spans (10ce9c2 made each series two array('d') columns;
# its parent stored a deque of (t, v) tuples): the "previous store/build" of the README's Performance table.
PRE_SPAN = "10ce9c2^"
_EVAL_MODULES = ("monitor.build", "monitor.evallog", "monitor.eval_log", "monitor.evals", "monitor.history")


@dataclass(frozen=True)
class Code:
    """One version of ptmon's data layer: what a fleet is stored with and a Dashboard built by."""

    label: str
    schema: Any
    parse: Any
    Sample: Any
    Store: Any
    Settings: Any
    in_window: Callable[..., Any]
    EvalLog: Any
    observe_evals: Callable[..., Any]
    build_dashboard: Callable[..., Any]
    slot_memo: Callable[[], Any] | None = None  # SlotMemo where the version has one (kept across steady builds)


def _code(label: str, module: Callable[[str], ModuleType]) -> Code:
    def find(name: str) -> Any:
        for candidate in _EVAL_MODULES:
            try:
                found = getattr(module(candidate), name, None)
            except ImportError:
                continue
            if found is not None:
                return found
        raise SystemExit(f"{label}: no {name} in any of {_EVAL_MODULES}")

    parse = module("monitor.parse")
    try:
        slot_memo = module("monitor.slots").SlotMemo
    except ImportError:
        slot_memo = None
    return Code(label, module("exporters.schema"), parse, parse.Sample, module("monitor.store").Store,
                module("monitor.settings").Settings, module("monitor.derive").in_window, find("EvalLog"),
                find("observe_evals"), find("build_dashboard"), slot_memo)


def current() -> Code:
    """The code in this working tree (what ``pip install -e .`` imports)."""
    return _code("now", lambda name: importlib.import_module(f"ptmon.{name}"))


def at(rev: str) -> Code:
    """The code of an earlier commit, whole (tests/bench/history.py), importable beside today's."""
    revision = at_revision(rev)
    return _code(f"{rev} ({revision.sha[:9]})", revision.module)


def _trainer(c: Code, t: float) -> list[Any]:
    schema, S = c.schema, c.Sample
    steps = t / 4
    out = [S(schema.TRAINER_STEPS.name, {}, steps), S(schema.POLICY_VERSION.name, {}, t // 60),
           S(schema.TRAINER_LAST_STEP_TIMESTAMP.name, {}, t),
           S(schema.GPU_SECONDS.name, {"role": "trainer"}, 64 * t),
           S(schema.GPU_HOUR_PRICE.name, {"role": "trainer"}, 3.0)]
    syncs = t // 60
    for le in (*schema.WEIGHT_SYNC_SECONDS_BUCKETS, float("inf")):
        out.append(S(schema.WEIGHT_SYNC_SECONDS.bucket, {"le": "+Inf" if le == float("inf") else str(le)},
                     syncs if le >= 2.0 else 0))
    out += [S(schema.WEIGHT_SYNC_SECONDS.count, {}, syncs), S(schema.WEIGHT_SYNC_SECONDS.sum, {}, 1.5 * syncs)]
    return out


def _worker(c: Code, i: int) -> Callable[[float], list[Any]]:
    schema, S = c.schema, c.Sample

    def gen(t: float) -> list[Any]:
        out = [S(schema.ROLLOUT_POLICY_VERSION.name, {}, t // 60 - i % 3),
               S(schema.GPU_SECONDS.name, {"role": "rollout"}, 8 * t),
               S(schema.GPU_HOUR_PRICE.name, {"role": "rollout"}, 3.0)]
        for env in ENVS:
            out.append(S(schema.ROLLOUT_TOKENS.name, {"env": env}, 900 * t))
            for outcome in schema.ROLLOUT_OUTCOMES:
                out.append(S(schema.ROLLOUTS.name, {"env": env, "outcome": outcome}, (i % 5 + 1) * t))
        return out
    return gen


def _wide_worker(c: Code, i: int, envs: int) -> Callable[[float], list[Any]]:
    """A worker page of about 45 samples per env, as a RolloutExporter's: rollouts by outcome, tokens, the
    seconds and reward histograms (buckets, sum, count) and their ``_created`` gauges, which nothing reads."""
    schema, S = c.schema, c.Sample
    names = [f"env{k:03d}" for k in range(envs)]
    sec, rew = schema.ROLLOUT_SECONDS, schema.ROLLOUT_REWARD
    fixed = [(sec.bucket, {"env": e, "le": str(le)}, j + 1) for e in names
             for j, le in enumerate(schema.ROLLOUT_SECONDS_BUCKETS)]
    fixed += [(rew.bucket, {"env": e, "le": str(le)}, j + 1) for e in names
              for j, le in enumerate(schema.DEFAULT_REWARD_BUCKETS)]
    fixed += [(n, {"env": e}, 20) for e in names for n in (sec.count, rew.count, sec.bucket, rew.bucket)
              if not n.endswith("_bucket")]
    fixed += [(n + "_created", {"env": e}, 0) for e in names
              for n in ("posttrain_rollouts", "posttrain_rollout_tokens", sec.name, rew.name)]
    fixed += [(sec.sum, {"env": e}, 30) for e in names]
    fixed += [(n, {"env": e}, k) for e in names for n, k in ((schema.ROLLOUT_REWARD_POSITIVE.name, 12),
                                                               (schema.ROLLOUT_REWARD_NEGATIVE.name, 2))]
    # The parser hands the store the same Labels object each scrape (the store's fast path).
    L = getattr(c.parse, "Labels", dict)
    tokens = [L({"env": e}) for e in names]
    outcomes = [(L({"env": e, "outcome": o})) for e in names for o in schema.ROLLOUT_OUTCOMES]
    labelled = [(n, L(labels), k) for n, labels, k in fixed]
    base = _worker(c, i)

    def gen(t: float) -> list[Any]:
        out = base(t)
        out += [S(schema.ROLLOUT_TOKENS.name, labels, 900 * t) for labels in tokens]
        out += [S(schema.ROLLOUTS.name, labels, (i % 5 + 1) * t) for labels in outcomes]
        out += [S(n, labels, 0.0 if n.endswith("_created") else k * t) for n, labels, k in labelled]
        return out
    return gen


def _eval(c: Code, t: float) -> list[Any]:
    score = 0.3 + 0.01 * (t // 300)
    return [c.Sample(c.schema.EVAL_SCORE.name, {"benchmark": "gsm8k"}, score),
            c.Sample(c.schema.EVAL_POLICY_VERSION.name, {"benchmark": "gsm8k"}, t // 300)]


def fleet(c: Code, *, workers: int, envs: int = 0) -> dict[str, Callable[[float], list[Any]]]:
    """Each target's scrape at time t. ``envs``: 0, the small worker page (27 series); else a
    RolloutExporter-shaped page of that many envs (about 45 series each)."""
    gens: dict[str, Callable[[float], list[Any]]] = {"trainer": lambda t: _trainer(c, t),
                                                     "eval": lambda t: _eval(c, t)}
    gens.update({f"w{i:02d}": _wide_worker(c, i, envs) if envs else _worker(c, i) for i in range(workers)})
    return gens


def scrape(store: Any, gens: dict[str, Callable[[float], list[Any]]], t: float) -> None:
    for name, gen in gens.items():
        store.ingest(name, t, gen(t))


def fill_fleet(*, workers: int, history: int, code: Code | None = None, capacity: int | None = None,
               envs: int = 0) -> Any:
    c = code or current()
    gens = fleet(c, workers=workers, envs=envs)
    store = c.Store(capacity=max(capacity or history, 2))
    for k in range(history):
        scrape(store, gens, 1_000_000.0 + k)
    return store


# The rate chart's slots were aligned to their step when SlotMemo came (monitor/slots.py): a version before
# it puts its chart points, and the 10-minute median's slots, elsewhere in time.
_REGRIDDED = frozenset(("rollout_rate_series", "rollout_rate_median_10m"))


def same_numbers(a: Any, b: Any, *, skip: frozenset[str] = frozenset()) -> list[str]:
    """Fields both Dashboards have whose values differ (a field only one version has is not compared, at
    any depth: a target's health that gained a field is still compared on the others), but ``skip``."""
    da, db = dataclasses.asdict(a), dataclasses.asdict(b)
    return [f"{k}: {da[k]!r} != {db[k]!r}" for k in sorted(da.keys() & db.keys() - skip) if not _alike(da[k], db[k])]


def _unshared(a: Code, b: Code) -> frozenset[str]:
    """The fields two versions compute on different grids (``_REGRIDDED``), not to compare."""
    return _REGRIDDED if (a.slot_memo is None) != (b.slot_memo is None) else frozenset()


def _alike(x: Any, y: Any) -> bool:
    if isinstance(x, dict) and isinstance(y, dict):
        return all(_alike(x[k], y[k]) for k in x.keys() & y.keys())
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(_alike(p, q) for p, q in zip(x, y, strict=True))
    return bool(x == y)


def _floor(c: Code, store: Any, start: float, end: float) -> float:
    """Read every point of the window once: the least any window-wide number can cost."""
    total = 0.0
    for target in store.targets():
        for name in list(store.names(target)):
            for s in store.series(target, name):
                for _, v in c.in_window(s, start, end):
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


def bytes_per_point(code: Code, *, workers: int = 8, capacity: int = 600) -> float:
    """Traced bytes per stored point once every series is full and has wrapped (front cuts included)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = fill_fleet(workers=workers, history=capacity + capacity // 4, code=code, capacity=capacity)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    points = sum(len(s) for t in store.targets() for n in list(store.names(t)) for s in store.series(t, n))
    return used / points


def _side(c: Code, *, workers: int, history: int, window: float, envs: int = 0,
          capacity: int | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    store = fill_fleet(workers=workers, history=history, code=c, envs=envs, capacity=capacity)
    fill = time.perf_counter() - t0
    now = 1_000_000.0 + history - 1
    settings = c.Settings()
    log = c.observe_evals(store, settings, previous=c.EvalLog())

    def build() -> Any:
        return c.build_dashboard(store, (), settings, now=now, window_s=window, evals=log)

    return {"code": c, "store": store, "now": now, "fill": fill, "dashboard": build(), "build": build,
            "gens": fleet(c, workers=workers, envs=envs), "settings": settings, "log": log}


def steady(sides: list[dict[str, Any]], *, window: float, polls: int) -> None:
    """The live loop's build: one new scrape into every target, then one build, ``polls`` times, the
    sides interleaved poll by poll (the scrape untimed: only the build is, in CPU seconds); each side's mean
    per build in ``side["steady"]``, garbage collection held off while a build is timed. Every poll's
    Dashboards must agree, or the run stops."""
    for side in sides:
        side["steady"] = 0.0
        side["memo"] = side["code"].slot_memo() if side["code"].slot_memo is not None else None
    # The filled stores are millions of objects: without this a collection of them lands in whichever build
    # happens to trigger it, and its 0.1-0.5 s swamp the difference being measured.
    gc.collect()
    gc.freeze()
    for k in range(1, polls + 1):
        built = []
        for side in sides:
            c, now = side["code"], side["now"] + k
            scrape(side["store"], side["gens"], now)
            side["log"] = c.observe_evals(side["store"], side["settings"], previous=side["log"])
            gc.disable()
            t0 = time.process_time()  # CPU, not wall: on a shared machine the wall clock counts others' turns
            memo = {"slot_memo": side["memo"]} if side["memo"] is not None else {}
            built.append(c.build_dashboard(side["store"], (), side["settings"], now=now, window_s=window,
                                           evals=side["log"], **memo))
            side["steady"] += (time.process_time() - t0) / polls
            gc.enable()
        for side, d in zip(sides[:-1], built, strict=False):
            if differ := same_numbers(d, built[-1], skip=_unshared(side["code"], sides[-1]["code"])):
                raise SystemExit(f"poll {k}: {side['code'].label} and now differ:\n" + "\n".join(differ))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=56)
    p.add_argument("--history", type=int, default=900, help="stored points per series (1 s apart)")
    p.add_argument("--window", type=float, default=300.0)
    p.add_argument("--seconds", type=float, default=1.5, help="time spent measuring each side")
    p.add_argument("--rev", action="append", metavar="REV",
                   help=f"earlier commit(s) to run side by side (default {PRE_SPAN}, the pre-span store; "
                        "e.g. --rev HEAD to compare uncommitted changes with the last commit)")
    p.add_argument("--envs", type=int, default=0,
                   help="0: the small worker page (27 series); N: a RolloutExporter-shaped page of N envs "
                        "(about 45 series each: 22 envs is a 1,000-series worker)")
    p.add_argument("--steady", type=int, default=0, metavar="POLLS",
                   help="also time POLLS builds each after one new scrape of every target (the live loop: "
                        "the counter-reset index catches up one point per series per build)")
    p.add_argument("--no-static", action="store_true", help="only the --steady builds")
    args = p.parse_args(argv)
    sides = [_side(c, workers=args.workers, history=args.history, window=args.window, envs=args.envs)
             for c in [at(rev) for rev in (args.rev or [PRE_SPAN])] + [current()]]
    now_side = sides[-1]
    for side in sides[:-1]:
        differ = same_numbers(side["dashboard"], now_side["dashboard"], skip=_unshared(side["code"], now_side["code"]))
        if differ:  # the benchmark compares implementations of the same numbers
            raise SystemExit(f"{side['code'].label} and now differ:\n" + "\n".join(differ))
    c, store, now = now_side["code"], now_side["store"], now_side["now"]
    if args.no_static:
        _print_steady(sides, args)
        return
    points = sum(len(c.in_window(s, now - args.window, now)) for t in store.targets()
                 for n in list(store.names(t)) for s in store.series(t, n))
    gc.collect()
    floor = _best(lambda: _floor(c, store, now - args.window, now), args.seconds)
    for _ in range(2):  # interleaved, twice: the better of two turns each
        for side in sides:
            side["best"] = min(side.get("best", float("inf")), _best(side["build"], args.seconds / 2))
    print(f"fleet: {args.workers + 2} targets, {args.history} points per series, window {args.window:g} s, "
          f"{points:,} points in the window (same Dashboard numbers from every version)")
    print(f"read every window point once: {floor * 1e3:9.2f} ms")
    after = now_side["best"]
    for side in sides:
        label, best = side["code"].label, side["best"]
        print(f"build_dashboard {label:>24}: {best * 1e3:9.2f} ms  ({best / floor:5.2f}x one read, "
              f"{best / after:5.2f}x now's time)  fill {side['fill']:5.2f} s")
    if args.steady:
        _print_steady(sides, args)
    for side in sides:
        print(f"memory per stored point {side['code'].label:>24}: {bytes_per_point(side['code']):6.1f} B "
              "(tracemalloc, 10 targets, every series wrapped)")


def longest_block(side: dict[str, Any], *, window: float) -> float:
    """The longest the event loop waits during one build as ``LiveFeed`` runs it (``build_steps`` between
    turns of the loop), measured by a task that takes a turn whenever it can; a version without steps
    blocks the loop for its whole build."""
    import asyncio

    from ptmon.monitor.build import build_steps
    from ptmon.monitor.live import _yielding

    async def run() -> float:
        longest, last = 0.0, time.perf_counter()
        done = False

        async def ticker() -> None:
            nonlocal longest, last
            while not done:
                t = time.perf_counter()
                longest, last = max(longest, t - last), t
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        last = time.perf_counter()
        await _yielding(build_steps(side["store"], (), side["settings"], now=side["now"], window_s=window,
                                    evals=side["log"]))
        done = True
        longest = max(longest, time.perf_counter() - last)
        await task
        return longest

    return min(asyncio.run(run()) for _ in range(3))


def _print_steady(sides: list[dict[str, Any]], args: argparse.Namespace) -> None:
    steady(sides, window=args.window, polls=args.steady)
    series = sum(side["store"].series_count(t) for side in sides[-1:] for t in side["store"].targets())
    print(f"steady state: {args.steady} polls, each one new scrape of {args.workers + 2} targets "
          f"({series:,} series) then one build (same Dashboard numbers every poll)")
    after = sides[-1]["steady"]
    for side in sides:
        print(f"steady build_dashboard {side['code'].label:>24}: {side['steady'] * 1e3:9.2f} ms  "
              f"({side['steady'] / after:5.2f}x now's time)")
    block = longest_block(sides[-1], window=args.window)
    print(f"longest event-loop wait in one build as LiveFeed runs it: now {block * 1e3:.1f} ms "
          f"(a build without steps blocks it for the whole build, above)")


if __name__ == "__main__":
    main()
