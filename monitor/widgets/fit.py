"""Which table columns a box of a given width shows, and how wide: never a cut number.

A table wider than its box used to be cropped at the border, so the last
visible column lost its tail (a reward of 0.44 read ``0.``, a header
``rewar``). :func:`fit_columns` decides instead, in this order, until the row
fits: short labels for the columns that have one, then the free-text columns
(an error, a URL, a message) narrowed to their floor (their cells then end in
``…``), then whole columns dropped, lowest priority first. A number column is
shown whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ColumnFit", "Fitted", "fit_columns", "row_width"]


@dataclass(frozen=True, slots=True)
class ColumnFit:
    """What :func:`fit_columns` needs to know about one column."""

    label: int  # cells of the full label (with the sort arrow when sorted)
    short: int  # cells of the short label (== label when there is none)
    cells: int  # cells of the widest value
    priority: int  # higher stays longer
    floor: int | None = None  # free text: may be narrowed to this many cells (``…`` at the end); None: never


@dataclass(frozen=True, slots=True)
class Fitted:
    shown: tuple[int, ...]  # the indexes of the columns drawn, in their order
    widths: tuple[int, ...]  # the width of each column (0 for a column not shown)
    short: bool  # whether the short labels are used


def row_width(widths: Sequence[int], gap: int, *, margin: int = 1) -> int:
    """Cells one row takes: the left margin, each shown column and a gap between each two."""
    shown = [w for w in widths if w > 0]
    return margin + sum(shown) + gap * max(0, len(shown) - 1)


def _natural(columns: Sequence[ColumnFit], short: bool) -> list[int]:
    return [max(c.short if short else c.label, c.cells) for c in columns]


def fit_columns(columns: Sequence[ColumnFit], room: int, *, gap: int = 2) -> Fitted:
    """The columns and widths that fit ``room`` cells; the highest-priority column always stays."""
    everything = tuple(range(len(columns)))
    for short in (False, True):
        widths = _natural(columns, short)
        if row_width(widths, gap) <= room:
            return Fitted(everything, tuple(widths), short)
    widths = _natural(columns, True)
    for i, column in enumerate(columns):  # free text gives way before any column goes
        if column.floor is not None:
            over = row_width(widths, gap) - room
            if over > 0:
                widths[i] = max(min(widths[i], max(column.floor, column.short)), widths[i] - over)
    by_priority = sorted(everything, key=lambda i: (columns[i].priority, -i))
    for i in by_priority[:-1]:  # the lowest first; the last one standing is never dropped
        if row_width(widths, gap) <= room:
            break
        widths[i] = 0
    natural = _natural(columns, True)
    for i, column in enumerate(columns):  # space a dropped column left goes back to narrowed text
        spare = room - row_width(widths, gap)
        if column.floor is not None and widths[i] and spare > 0:
            widths[i] = min(natural[i], widths[i] + spare)
    return Fitted(tuple(i for i in everything if widths[i] > 0), tuple(widths), True)
