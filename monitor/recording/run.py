"""``ptmon record``: record a run headless, for as long as it runs.

No terminal needed (safe under nohup and systemd: it reads no input and
writes two lines to stderr). SIGTERM, SIGINT and SIGHUP (unless ignored, as
nohup does) flush what was collected and exit 0. It builds one Dashboard per
interval, as a screen would, so the file holds the alerts the screen would
have shown, with their start and end.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time

from ptmon.monitor.config import ConfigError, load_settings, parse_duration
from ptmon.monitor.recording.feed import RecordingFeed, recording_feed
from ptmon.monitor.recording.file import RecordingError
from ptmon.monitor.settings import Settings
from ptmon.monitor.text import safe

__all__ = ["run_record", "record", "parse_retention"]


def parse_retention(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except (ValueError, TypeError):
        seconds = -1.0
    if not seconds > 0:
        raise ConfigError("command line", "--retention", 'a duration such as "48h" or "90m"', text)
    return seconds


def _stop_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:
            continue  # nohup: a hang-up must not end the recording
        loop.add_signal_handler(signum, stop.set)


async def record(feed: RecordingFeed, *, duration_s: float | None = None,
                 stop: asyncio.Event | None = None) -> str | None:
    """Collect and record until ``stop`` is set (or ``duration_s`` passes); the recorder's error, if any."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    deadline = None if duration_s is None else loop.time() + duration_s
    await feed.start()
    try:
        while not stop.is_set() and feed.recorder.error is None:
            interval = feed.feed.settings.interval_s
            began = loop.time()
            await feed.dashboard(window_s=feed.feed.settings.window_s)
            wait = interval - (loop.time() - began)
            if deadline is not None:
                wait = min(wait, deadline - loop.time())
                if wait <= 0 and loop.time() >= deadline:
                    break
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, wait))
            except TimeoutError:
                pass
    finally:
        await feed.aclose()
    return feed.recorder.error


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings(config_path=args.config, urls=args.urls, interval_s=args.interval, window_s=args.window,
                         timeout_s=args.timeout, prometheus_url=getattr(args, "prometheus", None),
                         run=getattr(args, "run", None), framework=getattr(args, "framework", None))


def run_record(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args)
        retention = parse_retention(args.retention)
    except ConfigError as exc:
        print(f"ptmon record: {safe(str(exc))}", file=sys.stderr)
        return 2
    if not settings.targets and settings.prometheus is None:
        print("ptmon record: no targets: give /metrics URLs, --prometheus URL, or a --config with [[targets]]",
              file=sys.stderr)
        return 2

    async def main() -> str | None:
        stop = asyncio.Event()
        _stop_signals(asyncio.get_running_loop(), stop)
        feed = recording_feed(settings, args.out, retention_s=retention)
        what = settings.prometheus.url if settings.prometheus else f"{len(settings.targets)} targets"
        print(f"ptmon record: recording {safe(what)} into {safe(args.out)} every {settings.interval_s:g} s "
              "(SIGTERM or Ctrl-C stops)", file=sys.stderr, flush=True)
        return await record(feed, duration_s=args.duration, stop=stop)

    began = time.monotonic()
    try:
        error = asyncio.run(main())
    except RecordingError as exc:
        print(f"ptmon record: {safe(str(exc))}", file=sys.stderr)
        return 2
    if error is not None:
        print(f"ptmon record: {safe(error)}", file=sys.stderr)
        return 1
    print(f"ptmon record: stopped after {time.monotonic() - began:.0f} s; {safe(args.out)} is complete",
          file=sys.stderr)
    return 0
