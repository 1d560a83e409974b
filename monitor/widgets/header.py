"""The one- or two-line status bar: which run, how long, how much money, is it live.

It grows to a second line only when the run's identity and the status do
not fit side by side (80 columns, long model names), so wide terminals keep
the whole top line for data.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.format import fmt_duration, fmt_money, fmt_window, lit
from ptmon.monitor.widgets.lines import LineWidget

__all__ = ["HeaderState", "SHORTENED", "StatusHeader", "header_text"]


@dataclass(frozen=True, slots=True)
class HeaderState:
    dashboard: Dashboard | None
    interval_s: float
    window_s: float
    paused: bool = False
    frozen_s: float | None = None  # how long the screen has been frozen (paused)
    error: str | None = None  # why the last dashboard could not be read
    time_scale: float = 1.0  # a demo's simulated seconds per real second (its --speed): shown when not 1


def _identity(d: Dashboard | None) -> Text:
    text = Text("ptmon", style="bold")
    if d is None:
        return text.append("  waiting for the first dashboard…", style="dim")
    text.append("  ")
    text.append_text(lit(d.run, style="bold") if d.run is not None else Text("unnamed run", style="dim"))
    if d.model is not None:
        text.append(" · ", style="dim").append_text(lit(d.model))
    if d.algorithm is not None:
        text.append(" · ", style="dim").append_text(lit(d.algorithm, style="dim"))
    return text


def _alerts(d: Dashboard, short: bool) -> Text:
    """The alert count, always on screen: the compact layouts show one table at a time."""
    crit = sum(1 for a in d.alerts if a.level == "critical")
    warn = len(d.alerts) - crit
    style = "bold red" if crit else "yellow" if warn else "green"
    if not d.alerts:
        return Text("no alerts" if not short else "alerts 0", style=style)
    if short:
        return Text.assemble(("alerts ", "dim"), (str(len(d.alerts)), style))
    parts = [f"{n} {name}" for n, name in ((crit, "crit"), (warn, "warn")) if n]
    return Text.assemble(("alerts ", "dim"), (" ".join(parts), style))


def _speed(time_scale: float, short: bool) -> Text:
    """A demo's time scale: its counters run that much faster, so a rate is per real (wall-clock) second."""
    if time_scale == 1.0:
        return Text("")
    text = Text(f"{time_scale:g}x time", style="bold magenta")
    return text if short else text.append(" · rates per real s", style="dim")


# What the status gives up, in order, when the header is short of room: each part then takes its short form
# (the uptime goes; the help screen explains the short forms).
SHORTENED = ("timing", "targets", "uptime", "speed", "alerts")


def _status(state: HeaderState, shortened: int = 0) -> Text:
    """The right-hand status; the first ``shortened`` parts of SHORTENED in their short form."""
    short = set(SHORTENED[:shortened])
    d = state.dashboard
    parts: list[Text] = [_speed(state.time_scale, "speed" in short)]
    if d is not None:
        if d.uptime_s is not None and "uptime" not in short:
            parts.append(Text.assemble(("up ", "dim"), fmt_duration(d.uptime_s)))
        parts.append(Text.assemble((fmt_money(d.spend_dollars), "bold"), (" @ ", "dim"),
                                   f"{fmt_money(d.burn_dollars_per_hour)}/h"))
        total, up = len(d.targets), d.targets_up
        parts.append(Text.assemble(("tgt " if "targets" in short else "targets ", "dim"),
                                   (f"{up}/{total}", "bold red" if up < total else "green")))
        parts.append(_alerts(d, "alerts" in short))
    if "timing" in short:
        parts.append(Text.assemble(fmt_window(state.interval_s), ("/", "dim"), fmt_window(state.window_s)))
    else:
        parts.append(Text.assemble(("every ", "dim"), fmt_window(state.interval_s), (" · window ", "dim"),
                                   fmt_window(state.window_s)))
    if state.error is not None:
        parts.append(lit(f"feed error: {state.error}", style="bold red"))
    if state.paused:
        frozen = "" if state.frozen_s is None else f" {fmt_duration(state.frozen_s)}"
        parts.append(Text(f" PAUSED{frozen} ", style="bold reverse yellow"))
    return Text("  ").join(p for p in parts if p)


def header_text(state: HeaderState, width: int) -> Text:
    """One line when identity and status fit side by side, else identity over status.

    Parts take their short forms (SHORTENED) before the header grows to a second line, and again
    before anything on the second line would be cut.
    """
    left = _identity(state.dashboard)
    for shortened in (0, 1):  # one line if the timing's short form is all it takes
        right = _status(state, shortened)
        gap = width - left.cell_len - right.cell_len
        if gap >= 2:
            return Text.assemble(left, " " * gap, right, no_wrap=True, overflow="ellipsis")
    for shortened in range(len(SHORTENED) + 1):
        right = _status(state, shortened)
        if right.cell_len <= width:
            break
    if right.cell_len < width:
        right.align("right", width)
    return Text.assemble(left, "\n", right, no_wrap=True, overflow="ellipsis")


class StatusHeader(LineWidget):
    DEFAULT_CSS = """
    StatusHeader {
        height: 1;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state = HeaderState(None, interval_s=1.0, window_s=300.0)

    def show(self, state: HeaderState) -> None:
        if state != self.state:
            self.state = state
            self._fit()
            self.redraw()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        lines = len(header_text(self.state, self.content_size.width or 80).plain.splitlines())
        if self.styles.height is None or self.styles.height.value != lines:
            self.styles.height = lines

    def lines(self, width: int, height: int) -> list[Text]:
        return list(header_text(self.state, width).split("\n"))
