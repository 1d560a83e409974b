"""``ptmon compare A.rec B.rec ...``: runs side by side on what post-training buys, at equal spend.

Runs that cost different amounts cannot be compared at their ends: the one
that ran longer has spent more and should score more. So each run's eval
score is drawn against dollars on one chart, and the table reads every run
at the same spend: the largest spend all of them reached (the smallest of
their final spends), S*.

At S*, per run (definitions as the live screen's, read at that moment):

- **score**: the latest eval placed at a spend at or below S* (what the
  screen showed then; no interpolation between evals);
- **IPD**: (score − baseline score) / (S* − baseline spend) × 1000, the
  baseline being the run's first eval (or the configured one);
- **marginal IPD**: the least-squares slope of score on spend over the last
  K evals at or below S*, × 1000;
- **burn, weight-sync p99, rollouts/s, $ per million rollout tokens**: the
  Dashboard over the recording's window at the first moment the run's spend
  reached S* (looked for forward in steps of the interval, or of 1/1000 of
  the recording when that is longer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from ptmon.monitor.dashboard import Dashboard, EvalPoint
from ptmon.monitor.derive import least_squares_slope
from ptmon.monitor.format import fmt_money, fmt_num, fmt_score, fmt_seconds, lit

__all__ = ["RunCurve", "RunAtSpend", "at_spend", "equal_spend", "summarize", "compare_table", "chart_lines"]

_REL = 1e-9  # spends equal to within float rounding count as reached


@dataclass(frozen=True, slots=True)
class RunCurve:
    """One run as the comparison needs it: its name, eval curve, final spend, and K for the marginal IPD."""

    name: str
    curve: tuple[EvalPoint, ...]
    spend_dollars: float | None
    marginal_k: int = 5
    baseline_score: float | None = None  # configured; None: the first eval
    baseline_spend_dollars: float = 0.0


@dataclass(frozen=True, slots=True)
class RunAtSpend:
    name: str
    spend_dollars: float | None  # the run's final spend
    score: float | None
    ipd_points_per_kilodollar: float | None
    marginal_ipd_points_per_kilodollar: float | None
    burn_dollars_per_hour: float | None = None
    weight_sync_p99_s: float | None = None
    rollout_rate_per_s: float | None = None
    dollars_per_million_rollout_tokens: float | None = None
    at: float | None = None  # when the run's spend reached S* (unix)


def equal_spend(runs: Sequence[RunCurve]) -> float | None:
    """S*: the largest spend every run reached; None when a run's spend is unknown."""
    spends = [r.spend_dollars for r in runs]
    if not spends or any(s is None or not math.isfinite(s) for s in spends):
        return None
    return min(s for s in spends if s is not None)


def at_spend(run: RunCurve, spend: float) -> RunAtSpend:
    """The run's score, IPD and marginal IPD at ``spend`` (see the module's definitions)."""
    reached = [p for p in run.curve if p.spend_dollars <= spend * (1 + _REL)]
    latest = reached[-1] if reached else None
    if run.baseline_score is not None:
        base_score, base_spend = run.baseline_score, run.baseline_spend_dollars
    elif run.curve:
        base_score, base_spend = run.curve[0].score, run.curve[0].spend_dollars
    else:
        base_score = base_spend = math.nan
    ipd = None
    if latest is not None and spend - base_spend > 0 and (run.baseline_score is not None or len(reached) >= 2):
        ipd = (latest.score - base_score) / (spend - base_spend) * 1000.0
    last_k = reached[-run.marginal_k:] if run.marginal_k >= 2 else []
    slope = least_squares_slope([p.spend_dollars for p in last_k], [p.score for p in last_k])
    return RunAtSpend(name=run.name, spend_dollars=run.spend_dollars, score=latest.score if latest else None,
                      ipd_points_per_kilodollar=ipd,
                      marginal_ipd_points_per_kilodollar=None if slope is None else slope * 1000.0)


def with_dashboard(row: RunAtSpend, d: Dashboard | None) -> RunAtSpend:
    """``row`` with the numbers of the Dashboard at the moment the run reached S*."""
    if d is None:
        return row
    from dataclasses import replace

    return replace(row, burn_dollars_per_hour=d.burn_dollars_per_hour, weight_sync_p99_s=d.weight_sync_p99_s,
                   rollout_rate_per_s=d.rollout_rate_per_s,
                   dollars_per_million_rollout_tokens=d.dollars_per_million_rollout_tokens, at=d.now)


# --- from recordings ----------------------------------------------------------------------------------


def _dashboard_reaching(feed: Any, spend: float) -> Dashboard | None:
    """The first Dashboard (stepping forward) whose spend reached ``spend``; None if the recording never did."""
    head = feed.playhead
    step = max(feed.settings.interval_s, (head.end - head.start) / 1000.0)
    t = head.start
    while True:
        d: Dashboard = feed.dashboard_at(t, window_s=feed.settings.window_s)
        if d.spend_dollars is not None and d.spend_dollars >= spend * (1 - _REL):
            return d
        if t >= head.end:
            return None
        t = min(head.end, t + step)


def _open(path: str, config: str | None) -> tuple[Any, RunCurve]:
    from ptmon.monitor.recording.commands import open_replay

    feed = open_replay(path, config=config)
    end = feed.dashboard_at(feed.playhead.end, window_s=feed.settings.window_s)
    s = feed.settings
    name = end.run or Path(path).stem
    return feed, RunCurve(name=name, curve=end.eval_curve, spend_dollars=end.spend_dollars, marginal_k=s.marginal_k,
                          baseline_score=s.baseline_score, baseline_spend_dollars=s.baseline_spend_dollars or 0.0)


def summarize(paths: Sequence[str], *, config: str | None = None) -> tuple[float | None, list[RunCurve],
                                                                           list[RunAtSpend]]:
    """(S*, each run's curve, each run at S*) for recordings ``paths``."""
    from ptmon.monitor.recording.commands import open_replay

    runs: list[RunCurve] = []
    for path in paths:
        feed, run = _open(path, config)
        feed.recording.close()
        runs.append(run)
    target = equal_spend(runs)
    rows: list[RunAtSpend] = []
    for path, run in zip(paths, runs, strict=True):
        if target is None:
            rows.append(RunAtSpend(name=run.name, spend_dollars=run.spend_dollars, score=None,
                                   ipd_points_per_kilodollar=None, marginal_ipd_points_per_kilodollar=None))
            continue
        feed = open_replay(path, config=config)  # from the start again: the walk to S* goes forward only
        try:
            rows.append(with_dashboard(at_spend(run, target), _dashboard_reaching(feed, target)))
        finally:
            feed.recording.close()
    return target, runs, rows


# --- output -------------------------------------------------------------------------------------------

_MARKS = "●▲■◆✚✖"
_COLOURS = ("cyan", "magenta", "yellow", "green", "red", "blue")


def compare_table(rows: Sequence[RunAtSpend], spend: float | None) -> Table:
    title = f"at equal spend: {fmt_money(spend)} (the largest spend every run reached)"
    table = Table(title=title)
    for col in ("run", "spent in all", "score", "IPD pts/$1k", "marginal IPD", "burn $/h", "sync p99",
                "rollouts/s", "$ per 1M tokens"):
        table.add_column(col, justify="left" if col == "run" else "right")
    for i, r in enumerate(rows):
        table.add_row(Text(f"{_MARKS[i % len(_MARKS)]} ", style=_COLOURS[i % len(_COLOURS)]) + lit(r.name),
                      fmt_money(r.spend_dollars), fmt_score(r.score), fmt_num(r.ipd_points_per_kilodollar),
                      fmt_num(r.marginal_ipd_points_per_kilodollar), fmt_money(r.burn_dollars_per_hour),
                      fmt_seconds(r.weight_sync_p99_s), fmt_num(r.rollout_rate_per_s),
                      fmt_money(r.dollars_per_million_rollout_tokens))
    return table


def chart_lines(runs: Sequence[RunCurve], *, width: int = 64, height: int = 14,
                spend: float | None = None) -> list[Text]:
    """Every run's score (y) against dollars spent (x) on one text chart; ┊ marks the equal spend."""
    points = [(p.spend_dollars, p.score) for r in runs for p in r.curve]
    if not points:
        return [Text("no evals in any run: nothing to chart", style="dim")]
    x0, x1 = min(x for x, _ in points), max(x for x, _ in points)
    y0, y1 = min(y for _, y in points), max(y for _, y in points)
    xs, ys = (x1 - x0) or 1.0, (y1 - y0) or 1.0
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * width for _ in range(height)]
    if spend is not None and x0 <= spend <= x1:
        col = round((spend - x0) / xs * (width - 1))
        for cells in grid:
            cells[col] = ("┊", "dim")
    for i, r in enumerate(runs):
        mark, colour = _MARKS[i % len(_MARKS)], _COLOURS[i % len(_COLOURS)]
        for p in r.curve:
            col = round((p.spend_dollars - x0) / xs * (width - 1))
            y = height - 1 - round((p.score - y0) / ys * (height - 1))
            grid[y][col] = (mark, colour)
    lines = []
    for k, row in enumerate(grid):
        label = fmt_score(y1) if k == 0 else fmt_score(y0) if k == height - 1 else ""
        line = Text(f"{label:>7} │")
        for ch, style in row:
            line.append(ch, style=style)
        lines.append(line)
    lines.append(Text(" " * 8 + "└" + "─" * width))
    lines.append(Text(f"{'':9}{fmt_money(x0):<{width // 2}}{fmt_money(x1):>{width - width // 2}}  $ spent"))
    return lines


def to_json(spend: float | None, rows: Sequence[RunAtSpend], runs: Sequence[RunCurve]) -> dict[str, Any]:
    from dataclasses import asdict

    def clean(v: Any) -> Any:
        return None if isinstance(v, float) and not math.isfinite(v) else v

    return {"equal_spend_dollars": spend,
            "runs": [{**{k: clean(v) for k, v in asdict(r).items()},
                      "curve": [[p.spend_dollars, p.score] for p in c.curve]} for r, c in zip(rows, runs, strict=True)]}


def _summarize_args(args: Any) -> tuple[float | None, list[RunCurve], list[RunAtSpend]]:
    """Recordings, or with ``--prometheus`` the named runs on that server; ValueError for a mix or neither."""
    prometheus, names = getattr(args, "prometheus", None), getattr(args, "runs", None) or []
    if prometheus is None:
        if names or getattr(args, "since", None):
            raise ValueError("--run and --since go with --prometheus URL")
        if not args.files:
            raise ValueError("give recordings to compare (A.rec B.rec), or --prometheus URL --run a --run b")
        return summarize(args.files, config=args.config)
    if args.files:
        raise ValueError("compare recordings or runs on --prometheus, not both")
    from ptmon.monitor.compare_prometheus import DEFAULT_SINCE_S, summarize_prometheus
    from ptmon.monitor.config import load_settings, parse_duration

    since = DEFAULT_SINCE_S
    if args.since is not None:
        try:
            since = parse_duration(args.since)
        except (TypeError, ValueError):
            raise ValueError(f'--since {args.since!r}: expected a duration such as "48h" or "90m"') from None
    return summarize_prometheus(load_settings(config_path=args.config, prometheus_url=prometheus), names,
                                since_s=since)


def run_compare(args: Any) -> int:
    """``ptmon compare A.rec B.rec ... | --prometheus URL --run a --run b [--since D]``, ``[--config FILE]
    [--json]``: exit 2 when a file or the server cannot be read."""
    import json
    import sys

    from rich.console import Console

    from ptmon.monitor.config import ConfigError
    from ptmon.monitor.recording.file import RecordingError
    from ptmon.monitor.text import safe

    try:
        spend, runs, rows = _summarize_args(args)
    except (RecordingError, ConfigError, ValueError) as exc:
        print(f"ptmon compare: {safe(str(exc))}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(to_json(spend, rows, runs), indent=2, allow_nan=False))
        return 0
    console = Console()
    console.print(Text("eval score against $ spent", style="bold"))
    for line in chart_lines(runs, spend=spend):
        console.print(line)
    console.print(compare_table(rows, spend))
    if spend is None:
        console.print(Text("a run's spend is unknown: no equal spend to compare at", style="yellow"))
    return 0
