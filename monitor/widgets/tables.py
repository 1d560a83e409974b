"""Targets, rollout workers and alerts as sortable, filterable tables.

One small base class holds the keyboard behaviour all three share: ``s``
cycles the sort column (clicking a header sorts by it, clicking again
reverses), a filter keeps the rows whose text contains it. Rows are rebuilt
from each Dashboard only when what they show changed, and the cursor stays
on the same target or worker across rebuilds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

from monitor.dashboard import Alert, TargetHealth, WorkerRow
from monitor.settings import Thresholds
from monitor.widgets.format import DASH, fmt_duration, fmt_num, fmt_rate, fmt_seconds, lit

__all__ = ["Column", "SortFilterTable", "TargetsTable", "WorkersTable", "AlertsTable"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Column(Generic[R]):
    label: str
    cell: Callable[[R, float], Text]  # (row, now) -> what the cell shows
    key: Callable[[R], Any]  # sort key; None sorts last whichever the direction


def _ago(now: float, then: float | None) -> Text:
    return Text(DASH if then is None else f"{fmt_duration(now - then)} ago", style="" if then else "dim")


def _text(s: str, style: str = "") -> Text:
    return Text(s, style=style)


class SortFilterTable(DataTable, Generic[R]):
    """A DataTable fed whole rows; sorting and filtering happen here, not in the data layer."""

    DEFAULT_CSS = """
    SortFilterTable {
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
    }
    SortFilterTable:focus { border: round $accent; }
    """

    COLUMNS: ClassVar[tuple[Column[Any], ...]] = ()
    TITLE: ClassVar[str] = ""
    DEFAULT_SORT: ClassVar[tuple[int, bool]] = (0, False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.sort_index, self.sort_reverse = self.DEFAULT_SORT
        self.filter_text = ""
        self._source: Sequence[R] = ()
        self._now = 0.0
        self._shown: list[tuple[str, tuple[Text, ...]]] | None = None
        self._shown_header: tuple[str, ...] = ()
        self.border_title = self.TITLE

    # what subclasses say about a row
    def row_key(self, row: R) -> str:
        raise NotImplementedError

    def row_style(self, row: R) -> str:
        return ""

    # the keyboard and mouse
    def cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(self.COLUMNS)
        self.sort_reverse = False
        self._rebuild()

    def sort_by(self, index: int) -> None:
        """Sort by a column; the same column again reverses the order (a header click)."""
        if index == self.sort_index:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_index, self.sort_reverse = index, False
        self._rebuild()

    def set_filter(self, text: str) -> None:
        if text != self.filter_text:
            self.filter_text = text
            self._rebuild()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_index)

    # data in
    def show(self, rows: Sequence[R], now: float) -> None:
        self._source, self._now = rows, now
        self._rebuild()

    @property
    def sort_label(self) -> str:
        return self.COLUMNS[self.sort_index].label

    def visible_keys(self) -> list[str]:
        """Row keys in screen order (what a person sees, for tests and the palette)."""
        return [key for key, _ in self._shown or ()]

    def _ordered(self) -> list[R]:
        key = self.COLUMNS[self.sort_index].key
        known = [r for r in self._source if key(r) is not None]
        unknown = [r for r in self._source if key(r) is None]
        known.sort(key=key, reverse=self.sort_reverse)
        return known + unknown

    def _rebuild(self) -> None:
        needle = self.filter_text.casefold()
        shown: list[tuple[str, tuple[Text, ...]]] = []
        for row in self._ordered():
            cells = tuple(column.cell(row, self._now) for column in self.COLUMNS)
            if needle and needle not in " ".join(cell.plain for cell in cells).casefold():
                continue
            style = self.row_style(row)
            if style:
                cells = tuple(cell.copy() for cell in cells)
                for cell in cells:
                    cell.stylize_before(style)
            shown.append((self.row_key(row), cells))
        arrow = " ▼" if self.sort_reverse else " ▲"
        header = tuple(c.label + (arrow if i == self.sort_index else "") for i, c in enumerate(self.COLUMNS))
        self._update_titles(len(shown))
        if shown == self._shown and header == self._shown_header:
            return
        self._shown, self._shown_header = shown, header
        cursor_key = self._cursor_key()
        scroll_y = self.scroll_y
        self.clear(columns=True)
        for label in header:
            self.add_column(Text(label, style="bold"))
        for key, cells in shown:
            self.add_row(*cells, key=key)
        if cursor_key is not None:
            try:
                self.move_cursor(row=self.get_row_index(cursor_key), scroll=False)
            except RowDoesNotExist:
                pass
        self.scroll_y = min(scroll_y, self.max_scroll_y)

    def _cursor_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # the cursor sits outside the rows (table just cleared)
            return None

    def _update_titles(self, shown: int) -> None:
        total = len(self._source)
        count = f"{shown}/{total}" if self.filter_text else f"{total}"
        self.border_title = Text.assemble((self.TITLE, "bold"), f" {count}")
        subtitle = Text.assemble(("s", "bold"), f" sort: {self.sort_label}")
        if self.filter_text:
            subtitle.append("  ")
            subtitle.append("/", style="bold")
            subtitle.append(" filter: ")
            subtitle.append_text(lit(self.filter_text, style="reverse"))
        self.border_subtitle = subtitle


_UP_RANK = {False: 0, None: 1, True: 2}


def _up(row: TargetHealth | WorkerRow, _now: float) -> Text:
    if row.up is None:
        return Text("…", style="dim")
    return Text("● up", style="green") if row.up else Text("✗ DOWN", style="bold red")


class TargetsTable(SortFilterTable[TargetHealth]):
    TITLE = "targets"
    COLUMNS = (
        Column("name", lambda t, _: lit(t.name, style="bold"), lambda t: t.name),
        Column("role", lambda t, _: lit(t.role), lambda t: t.role),
        Column("up", _up, lambda t: _UP_RANK[t.up]),
        Column("last scrape", lambda t, now: _ago(now, t.last_scrape), lambda t: t.last_scrape),
        Column("scrape", lambda t, _: _text(fmt_seconds(t.scrape_seconds)), lambda t: t.scrape_seconds),
        Column("samples", lambda t, _: _text(fmt_num(t.samples)), lambda t: t.samples),
        Column("error", lambda t, _: lit(t.error) if t.error else Text(""), lambda t: t.error or ""),
        Column("url", lambda t, _: lit(t.url), lambda t: t.url),  # last: long, and known from the config
    )

    def row_key(self, row: TargetHealth) -> str:
        return row.name

    def row_style(self, row: TargetHealth) -> str:
        return "red" if row.up is False else ""


_STATUS_STYLE = {"ok": "green", "down": "bold red", "stale": "yellow", "slow": "yellow", "unknown": "dim"}


class WorkersTable(SortFilterTable[WorkerRow]):
    TITLE = "rollout workers"

    def __init__(self, *, thresholds: Thresholds | None = None, id: str | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        # An instance attribute: the staleness colours need this table's thresholds.
        self.COLUMNS = (
            Column("worker", lambda w, _: lit(w.name, style="bold"), lambda w: w.name),
            Column("rollouts/s", lambda w, _: _text(fmt_num(w.rollouts_per_s)), lambda w: w.rollouts_per_s),
            Column("tokens/s", lambda w, _: _text(fmt_rate(w.tokens_per_s, "")), lambda w: w.tokens_per_s),
            Column(
                "policy",
                lambda w, _: _text(DASH if w.policy_version is None else f"v{w.policy_version:.0f}"),
                lambda w: w.policy_version,
            ),
            Column("staleness", self._staleness, lambda w: w.staleness),
            Column("reward", lambda w, _: _text(fmt_num(w.mean_reward)), lambda w: w.mean_reward),
            Column("status", lambda w, _: lit(w.status, style=_STATUS_STYLE.get(w.status, "")), lambda w: w.status),
        )
        super().__init__(id=id)

    def _staleness(self, w: WorkerRow, _now: float) -> Text:
        text = Text(fmt_num(w.staleness))
        if w.staleness is not None:
            if w.staleness >= self.thresholds.staleness_critical:
                text.stylize("bold red")
            elif w.staleness >= self.thresholds.staleness_warn:
                text.stylize("yellow")
        return text

    def row_key(self, row: WorkerRow) -> str:
        return row.name

    def row_style(self, row: WorkerRow) -> str:
        return "red" if row.up is False else ""


_LEVEL_RANK = {"warn": 1, "critical": 2}


def _level(a: Alert, _now: float) -> Text:
    return Text("● CRIT", style="bold red") if a.level == "critical" else Text("▲ warn", style="yellow")


class AlertsTable(SortFilterTable[Alert]):
    TITLE = "alerts"
    DEFAULT_SORT = (0, True)  # critical first
    COLUMNS = (
        Column("level", _level, lambda a: _LEVEL_RANK.get(a.level, 0)),
        Column("since", lambda a, now: _text(fmt_duration(now - a.since)), lambda a: -a.since),
        Column("message", lambda a, _: lit(a.message), lambda a: a.message),
        Column("alert", lambda a, _: lit(a.name), lambda a: a.name),
        Column("subject", lambda a, _: lit(a.subject) if a.subject else Text(""), lambda a: a.subject or ""),
    )

    def row_key(self, row: Alert) -> str:
        return f"{row.name}\0{row.subject or ''}"
