"""One-line trends for the compact (80x24) layout, where braille charts don't fit."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

__all__ = ["SparkCell"]


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
        yield Sparkline([])

    def show(self, values: Sequence[float], caption: Text) -> None:
        if caption != self._caption:
            self._caption = caption
            self.query_one(Static).update(Text.assemble(self._label, " ", caption))
        values = tuple(values)
        if values != self._values:
            self._values = values
            self.query_one(Sparkline).data = list(values)
