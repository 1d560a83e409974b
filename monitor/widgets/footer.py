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
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

__all__ = ["FittedFooter", "key_cells"]

PALETTE_CELLS = 1 + len(" ^p ") + len("palette ") + 1  # its border, key, description and right padding


def key_cells(key_display: str, description: str) -> int:
    """Cells a FooterKey takes: the key padded by one on each side, then the description and a space."""
    return cell_len(key_display) + 2 + (cell_len(description) + 1 if description else 0)


class FittedFooter(Footer):
    """A Footer that hides whole keys from the right instead of cropping one.

    Which keys show is decided from the terminal's width (``fit``, called by the app on every resize)
    each time the keys are composed or the width changes: deciding inside ``compose`` from the footer's
    own size went stale when resizes came fast (seen in tmux: "a ▏^p palette" after 120 -> 80 columns).
    """

    def __init__(self) -> None:
        super().__init__()
        self._width = 0  # the terminal's width, as the app last said

    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.call_after_refresh(self._refit)

    def fit(self, width: int) -> None:
        self._width = width
        self._refit()

    def on_show(self) -> None:
        self._refit()

    def _refit(self) -> None:
        keys = [key for key in self.query(FooterKey) if not key.has_class("-command-palette")]
        palette = len(keys) < len(self.query(FooterKey))
        room = (self._width or self.app.size.width) - (PALETTE_CELLS if palette else 0)
        for key in keys:
            need = key_cells(key.key_display, key.description)
            key.display = need <= room
            room = room - need if key.display else -1  # a prefix of the keys: none after the first that does not fit
