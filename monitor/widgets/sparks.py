"""One-line trends for the compact (80x24) layout, where braille charts don't fit."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Sparkline, Static

from ptmon.monitor.widgets.lines import DrawGuard, error_strips

__all__ = ["SafeSparkline", "SparkCell", "drawable"]


def drawable(values: Sequence[float]) -> list[float]:
    """``values`` as Textual's Sparkline can draw them: finite, and with a finite spread.

    The Sparkline scales each value by ``(v - min) / (max - min)``; between -1e308 and 1e308 that
    spread is inf and the top value's ratio NaN, which raised in ``int()`` and ended the app. The
    bars depend only on those ratios, so halving every value draws the same sparkline.
    """
    finite = [v for v in values if math.isfinite(v)]
    if finite and not math.isfinite(max(finite) - min(finite)):
        return [v / 2 for v in finite]
    return finite


class SafeSparkline(Sparkline):
    """Textual's Sparkline whose drawing cannot end the app: an error shows in its place."""

    def __init__(self, data: Sequence[float] | None = None) -> None:
        super().__init__(data)
        self._guard = DrawGuard(self)

    @property
    def draw_error(self) -> str | None:
        return self._guard.error

    def render_lines(self, crop: Region) -> list[Strip]:
        return self._guard.run(
            lambda: super(SafeSparkline, self).render_lines(crop),
            lambda error: error_strips(self, error, crop.width, crop.height, self.rich_style),
        )


class SparkCell(Vertical):
    """A label with the current value over a Textual Sparkline of the window."""

    DEFAULT_CSS = """
    SparkCell { width: 1fr; height: 2; padding: 0 1; }
    SparkCell > Static { height: 1; color: $text-muted; }
    SparkCell > Sparkline { height: 1; }
    """

    def __init__(self, label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._label = label
        self._caption = Text()
        self._values: tuple[float, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static(Text(self._label))
        yield SafeSparkline([])

    def show(self, values: Sequence[float], caption: Text) -> None:
        if caption != self._caption:
            self._caption = caption
            self.query_one(Static).update(Text.assemble(self._label, " ", caption))
        values = tuple(values)
        if values != self._values:
            self._values = values
            self.query_one(Sparkline).data = drawable(values)
