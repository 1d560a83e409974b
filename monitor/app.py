"""``ptmon watch``: the live screen, fed Dashboards by an injected Feed.

The app never touches a socket or a parser: it asks the Feed for a Dashboard
once per interval, in a Textual worker whose next poll is scheduled only
after the last one finished (so polls never pile up behind a slow feed), and
hands the numbers to widgets. The Feed scrapes in its own tasks, so pausing
freezes the screen but not the collection, and resuming shows no gap.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Literal

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import DescendantFocus, Key, Resize
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Input, Static

from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.feed import Feed
from ptmon.monitor.format import fmt_money, fmt_rate, fmt_score, fmt_seconds, fmt_window
from ptmon.monitor.ipd import binomial_se
from ptmon.monitor.settings import (
    DEFAULT_INTERVAL_S,
    DEFAULT_WINDOW_S,
    WINDOWS_S,
    Thresholds,
    buffer_warning,
    fit_timing,
)
from ptmon.monitor.store import DEFAULT_CAPACITY
from ptmon.monitor.terminal import ResumeGuard, not_a_terminal
from ptmon.monitor.text import mask_secrets, safe
from ptmon.monitor.widgets import (
    CARDS,
    AlertsTable,
    Card,
    Chart,
    ChartData,
    DrawFailed,
    FittedFooter,
    HeaderState,
    HelpScreen,
    SortFilterTable,
    SparkCell,
    StatusHeader,
    TargetsTable,
    WorkersTable,
    card_age,
    card_level,
    card_rows,
)

__all__ = ["PtmonApp", "run_watch", "INTERVALS_S", "PANELS", "MIN_SIZE", "WIDE_FROM", "TALL_FROM", "Layout",
           "layout_for"]

INTERVALS_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # the + / - steps
PANELS = ("targets", "workers", "alerts")
MIN_SIZE = (80, 24)  # below this: "terminal too small"
WIDE_FROM = (120, 36)  # from this wide and tall: cards, three charts, targets beside workers, alerts below
TALL_FROM = 44  # narrower than WIDE_FROM but this tall: the charts, and the three tables stacked

# too-small: only the message. compact (80x24 to 119x43): sparklines, one table at a time (alerts counted in
# the header). tall (narrow, >= 44 rows): charts, tables stacked. short (wide, < 36 rows): sparklines, targets
# beside workers, alerts below. wide: everything. Card labels take their short forms below 120 columns.
Layout = Literal["too-small", "compact", "tall", "short", "wide"]
LAYOUTS: tuple[Layout, ...] = ("too-small", "compact", "tall", "short", "wide")
CHARTS_IN: frozenset[Layout] = frozenset({"tall", "wide"})  # braille charts; the others get sparklines


def layout_for(width: int, height: int) -> Layout:
    """The layout of a terminal this size (app.tcss draws each one from the app's ``-layout-*`` class)."""
    if width < MIN_SIZE[0] or height < MIN_SIZE[1]:
        return "too-small"
    if width >= WIDE_FROM[0]:
        return "wide" if height >= WIDE_FROM[1] else "short"
    return "tall" if height >= TALL_FROM else "compact"


def too_small_text(width: int, height: int) -> str:
    return f"terminal too small: need {MIN_SIZE[0]}x{MIN_SIZE[1]}, have {width}x{height}"


def _step(values: tuple[float, ...], current: float, direction: int) -> float:
    """The next value along ``values`` from ``current`` (which need not be one of them)."""
    if direction > 0:
        return next((v for v in values if v > current), values[-1])
    return next((v for v in reversed(values) if v < current), values[0])


class PtmonApp(App[int]):
    """The live monitor; give it a Feed and it shows what the Feed collects."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "ptmon"
    # The app carries one -layout-* class (layout_for); app.tcss lays out each layout from it, so a resize
    # changes no widget by hand.

    # The screen's state; each watcher below holds the side effects of a change, so an action is one line.
    paused = var(False, init=False)  # the screen frozen; collection goes on
    interval_s = var(DEFAULT_INTERVAL_S, init=False)
    window_s = var(DEFAULT_WINDOW_S, init=False)
    active_panel = var("targets", init=False, always_update=True)  # the table keys act on (and shown when compact)
    compact = var(False, init=False)  # below 120 columns: short card labels
    screen_layout = var[Layout]("wide", init=False)  # layout_for the terminal's size
    rates_from_zero = var(False, init=False)  # the rollouts chart's y axis starts at zero (z)

    BINDINGS = [
        Binding("q", "quit", "quit", tooltip="quit (Ctrl+C and Ctrl+Q too)"),
        # Ctrl-C quits from anywhere, the filter box and the palette included (priority: before the focused
        # widget's copy binding); Textual's own Ctrl-C only toasts "press ctrl+q" and the key was lost.
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
        Binding("p", "toggle_pause", "pause", tooltip="pause/resume the screen; collection goes on, no gap"),
        Binding("question_mark", "help", "help", key_display="?", tooltip="this help"),
        Binding("slash", "filter", "filter", key_display="/",
                tooltip="filter the active table (Enter keeps it, Esc clears)"),
        Binding("s", "sort", "sort", tooltip="sort the active table by the next column"),
        Binding("S", "reverse_sort", "reverse", show=False, tooltip="reverse the active table's sort"),
        Binding("c", "columns", "columns", show=False, tooltip="choose the active table's columns (hide/show)"),
        Binding("enter", "detail", "detail", key_display="⏎", show=False,
                tooltip="Enter: the row's target or worker in detail"),
        Binding("t", "panel('targets')", "targets", tooltip="show the targets table"),
        Binding("w", "panel('workers')", "workers", tooltip="show the rollout workers table"),
        Binding("a", "panel('alerts')", "alerts", tooltip="show the alerts"),
        Binding("b", "baseline", "baseline", tooltip="set the intelligence-per-dollar baseline to now"),
        Binding("z", "toggle_zero", "zero y", show=False,  # in ? and the palette: the footer is full at 160
                tooltip="rollouts chart: y axis from zero / fitted to the data"),
        Binding("e", "events", "events",
                tooltip="the event log: alerts, downs, restarts, syncs, evals"),
        Binding("plus", "interval(1)", "slower", key_display="+", tooltip="longer refresh interval"),
        Binding("minus", "interval(-1)", "faster", key_display="-", tooltip="shorter refresh interval"),
        Binding("left_square_bracket", "window(-1)", "window-", key_display="[",
                tooltip="shorter window (1m 5m 15m 1h)"),
        Binding("right_square_bracket", "window(1)", "window+", key_display="]",
                tooltip="longer window (1m 5m 15m 1h)"),
        Binding("escape", "close_filter", "close filter", show=False),
    ]

    def __init__(
        self,
        feed: Feed,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        window_s: float = DEFAULT_WINDOW_S,
        clock: Callable[[], float] = time.time,
        title: str = "ptmon",
        thresholds: Thresholds | None = None,
        timeout_s: float | None = None,
        config_file: str | None = None,
        time_scale: float = 1.0,
    ) -> None:
        """``time_scale``: a demo's simulated seconds per real second (``ptmon demo --speed``), said in the header."""
        super().__init__()
        self.title = title
        self._config_file = config_file  # the ptmon.toml read, named in the targets table's title
        self._feed = feed
        self._clock = clock
        self.thresholds = thresholds or Thresholds()
        self.time_scale = time_scale
        self._timeout_s = timeout_s  # the configured scrape timeout: the keys never pick an interval under it
        self._buffer_warned: str | None = None  # the window-longer-than-the-buffer toast last shown
        # The starting values, not changes: set without calling the watchers (nothing is mounted yet).
        self.set_reactive(PtmonApp.interval_s, interval_s)
        self.set_reactive(PtmonApp.window_s, window_s)
        self.dashboard: Dashboard | None = None  # what the screen shows (frozen while paused)
        self.polls = 0  # dashboards fetched: tests and the bench wait on it
        self._frozen_at: float | None = None
        self._error: str | None = None  # why the last dashboard could not be fetched or shown
        self._draw_errors: dict[str, str] = {}  # widget id -> why it cannot draw (it shows so in its box)
        self._critical_seen: set[tuple[str, str | None]] = set()
        self._wake = asyncio.Event()
        self._resume = ResumeGuard(self)  # q ends the process after a SIGSTOP/SIGCONT too

    # layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(too_small_text(*self.size), id="too-small", markup=False)
        yield StatusHeader(id="header")
        with Horizontal(id="cards"):
            for card, title in CARDS:
                yield Card(card, title, id=f"card-{card}")
        with Horizontal(id="charts"):
            yield Chart("eval score vs $ spent", id="chart-ipd")
            yield Chart("rollouts/s", id="chart-rollout")
            yield Chart("weight-sync latency", id="chart-sync")
        with Horizontal(id="sparks"):
            yield SparkCell("score", id="spark-ipd")
            yield SparkCell("rollouts/s", id="spark-rollout")
            yield SparkCell("sync", id="spark-sync")
        with Vertical(id="bottom", classes=f"-{self.active_panel}"):
            with Horizontal(id="tables"):
                yield TargetsTable(id="targets", config_file=self._config_file)
                yield WorkersTable(thresholds=self.thresholds, id="workers")
            yield AlertsTable(id="alerts")
        yield Input(placeholder="filter: type to keep matching rows, Enter keeps, Esc clears", id="filter",
                    compact=True)
        yield FittedFooter()

    def table(self, panel: str | None = None) -> SortFilterTable[Any]:
        return self.query_one(f"#{panel or self.active_panel}", SortFilterTable)

    def on_resize(self, event: Resize) -> None:
        self._fit_layout(event.size.width, event.size.height)

    def _fit_layout(self, width: int, height: int) -> None:
        self.query_one("#too-small", Static).update(too_small_text(width, height))
        self.query_one(FittedFooter).fit(width)
        self.compact = width < WIDE_FROM[0]
        self.screen_layout = layout_for(width, height)

    # data --------------------------------------------------------------------------------

    async def on_mount(self) -> None:
        self._resume.install()
        self._fit_layout(*self.size)
        self.watch_screen_layout(self.screen_layout)
        self.table().focus()
        self._warn_buffer()
        try:
            await self._feed.start()
        except Exception as exc:  # someone else's code: say what broke, keep the screen up
            self._error = f"start: {type(exc).__name__}: {exc}"
        self._poll_loop()

    async def on_unmount(self) -> None:
        self._resume.remove()
        await self._feed.aclose()

    @work(exclusive=True, group="poll")
    async def _poll_loop(self) -> None:
        """Poll, then sleep what is left of the interval; a key press can wake it early."""
        while True:
            self._wake.clear()
            started = time.monotonic()
            await self.poll_once()
            delay = self.interval_s - (time.monotonic() - started)
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)

    def _poll_soon(self) -> None:
        self._wake.set()

    async def poll_once(self) -> None:
        """Fetch one Dashboard and show it; while paused only the header ticks."""
        if not self.is_running:  # shutting down: the widgets are going away
            return
        if self.paused:
            self._show_header()
            return
        try:
            dashboard = await self._feed.dashboard(window_s=self.window_s)
        except Exception as exc:  # a feed bug must not take the screen down: show it, try again next tick
            self._error = f"{type(exc).__name__}: {exc}"
            self._show_header()
            return
        if not self.is_running:  # quit while the feed was answering
            return
        self.polls += 1
        self._error = None
        try:
            self.show_dashboard(dashboard)
        except Exception as exc:  # data the widgets choke on: say so and keep polling, never freeze silently
            self._error = f"display: {type(exc).__name__}: {exc}"
            self._show_header()

    def show_dashboard(self, d: Dashboard) -> None:
        self.dashboard = d
        now = self._clock()
        self._show_header()
        for card, _ in CARDS:
            self.query_one(f"#card-{card}", Card).show(card_rows(card, d, self.thresholds), card_level(card, d.alerts),
                                                       age_s=card_age(card, d))
        self._show_trends(d)
        self.query_one("#targets", TargetsTable).show(d.targets, now, stale_after_s=d.stale_after_s)
        self.query_one("#workers", WorkersTable).show(d.workers, now)
        self.query_one("#alerts", AlertsTable).show(d.alerts, now)
        self._notify_critical(d)

    def on_draw_failed(self, message: DrawFailed) -> None:
        """A widget could not draw (or can again): say so in the header, as for a feed error."""
        name = message.widget.id or type(message.widget).__name__
        if message.error is None:
            self._draw_errors.pop(name, None)
        else:
            self._draw_errors[name] = message.error
        self._show_header()

    def _errors(self) -> str | None:
        shown = [self._error] if self._error else []
        shown += [f"display: {name}: {error}" for name, error in self._draw_errors.items()]
        return mask_secrets("; ".join(shown)) or None

    def _show_header(self) -> None:
        frozen = None if self._frozen_at is None else self._clock() - self._frozen_at
        self.query_one(StatusHeader).show(
            HeaderState(self.dashboard, interval_s=self.interval_s, window_s=self.window_s,
                        paused=self.paused, frozen_s=frozen, error=self._errors(), time_scale=self.time_scale)
        )

    def _show_trends(self, d: Dashboard) -> None:
        """Charts in the wide and tall layouts, sparklines in the others: only the visible ones are drawn."""
        bench = safe(d.benchmark) if d.benchmark else ""
        if self.screen_layout == "too-small":
            return
        if self.screen_layout not in CHARTS_IN:
            self.query_one("#spark-ipd", SparkCell).show(
                [e.score for e in d.eval_curve], Text(f"{bench} {fmt_score(d.score)}".lstrip()))
            self.query_one("#spark-rollout", SparkCell).show(
                [v for _, v in d.rollout_rate_series], Text(fmt_rate(d.rollout_rate_per_s, "")))
            self.query_one("#spark-sync", SparkCell).show(
                [v for _, v in d.weight_sync_series], Text(f"p99 {fmt_seconds(d.weight_sync_p99_s)}"))
            return
        spends = [e.spend_dollars for e in d.eval_curve]
        errors = tuple(binomial_se(e.score, e.samples) for e in d.eval_curve)
        marks = () if d.baseline_spend_dollars is None else (d.baseline_spend_dollars,)
        self.query_one("#chart-ipd", Chart).show(
            ChartData(
                points=tuple((e.spend_dollars, e.score) for e in d.eval_curve),
                errors=errors,
                marks=marks,
                hline=d.baseline_score,
                x_labels=(fmt_money(min(spends)), fmt_money(max(spends))) if spends else ("", ""),
                y_format=fmt_score,
                empty="no evals yet",
            ),
            subtitle=f"{bench or 'score'} {fmt_score(d.score)} · ┄ baseline"
            + (" · bars ±1 se" if any(e for e in errors) else ""),
        )
        span = (d.now - d.window_s, d.now)
        ago = (f"-{fmt_window(d.window_s)}", "now")
        self.query_one("#chart-rollout", Chart).show(
            ChartData(points=d.rollout_rate_series, x_range=span, marks=d.sync_events, marks_on_axis=True,
                      x_labels=ago, y_zero=self.rates_from_zero),
            subtitle=f"{fmt_rate(d.rollout_rate_per_s)} · ╵ weight sync{' · y from 0' if self.rates_from_zero else ''}",
        )
        self.query_one("#chart-sync", Chart).show(
            ChartData(points=d.weight_sync_series, x_range=span, x_labels=ago, y_format=fmt_seconds,
                      empty="no syncs in the window"),
            subtitle=f"p50 {fmt_seconds(d.weight_sync_p50_s)} · p99 {fmt_seconds(d.weight_sync_p99_s)}"
                     + (" · per-scrape means" if d.weight_sync_averaged else ""),
        )

    def _notify_critical(self, d: Dashboard) -> None:
        """A toast for each critical alert not critical on the last dashboard shown."""
        current = {(a.name, a.subject) for a in d.alerts if a.level == "critical"}
        for alert in d.alerts:
            if alert.level == "critical" and (alert.name, alert.subject) not in self._critical_seen:
                self.notify(safe(alert.message), title=safe(alert.name), severity="error", markup=False)
        self._critical_seen = current

    # actions -----------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused

    def action_interval(self, direction: int) -> None:
        self._set_timing(_step(INTERVALS_S, self.interval_s, direction), self.window_s, keep="interval")

    def action_window(self, direction: int) -> None:
        self._set_timing(self.interval_s, _step(WINDOWS_S, self.window_s, direction), keep="window")

    def _set_timing(self, interval_s: float, window_s: float, *, keep: Literal["interval", "window"]) -> None:
        """The pair the config would accept (every 1m with a 1m window would not): the other one moves."""
        self.interval_s, self.window_s = fit_timing(interval_s, window_s, keep=keep, timeout_s=self._timeout_s,
                                                    intervals=INTERVALS_S, windows=WINDOWS_S)
        self._warn_buffer()

    def _warn_buffer(self) -> None:
        """A toast when the window comes out longer than the store holds at the interval (once per pair)."""
        capacity = getattr(getattr(self._feed, "store", None), "capacity", DEFAULT_CAPACITY)
        warning = buffer_warning(self.interval_s, self.window_s, capacity=capacity)
        if warning is not None and warning != self._buffer_warned:
            self.notify(warning, title="window", severity="warning", markup=False)
        self._buffer_warned = warning

    def action_toggle_zero(self) -> None:
        self.rates_from_zero = not self.rates_from_zero

    def action_baseline(self) -> None:
        self._feed.set_baseline_now()
        self.notify("intelligence-per-dollar baseline set to the latest eval", title="baseline")
        self._poll_soon()

    def action_events(self) -> None:
        """The event log, when the feed keeps one (``ptmon.monitor.events``); it refreshes while open."""
        from ptmon.monitor.widgets.events import EventsScreen

        if isinstance(self.screen, EventsScreen):
            self.screen.dismiss()
            return
        events = getattr(self._feed, "events", None)
        self.push_screen(EventsScreen(events if callable(events) else tuple, clock=self._clock))

    def action_panel(self, panel: str) -> None:
        self.active_panel = panel

    def action_sort(self) -> None:
        self.table().cycle_sort()

    def action_reverse_sort(self) -> None:
        self.table().reverse_sort()

    def action_columns(self) -> None:
        from ptmon.monitor.widgets.columns import ColumnsScreen

        self.push_screen(ColumnsScreen(self.table()))

    def action_detail(self) -> None:
        """Enter on a target, a worker, or an alert about one: its detail screen."""
        from ptmon.monitor.widgets.detail import DetailScreen, detail_for

        key = self.table().cursor_key
        name = key.split("\0")[-1] if key is not None else ""
        if name:
            self.push_screen(DetailScreen(name, lambda: detail_for(
                self._feed, self.dashboard, name, now=self._clock(), window_s=self.window_s)))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = self.table().filter_text
        box.placeholder = f"filter {self.active_panel}: Enter keeps, Esc clears"
        box.display = True
        box.focus()

    def action_close_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display:
            box.value = ""
            self.table().set_filter("")
            box.display = False
            self.table().focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table().set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = False
            self.table().focus()

    def on_key(self, event: Key) -> None:
        """Keys typed in the instant between "/" and the filter box taking focus belong to the box.

        A fast typist (or a paste) delivers "/346" in one read; focus moves only after "/" is
        handled, so without this the "346" would reach the table and be lost.
        """
        box = self.query_one("#filter", Input)
        if not box.display or box.has_focus:
            return
        if event.is_printable and event.character:
            box.insert_text_at_cursor(event.character)
            event.stop()
        elif event.key == "enter":
            box.display = False
            event.stop()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        # a click or Tab into a table makes it the active one
        if isinstance(event.widget, SortFilterTable) and event.widget.id in PANELS:
            self.active_panel = event.widget.id

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
        else:
            # The footer's keys, and the ones it leaves out for room that say what they do (S, e).
            self.push_screen(HelpScreen([b for b in self.BINDINGS if isinstance(b, Binding) and (b.show or b.tooltip)]))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            if command.title == "Screenshot":  # Textual's saves into ~/Downloads and fails wordlessly without it
                command = SystemCommand("Screenshot", "save an SVG of the screen into the working directory",
                                        lambda: self.set_timer(0.1, self.save_screenshot_here))
            yield command
        yield SystemCommand("Pause / resume", "freeze the screen; collection goes on", self.action_toggle_pause)
        yield SystemCommand("Set baseline to now", "intelligence per dollar counts from the latest eval",
                            self.action_baseline)
        for panel in PANELS:
            yield SystemCommand(f"Show {panel}", f"show and focus the {panel} table",
                                partial(self.action_panel, panel))
        for window in WINDOWS_S:
            yield SystemCommand(f"Window {fmt_window(window)}", "measure rates and quantiles over this window",
                                partial(self._set_window, window))
        yield SystemCommand("Keys", "every key binding", self.action_help)

    def save_screenshot_here(self) -> str | None:
        """An SVG of the screen in the working directory (after the palette closed: ``set_timer``); a toast
        names the file, or says why it could not be written. The path, or None."""
        try:
            where = os.getcwd()
            path = self.save_screenshot(_screenshot_name(where), path=where)
        except OSError as exc:
            place = exc.filename or "a screenshot into the working directory"
            self.notify(f"cannot write {place}: {exc.strerror or exc}", title="Screenshot", severity="error",
                        markup=False)
            return None
        self.notify(f"saved {path}", title="Screenshot", markup=False)
        return path

    def _set_window(self, window_s: float) -> None:
        self.window_s = window_s

    # watchers: what a change of state does --------------------------------------------

    def watch_paused(self, paused: bool) -> None:
        self._frozen_at = self._clock() if paused else None
        self._show_header()
        if not paused:
            self._poll_soon()

    def watch_interval_s(self, interval_s: float) -> None:
        self._feed.set_interval(interval_s)
        self._show_header()
        self._poll_soon()

    def watch_window_s(self) -> None:
        self._show_header()
        self._poll_soon()

    def watch_active_panel(self, panel: str) -> None:
        """The panel's class on #bottom (app.tcss shows only it when compact), and the keyboard on it."""
        self.query_one("#bottom").update_classes({f"-{p}": p == panel for p in PANELS})
        self.table(panel).focus()

    def watch_compact(self, compact: bool) -> None:
        """Cards shorten their labels below 120 columns."""
        for card in self.query(Card):
            card.compact = compact

    def watch_screen_layout(self, layout: Layout) -> None:
        """The app's -layout-* class (app.tcss); the trends are drawn again in the layout's form."""
        self.set_class(True, f"-layout-{layout}")
        for other in LAYOUTS:
            if other != layout:
                self.set_class(False, f"-layout-{other}")
        if self.dashboard is not None:
            self._show_trends(self.dashboard)

    def watch_rates_from_zero(self) -> None:
        if self.dashboard is not None:
            self._show_trends(self.dashboard)


def _screenshot_name(where: str) -> str:
    """``ptmon-<local time>.svg``, with -2, -3 ... when one taken in the same second is already there."""
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
    name, n = f"ptmon-{stamp}.svg", 1
    while os.path.exists(os.path.join(where, name)):
        n += 1
        name = f"ptmon-{stamp}-{n}.svg"
    return name


def run_watch(args: argparse.Namespace) -> int:
    """``ptmon watch URL ... | --config FILE | --prometheus URL``: exit 2 with a message when there is nothing
    to watch."""
    from ptmon.monitor.config import ConfigError, config_warnings, load_settings
    from ptmon.monitor.live import LiveFeed

    try:
        settings = load_settings(
            config_path=args.config,
            urls=args.urls,
            interval_s=args.interval,
            window_s=args.window,
            timeout_s=args.timeout,
            prometheus_url=getattr(args, "prometheus", None), run=getattr(args, "run", None),
            framework=getattr(args, "framework", None),
        )
    except ConfigError as exc:
        print(f"ptmon watch: {safe(str(exc))}", file=sys.stderr)
        return 2
    for warning in config_warnings(settings):
        print(f"ptmon watch: warning: {warning}", file=sys.stderr)
    if not settings.targets and settings.prometheus is None:
        print(
            "usage: ptmon watch URL|FILE.jsonl [...] | --config FILE | --prometheus URL\n"
            "ptmon watch: no targets: give /metrics URLs (host:port is enough) or JSONL metrics files, "
            "--prometheus URL, or a ptmon.toml with [[targets]]",
            file=sys.stderr,
        )
        return 2
    refusal = not_a_terminal("watch", "for a table or JSON use `ptmon snapshot` (--json), to keep the data "
                             "`ptmon record`")
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    from ptmon.monitor.events import EventsFeed

    feed: Feed = EventsFeed(LiveFeed(settings, settle_heap=True))
    if getattr(args, "record", None):
        from ptmon.monitor.recording import RecordingError, recording_feed

        try:
            recording = recording_feed(settings, args.record, settle_heap=True)
        except RecordingError as exc:
            print(f"ptmon watch: {safe(str(exc))}", file=sys.stderr)
            return 2
        feed = EventsFeed(recording, past=recording.history.events if recording.history else ())
    app = PtmonApp(
        feed,
        interval_s=settings.interval_s,
        window_s=settings.window_s,
        thresholds=settings.thresholds,
        timeout_s=settings.timeout_s,
        config_file=settings.config_file,
    )
    app.run()
    return app.return_code or 0
