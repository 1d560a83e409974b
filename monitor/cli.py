"""The ``ptmon`` command: argument parsing and dispatch, nothing else.

Each subcommand's work lives with the module that owns it; this file only
turns argv into keyword arguments so ``--help`` stays fast (no Textual import).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

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
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _interval(text: str) -> float:
    """An interval in seconds, refused below the monitor's minimum (the config refuses it too)."""
    from ptmon.monitor.settings import MIN_INTERVAL_S

    value = _positive_float(text)
    if value < MIN_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"expected an interval of at least {MIN_INTERVAL_S:g} s, got {text!r}")
    return value


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("urls", nargs="*", metavar="URL", help="/metrics URLs to scrape (host:port is enough)")
    p.add_argument("--config", "-c", metavar="FILE", help="ptmon.toml with targets, prices and thresholds")
    p.add_argument("--run", metavar="NAME",
                   help="with --prometheus: only the targets of this run (the run label of their run info)")
    p.add_argument("--prometheus", metavar="URL",
                   help="read the targets from this Prometheus server (or any engine with its query API) "
                   "instead of scraping them")
    p.add_argument("--interval", type=_interval, metavar="S", help="scrape interval in seconds (default 1)")
    p.add_argument("--window", type=_positive_float, metavar="S", help="measurement window in seconds (default 300)")
    p.add_argument("--timeout", type=_positive_float, metavar="S", help="per-target scrape timeout in seconds")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptmon",
        description="Live monitor for LLM post-training loops: intelligence per dollar, "
        "rollout rate, weight-sync latency.",
    )
    parser.add_argument("--version", action="version", version=f"ptmon {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="run a synthetic post-training loop and watch it")
    demo.add_argument("--scenario", default="healthy",
                      choices=("healthy", "slow-sync", "straggler", "plateau", "crash"))
    demo.add_argument("--speed", type=_positive_float, default=None, metavar="X",
                      help="time compression factor (default 40: a minute shows 40 simulated minutes)")
    demo.add_argument("--workers", type=int, default=4, metavar="N", help="rollout workers (default 4)")
    demo.add_argument("--duration", type=_positive_float, metavar="S", help="stop after S seconds")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--headless", action="store_true",
                      help="serve the exporters only; print their URLs and a prometheus.yml")
    demo.add_argument("--interval", type=_interval, metavar="S", help="TUI scrape interval")
    demo.add_argument("--sd-file", metavar="PATH",
                      help="keep the running targets in this Prometheus file_sd JSON file (put it in the "
                      "targets/ directory of `ptmon assets` to scrape the demo with the shipped prometheus.yml)")

    watch = sub.add_parser("watch", help="the live TUI on real targets")
    _add_source_args(watch)
    watch.add_argument("--record", metavar="FILE",
                       help="also record everything into FILE (appended when it exists; see ptmon record)")

    record = sub.add_parser("record", help="record a run headless into a file, for replay and compare")
    _add_source_args(record)
    record.add_argument("--out", "-o", metavar="FILE", required=True,
                        help="the recording (created, or appended to when it exists)")
    record.add_argument("--retention", metavar="DURATION",
                        help='drop data older than this, e.g. "48h" (default: keep everything)')
    record.add_argument("--duration", type=_positive_float, metavar="S", help="stop after S seconds")

    snap = sub.add_parser("snapshot", help="one measurement window as a table or JSON")
    _add_source_args(snap)
    snap.add_argument("--over", type=_positive_float, default=5.0, metavar="S",
                      help="seconds to scrape before printing (default 5)")
    snap.add_argument("--json", action="store_true", help="print JSON instead of a table")
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
    replay.add_argument("--window", type=_positive_float, metavar="S", help="measurement window in seconds")

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
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
