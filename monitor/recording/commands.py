"""``ptmon replay FILE`` and ``ptmon snapshot --from FILE --at TIME``: a recording read back as the screen showed it."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ptmon.monitor.config import ConfigError, load_settings
from ptmon.monitor.recording.file import RecordingError
from ptmon.monitor.recording.meta import settings_from_json
from ptmon.monitor.recording.reader import Recording
from ptmon.monitor.recording.replay import ReplayFeed
from ptmon.monitor.recording.when import parse_at
from ptmon.monitor.settings import Settings
from ptmon.monitor.text import safe

__all__ = ["open_replay", "run_replay", "run_snapshot_from", "recorded_settings"]


def recorded_settings(recording: Recording, *, config: str | None = None, window_s: float | None = None) -> Settings:
    """The settings of the recording's last session; ``config`` (ptmon.toml) overrides prices, thresholds, evals."""
    sessions = recording.sessions()
    settings = settings_from_json(sessions[-1].settings) if sessions else Settings()
    if config is not None:
        told = load_settings(config_path=config)
        settings = replace(settings, prices=told.prices, thresholds=told.thresholds, marginal_k=told.marginal_k,
                           primary_benchmark=told.primary_benchmark, baseline_score=told.baseline_score,
                           baseline_spend_dollars=told.baseline_spend_dollars, eval_point=told.eval_point,
                           target_score=told.target_score)
    if window_s is not None:
        settings = replace(settings, window_s=window_s)
    return settings


def open_replay(path: str, *, config: str | None = None, window_s: float | None = None,
                at: str | None = None) -> ReplayFeed:
    """A ReplayFeed on ``path`` with its playhead at ``at`` (default: the start). Raises RecordingError,
    ConfigError or ValueError with a message for a person."""
    recording = Recording(path)
    try:
        feed = ReplayFeed(recording, recorded_settings(recording, config=config, window_s=window_s))
        if at is not None:
            span = recording.span()
            assert span is not None
            t = parse_at(at, start=span[0], end=span[1])
            if not span[0] <= t <= span[1]:
                raise ValueError(f"--at {at}: outside the recording ({_span_text(span)})")
            feed.playhead.seek(t)
    except BaseException:
        recording.close()
        raise
    return feed


def _span_text(span: tuple[float, float]) -> str:
    import datetime as dt

    a, b = (dt.datetime.fromtimestamp(t).isoformat(timespec="seconds") for t in span)
    return f"{a} to {b}, unix {span[0]:.3f} to {span[1]:.3f}"


def run_snapshot_from(args: argparse.Namespace) -> int:
    from ptmon.monitor.snapshot import exit_status, print_snapshot

    try:
        feed = open_replay(args.from_file, config=args.config, window_s=args.window, at=args.at or "end")
    except (RecordingError, ConfigError, ValueError) as exc:
        print(f"ptmon snapshot: {safe(str(exc))}", file=sys.stderr)
        return 2
    try:
        d = feed.dashboard_at(feed.playhead.now(), window_s=feed.settings.window_s)
    finally:
        feed.recording.close()
    print_snapshot(d, feed.events(), as_json=args.json, width=args.width, config_file=args.config)
    return exit_status(d, fail_on=args.fail_on)


def run_replay(args: argparse.Namespace) -> int:
    from ptmon.monitor.terminal import not_a_terminal

    refusal = not_a_terminal("replay", "for one moment as a table or JSON use `ptmon snapshot --from FILE --at TIME`")
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    try:
        feed = open_replay(args.file, config=args.config, window_s=args.window, at=args.at)
        if args.speed is not None:
            feed.playhead.set_speed(args.speed)
    except (RecordingError, ConfigError, ValueError) as exc:
        print(f"ptmon replay: {safe(str(exc))}", file=sys.stderr)
        return 2
    from ptmon.monitor.recording.replay_app import ReplayApp

    app = ReplayApp(feed, title=f"ptmon replay · {args.file}")
    app.run()
    return app.return_code or 0
