"""Which columns a narrow table keeps (ptmon.monitor.widgets.fit): never a cut number."""

from __future__ import annotations

from ptmon.monitor.widgets.fit import ColumnFit, fit_columns, row_width

# name, a number, an error message (free text), a url (dropped first), a reward (a number)
NAME = ColumnFit(label=4, short=4, cells=10, priority=10, floor=6)
RATE = ColumnFit(label=10, short=6, cells=4, priority=9)
ERROR = ColumnFit(label=5, short=5, cells=44, priority=8, floor=16)
URL = ColumnFit(label=3, short=3, cells=29, priority=2)
REWARD = ColumnFit(label=6, short=6, cells=4, priority=6)
COLUMNS = (NAME, RATE, ERROR, URL, REWARD)


def test_everything_with_full_labels_when_it_fits() -> None:
    fitted = fit_columns(COLUMNS, 200)
    assert fitted.shown == (0, 1, 2, 3, 4) and not fitted.short
    assert fitted.widths == (10, 10, 44, 29, 6)


def test_short_labels_before_anything_goes() -> None:
    room = row_width([10, 6, 44, 29, 6], 2)
    fitted = fit_columns(COLUMNS, room)
    assert fitted.shown == (0, 1, 2, 3, 4) and fitted.short and fitted.widths[1] == 6


def test_then_free_text_narrows_to_its_floor_then_the_lowest_priority_column_goes_whole() -> None:
    fitted = fit_columns(COLUMNS, 60)
    assert fitted.shown == (0, 1, 2, 4)  # the url went; every number stayed whole
    assert fitted.widths[1] == 6 and fitted.widths[4] == 6
    assert 16 <= fitted.widths[2] < 44 and row_width(fitted.widths, 2) == 60  # the error took what was left


def test_a_tiny_box_keeps_the_first_column_and_numbers_stay_whole_or_go() -> None:
    fitted = fit_columns(COLUMNS, 14)
    assert 0 in fitted.shown
    for i in fitted.shown:
        if COLUMNS[i].floor is None:
            assert fitted.widths[i] >= COLUMNS[i].cells
    assert row_width(fitted.widths, 2) <= 14 or fitted.shown == (0,)


def test_the_url_goes_before_a_name_or_an_error_is_cut() -> None:
    """Seen against Prometheus: the target name and "down according to Prome…" cut while the URL stayed."""
    long_name = ColumnFit(label=4, short=4, cells=15, priority=10, floor=12)
    columns = (long_name, RATE, ERROR, URL)
    room = row_width([15, 6, 44, 29], 2) - 5
    fitted = fit_columns(columns, room)
    assert fitted.shown == (0, 1, 2) and fitted.widths[:3] == (15, 6, 44)
