"""``ptmon snapshot``: one measurement window, printed as a table or JSON.

For scripts and CI: scrape the targets for ``--over`` seconds, build one
Dashboard (alerts included) and print it. The window is the time actually
scraped (capped by ``--window``): a 5-second snapshot divided over a 300 s
range would report a fiftieth of the true rate.

Exit status (``EXIT_*``): 0 when at least one target answered, 1 when none
did, 2 for a usage or configuration error (the message names the file and
key), 3 when ``--fail-on warn|critical`` is given and the dashboard's level
reached it (warn: a warning or a critical alert; critical: a critical one);
none answering is 1 whatever ``--fail-on`` says. Unknown numbers
are JSON null and "—" in the table, never a made-up 0; every string that came
from a target is printed literally (no Rich markup, no terminal controls).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ptmon.monitor.config import ConfigError, config_warnings, load_settings
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.events import Event, events_json
from ptmon.monitor.format import (
    DASH,
    fmt_bytes_rate,
    fmt_duration,
    fmt_eta,
    fmt_money,
    fmt_next_point,
    fmt_num,
    fmt_pm,
    fmt_point,
    fmt_score,
    fmt_seconds,
    fmt_version,
    lit,
)
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Store
from ptmon.monitor.text import safe

__all__ = ["run_snapshot", "collect", "to_json", "render", "snapshot_console", "exit_status", "print_snapshot",
           "DEFAULT_WIDTH",
           "EXIT_OK", "EXIT_NO_ANSWER", "EXIT_USAGE", "EXIT_LEVEL"]

EXIT_OK, EXIT_NO_ANSWER, EXIT_USAGE, EXIT_LEVEL = 0, 1, 2, 3
# The table's width when stdout is no terminal (a pipe, a file, a CI log) and --width is not given: Rich's
# 80 columns cut URLs and errors short; lines no longer than this stay readable in a log viewer.
DEFAULT_WIDTH = 160
_LEVEL_RANK = {"ok": 0, "warn": 1, "critical": 2}


def exit_status(d: Dashboard, *, fail_on: str | None = None) -> int:
    """The snapshot's exit status (see the module's docstring): 1 when no target answered, 3 when the
    dashboard's level reached ``fail_on`` ("warn" or "critical"), else 0."""
    if not any(t.last_success is not None for t in d.targets):
        return EXIT_NO_ANSWER
    if fail_on is not None and _LEVEL_RANK[d.level] >= _LEVEL_RANK[fail_on]:
        return EXIT_LEVEL
    return EXIT_OK


def print_snapshot(d: Dashboard, events: Sequence[Event], *, as_json: bool, width: int | None,
                   config_file: str | None) -> None:
    """The snapshot as the command prints it, live or from a recording: JSON with the event log, else
    the table."""
    if as_json:
        out = to_json(d, config_file=config_file)
        out["events"] = events_json(events, now=d.now)
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        render(d, snapshot_console(width=width), config_file=config_file)


def snapshot_console(*, width: int | None = None, file: Any = None) -> Console:
    """The console the table is printed on: ``width`` columns, else the terminal's, else DEFAULT_WIDTH."""
    out = file or sys.stdout
    if width is None and not (hasattr(out, "isatty") and out.isatty()):
        width = DEFAULT_WIDTH
    return Console(file=out, width=width)


async def collect(settings: Settings, *, over: float, feed: Any = None) -> Dashboard:
    """Scrape ``settings``' targets on their schedules for ``over`` seconds; the Dashboard at the end.

    ``feed``: a LiveFeed, or one wrapping it with a ``store`` (recording, event log); default a LiveFeed.
    """
    feed = feed or LiveFeed(settings)
    try:
        await feed.start()
        await asyncio.sleep(over)
        d = await feed.dashboard(window_s=settings.window_s)
        first = _first_data(feed.store)
        # Through Prometheus the server evaluates over the window, shortened by the source itself to the
        # data's age; a shorter window here would only miss that answer.
        if first is not None and settings.prometheus is None:
            # The range PromQL would need for these points: first scrape to now, plus half an interval
            # so the first point sits inside it and rate() reads the plain slope. (Not d.started_at:
            # that is the run's start when the exporters tell it, long before this snapshot began.)
            scraped = d.now - first + settings.interval_s / 2
            if scraped < settings.window_s:
                d = await feed.dashboard(window_s=scraped)
        return d
    finally:
        await feed.aclose()


def _first_data(store: Store) -> float | None:
    """The time of the earliest data held: this snapshot's first scrape, or a Prometheus backfill's start."""
    firsts = [t0 for target in store.targets() if (t0 := store.first_scrape(target)) is not None]
    return min(firsts) if firsts else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


# Fields that count things (syncs, failures, policy versions, eval samples): JSON integers when whole
# (``4``, not ``4.0``, for a script comparing with ==). A count read through Prometheus' increase() can be
# fractional (it extrapolates to the window's edges) and stays as it came; rates and means stay floats.
_COUNTS = ("weight_sync_count", "weight_sync_failures", "weight_sync_failures_in_a_row", "policy_version",
           "staleness_max", "eval_samples")
_ROW_COUNTS = {"workers": ("policy_version", "staleness"), "eval_curve": ("samples", "policy_version")}


def _whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _counts_as_integers(out: dict[str, Any]) -> None:
    for key in _COUNTS:
        out[key] = _whole(out[key])
    for rows, keys in _ROW_COUNTS.items():
        for row in out[rows]:
            for key in keys:
                row[key] = _whole(row[key])


def to_json(d: Dashboard, *, config_file: str | None = None) -> dict[str, Any]:
    """Every Dashboard field (nulls for unknowns, whole counts as integers) plus ``level``, ``targets_up``
    and ``config_file`` (the ptmon.toml read, null for none)."""
    out: dict[str, Any] = _jsonable(dataclasses.asdict(d))
    _counts_as_integers(out)
    out["spend_by_role"] = {role: dollars for role, dollars in d.spend_by_role}
    out["level"] = d.level
    out["targets_up"] = d.targets_up
    out["config_file"] = config_file
    return out


# --- table ----------------------------------------------------------------------------------
# Numbers go through monitor.format, the live screen's formatters: the same value reads the same in
# `ptmon watch` and `ptmon snapshot` (3 significant figures with k/M suffixes, ms below a second,
# cents below $100), and None/NaN/Inf print as a dash.


def _unit(text: str, unit: str) -> str:
    return text if text == DASH else f"{text}{unit}"


def _pair(a: str, b: str) -> str:
    return f"{a} / {b}"


def _by_role(spend: tuple[tuple[str, float], ...]) -> Text:
    """Spend per role; the roles are scraped label values, so each goes through ``lit``."""
    if not spend:
        return Text(DASH)
    out = Text()
    for i, (role, dollars) in enumerate(spend):
        if i:
            out.append(", ")
        out.append_text(lit(role))
        out.append(f" {fmt_money(dollars)}")
    return out


def _spend(d: Dashboard) -> Text:
    """Spend, or why it is unknown: the targets are scraped names, so each goes through ``lit``."""
    if not d.gpus_unknown:
        return Text(fmt_money(d.spend_dollars))
    out = Text("unknown: no GPU count from ")
    for i, name in enumerate(d.gpus_unknown):
        if i:
            out.append(", ")
        out.append_text(lit(name))
    out.append(" (gpus= or PTMON_GPUS)")
    return out


_SECTIONS: tuple[tuple[str, tuple[tuple[str, Callable[[Dashboard], str | Text]], ...]], ...] = (
    ("Rollouts", (
        ("rollouts/s", lambda d: fmt_num(d.rollout_rate_per_s)),
        ("rollout tokens/s", lambda d: fmt_num(d.rollout_tokens_per_s)),
        ("rollouts/s, 10-min median", lambda d: fmt_num(d.rollout_rate_median_10m)),
        ("errors/s", lambda d: fmt_num(d.rollout_error_rate_per_s)),
        ("engine tokens/s", lambda d: fmt_num(d.engine_tokens_per_s)),
        ("engine running / queued", lambda d: _pair(fmt_num(d.engine_requests_running),
                                                    fmt_num(d.engine_queue_depth))),
        ("KV cache", lambda d: _unit(fmt_num(None if d.engine_kv_cache_usage is None
                                             else d.engine_kv_cache_usage * 100), "%")),
    )),
    ("Weight sync", (
        ("p50 / p90 / p99", lambda d: " / ".join(fmt_seconds(x) for x in
                                                  (d.weight_sync_p50_s, d.weight_sync_p90_s, d.weight_sync_p99_s))),
        ("last / max", lambda d: _pair(fmt_seconds(d.weight_sync_last_s), fmt_seconds(d.weight_sync_max_s))
         + (" (per-scrape means)" if d.weight_sync_averaged else "")),
        ("syncs in window", lambda d: fmt_num(d.weight_sync_count)),
        ("bytes/s", lambda d: fmt_bytes_rate(d.weight_sync_bytes_per_s)),
        ("failures in window", lambda d: fmt_num(d.weight_sync_failures)),
        ("policy version", lambda d: fmt_version(d.policy_version)),
        ("policy unchanged for", lambda d: fmt_duration(d.policy_held_s)),
        ("staleness max / mean", lambda d: _pair(fmt_num(d.staleness_max), fmt_num(d.staleness_mean))),
    )),
    ("Trainer", (
        ("steps/s", lambda d: fmt_num(d.steps_per_s)),
        ("step time mean / median", lambda d: _pair(fmt_seconds(d.step_seconds), fmt_seconds(d.step_seconds_median))),
        ("since last step", lambda d: fmt_duration(d.seconds_since_last_step)),
        ("tokens/s", lambda d: fmt_num(d.trainer_tokens_per_s)),
        ("loss", lambda d: fmt_num(d.loss)),
        ("phase", lambda d: lit(d.trainer_phase) if d.trainer_phase is not None else Text(DASH)),
        ("generation buffer / capacity", lambda d: _pair(fmt_num(d.generation_buffer),
                                                          fmt_num(d.generation_buffer_max))),
    )),
    ("GPUs", (
        ("utilisation (mean)", lambda d: _unit(fmt_num(d.gpu_util_percent), "%")),
        ("power (total)", lambda d: _unit(fmt_num(d.gpu_power_watts), " W")),
    )),
    ("Cost", (
        ("spend", lambda d: _spend(d)),
        ("by role", lambda d: _by_role(d.spend_by_role)),
        ("burn", lambda d: _unit(fmt_money(d.burn_dollars_per_hour), "/h")),
        ("per 1M rollout tokens", lambda d: fmt_money(d.dollars_per_million_rollout_tokens)),
    )),
    ("Intelligence per dollar", (
        ("score (latest) / baseline", lambda d: _pair(fmt_pm(fmt_score(d.score), d.score_se, fmt_score),
                                                       fmt_score(d.baseline_score))),
        ("evals seen", lambda d: str(len(d.eval_curve))),
        ("points per $1k (cumulative)", lambda d: fmt_pm(fmt_num(d.ipd_points_per_kilodollar),
                                                         d.ipd_se_points_per_kilodollar)),
        ("points per $1k (marginal)", lambda d: fmt_pm(fmt_num(d.marginal_ipd_points_per_kilodollar),
                                                       d.marginal_ipd_se_points_per_kilodollar)),
        ("$ per next point", lambda d: fmt_next_point(d.dollars_per_next_point, d.next_point_never)),
        ("point", lambda d: fmt_point(d.eval_point).removeprefix("+") + " of score"),
        ("budget to target", lambda d: DASH if d.target_score is None else f"{fmt_score(d.target_score)}: " + fmt_eta(
            d.eta_status, d.eta_dollars, d.eta_dollars_se, d.eta_hours, d.eta_hours_se, d.eta_maybe_never)),
    )),
)


def _framework_rows(d: Dashboard, numbers: Table) -> None:
    """The framework's own staleness and bubbles, each with its definition (sources are scraped: ``lit``)."""
    if not d.framework_staleness and not d.bubbles:
        return
    numbers.add_row(Text("The framework's own", style="underline"), Text())
    for source, mean, worst, definition in d.framework_staleness:
        label = Text("staleness max / mean (")
        label.append_text(lit(source))
        label.append(")")
        numbers.add_row(label, _cell(_pair(fmt_num(worst), fmt_num(mean))))
        numbers.add_row(Text("  defined as", style="dim"), Text(definition, style="dim"))
    for reason, share, dollars, definition in d.bubbles:
        value = f"{fmt_num(share * 100, 2)}% of wall time"
        if dollars is not None:
            value += f", {fmt_money(dollars)}/h burnt waiting"
        numbers.add_row(Text(f"bubble: {reason}"), Text(value))
        numbers.add_row(Text("  defined as", style="dim"), Text(definition, style="dim"))


def _cell(value: str | Text) -> Text:
    """Every cell a ``Text``: a plain ``str`` cell would be parsed as Rich markup. One line, always: a cell
    too long for its column ends in ``…`` (a table that folds its rows cannot be read in a log or grepped)."""
    text = value.copy() if isinstance(value, Text) else Text(safe(value))
    text.no_wrap, text.overflow = True, "ellipsis"
    return text


def _table(title: str, columns: tuple[str, ...], *, long: tuple[str, ...]) -> Table:
    """A table whose ``long`` columns (URLs, errors, messages) give up width first; the short ones (up,
    series, numbers) keep theirs, so a number is never the cell cut."""
    table = Table(title=title)
    for col in columns:
        table.add_column(col, no_wrap=col not in long, overflow="ellipsis")
    return table


def render(d: Dashboard, console: Console, *, config_file: str | None = None) -> None:
    """The Dashboard as Rich tables; scraped strings go through ``lit``, numbers through ``ptmon.monitor.format``.

    Every cell is a ``Text`` (``_cell``), never a ``str``: Rich reads a ``str`` cell as markup, so one
    scraped string joined into a plain one (the "by role" row once was) could style or hide output.
    """
    title = Text("ptmon snapshot  ")
    title.append(lit(d.run or "unknown run"))
    for part in (d.model, d.algorithm):
        if part:
            title.append("  ")
            title.append(lit(part))
    title.append(f"  window {d.window_s:.0f} s  targets up {d.targets_up}/{len(d.targets)}  level {d.level}")
    console.print(_cell(title))
    console.print(_cell(Text("config ") + lit(config_file) if config_file else Text("no config file")), style="dim")

    numbers = Table(show_header=False, box=None, pad_edge=False)
    numbers.add_column(style="bold", no_wrap=True)
    numbers.add_column(justify="right", overflow="ellipsis")
    for section, rows in _SECTIONS:
        numbers.add_row(Text(section, style="underline"), Text())
        if section == "Intelligence per dollar":
            numbers.add_row(_cell("benchmark"), _cell(lit(d.benchmark)))
        for label, value in rows:
            numbers.add_row(_cell(label), _cell(value(d)))
    _framework_rows(d, numbers)
    console.print(numbers)

    targets = _table("Targets", ("name", "url", "role", "up", "series", "error"), long=("name", "url", "error"))
    for t in d.targets:
        up = DASH if t.up is None else ("DOWN" if not t.up else "up" if t.recognised is not False
                                        else "up, nothing recognised")
        problem = t.error or (f"warning: {t.warning}" if t.warning else None)
        targets.add_row(*map(_cell, (lit(t.name), lit(t.url), lit(t.role), Text(up), Text(str(t.series)),
                                     lit(problem))))
    console.print(targets)

    if d.workers:
        workers = _table("Workers", ("name", "role", "status", "rollouts/s", "tokens/s", "policy", "staleness"),
                         long=("name",))
        for w in d.workers:
            numbers_shown = (fmt_num(w.rollouts_per_s), fmt_num(w.tokens_per_s), fmt_version(w.policy_version),
                             fmt_num(w.staleness))
            workers.add_row(*map(_cell, (lit(w.name), lit(w.role), lit(w.status), *map(Text, numbers_shown))))
        console.print(workers)

    alerts = _table("Alerts", ("level", "alert", "message"), long=("message",))
    for a in d.alerts:
        alerts.add_row(*map(_cell, (lit(a.level), lit(a.name), lit(a.message))))
    if not d.alerts:
        alerts.add_row(_cell("ok"), _cell(DASH), _cell("no alerts"))
    console.print(alerts)


def run_snapshot(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(config_path=args.config, urls=args.urls, interval_s=args.interval,
                                 window_s=args.window, timeout_s=args.timeout,
                                 prometheus_url=getattr(args, "prometheus", None), run=getattr(args, "run", None),
                                 framework=getattr(args, "framework", None))
    except ConfigError as exc:
        print(f"ptmon snapshot: {safe(str(exc))}", file=sys.stderr)
        return 2
    for warning in config_warnings(settings):
        print(f"ptmon snapshot: warning: {warning}", file=sys.stderr)
    if not settings.targets and settings.prometheus is None:
        print("ptmon snapshot: no targets: give /metrics URLs or JSONL metrics files, --prometheus URL, or a "
              "--config with [[targets]]", file=sys.stderr)
        return 2
    from ptmon.monitor.events import EventsFeed

    inner: Any = LiveFeed(settings)
    if getattr(args, "record", None):
        from ptmon.monitor.recording import RecordingError, recording_feed

        try:
            inner = recording_feed(settings, args.record, history=False)
        except RecordingError as exc:
            print(f"ptmon snapshot: {safe(str(exc))}", file=sys.stderr)
            return 2
    feed = EventsFeed(inner)
    d = asyncio.run(collect(settings, over=args.over, feed=feed))
    print_snapshot(d, feed.events(), as_json=args.json, width=args.width, config_file=settings.config_file)
    status = exit_status(d, fail_on=args.fail_on)
    if status == EXIT_NO_ANSWER:
        print(f"ptmon snapshot: {_none_answered(d)}", file=sys.stderr)
    elif status == EXIT_LEVEL:
        print(f"ptmon snapshot: level {d.level} (--fail-on {args.fail_on})", file=sys.stderr)
    return status


def _none_answered(d: Dashboard) -> str:
    """Why there is nothing to show: a row not down that says why (a Prometheus that answered but holds
    no ptmon series, or is still busy with its first query), else that no target answered."""
    return next((t.error for t in d.targets if t.up is not False and t.error), None) or "no target answered"
