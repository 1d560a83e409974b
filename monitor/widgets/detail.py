"""The Enter screen: one target or rollout worker in detail; Escape goes back to the tables.

It draws a ``ptmon.monitor.detail.TargetDetail`` and nothing else: the
numbers are built from the store by the feed (``LiveFeed.detail``), or from
the Dashboard alone when the feed keeps no store (``detail_from_health``).
It refreshes once a second while open, and not while the app is paused.
Everything scraped (names, labels, errors, URLs) goes through ``lit``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.detail import ScrapeRecord, TargetDetail, detail_from_health
from ptmon.monitor.format import DASH, fmt_duration, fmt_num, fmt_rate, fmt_seconds, fmt_version, lit

__all__ = ["DetailScreen", "detail_renderable", "detail_for", "HISTORY_SHOWN"]

HISTORY_SHOWN = 15  # attempts listed one a line (the strip above them shows up to 60)
_STRIP = 60


def detail_for(feed: Any, dashboard: Dashboard | None, name: str, *, now: float,
               window_s: float) -> TargetDetail | None:
    """``name``'s detail from the feed when it builds one, else from what the Dashboard says of it."""
    worker = next((w for w in dashboard.workers if w.name == name), None) if dashboard else None
    build = getattr(feed, "detail", None)
    built = build(name, window_s=window_s, worker=worker) if callable(build) else None
    if built is not None:
        return built
    health = next((t for t in dashboard.targets if t.name == name), None) if dashboard else None
    return None if health is None else detail_from_health(health, now=now, window_s=window_s, worker=worker)


def _clock(t: float | None) -> str:
    return DASH if t is None else dt.datetime.fromtimestamp(t).strftime("%H:%M:%S")


def _ago(now: float, t: float | None) -> str:
    return DASH if t is None else f"{_clock(t)} ({fmt_duration(max(0.0, now - t))} ago)"


def _raw(v: float) -> str:
    """A series' value as sent: integers whole, others to 10 figures, NaN and ±Inf by name."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return f"{int(v)}" if v == int(v) and abs(v) < 2**53 else f"{v:.10g}"


def _grid(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for c in columns:
        table.add_column(c, no_wrap=True)
    return table


def _section(title: str, body: RenderableType) -> Group:
    return Group(Text(""), Text(title, style="bold underline"), body)


def _health(d: TargetDetail) -> Table:
    h, now = d.health, d.now
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    up = Text("… not scraped yet", style="dim") if h.up is None else (
        Text("● up", style="green") if h.up else Text("✗ DOWN", style="bold red"))
    if h.up is False and h.error:
        up.append(": ")
        up.append_text(lit(h.error))
    table.add_row("state", up)
    table.add_row("role", lit(h.role))
    table.add_row("url", lit(h.url))
    table.add_row("last scrape", _ago(now, h.last_scrape))
    table.add_row("last good scrape", _ago(now, h.last_success))
    table.add_row("scrape took", fmt_seconds(h.scrape_seconds))
    table.add_row("samples / series", f"{fmt_num(h.samples)} / {fmt_num(h.series)}"
                  + (f" ({fmt_num(h.dropped_series)} dropped over the cap)" if h.dropped_series else ""))
    last = d.last_failure
    error = Text(DASH, style="dim") if last is None else Text.assemble(f"{_clock(last.at)} ", lit(last.error))
    table.add_row("last error", error)
    return table


def _worker(d: TargetDetail) -> Table | Text:
    w = d.worker
    if w is None:
        return Text("not a rollout worker", style="dim")
    table = _grid("rollouts/s", "tokens/s", "policy", "staleness", "reward", "status")
    table.add_row(fmt_num(w.rollouts_per_s), fmt_rate(w.tokens_per_s, ""), fmt_version(w.policy_version),
                  fmt_num(w.staleness), fmt_num(w.mean_reward), lit(w.status))
    return table


def _envs(d: TargetDetail) -> Table | Text:
    if not d.envs:
        return Text("no rollout series", style="dim")
    table = _grid("env", "rollouts/s", "tokens/s", "errors/s", "reward", "rollouts")
    for e in d.envs:
        table.add_row(lit(e.env or "(no env label)"), fmt_num(e.rollouts_per_s), fmt_rate(e.tokens_per_s, ""),
                      fmt_num(e.errors_per_s), fmt_num(e.mean_reward), fmt_num(e.rollouts))
    return table


def _outcomes(d: TargetDetail) -> Table | Text:
    if not d.outcomes:
        return Text("no rollouts counted", style="dim")
    table = _grid("outcome", "in the window", "since start")
    for o in d.outcomes:
        table.add_row(lit(o.outcome or "(no outcome label)"), fmt_num(o.in_window), fmt_num(o.total))
    return table


def _errors(d: TargetDetail) -> Table | Text:
    if not d.errors:
        return Text("none in the window", style="dim")
    table = _grid("time", "how many", "what")
    for e in d.errors:
        table.add_row(_clock(e.at), DASH if e.count is None else fmt_num(e.count), lit(e.what))
    return table


def _strip(records: Sequence[ScrapeRecord]) -> Text:
    """The newest attempts as one line, oldest left: ▮ a good scrape, ✗ a failed one."""
    out = Text()
    for r in records[-_STRIP:]:
        out.append("▮" if r.ok else "✗", style="green" if r.ok else "bold red")
    return out


def _history(d: TargetDetail) -> Group:
    failed = d.failed_scrapes_in_window
    summary = Text(f"in the {fmt_duration(d.window_s)} window: {d.good_scrapes_in_window} good scrapes stored, "
                   f"{failed} failed seen", style="red" if failed else "")
    if not d.scrapes:
        return Group(summary, Text("no attempts seen yet", style="dim"))
    table = _grid("time", "outcome", "took", "samples", "data age", "reason")
    for r in d.scrapes[-HISTORY_SHOWN:]:
        table.add_row(_clock(r.at), Text("ok", style="green") if r.ok else Text("failed", style="bold red"),
                      fmt_seconds(r.seconds), fmt_num(r.samples) if r.ok else DASH,
                      DASH if r.age_s is None else fmt_duration(r.age_s), lit(r.error) if r.error else "")
    return Group(summary, _strip(d.scrapes), table)


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels)
    return f"{{{inner}}}" if inner else ""


def _series(d: TargetDetail) -> Table | Text:
    if not d.series:
        return Text("no series stored", style="dim")
    table = _grid("series", "value", "age")
    for s in d.series:
        table.add_row(lit(s.name + _labels(s.labels)), _raw(s.value), fmt_duration(max(0.0, d.now - s.at)))
    if d.series_total > len(d.series):
        table.add_row(Text(f"… {d.series_total - len(d.series)} more series not listed", style="dim"), "", "")
    return table


def detail_renderable(d: TargetDetail) -> Group:
    """The whole screen's text for one detail: every section, in the order a person reads them."""
    return Group(
        _health(d),
        _section("rollout worker", _worker(d)),
        _section("per env", _envs(d)),
        _section("outcomes", _outcomes(d)),
        _section("errors", _errors(d)),
        _section("scrape history", _history(d)),
        _section(f"raw series ({d.series_total})", _series(d)),
    )


class DetailScreen(Screen[None]):
    """One target in detail, refreshed once a second; Escape closes it."""

    DEFAULT_CSS = """
    DetailScreen > VerticalScroll { border: round $accent; background: $surface; padding: 0 1; }
    """

    BINDINGS = [Binding("escape", "dismiss", "back", tooltip="back to the tables")]

    def __init__(self, name: str, source: Callable[[], TargetDetail | None]) -> None:
        super().__init__()
        self.target_name = name
        self._source = source
        self.detail: TargetDetail | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = Text.assemble(("detail ", "bold"), lit(self.target_name, style="bold"))
            box.border_subtitle = "Esc: back"
            yield Static(id="detail")

    def on_mount(self) -> None:
        self.refresh_detail()
        self.query_one(VerticalScroll).focus()
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        if not getattr(self.app, "paused", False):
            self.refresh_detail()

    def refresh_detail(self) -> None:
        self.detail = self._source()
        body: RenderableType
        if self.detail is None:
            body = Text.assemble(lit(self.target_name), ": no target or worker of that name (any more)", style="dim")
        else:
            body = detail_renderable(self.detail)
        self.query_one("#detail", Static).update(body)
