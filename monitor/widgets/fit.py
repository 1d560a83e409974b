"""Which table columns a box of a given width shows, and how wide: never a cut number.

A table wider than its box used to be cropped at the border, so the last
visible column lost its tail (a reward of 0.44 read ``0.``, a header
``rewar``). :func:`fit_columns` decides instead, in this order, until the row
fits: short labels for the columns that have one, then the free-text columns
(an error, a message, a name) narrowed towards their floor, lowest priority
first (their cells then end in ``…``), then whole columns dropped, lowest
priority first; a column below EXTRA_BELOW (the URL) goes before any text is cut. A number column is
shown whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["EXTRA_BELOW", "ColumnFit", "Fitted", "fit_columns", "row_width"]

EXTRA_BELOW = 3  # a column of lower priority (a URL, known from the config) is dropped before text is cut


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


def _drop(widths: list[int], order: Sequence[int], room: int, gap: int) -> None:
    """Drop whole columns in ``order`` until the row fits ``room``."""
    for i in order:
        if row_width(widths, gap) <= room:
            return
        widths[i] = 0


def fit_columns(columns: Sequence[ColumnFit], room: int, *, gap: int = 2) -> Fitted:
    """The columns and widths that fit ``room`` cells; the highest-priority column always stays."""
    everything = tuple(range(len(columns)))
    for short in (False, True):
        widths = _natural(columns, short)
        if row_width(widths, gap) <= room:
            return Fitted(everything, tuple(widths), short)
    widths = _natural(columns, True)
    by_priority = sorted(everything, key=lambda i: (columns[i].priority, -i))
    extras = [i for i in by_priority[:-1] if columns[i].priority < EXTRA_BELOW]
    _drop(widths, extras, room, gap)  # what the config already says (a URL) goes before any text is cut
    for i in by_priority:  # free text gives way, lowest priority first, before any other column goes
        column = columns[i]
        over = row_width(widths, gap) - room
        if column.floor is not None and widths[i] and over > 0:
            widths[i] = max(min(widths[i], max(column.floor, column.short)), widths[i] - over)
    _drop(widths, by_priority[:-1], room, gap)  # the lowest first; the last one standing is never dropped
    natural = _natural(columns, True)
    for i in reversed(by_priority):  # space a dropped column left goes back to narrowed text, highest first
        column = columns[i]
        spare = room - row_width(widths, gap)
        if column.floor is not None and widths[i] and spare > 0:
            widths[i] = min(natural[i], widths[i] + spare)
    return Fitted(tuple(i for i in everything if widths[i] > 0), tuple(widths), True)
