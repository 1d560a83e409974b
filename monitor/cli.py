"""The ``ptmon`` command: argument parsing and dispatch, nothing else.

Each subcommand's work lives with the module that owns it; this file only
turns argv into keyword arguments so ``--help`` stays fast (no Textual import).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

__all__ = ["main", "build_parser"]


def _version() -> str:
    try:
        return version("ptmon")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _width(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 40:
        raise argparse.ArgumentTypeError(f"expected a width of at least 40 columns, got {text!r}")
    return value


def _seconds(text: str) -> float:
    """A positive duration: seconds as a number, or "500ms", "30s", "5m", "1h30m" as ptmon.toml takes them
    (the same parser, ``config.parse_duration``, so a value copied from the file means the same here)."""
    from ptmon.monitor.config import parse_duration

    try:
        value = parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected seconds or a duration like "500ms", "30s", "5m", "1h", '
                                         f"got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return value


def _interval(text: str) -> float:
    """An interval (a duration), refused below the monitor's minimum (the config refuses it too)."""
    from ptmon.monitor.settings import MIN_INTERVAL_S

    value = _seconds(text)
    if value < MIN_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"expected an interval of at least {MIN_INTERVAL_S:g} s, got {text!r}")
    return value


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("urls", nargs="*", metavar="[NAME=]URL",
                   help="/metrics URLs to scrape (host:port is enough), or JSONL metrics files to tail "
                        "(prime-rl's metrics.jsonl, verl's file logger: a path, or any name ending in .jsonl); "
                        "NAME= names the target (trainer=localhost:9100)")
    p.add_argument("--framework", metavar="NAME",
                   help="the framework that writes the metrics files given (prime-rl, verl, ...; default: "
                        "detected from the keys)")
    p.add_argument("--config", "-c", metavar="FILE",
                   help="ptmon.toml with targets, prices and thresholds (default: ./ptmon.toml, else "
                        "$PTMON_CONFIG, else ~/.config/ptmon/ptmon.toml; the screen says which it read)")
    p.add_argument("--no-config", action="store_true", help="read no ptmon.toml (only the command line)")
    p.add_argument("--run", metavar="NAME",
                   help="with --prometheus: only the targets of this run (the run label of their run info)")
    p.add_argument("--prometheus", metavar="URL",
                   help="read the targets from this Prometheus server (or any engine with its query API) "
                   "instead of scraping them")
    p.add_argument("--interval", type=_interval, metavar="DURATION",
                   help="scrape interval: seconds, or 500ms, 2s, 1m (default 1s)")
    p.add_argument("--window", type=_seconds, metavar="DURATION",
                   help="measurement window: seconds, or 90s, 5m, 1h (default 5m)")
    p.add_argument("--timeout", type=_seconds, metavar="DURATION",
                   help="per-target scrape timeout: seconds, or 800ms, 2s")


def _add_demo(sub: Any) -> None:
    demo = sub.add_parser("demo", help="run a synthetic post-training loop and watch it")
    demo.add_argument("--scenario", default="healthy",
                      choices=("healthy", "slow-sync", "straggler", "plateau", "crash"))
    demo.add_argument("--speed", type=_positive_float, default=None, metavar="X",
                      help="time compression factor (default 40: a minute shows 40 simulated minutes)")
    demo.add_argument("--workers", type=int, default=4, metavar="N", help="rollout workers (default 4)")
    demo.add_argument("--duration", type=_seconds, metavar="DURATION", help="stop after this long (90s, 5m, 1h)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--headless", action="store_true",
                      help="serve the exporters only; print their URLs, a ptmon.toml and a prometheus.yml")
    demo.add_argument("--port-base", type=int, metavar="N",
                      help="serve the trainer on port N, the rollout workers on N+1.., the eval job last "
                           "(default: any free ports, new each run)")
    demo.add_argument("--interval", type=_interval, metavar="DURATION", help="TUI scrape interval (500ms, 1s)")
    demo.add_argument("--sd-file", metavar="PATH",
                      help="keep the running targets in this Prometheus file_sd JSON file (put it in the "
                      "targets/ directory of `ptmon assets` to scrape the demo with the shipped prometheus.yml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptmon",
        description="Live monitor for LLM post-training loops: intelligence per dollar, "
        "rollout rate, weight-sync latency.",
    )
    parser.add_argument("--version", action="version", version=f"ptmon {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    _add_demo(sub)

    watch = sub.add_parser("watch", help="the live TUI on real targets",
                           epilog="needs a terminal: with stdout redirected it exits 2 (use ptmon snapshot "
                                  "--json, or ptmon record). Without --config it reads ./ptmon.toml, else "
                                  "$PTMON_CONFIG, else ~/.config/ptmon/ptmon.toml.")
    _add_source_args(watch)
    watch.add_argument("--record", metavar="FILE",
                       help="also record everything into FILE (appended when it exists; see ptmon record)")

    record = sub.add_parser("record", help="record a run headless into a file, for replay and compare")
    _add_source_args(record)
    record.add_argument("--out", "-o", metavar="FILE", required=True,
                        help="the recording (created, or appended to when it exists)")
    record.add_argument("--retention", metavar="DURATION",
                        help='drop data older than this, e.g. "48h" (default: keep everything)')
    record.add_argument("--duration", type=_seconds, metavar="DURATION", help="stop after this long (90s, 5m, 1h)")

    snap = sub.add_parser("snapshot", help="one measurement window as a table or JSON",
                          epilog="exit status: 0 a target answered; 1 none answered; 2 a usage or configuration "
                                 "error; 3 --fail-on's level reached")
    _add_source_args(snap)
    snap.add_argument("--over", type=_seconds, default=5.0, metavar="DURATION",
                      help="how long to scrape before printing: seconds, or 10s, 1m (default 5s)")
    snap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    snap.add_argument("--fail-on", choices=("warn", "critical"), metavar="LEVEL",
                      help="exit 3 when the level reaches LEVEL: warn (a warning or worse) or critical")
    snap.add_argument("--width", type=_width, metavar="N",
                      help="the table's width in columns; long cells end in … and rows never wrap "
                           "(default: the terminal's, or 160 when not a terminal)")
    snap.add_argument("--record", metavar="FILE", help="also record what was scraped into FILE (see ptmon record)")
    snap.add_argument("--from", dest="from_file", metavar="FILE",
                      help="read a recording instead of scraping: the Dashboard at --at as the screen showed it")
    snap.add_argument("--at", metavar="TIME",
                      help="with --from: +5m (after the start), -30s (before the end), a date-time, a clock "
                           "time or unix seconds (default: the end)")

    replay = sub.add_parser("replay", help="the TUI on a recording: pause, step, seek, 1x-100x")
    replay.add_argument("file", metavar="FILE", help="a recording of ptmon record or watch --record")
    replay.add_argument("--config", "-c", metavar="FILE", help="ptmon.toml whose prices, thresholds and evals to use")
    replay.add_argument("--at", metavar="TIME", help="start at this time (+5m, -30s, 23:50:05, unix seconds)")
    replay.add_argument("--speed", type=_positive_float, metavar="X", help="playback speed, 1 to 100 (default 1)")
    replay.add_argument("--window", type=_seconds, metavar="DURATION", help="measurement window (90s, 5m, 1h)")

    compare = sub.add_parser("compare", help="runs' eval score against dollars, and a table at equal spend")
    compare.add_argument("files", nargs="*", metavar="FILE", help="recordings (ptmon record / watch --record)")
    compare.add_argument("--config", "-c", metavar="FILE", help="ptmon.toml whose prices and eval settings to use")
    compare.add_argument("--prometheus", metavar="URL", help="read the runs from this Prometheus server instead")
    compare.add_argument("--run", dest="runs", action="append", metavar="NAME",
                         help="with --prometheus: a run to compare (the run label of its run info); twice or more")
    compare.add_argument("--since", metavar="DURATION",
                         help='with --prometheus: how far back to read each run, e.g. "48h" (default 7d)')
    compare.add_argument("--json", action="store_true", help="print JSON instead of a chart and a table")

    assets = sub.add_parser("assets", help="write a Prometheus config, rules, alerts and a Grafana dashboard")
    assets.add_argument("dir", metavar="DIR", help="directory to write them into (created if missing)")
    assets.add_argument("--force", action="store_true", help="replace existing files that differ")
    assets.add_argument("--config", "-c", metavar="FILE",
                        help="ptmon.toml whose [alerts] thresholds and [eval] marginal_k the alerting rules use "
                             "(default: ptmon's defaults)")
    return parser


def _discover_config(args: argparse.Namespace) -> str | None:
    """The commands that scrape (watch, record, snapshot) find a ptmon.toml when none is given; replay,
    compare and assets read one only when told (it overrides what a recording remembers). An error message
    when $PTMON_CONFIG names a missing file, else None (``args.config`` set to the file found)."""
    scrapes = args.command in ("watch", "record") or (args.command == "snapshot" and not args.from_file)
    if not scrapes or args.config is not None or args.no_config:
        return None
    from ptmon.monitor.config import ConfigError, find_config
    from ptmon.monitor.text import safe

    try:
        args.config = find_config()
    except ConfigError as exc:
        return f"ptmon {args.command}: {safe(str(exc))}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if (problem := _discover_config(args)) is not None:
        print(problem, file=sys.stderr)
        return 2
    if args.command == "demo":
        from ptmon.demo.launcher import run_demo

        return run_demo(args)
    if args.command == "assets":
        from ptmon.monitor.deploy.files import run_assets

        return run_assets(args)
    if args.command == "record":
        from ptmon.monitor.recording.run import run_record

        return run_record(args)
    if args.command == "compare":
        from ptmon.monitor.compare import run_compare

        return run_compare(args)
    if args.command == "replay":
        from ptmon.monitor.recording.commands import run_replay

        return run_replay(args)
    if args.command == "snapshot" and args.from_file:
        from ptmon.monitor.recording.commands import run_snapshot_from

        return run_snapshot_from(args)
    if args.command == "watch":
        from ptmon.monitor.app import run_watch

        return run_watch(args)
    from ptmon.monitor.snapshot import run_snapshot

    return run_snapshot(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
