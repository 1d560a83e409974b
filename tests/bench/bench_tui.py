"""The whole TUI's CPU cost against live exporters (8 by default), next to the same data loop with no UI.

Run: ``/work/venv/bin/python -m tests.bench.bench_tui [--seconds 60] [--warmup 10] [--interval 1] [--size 160x48]
[--targets 8] [--no-idle] [--tmux]``

A child process serves real exporters on loopback (one TrainerExporter,
``--targets`` - 2 RolloutExporters, one EvalExporter, each on its own port via
``ptmon.exporters.serve``) and keeps recording into them, so every scrape carries
moving counters and histograms. This process then measures, one after the
other and on the same targets:

1. the app: ``PtmonApp`` (headless, ``--size``, default 160x48) on a ``LiveFeed``: scraping,
   parsing, building Dashboards, alerts and drawing every widget;
2. the data loop alone: the same ``LiveFeed`` scraping at the same interval
   and one ``dashboard()`` per interval, no Textual;
3. the idle UI: the same app and widgets polling at the same interval a feed
   that hands back the last Dashboard of phase 1 (with the clock stopped at
   its time), so nothing on screen changes: what Textual and the poll cost
   with no scraping and nothing to repaint. App minus no-UI minus idle UI is
   what repainting changed numbers costs.

``--tmux``: one more phase, ``ptmon watch`` itself (the installed command, as a
person runs it) on the same targets in a detached tmux session of ``--size``,
its CPU (utime+stime of the pane's process and any children, from /proc, as bench_scale reads it) over the same seconds:
a real terminal's escape sequences and writes, which the headless harness
does not make.

Each phase runs ``--warmup`` seconds first (imports, first layout, buffers
filling), then CPU time (``time.process_time``: all threads of this process;
the exporters' CPU is the child's and is not counted) over ``--seconds`` of
wall time, printed as a percentage of one core, and the app/no-UI ratio.
Goal: the app under 3% of a core at a 1 s interval.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import subprocess
import sys
import time
from typing import Any

__all__ = ["main", "serve_exporters"]

WORKERS = 6
ENVS = ("math", "code")


def serve_exporters(workers: int = WORKERS) -> None:
    """Child process: a trainer, ``workers`` rollout workers and an eval job on free loopback ports,
    recording until stdin closes."""
    import threading

    from ptmon.exporters.evals import EvalExporter
    from ptmon.exporters.rollout import RolloutExporter
    from ptmon.exporters.serve import serve
    from ptmon.exporters.trainer import TrainerExporter

    ident: dict[str, Any] = dict(run="bench-grpo-7b", model="Qwen2.5-7B-Instruct", algorithm="grpo")
    trainer = TrainerExporter(gpus=8, gpu_hour_price=2.5, **ident)
    rollouts = [RolloutExporter(gpus=2, gpu_hour_price=2.5, **ident) for _ in range(workers)]
    evals = EvalExporter(gpus=1, gpu_hour_price=2.5, **ident)
    servers = [serve(e.registry) for e in (trainer, *rollouts, evals)]
    print(json.dumps([s.url for s in servers]), flush=True)

    stop = threading.Event()

    def stop_at_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=stop_at_eof, daemon=True).start()
    version, tick = 0, 0
    while not stop.wait(0.05):  # 20 ticks a second: a busy little loop
        tick += 1
        for i, r in enumerate(rollouts):
            if tick % (2 + i % 3) == 0:
                r.record_rollout(env=ENVS[i % 2], tokens=400 + 37 * i, reward=0.5 + 0.1 * math.sin(tick / 50),
                                 seconds=1.5, policy_version=max(0, version - i % 2))
        if tick % 20 == 0:
            with trainer.step():
                pass
            trainer.record(tokens=8192, loss=0.3 + 0.05 * math.sin(tick / 100))
        if tick % 100 == 0:
            version += 1
            with trainer.weight_sync(version=version, nbytes=15e9):
                time.sleep(0.01)
            for r in rollouts:
                r.set_policy_version(version)
        if tick % 600 == 0:
            evals.record_eval(benchmark="gsm8k", score=0.55 + 0.2 * (1 - math.exp(-tick / 6000)),
                              policy_version=version, samples=1319)
    for s in servers:
        s.close()


def _settings(urls: list[str], interval_s: float):
    from ptmon.monitor.config import load_settings

    return load_settings(urls=urls, interval_s=interval_s)


async def _measure(run_for, warmup_s: float, seconds: float) -> tuple[float, float]:
    """(cpu seconds, wall seconds) of this process over ``seconds`` after ``warmup_s``."""
    await asyncio.sleep(warmup_s)
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    return time.process_time() - cpu0, time.monotonic() - wall0


async def bench_app(urls: list[str], *, interval_s: float, warmup_s: float, seconds: float,
                    size: tuple[int, int] = (160, 48), rev: str | None = None) -> dict:
    """The app phase; with ``rev``, the app and feed of that git revision (tests/bench/history.py)."""
    from ptmon.monitor import app as app_module
    from ptmon.monitor import live as live_module

    if rev is not None:
        from tests.bench.history import at_revision

        old = at_revision(rev)
        app_module, live_module = old.module("monitor.app"), old.module("monitor.live")  # type: ignore[assignment]
    PtmonApp, LiveFeed = app_module.PtmonApp, live_module.LiveFeed  # noqa: N806

    settings = _settings(urls, interval_s)
    app = PtmonApp(LiveFeed(settings), interval_s=settings.interval_s, window_s=settings.window_s,
                   thresholds=settings.thresholds)
    async with app.run_test(size=size):
        cpu, wall = await _measure(None, warmup_s, seconds)
        d = app.dashboard
        up = 0 if d is None else d.targets_up
        polls = app.polls
    return dict(cpu=cpu, wall=wall, polls=polls, up=up, rate=None if d is None else d.rollout_rate_per_s,
                dashboard=d)


class _StillFeed:
    """A Feed that always answers the same Dashboard: the idle UI's data, no I/O."""

    def __init__(self, dashboard) -> None:
        self._dashboard = dashboard

    async def start(self) -> None:
        pass

    async def dashboard(self, *, window_s: float):
        return self._dashboard

    def set_interval(self, interval_s: float) -> None:
        pass

    def set_baseline_now(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def bench_idle(urls: list[str], *, interval_s: float, warmup_s: float, seconds: float,
                     size: tuple[int, int] = (160, 48), dashboard=None) -> dict:
    from ptmon.monitor.app import PtmonApp

    settings = _settings(urls, interval_s)
    now = dashboard.now if dashboard is not None else time.time()
    app = PtmonApp(_StillFeed(dashboard), interval_s=settings.interval_s, window_s=settings.window_s,
                   thresholds=settings.thresholds, clock=lambda: now)
    async with app.run_test(size=size):
        cpu, wall = await _measure(None, warmup_s, seconds)
        polls = app.polls
    up = 0 if dashboard is None else dashboard.targets_up
    return dict(cpu=cpu, wall=wall, polls=polls, up=up,
                rate=None if dashboard is None else dashboard.rollout_rate_per_s)


async def bench_loop(urls: list[str], *, interval_s: float, warmup_s: float, seconds: float,
                     size: tuple[int, int] = (0, 0)) -> dict:
    from ptmon.monitor.live import LiveFeed

    settings = _settings(urls, interval_s)
    feed = LiveFeed(settings)
    await feed.start()
    polls = 0
    d = None

    async def loop() -> None:
        nonlocal polls, d
        while True:
            started = time.monotonic()
            d = await feed.dashboard(window_s=settings.window_s)
            polls += 1
            await asyncio.sleep(max(0.0, interval_s - (time.monotonic() - started)))

    task = asyncio.create_task(loop())
    try:
        cpu, wall = await _measure(None, warmup_s, seconds)
    finally:
        task.cancel()
        await feed.aclose()
    return dict(cpu=cpu, wall=wall, polls=polls, up=0 if d is None else d.targets_up,
                rate=None if d is None else d.rollout_rate_per_s)


def bench_tmux(urls: list[str], *, interval_s: float, warmup_s: float, seconds: float,
               size: tuple[int, int] = (160, 48)) -> dict:
    """``ptmon watch URL...`` in a detached tmux session of ``size``; its CPU over ``seconds`` after ``warmup_s``."""
    import shlex
    import shutil

    from tests.bench.bench_scale import cpu_seconds, tree

    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("bench_tui --tmux: tmux is not installed")
    session = f"bench-tui-{os.getpid()}"
    ptmon = shutil.which("ptmon", path=os.path.dirname(sys.executable)) or "ptmon"
    command = shlex.join([ptmon, "watch", "--interval", f"{interval_s:g}", *urls])
    subprocess.run([tmux, "new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]),
                    f"TERM=xterm-256color {command}"], check=True)
    try:
        pid = int(subprocess.run([tmux, "display-message", "-p", "-t", session, "#{pane_pid}"], check=True,
                                 capture_output=True, text=True).stdout)
        time.sleep(warmup_s)
        cpu0, wall0 = cpu_seconds(tree(pid)), time.monotonic()
        time.sleep(seconds)
        cpu, wall = cpu_seconds(tree(pid)) - cpu0, time.monotonic() - wall0
        screen = subprocess.run([tmux, "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], capture_output=True)
    if cpu <= 0 or not screen.strip():
        raise SystemExit(f"bench_tui --tmux: `ptmon watch` drew nothing (its screen: {screen[:200]!r})")
    return dict(cpu=cpu, wall=wall, polls=None, up=None, rate=None, screen=screen)


def _compare(urls: list[str], args: argparse.Namespace, size: tuple[int, int], results: dict[str, dict]) -> None:
    """App phases at HEAD and at ``--rev``, alternated (HEAD, rev, HEAD, rev ...) on the same targets."""
    pcts: dict[str, list[float]] = {"HEAD": [], args.rev: []}
    for rep in range(args.reps):
        for side, rev in (("HEAD", None), (args.rev, args.rev)):
            r = asyncio.run(bench_app(urls, interval_s=args.interval, warmup_s=args.warmup, seconds=args.seconds,
                                      size=size, rev=rev))
            pcts[side].append(100 * r["cpu"] / r["wall"])
            results[f"app {side} #{rep + 1}"] = r
    head, old = sum(pcts["HEAD"]) / args.reps, sum(pcts[args.rev]) / args.reps
    print(f"app at HEAD {' '.join(f'{p:.2f}' for p in pcts['HEAD'])}% vs at {args.rev} "
          f"{' '.join(f'{p:.2f}' for p in pcts[args.rev])}% of a core: HEAD/{args.rev} {head / old:.3f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_tui", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds per phase (default 60)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring (default 10)")
    parser.add_argument("--interval", type=float, default=1.0, help="scrape and refresh interval (default 1)")
    parser.add_argument("--size", default="160x48", help="terminal size of the headless app (default 160x48)")
    parser.add_argument("--no-idle", action="store_true", help="skip the idle-UI phase")
    parser.add_argument("--targets", type=int, default=WORKERS + 2,
                        help=f"a trainer, TARGETS-2 rollout workers, an eval job (default {WORKERS + 2})")
    parser.add_argument("--rev", help="also run the app phase at this git revision, interleaved with today's "
                        "(e.g. eea4eab): a ratio the machine's load cannot skew")
    parser.add_argument("--reps", type=int, default=1, help="app phases per side with --rev (default 1)")
    parser.add_argument("--tmux", action="store_true", help="also `ptmon watch` itself in a tmux session of --size")
    parser.add_argument("--workers", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-exporters", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_exporters:
        serve_exporters(args.workers if args.workers is not None else WORKERS)
        return 0

    child = subprocess.Popen([sys.executable, "-m", "tests.bench.bench_tui", "--serve-exporters",
                              "--workers", str(max(1, args.targets - 2))],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        assert child.stdout is not None
        urls = json.loads(child.stdout.readline())
        width, height = (int(n) for n in args.size.lower().split("x"))
        print(f"bench_tui: {len(urls)} exporters on loopback, interval {args.interval:g}s, "
              f"warm-up {args.warmup:g}s, {args.seconds:g}s measured per phase, app at {width}x{height}")
        results: dict[str, dict] = {}
        if args.rev:
            _compare(urls, args, (width, height), results)
        for name, bench in (("app", bench_app), ("no UI", bench_loop)):
            results[name] = asyncio.run(bench(urls, interval_s=args.interval, warmup_s=args.warmup,
                                              seconds=args.seconds, size=(width, height)))
        if not args.no_idle:
            results["idle UI"] = asyncio.run(bench_idle(urls, interval_s=args.interval, warmup_s=args.warmup,
                                                        seconds=args.seconds, size=(width, height),
                                                        dashboard=results["app"]["dashboard"]))
        if args.tmux:
            results["tmux"] = bench_tmux(urls, interval_s=args.interval, warmup_s=args.warmup, seconds=args.seconds,
                                         size=(width, height))
    finally:
        if child.stdin:
            child.stdin.close()
        try:
            child.wait(timeout=60)  # 64 servers closing on a loaded machine take a while
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    print(f"{'phase':<8}{'CPU s':>8}{'wall s':>8}{'% of a core':>13}{'polls':>7}{'targets up':>12}{'rollouts/s':>12}")
    for name, r in results.items():
        pct = 100 * r["cpu"] / r["wall"]
        r["pct"] = pct
        rate = "—" if r["rate"] is None else f"{r['rate']:.1f}"
        polls, up = ("—", "—") if r["polls"] is None else (r["polls"], f"{r['up']}/{len(urls)}")
        print(f"{name:<8}{r['cpu']:>8.2f}{r['wall']:>8.1f}{pct:>12.2f}%{polls:>7}{up:>12}{rate:>12}")
    app, loop = results["app"], results["no UI"]
    print(f"app / no-UI CPU ratio: {app['pct'] / loop['pct']:.2f}x  "
          f"(UI share: {app['pct'] - loop['pct']:.2f}% of a core)")
    if "idle UI" in results:
        idle = results["idle UI"]
        print(f"of the UI share: idle Textual + poll with nothing changing {idle['pct']:.2f}%, "
              f"repainting changed numbers {app['pct'] - loop['pct'] - idle['pct']:.2f}% of a core")
    print(f"goal: app under 3% of a core -> {'met' if app['pct'] < 3 else 'NOT met'} ({app['pct']:.2f}%)")
    if "tmux" in results:
        pct = results["tmux"]["pct"]
        print(f"goal: `ptmon watch` in tmux at {width}x{height} under 3% of a core -> "
              f"{'met' if pct < 3 else 'NOT met'} ({pct:.2f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
