"""Read what a Textual app shows, as plain text, from its exported SVG screenshot.

Going through ``export_screenshot`` (public API) means the tests read the same
cells a person would see, after Rich and Textual have done all their parsing:
if markup in a scraped string took effect, its brackets would be gone here.
"""

from __future__ import annotations

import html
import re

from textual.app import App

__all__ = ["screen_lines", "screen_rows", "screen_text"]

_TEXT = re.compile(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)"[^>]*>(.*?)</text>', re.S)
_CELL = 12.2  # Textual's SVG cell width: 0.61 x its 20px font
_ROW, _TOP = 24.4, 20.0  # Textual's SVG line height and the first line's y


def screen_lines(app: App) -> list[str]:
    """The screen as lines of text; cells with only a background (no <text>) are spaces."""
    rows: dict[float, list[str]] = {}
    for x, y, _length, body in _TEXT.findall(app.export_screenshot()):
        text = html.unescape(body).replace("\xa0", " ")
        line = rows.setdefault(float(y), [])
        col = round(float(x) / _CELL)
        if len(line) < col:
            line.extend(" " * (col - len(line)))
        line[col:col + len(text)] = list(text)
    lines = ["".join(line) for _, line in sorted(rows.items())]
    return [line for line in lines if line.strip()]  # a y with no text at all is a rect row, not a screen line


def screen_text(app: App) -> str:
    return "\n".join(screen_lines(app))


def screen_rows(app: App) -> list[str]:
    """Every row of the screen, blank ones included, each padded to the screen's width: row y is screen y."""
    width, height = app.size
    rows = [[" "] * width for _ in range(height)]
    for x, y, _length, body in _TEXT.findall(app.export_screenshot()):
        row = round((float(y) - _TOP) / _ROW)
        col = round(float(x) / _CELL)
        text = html.unescape(body).replace("\xa0", " ")
        if 0 <= row < height:
            rows[row][col:col + len(text)] = list(text)
    return ["".join(row)[:width] for row in rows]
