"""The ``?`` screen: every key, built from the app's own bindings so it cannot drift."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["HelpScreen", "help_table"]


def help_table(bindings: Sequence[Binding]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold cyan", no_wrap=True)
    table.add_column()
    for binding in bindings:
        key = binding.key_display or binding.key
        table.add_row(Text(key), Text(binding.tooltip or binding.description))
    return table


class HelpScreen(ModalScreen[None]):
    """Keys and what they do; Escape or ``?`` closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: auto;
        max-width: 90%;
        height: auto;
        max-height: 90%;
        border: round $accent;
        border-title-style: bold;
        background: $surface;
        padding: 0 2;
    }
    HelpScreen Static { width: auto; }
    HelpScreen .note { color: $text-muted; margin-top: 1; }
    """

    BINDINGS = [
        Binding("escape", "dismiss", "close", show=False),
        Binding("question_mark", "dismiss", "close", show=False),
    ]

    def __init__(self, bindings: Sequence[Binding]) -> None:
        super().__init__()
        self._keys = tuple(bindings)

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "ptmon keys"
            box.border_subtitle = "Esc or ? closes"
            yield Static(help_table(self._keys), id="keys")
            yield Static(
                Text(
                    "Mouse: click a table header to sort by it, again to reverse.\n"
                    "Ctrl+P: the command palette.   —: not known yet."
                ),
                classes="note",
            )
