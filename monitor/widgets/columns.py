"""The ``c`` screen: the active table's columns, each ticked when shown; a tick hides or shows it at once.

The choice lives on the table itself (``SortFilterTable.set_hidden``), so it
holds for as long as the app runs, across updates, panel switches and layout
changes; nothing is written to disk.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import SelectionList, Static
from textual.widgets.selection_list import Selection

from ptmon.monitor.widgets.tables import SortFilterTable

__all__ = ["ColumnsScreen"]


class ColumnsScreen(ModalScreen[None]):
    """Space or Enter ticks a column on or off; Escape or ``c`` closes. The last shown column cannot go."""

    DEFAULT_CSS = """
    ColumnsScreen { align: center middle; }
    ColumnsScreen > Vertical {
        width: 44; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    ColumnsScreen SelectionList { height: auto; max-height: 20; border: none; }
    ColumnsScreen .note { color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape", "dismiss", "close", show=False),
        Binding("c", "dismiss", "close", show=False),
    ]

    def __init__(self, table: SortFilterTable[Any]) -> None:
        super().__init__()
        self._table = table

    def compose(self) -> ComposeResult:
        table = self._table
        with Vertical() as box:
            box.border_title = f"{table.TITLE} columns"
            box.border_subtitle = "Esc or c closes"
            yield SelectionList[str](
                *(Selection(label, label, label not in table.hidden) for label in table.column_labels),
                id="columns")
            yield Static("space/Enter: show or hide · kept while ptmon runs", classes="note")

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged[str]) -> None:
        chosen = set(event.selection_list.selected)
        table = self._table
        if not chosen:  # the last shown column stays: tick it again, so the list says what is shown
            for label in table.column_labels:
                if label not in table.hidden:
                    event.selection_list.select(label)
            return
        table.set_hidden(frozenset(table.column_labels) - chosen)
