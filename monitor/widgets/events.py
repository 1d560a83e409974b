"""The ``e`` screen: the run's event log, oldest first, newest at the bottom; it follows the feed while open."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ptmon.monitor.events import Event
from ptmon.monitor.format import DASH, fmt_duration, lit

__all__ = ["EventsScreen", "events_table"]

_STYLE = {"alert": "bold", "target_down": "red", "restart": "yellow", "sync_failed": "red", "sync_slow": "yellow",
          "eval": "cyan", "policy": "dim"}
_SHOWN = 500  # the newest this many: a week-long run has thousands of policy versions


def events_table(events: Sequence[Event], *, now: float) -> Table:
    table = Table(box=None, pad_edge=False, expand=True)
    for col, justify in (("time", "left"), ("what", "left"), ("subject", "left"), ("duration", "right"),
                         ("", "left")):
        table.add_column(col, justify=justify, no_wrap=col != "")  # type: ignore[arg-type]
    for e in events[-_SHOWN:]:
        when = dt.datetime.fromtimestamp(e.at).strftime("%H:%M:%S")
        what = e.kind if e.level is None else f"{e.kind} {e.level}"
        lasting = e.duration(now)
        duration = DASH if lasting is None else fmt_duration(lasting) + ("" if e.end is not None else " …")
        table.add_row(when, Text(what, style=_STYLE.get(e.kind, "")), lit(e.subject), duration, lit(e.message))
    if not events:
        table.add_row(DASH, "nothing yet", "", "", "")
    return table


class EventsScreen(ModalScreen[None]):
    """What happened, in time order; Escape or ``e`` closes it."""

    DEFAULT_CSS = """
    EventsScreen { align: center middle; }
    EventsScreen > VerticalScroll {
        width: 95%; height: 90%; border: round $accent; background: $surface; padding: 0 1;
    }
    """

    BINDINGS = [Binding("escape", "dismiss", "close", show=False), Binding("e", "dismiss", "close", show=False)]

    def __init__(self, events: Callable[[], Sequence[Event]], *, clock: Callable[[], float]) -> None:
        super().__init__()
        self._events = events
        self._clock = clock

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "event log"
            box.border_subtitle = "… still going · Esc or e closes"
            yield Static(id="events")

    def on_mount(self) -> None:
        self._show()
        self.query_one(VerticalScroll).scroll_end(animate=False)  # the newest first in view
        self.set_interval(1.0, self._show)

    def _show(self) -> None:
        self.query_one("#events", Static).update(events_table(self._events(), now=self._clock()))
