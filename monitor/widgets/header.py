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

__all__ = ["HeaderState", "StatusHeader", "header_text"]


@dataclass(frozen=True, slots=True)
class HeaderState:
    dashboard: Dashboard | None
    interval_s: float
    window_s: float
    paused: bool = False
    frozen_s: float | None = None  # how long the screen has been frozen (paused)
    error: str | None = None  # why the last dashboard could not be read


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


def _status(state: HeaderState) -> Text:
    d = state.dashboard
    text = Text()
    if d is not None:
        if d.uptime_s is not None:
            text.append("up ", style="dim").append(fmt_duration(d.uptime_s)).append("  ")
        text.append(fmt_money(d.spend_dollars), style="bold")
        text.append(" @ ", style="dim").append(f"{fmt_money(d.burn_dollars_per_hour)}/h").append("  ")
        total, up = len(d.targets), d.targets_up
        text.append("targets ", style="dim")
        text.append(f"{up}/{total}", style="bold red" if up < total else "green")
        text.append("  ")
    text.append("every ", style="dim").append(fmt_window(state.interval_s))
    text.append(" · window ", style="dim").append(fmt_window(state.window_s))
    if state.error is not None:
        text.append("  ").append_text(lit(f"feed error: {state.error}", style="bold red"))
    if state.paused:
        text.append("  ")
        frozen = "" if state.frozen_s is None else f" {fmt_duration(state.frozen_s)}"
        text.append(f" PAUSED{frozen} ", style="bold reverse yellow")
    return text


def header_text(state: HeaderState, width: int) -> Text:
    """One line when identity and status fit side by side, else identity over status."""
    left, right = _identity(state.dashboard), _status(state)
    gap = width - left.cell_len - right.cell_len
    if gap >= 2:
        return Text.assemble(left, " " * gap, right, no_wrap=True, overflow="ellipsis")
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
