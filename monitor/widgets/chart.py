"""Line charts drawn in braille, sized to whatever box the layout gives them.

A terminal cell holds a 2x4 grid of braille dots, so a 50x10 box is a 100x40
plot: enough to read a trend and spot a spike without a plotting dependency.
:func:`plot` is a pure function of the data and the size (tested on its own);
:class:`Chart` only re-draws when the data or its size changes.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text

from ptmon.monitor.format import fmt_num
from ptmon.monitor.widgets.lines import LineWidget

__all__ = ["ChartData", "plot", "Chart"]

Point = tuple[float, float]

_MAX = sys.float_info.max
_REL_PAD = 2.0**-40  # a lone x's pad relative to its size: below the 1.0 pad up to 2^40, so small charts keep it

# Braille dot bits by (column, row) inside one cell.
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))


@dataclass(frozen=True, slots=True)
class ChartData:
    """What one chart shows; equal data means no re-draw."""

    points: tuple[Point, ...] = ()
    x_range: tuple[float, float] | None = None  # None: the points' own range
    marks: tuple[float, ...] = ()  # x positions drawn as vertical ticks (sync events, the baseline)
    marks_on_axis: bool = False  # the marks as ╵ on the x-axis row instead: the line stays readable however many
    y_zero: bool = False  # the y axis always includes zero (else it fits the data, from zero only when zero is near)
    hline: float | None = None  # y of a horizontal reference line (the baseline score)
    errors: tuple[float | None, ...] = ()  # each point's ± (one standard error), drawn as a vertical bar
    x_labels: tuple[str, str] = ("", "")
    y_format: Callable[[float], str] = fmt_num
    empty: str = "no data yet"


def _finite(points: Sequence[Point]) -> list[Point]:
    return [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]


def _line(x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
    """Dots on the segment between two dots (Bresenham), ends included."""
    dots = []
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        dots.append((x0, y0))
        if x0 == x1 and y0 == y1:
            return dots
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


def _fraction(v: float, lo: float, hi: float) -> float:
    """Where ``v`` sits between ``lo`` and ``hi`` (0 to 1 inside), for any finite floats.

    Computed on halves: ``hi - lo`` overflows to inf between -1e308 and 1e308, a half never
    does, and halving a float is exact (bar subnormals), so ordinary charts are unchanged.
    """
    span = hi / 2 - lo / 2
    if not span > 0:
        return 0.5
    f = (v / 2 - lo / 2) / span
    return f if math.isfinite(f) else 0.5


def _widen(lo: float, hi: float, pad: float) -> tuple[float, float]:
    """``lo - pad, hi + pad`` held to finite floats (a span at the top of the range stays finite)."""
    return max(lo - pad, -_MAX), min(hi + pad, _MAX)


@dataclass(frozen=True, slots=True)
class _Frame:
    """Where data lands in a plot of ``dots_w`` x ``dots_h`` braille dots (y grows downwards)."""

    x0: float
    x1: float
    ylo: float
    yhi: float
    dots_w: int
    dots_h: int

    def dot_x(self, x: float) -> int:
        return min(self.dots_w - 1, max(0, round(_fraction(x, self.x0, self.x1) * (self.dots_w - 1))))

    def dot_y(self, y: float) -> int:
        return min(self.dots_h - 1, max(0, round((1 - _fraction(y, self.ylo, self.yhi)) * (self.dots_h - 1))))


def _blank(message: str, width: int, height: int, style: str) -> Text:
    """``message`` centred on the middle line of an otherwise empty box."""
    blank = [""] * height
    blank[(height - 1) // 2] = message.center(width)[:width].rstrip()
    return Text("\n".join(blank), style=style, no_wrap=True, overflow="crop")


def _x_range(data: ChartData, points: Sequence[Point]) -> tuple[float, float]:
    """The x span drawn: the data's own (or the given window), never of zero width.

    A lone point sits in the middle of a span of at least 2 (one eval); from 2^53 up ``x ± 1``
    is ``x`` again, so the pad grows with the number there.
    """
    xs = [x for x, _ in points]
    given = data.x_range
    x0, x1 = given if given is not None and all(map(math.isfinite, given)) else (min(xs), max(xs))
    if x1 <= x0:
        x0, x1 = _widen(x0, x0, max(1.0, abs(x0) * _REL_PAD))
    return x0, x1


def _bars(data: ChartData) -> list[tuple[float, float, float]]:
    """(x, low, high) of each finite point's error bar."""
    return [(x, y - e, y + e) for (x, y), e in zip(data.points, data.errors, strict=False)
            if e is not None and e > 0 and math.isfinite(x) and math.isfinite(y) and math.isfinite(e)]


def _y_range(points: Sequence[Point], hline: float | None, bars: Sequence[tuple[float, float, float]] = (), *,
             zero: bool = False) -> tuple[float, float]:
    """The y span drawn: the visible points, their error bars and the reference line, from zero when zero
    is near (or asked)."""
    ys = [y for _, y in points] + [y for _, lo, hi in bars for y in (lo, hi)]
    ylo, yhi = min(ys), max(ys)
    if hline is not None and math.isfinite(hline):
        ylo, yhi = min(ylo, hline), max(yhi, hline)
    if zero:
        ylo, yhi = min(ylo, 0.0), max(yhi, 0.0)
    if yhi <= ylo:
        ylo, yhi = _widen(ylo, yhi, abs(yhi) * 0.1 or 1.0)
    if ylo >= 0 and ylo < 0.25 * yhi:
        ylo = 0.0  # rates read best from zero when zero is near
    return ylo, yhi


def _dots(points: Sequence[Point], frame: _Frame, plot_w: int, plot_h: int) -> list[list[int]]:
    """The braille mask of each cell: the points joined by straight segments, left to right."""
    grid = [[0] * plot_w for _ in range(plot_h)]
    previous: tuple[int, int] | None = None
    for x, y in sorted(points):
        here = (frame.dot_x(x), frame.dot_y(y))
        for dx, dy in _line(*previous, *here) if previous else [here]:
            grid[dy // 4][dx // 2] |= _BITS[dx % 2][dy % 4]
        previous = here
    return grid


def _cells(mask_row: Sequence[int], row: int, mark_cols: set[int], hline_row: int | None,
           styles: tuple[str, str, str]) -> list[tuple[str, str]]:
    """One plot row as runs of (characters, style): dots over marks over the reference line."""
    line_style, mark_style, hline_style = styles
    runs: list[tuple[str, str]] = []
    run: list[str] = []
    run_style = ""
    for col, mask in enumerate(mask_row):
        if mask:
            char, style = chr(0x2800 + mask), line_style
        elif col in mark_cols:
            char, style = "╎", mark_style
        elif row == hline_row:
            char, style = "┄", hline_style
        else:
            char, style = " ", ""
        if style != run_style and run:
            runs.append(("".join(run), run_style))
            run = []
        run_style = style
        run.append(char)
    if run:
        runs.append(("".join(run), run_style))
    return runs


_MARK_SPACING = 6  # cells between vertical marks when they must share the plot with the line


def _thinned(cols: set[int]) -> set[int]:
    """Marks at least _MARK_SPACING cells apart (the first of each crowd kept): the line stays readable."""
    kept: list[int] = []
    for col in sorted(cols):
        if not kept or col - kept[-1] >= _MARK_SPACING:
            kept.append(col)
    return set(kept)


def _axis_row(axis: str, mark_cols: set[int], axis_style: str, mark_style: str) -> Text:
    """The x-axis row (labels at its ends) with ╵ under each mark's plot column where no label is."""
    row = Text()
    for i, char in enumerate(axis):
        if char == " " and i - 1 in mark_cols:  # axis[0] sits under the │, plot column c at c + 1
            row.append("╵", style=mark_style)
        else:
            row.append(char, style=axis_style)
    return row


def plot(
    data: ChartData,
    *,
    width: int,
    height: int,
    line_style: str = "bold cyan",
    mark_style: str = "yellow",
    hline_style: str = "magenta",
    axis_style: str = "dim",
) -> Text:
    """``data`` drawn into exactly ``height`` lines of at most ``width`` cells."""
    if width <= 0 or height <= 0:
        return Text()
    points = _finite(data.points)
    if not points:
        return _blank(data.empty, width, height, axis_style)
    x0, x1 = _x_range(data, points)
    points = [(x, y) for x, y in points if x0 <= x <= x1]  # the y range is the visible points' range
    if not points:
        return _blank(data.empty, width, height, axis_style)
    bars = [b for b in _bars(data) if x0 <= b[0] <= x1]
    ylo, yhi = _y_range(points, data.hline, bars, zero=data.y_zero)

    top_label, bottom_label = data.y_format(yhi), data.y_format(ylo)
    gutter = max(len(top_label), len(bottom_label)) + 1
    show_x = height >= 3
    plot_h = height - 1 if show_x else height
    plot_w = width - gutter
    if plot_w < 2:
        return Text("\n".join([""] * height))
    frame = _Frame(x0, x1, ylo, yhi, plot_w * 2, plot_h * 4)
    grid = _dots(points, frame, plot_w, plot_h)
    for x, lo, hi in bars:  # a bar is a column of dots through its point
        dx = frame.dot_x(x)
        for dy in range(frame.dot_y(hi), frame.dot_y(lo) + 1):
            grid[dy // 4][dx // 2] |= _BITS[dx % 2][dy % 4]
    all_marks = {frame.dot_x(m) // 2 for m in data.marks if math.isfinite(m) and x0 <= m <= x1}
    axis_marks = all_marks if data.marks_on_axis and show_x else set()
    mark_cols = set() if axis_marks else _thinned(all_marks) if data.marks_on_axis else all_marks
    hline_row = None
    if data.hline is not None and math.isfinite(data.hline):
        hline_row = frame.dot_y(data.hline) // 4

    text = Text(no_wrap=True, overflow="crop")
    for row in range(plot_h):
        label = top_label if row == 0 else bottom_label if row == plot_h - 1 else ""
        text.append(label.rjust(gutter - 1) + "│", style=axis_style)
        for chars, style in _cells(grid[row], row, mark_cols, hline_row, (line_style, mark_style, hline_style)):
            text.append(chars, style=style)
        text.append("\n")
    if show_x:
        left, right = data.x_labels
        room = plot_w + 1
        axis = left + right.rjust(max(0, room - len(left)))
        text.append(" " * (gutter - 1), style=axis_style)
        text.append_text(_axis_row(axis[:room], axis_marks, axis_style, mark_style))
    else:
        text.rstrip()
    return text


class Chart(LineWidget):
    """A bordered braille chart; ``show`` it new data, it re-draws only on change."""

    DEFAULT_CSS = """
    Chart {
        width: 1fr;
        height: 1fr;
        border: round $panel-lighten-2;
        border-title-color: $text;
        padding: 0 1 0 0;
    }
    """

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = title
        self._data = ChartData()
        self._subtitle = ""

    @property
    def data(self) -> ChartData:
        return self._data

    def show(self, data: ChartData, *, subtitle: str = "") -> None:
        if subtitle != self._subtitle:
            self._subtitle = subtitle
            self.set_border_subtitle(Text(subtitle))
        if data != self._data:
            self._data = data
            self.redraw()

    def lines(self, width: int, height: int) -> list[Text]:
        return list(plot(self._data, width=width, height=height).split("\n"))
