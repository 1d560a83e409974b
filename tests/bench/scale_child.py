"""ptmon's direct-scrape data layer with no UI, as its own process, for tests/bench/bench_scale.py.

Run: ``python -m tests.bench.scale_child URL... [--interval 1] [--window 300] [--rev REV] [--cprofile OUT]``

A ``LiveFeed`` on the given targets (the first is named ``trainer``, the
rest ``worker-N``), started as the TUI starts it, and one ``dashboard()``
every interval exactly as ``PtmonApp._poll_loop`` asks for it (poll, then
sleep what is left of the interval), nothing drawn; how long each took (the
event loop is held that long) is printed at exit, counted from the last SIGUSR1. ``--rev``: the code of
that commit (tests/bench/history.py) instead of this tree's, so a before and
an after run side by side. SIGTERM or SIGINT: close the feed and exit 0
(``--cprofile``: write the profile first), so the benchmark never leaves one behind.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import inspect
import json
import signal
import sys
import time
from typing import Any

__all__ = ["main"]


def _modules(rev: str | None) -> tuple[Any, Any]:
    """(monitor.live, monitor.settings) of this tree or of ``rev``."""
    if rev is None:
        from ptmon.monitor import live, settings
        return live, settings
    from tests.bench.history import at_revision
    old = at_revision(rev)
    return old.module("monitor.live"), old.module("monitor.settings")


async def _run(urls: list[str], *, interval_s: float, window_s: float, rev: str | None) -> None:
    live, settings_mod = _modules(rev)
    names = ["trainer"] + [f"worker-{i}" for i in range(1, len(urls))]
    targets = tuple(settings_mod.Target(name=n, url=u) for n, u in zip(names, urls, strict=True))
    settings = settings_mod.Settings(targets=targets, interval_s=interval_s, window_s=window_s)
    # An older revision's LiveFeed may not know the option (it then runs as it did).
    settles = "settle_heap" in inspect.signature(live.LiveFeed).parameters
    feed = live.LiveFeed(settings, **({"settle_heap": True} if settles else {}))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    builds: list[float] = []  # seconds each dashboard() held the event loop, since the last SIGUSR1
    loop.add_signal_handler(signal.SIGUSR1, builds.clear)
    await feed.start()
    print("ready", flush=True)
    try:
        while not stop.is_set():
            started = time.monotonic()
            await feed.dashboard(window_s=window_s)
            builds.append(time.monotonic() - started)
            delay = interval_s - (time.monotonic() - started)
            if delay > 0:
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                except TimeoutError:
                    pass
    finally:
        await feed.aclose()
        print("builds " + json.dumps(builds), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--window", type=float, default=300.0, help="the Dashboard's window (the TUI's default)")
    parser.add_argument("--rev", default=None)
    parser.add_argument("--cprofile", default=None, help="write a cProfile of the whole run here")
    args = parser.parse_args(argv)
    # CPU time, not wall time: the loop's sleeps in epoll would otherwise top the list.
    profile = cProfile.Profile(time.process_time) if args.cprofile else None
    if profile is not None:
        profile.enable()
    try:
        asyncio.run(_run(args.urls, interval_s=args.interval, window_s=args.window, rev=args.rev))
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.cprofile)
    sys.exit(0)


if __name__ == "__main__":
    main()
