"""The key bar: as many whole keys as the width holds, never one cut in half.

Textual's Footer lays every key out in a row and lets the right edge (and the
palette key docked there) crop what does not fit, so at 80 columns it read
``a ▏^p palette``. This one keeps the keys, in the app's order, that fit whole
beside the palette key, and lays them out again when the width changes; ``?``
lists them all.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["FittedFooter", "key_cells"]

PALETTE_CELLS = 1 + len(" ^p ") + len("palette ") + 1  # its border, key, description and right padding


def key_cells(key_display: str, description: str) -> int:
    """Cells a FooterKey takes: the key padded by one on each side, then the description and a space."""
    return cell_len(key_display) + 2 + (cell_len(description) + 1 if description else 0)


class FittedFooter(Footer):
    """A Footer that drops whole keys from the right instead of cropping one."""

    def __init__(self) -> None:
        super().__init__()
        self._width = 0

    def compose(self) -> ComposeResult:
        items: list[Widget] = list(super().compose())
        palette = [item for item in items if item.has_class("-command-palette")]
        room = (self.size.width or self.app.size.width) - (PALETTE_CELLS if palette else 0)
        for item in items:
            if item in palette:
                continue
            need = key_cells(item.key_display, item.description) if isinstance(item, FooterKey) else 0
            if need > room:
                break
            room -= need
            yield item
        yield from palette

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            if self._bindings_ready:
                self.call_after_refresh(self.recompose)
