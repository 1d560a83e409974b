"""Targets, rollout workers and alerts as sortable, filterable tables.

One small base class holds what all three share: ``s`` cycles the sort
column and ``S`` reverses it (clicking a header sorts by it, clicking again
reverses), names sort naturally (``rollout-2`` before ``rollout-10``), a
filter keeps the rows whose shown text contains it, columns can be hidden
(the column chooser), the cursor stays on the same target or worker across
updates. It draws with Textual's Line API from one cached
Strip per row, rebuilt only when what the rows show changed: a DataTable
re-renders every cell through Rich on each update, which at one update a
second per table was most of the app's CPU.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ptmon.monitor.dashboard import Alert, TargetHealth, WorkerRow
from ptmon.monitor.format import DASH, against_limits, fmt_duration, fmt_num, fmt_rate, fmt_seconds, fmt_version, lit
from ptmon.monitor.settings import Thresholds
from ptmon.monitor.text import safe
from ptmon.monitor.widgets.fit import ColumnFit, fit_columns
from ptmon.monitor.widgets.lines import DrawGuard, error_strips, row_regions, same_text

__all__ = ["Column", "SortFilterTable", "TargetsTable", "WorkersTable", "AlertsTable", "natural_key"]

R = TypeVar("R")
_GAP = 2  # cells between columns
_DIGITS = re.compile(r"(\d+)")


NaturalKey = tuple[tuple[tuple[int, int | str], ...], str]


def natural_key(s: str | None) -> NaturalKey | None:
    """A sort key that orders the numbers inside names by value: ``rollout-2`` before ``rollout-10``.

    Case is ignored (then the text itself breaks ties, so the order is total); None stays None (sorted last).
    """
    if s is None:
        return None
    parts = _DIGITS.split(s.casefold())
    return tuple((0, int(p)) if i % 2 else (1, p) for i, p in enumerate(parts) if p), s


def _natural(get: Callable[[Any], str | None]) -> Callable[[Any], Any]:
    return lambda row: natural_key(get(row))


@dataclass(frozen=True, slots=True)
class Column(Generic[R]):
    label: str
    cell: Callable[[R, float], Text]  # (row, now) -> what the cell shows
    key: Callable[[R], Any]  # sort key; None sorts last whichever the direction
    short: str = ""  # the label when the full one does not fit
    priority: int = 5  # when the box is narrow, lower-priority columns are dropped whole first
    floor: int | None = None  # free text that may be narrowed to this many cells (ending in …); None: never cut


def _ago(now: float, then: float | None) -> Text:
    return Text(DASH if then is None else f"{fmt_duration(now - then)} ago", style="" if then else "dim")


def _text(s: str, style: str = "") -> Text:
    return Text(s, style=style)


class SortFilterTable(ScrollView, Generic[R], can_focus=True):
    """A table fed whole rows; sorting and filtering happen here, not in the data layer."""

    DEFAULT_CSS = """
    SortFilterTable {
        height: 1fr;
        background: $surface;
        color: $foreground;
        border: round $panel-lighten-2;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        & > .table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .table--cursor { background: $block-cursor-blurred-background; }
        &:focus {
            border: round $accent;
            & > .table--cursor { background: $block-cursor-background; }
        }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"table--header", "table--cursor"}

    BINDINGS: ClassVar = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "cursor(-1000000)", "first row", show=False),
        Binding("end", "cursor(1000000)", "last row", show=False),
    ]

    COLUMNS: tuple[Column[Any], ...] = ()  # not a ClassVar: a table may set its own (WorkersTable)
    TITLE: ClassVar[str] = ""
    EMPTY: ClassVar[str] = "nothing yet"  # shown when there are no rows at all
    title_note = ""  # said dimmed after the row count in the title
    DEFAULT_SORT: ClassVar[tuple[int, bool]] = (0, False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sort_index, self.sort_reverse = self.DEFAULT_SORT
        self.filter_text = ""
        self.hidden: frozenset[str] = frozenset()  # labels of the columns the chooser hid
        self.cursor_row = 0
        self._source: Sequence[R] = ()
        self._now = 0.0
        self._shown: list[tuple[str, tuple[Text, ...]]] | None = None
        self._shown_header: tuple[str, ...] = ()
        self._titles: tuple[str, str, str, int] | None = None
        self._strips: list[Strip] = []
        self._header = Strip.blank(0)
        self._edges: list[int] = []  # where each column starts, for header clicks
        self._widths: list[int] = []
        self._columns: tuple[int, ...] = ()  # the columns drawn, as positions in the header (the rest did not fit)
        self._drawn: list[tuple[Text, ...]] = []  # the cells each of _strips was drawn from
        self._pieces: list[list[_Piece]] = []  # each drawn cell of each of _strips, rendered (_piece)
        self._drawn_widths: list[int] = []  # the width each of _columns was drawn at
        self._styles: tuple[Style, Style, Style] = (Style(), Style(), Style())
        self._guard = DrawGuard(self)
        self.border_title = self.TITLE

    # what subclasses say about a row
    def row_key(self, row: R) -> str:
        raise NotImplementedError

    def row_style(self, row: R) -> str:
        return ""

    # columns
    @property
    def column_labels(self) -> tuple[str, ...]:
        """Every column's label, shown or hidden, in table order (what the column chooser lists)."""
        return tuple(c.label for c in self.COLUMNS)

    @property
    def shown_indexes(self) -> tuple[int, ...]:
        """Indexes into COLUMNS of the columns on screen."""
        return tuple(i for i, c in enumerate(self.COLUMNS) if c.label not in self.hidden)

    def set_hidden(self, labels: frozenset[str] | set[str]) -> None:
        """Hide these columns (by label) and show the rest; one column always stays, so a row is never blank.

        A hidden sort column keeps the order it gave (the subtitle still names it) until another is picked.
        """
        hidden = frozenset(labels) & set(self.column_labels)
        if len(hidden) >= len(self.COLUMNS):
            hidden -= {self.COLUMNS[0].label}
        if hidden != self.hidden:
            self.hidden = hidden
            self._widths = []
            self._rebuild()

    # sorting and filtering
    def cycle_sort(self) -> None:
        """The next shown column, ascending."""
        shown = self.shown_indexes
        later = [i for i in shown if i > self.sort_index]
        self.sort_index = later[0] if later else shown[0]
        self.sort_reverse = False
        self._rebuild()

    def reverse_sort(self) -> None:
        """The same column, the other way round (``S``)."""
        self.sort_reverse = not self.sort_reverse
        self._rebuild()

    def sort_by(self, index: int) -> None:
        """Sort by a column (an index into COLUMNS); the same column again reverses the order (a header click)."""
        if index == self.sort_index:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_index, self.sort_reverse = index, False
        self._rebuild()

    def set_filter(self, text: str) -> None:
        if text != self.filter_text:
            self.filter_text = text
            self._widths = []
            self._rebuild()

    @property
    def sort_label(self) -> str:
        return self.COLUMNS[self.sort_index].label

    # data in
    def show(self, rows: Sequence[R], now: float) -> None:
        self._source, self._now = rows, now
        self._rebuild()

    # what is on screen
    @property
    def row_count(self) -> int:
        return len(self._shown or ())

    def visible_keys(self) -> list[str]:
        """Row keys in screen order (what a person sees, for tests and the palette)."""
        return [key for key, _ in self._shown or ()]

    def get_row_at(self, index: int) -> tuple[Text, ...]:
        return (self._shown or [])[index][1]

    def get_row(self, key: str) -> tuple[Text, ...]:
        return self.get_row_at(self.visible_keys().index(key))

    @property
    def cursor_key(self) -> str | None:
        keys = self.visible_keys()
        return keys[self.cursor_row] if 0 <= self.cursor_row < len(keys) else None

    def move_cursor(self, *, row: int) -> None:
        last = max(0, self.row_count - 1)
        before, self.cursor_row = self.cursor_row, min(max(0, row), last)
        body = max(1, self.scrollable_content_region.height - 1)  # rows below the header
        if self.cursor_row < self.scroll_y:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= self.scroll_y + body:
            self.scroll_to(y=self.cursor_row - body + 1, animate=False)
        if self.cursor_row != before:
            self._refresh_rows(before, self.cursor_row)

    def _refresh_rows(self, *indexes: int) -> None:
        """Repaint just these rows (the compositor's work is per line)."""
        width = self.scrollable_content_region.width
        top = int(self.scroll_y)
        regions = row_regions(indexes, width, top=1 - top)
        if regions:  # refresh() with no region would repaint the whole table
            self.refresh(*regions)

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(row=self.cursor_row + delta)

    def action_page(self, direction: int) -> None:
        self.move_cursor(row=self.cursor_row + direction * max(1, self.scrollable_content_region.height - 2))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:  # the header: sort by the clicked column
            x = offset.x + int(self.scroll_x)
            k = max((k for k, edge in enumerate(self._edges) if edge <= x), default=0)
            drawn = self.shown_columns
            self.sort_by(drawn[k] if k < len(drawn) else self.shown_indexes[0])
        else:
            self.move_cursor(row=int(self.scroll_y) + offset.y - 1)

    # building and drawing
    def _ordered(self) -> list[R]:
        key = self.COLUMNS[self.sort_index].key
        known = [r for r in self._source if key(r) is not None]
        unknown = [r for r in self._source if key(r) is None]
        known.sort(key=key, reverse=self.sort_reverse)
        return known + unknown

    def _rebuild(self) -> None:
        needle = self.filter_text.casefold()
        columns = [(i, self.COLUMNS[i]) for i in self.shown_indexes]
        shown: list[tuple[str, tuple[Text, ...]]] = []
        for row in self._ordered():
            cells = tuple(column.cell(row, self._now) for _, column in columns)
            if needle and needle not in " ".join(cell.plain for cell in cells).casefold():
                continue
            style = self.row_style(row)
            if style:
                for cell in cells:
                    cell.stylize_before(style)
            shown.append((self.row_key(row), cells))
        arrow = " ▼" if self.sort_reverse else " ▲"
        header = tuple(c.label + (arrow if i == self.sort_index else "") for i, c in columns)
        self._update_titles(len(shown))
        if shown == self._shown and header == self._shown_header:
            return
        cursor_key = self.cursor_key
        self._shown, self._shown_header = shown, header
        self._draw(header, shown)
        keys = self.visible_keys()
        self.move_cursor(row=keys.index(cursor_key) if cursor_key in keys else self.cursor_row)

    def _draw(self, header: tuple[str, ...], shown: list[tuple[str, tuple[Text, ...]]]) -> None:
        """One Strip per row, columns as wide as their widest cell; drawing then only crops.

        Columns that do not fit the box are left out whole (ptmon.monitor.widgets.fit), so a
        number is never cropped by the border.
        """
        # Columns keep their widest width (until the filter changes): values ticking 9ms -> 10ms don't
        # make the table dance, and an unchanged virtual size spares the whole screen a re-layout. A
        # column whose widest value now is under half that narrows to it: an error that passed must not
        # keep the URLs left out for the rest of the run.
        now = [0] * len(header)  # the widest value of each column (labels: _fit)
        for _, cells in shown:
            for i, cell in enumerate(cells):
                now[i] = max(now[i], cell.cell_len)
        kept = self._widths or now
        widths = [w if 2 * w < k else max(w, k) for w, k in zip(now, kept, strict=True)]
        old_widths, old_cells = self._widths, self._drawn
        old_columns, old_drawn_widths = self._columns, self._drawn_widths
        self._widths = widths
        columns, drawn_widths, labels = self._fit(header, widths)
        self._columns, self._drawn_widths = columns, drawn_widths
        self._edges = [1 + sum(drawn_widths[:k]) + _GAP * k for k in range(len(columns))]
        console = self.app.console

        header_strip = Strip(*_join([_piece(Text(labels[i]), drawn_widths[k], console)
                                     for k, i in enumerate(columns)]))
        old_header, old_strips, old_pieces = self._header, self._strips, self._pieces
        # A row showing the same cells at the same widths keeps its Strip (most rows, most seconds, bar a
        # ticking age or timing): comparing Texts costs a fraction of assembling and rendering them. A row
        # where one cell ticked renders that cell alone and keeps the other cells' segments.
        reuse = (widths == old_widths and header_strip == old_header and len(old_strips) == len(old_cells)
                 and columns == old_columns and drawn_widths == old_drawn_widths)
        strips: list[Strip] = []
        pieces: list[list[_Piece]] = []
        for y, (_, cells) in enumerate(shown):
            before = old_cells[y] if reuse and y < len(old_cells) and len(cells) == len(old_cells[y]) else None
            if before is not None and all(map(same_text, cells, before)):
                strips.append(old_strips[y])
                pieces.append(old_pieces[y])
                continue
            row = [old_pieces[y][k] if before is not None and same_text(cells[i], before[i])
                   else _piece(cells[i], drawn_widths[k], console) for k, i in enumerate(columns)]
            strips.append(Strip(*_join(row)))
            pieces.append(row)
        self._drawn = [cells for _, cells in shown]
        self._pieces = pieces
        self._header, self._strips = header_strip, strips
        self.virtual_size = Size(header_strip.cell_length, len(strips) + 1)
        if header_strip != old_header or len(strips) != len(old_strips):
            self.refresh()
        else:  # same columns, same rows: repaint the rows whose text changed
            self._refresh_rows(*(i for i, (a, b) in enumerate(zip(old_strips, strips, strict=False)) if a != b))

    def _fit(self, header: tuple[str, ...], widths: list[int]) -> tuple[tuple[int, ...], list[int], list[str]]:
        """The columns drawn in this box, their widths, and every column's label (short ones when those fit)."""
        room = self.content_region.width - 1  # a blank cell before the border, as on the left
        if len(self._shown or ()) + 1 > self.content_region.height:  # the rows will scroll: room for the bar
            room -= self.styles.scrollbar_size_vertical
        if room <= 0:  # not laid out yet: draw everything, the first resize fits it
            return tuple(range(len(header))), widths, list(header)
        columns = [self.COLUMNS[i] for i in self.shown_indexes]  # the header's: hidden ones are not in it
        arrows = [label[len(c.label):] for label, c in zip(header, columns, strict=True)]
        shorts = [(c.short or c.label) + arrow for c, arrow in zip(columns, arrows, strict=True)]
        fits = [ColumnFit(label=cell_len(label), short=cell_len(short), cells=width, priority=c.priority,
                          floor=c.floor)
                for label, short, width, c in zip(header, shorts, widths, columns, strict=True)]
        fitted = fit_columns(fits, room, gap=_GAP)
        labels = shorts if fitted.short else list(header)
        return fitted.shown, [fitted.widths[i] for i in fitted.shown], labels

    def on_resize(self) -> None:
        """Another width shows other columns: draw again (the rows are unchanged)."""
        if self._shown is not None:
            self._draw(self._shown_header, self._shown)

    @property
    def shown_columns(self) -> tuple[int, ...]:
        """The indexes (into COLUMNS) of the columns on screen, left to right: neither hidden nor left out."""
        shown = self.shown_indexes
        return tuple(shown[k] for k in self._columns if k < len(shown))

    @property
    def draw_error(self) -> str | None:
        """Why the last drawing failed (shown in the box instead), or None."""
        return self._guard.error

    def render_lines(self, crop: Region) -> list[Strip]:
        return self._guard.run(
            lambda: self._render_lines(crop),
            lambda error: error_strips(self, error, crop.width, crop.height, self.rich_style),
        )

    def _render_lines(self, crop: Region) -> list[Strip]:
        # The styles once per repaint (each lookup walks the CSS), then each line is a crop of a cached Strip.
        self._styles = (
            self.rich_style,
            self.get_component_rich_style("table--header"),
            self.get_component_rich_style("table--cursor"),
        )
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        base, header, cursor = self._styles
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_x)
        if y == 0:
            return self._header.crop_extend(scroll_x, scroll_x + width, None).apply_style(header).apply_style(base)
        index = int(self.scroll_y) + y - 1
        if index >= len(self._strips):
            if index == 0:
                note = "no rows match the filter" if self._source else self.EMPTY
                return Strip([Segment(f" {note}", Style(dim=True))]).crop_extend(0, width, None).apply_style(base)
            return Strip.blank(width, base)
        strip = self._strips[index].crop_extend(scroll_x, scroll_x + width, None)
        if index == self.cursor_row:
            strip = strip.apply_style(cursor)
        return strip.apply_style(base)

    def _update_titles(self, shown: int) -> None:
        """Set the border texts only when they change: each assignment repaints the whole table."""
        total = len(self._source)
        count = f"{shown}/{total}" if self.filter_text else f"{total}"
        titles = (count, self.sort_label, self.filter_text, len(self.hidden))
        if titles == self._titles:
            return
        self._titles = titles
        title = Text.assemble((self.TITLE, "bold"), f" {count}")
        if self.title_note:
            title.append(f" · {self.title_note}", style="dim")
        self.border_title = title
        subtitle = Text.assemble(("s", "bold"), f" sort: {self.sort_label}")
        if self.hidden:
            subtitle.append(f"  {len(self.hidden)} hidden (c)", style="dim")
        if self.filter_text:
            subtitle.append("  ")
            subtitle.append("/", style="bold")
            subtitle.append(" filter: ")
            subtitle.append_text(lit(self.filter_text, style="reverse"))
        self.border_subtitle = subtitle


@dataclass(frozen=True, slots=True)
class _Piece:
    """One table cell cut to its column's width and rendered: its segments, cells, and whether a span
    covers its first or last character (a break in the row's segments there, as Rich would make)."""

    segments: tuple[Segment, ...]
    length: int
    styled: bool  # any span or style at all
    open_start: bool  # no span covers the first character
    open_end: bool  # none covers the last


def _piece(cell: Text, width: int, console: Any) -> _Piece:
    cell = cell.copy()
    cell.truncate(width, pad=True, overflow="ellipsis")
    if cell.style:  # in the assembled row the cell's own style is a span over it, first of its spans
        cell.stylize_before(cell.style)
        cell.style = ""
    end = len(cell.plain)
    spans = cell.spans
    segments = tuple(s for s in cell.render(console) if s.text)
    return _Piece(segments, cell.cell_len, bool(spans),
                  not any(s.start == 0 < s.end for s in spans),
                  not any(s.end >= end > s.start for s in spans))


_LEAD = _Piece((Segment(" "),), 1, False, True, True)
_SEP = _Piece((Segment(" " * _GAP),), _GAP, False, True, True)


def _join(row: Sequence[_Piece]) -> tuple[list[Segment], int]:
    """A row's segments and cell length, exactly as rendering the assembled row (" ", cells, gaps) gives them.

    Rich breaks a line's segments only where a span starts or ends: unstyled stretches either side of a
    cell's edge are one segment, and with any span in the row they carry the null Style, not None.
    """
    parts = [_LEAD]
    for k, piece in enumerate(row):
        if k:
            parts.append(_SEP)
        parts.append(piece)
    null = Style.null() if any(p.styled for p in parts) else None
    segments: list[Segment] = []
    joinable = False  # the last segment is unstyled and no span ends at it
    for piece in parts:
        for j, seg in enumerate(piece.segments):
            if j == 0 and joinable and piece.open_start:
                segments[-1] = Segment(segments[-1].text + seg.text, null)
            else:
                segments.append(seg if seg.style is not None or null is None else Segment(seg.text, null))
        if piece.segments:
            joinable = piece.open_end
    return segments, sum(p.length for p in parts)


_UP_RANK = {False: 0, None: 1, True: 2}
_OLD_RANK = 1.5  # up, but its numbers are old: between not known and up


def _error_cell(t: TargetHealth, _now: float) -> Text:
    """The target's error, else its warning (numbers it sends that are not used), literal either way."""
    if t.error:
        return lit(t.error)
    if t.warning:
        return Text.assemble(Text("⚠ ", style="yellow"), lit(t.warning))
    return Text("")


def _up(row: TargetHealth | WorkerRow, _now: float) -> Text:
    if row.up is None:
        return Text("…", style="dim")
    return Text("● up", style="green") if row.up else Text("✗ DOWN", style="bold red")


class TargetsTable(SortFilterTable[TargetHealth]):
    """The scrape targets; one that is up but whose last good scrape is old reads ``⚠ 58s old``, dimmed."""

    TITLE = "targets"
    EMPTY = "no targets scraped yet"

    def __init__(self, *, id: str | None = None, config_file: str | None = None) -> None:
        self.stale_after_s: float | None = None  # the Dashboard's: older data is said to be old
        # Which ptmon.toml was read (given, or found in ./, $PTMON_CONFIG, ~/.config): said where targets are.
        self.title_note = "" if config_file is None else f"from {safe(config_file)}"
        # An instance attribute: the up column needs this table's stale_after_s.
        self.COLUMNS = (
            Column("name", lambda t, _: lit(t.name, style="bold"), _natural(lambda t: t.name),
                   priority=10, floor=12),
            Column("role", lambda t, _: lit(t.role), _natural(lambda t: t.role), priority=3),
            Column("up", self._up, self._up_rank, priority=9, floor=8),
            Column("last scrape", lambda t, now: _ago(now, t.last_scrape), lambda t: t.last_scrape,
                   short="scraped", priority=6),
            Column("scrape", lambda t, _: _text(fmt_seconds(t.scrape_seconds)), lambda t: t.scrape_seconds,
                   short="took", priority=5),
            Column("samples", lambda t, _: _text(fmt_num(t.samples)), lambda t: t.samples, priority=4),
            Column("error", _error_cell, lambda t: t.error or t.warning or "", priority=8, floor=16),
            # long, and known from the config: the first to go
            Column("url", lambda t, _: lit(t.url), _natural(lambda t: t.url), priority=2),
        )
        super().__init__(id=id)

    def show(self, rows: Sequence[TargetHealth], now: float, *, stale_after_s: float | None = None) -> None:
        self.stale_after_s = stale_after_s
        super().show(rows, now)

    def _old(self, t: TargetHealth) -> bool:
        return bool(t.up) and t.is_old(self.stale_after_s)

    def _up(self, t: TargetHealth, now: float) -> Text:
        if self._old(t):
            assert t.age_s is not None
            return Text(f"⚠ {fmt_duration(t.age_s)} old", style="yellow")
        if t.up and t.recognised is False:  # it answers, but with nothing ptmon reads: say so, not "ok"
            return Text(f"● up · nothing recognised ({fmt_num(t.series)} series)", style="yellow")
        return _up(t, now)

    def _up_rank(self, t: TargetHealth) -> float:
        return _OLD_RANK if self._old(t) else _UP_RANK[t.up]

    def row_key(self, row: TargetHealth) -> str:
        return row.name

    def row_style(self, row: TargetHealth) -> str:
        return "red" if row.up is False else "dim" if self._old(row) else ""


_STATUS_STYLE = {"ok": "green", "down": "bold red", "stale": "yellow", "slow": "yellow", "unknown": "dim"}


class WorkersTable(SortFilterTable[WorkerRow]):
    TITLE = "rollout workers"
    EMPTY = "no rollout workers seen yet"

    def __init__(self, *, thresholds: Thresholds | None = None, id: str | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        # An instance attribute: the staleness colours need this table's thresholds.
        self.COLUMNS = (
            Column("worker", lambda w, _: lit(w.name, style="bold"), _natural(lambda w: w.name),
                   priority=10, floor=12),
            Column("rollouts/s", lambda w, _: _text(fmt_num(w.rollouts_per_s)), lambda w: w.rollouts_per_s,
                   short="roll/s", priority=9),
            Column("tokens/s", lambda w, _: _text(fmt_rate(w.tokens_per_s, "")), lambda w: w.tokens_per_s,
                   short="tok/s", priority=5),
            Column(
                "policy",
                lambda w, _: _text(fmt_version(w.policy_version)),
                lambda w: w.policy_version,
            ),
            Column("staleness", self._staleness, lambda w: w.staleness, short="stale", priority=8),
            Column("reward", lambda w, _: _text(fmt_num(w.mean_reward)), lambda w: w.mean_reward, priority=6),
            Column("status", lambda w, _: lit(w.status, style=_STATUS_STYLE.get(w.status, "")), lambda w: w.status,
                   priority=7, floor=6),
        )
        super().__init__(id=id)

    def _staleness(self, w: WorkerRow, _now: float) -> Text:
        return against_limits(w.staleness, self.thresholds.staleness_warn, self.thresholds.staleness_critical)

    def row_key(self, row: WorkerRow) -> str:
        return row.name

    def row_style(self, row: WorkerRow) -> str:
        return "red" if row.up is False else ""


_LEVEL_RANK = {"warn": 1, "critical": 2}


def _level(a: Alert, _now: float) -> Text:
    return Text("● CRIT", style="bold red") if a.level == "critical" else Text("▲ warn", style="yellow")


class AlertsTable(SortFilterTable[Alert]):
    TITLE = "alerts"
    EMPTY = "no active alerts"
    DEFAULT_SORT = (0, True)  # critical first
    COLUMNS = (
        Column("level", _level, lambda a: _LEVEL_RANK.get(a.level, 0), priority=10),
        Column("since", lambda a, now: _text(fmt_duration(now - a.since)), lambda a: -a.since, priority=7),
        Column("message", lambda a, _: lit(a.message), lambda a: a.message, priority=9, floor=20),
        Column("alert", lambda a, _: lit(a.name), lambda a: a.name, priority=4),
        Column("subject", lambda a, _: lit(a.subject) if a.subject else Text(""), _natural(lambda a: a.subject or ""),
               priority=5, floor=12),
    )

    def row_key(self, row: Alert) -> str:
        return f"{row.name}\0{row.subject or ''}"
