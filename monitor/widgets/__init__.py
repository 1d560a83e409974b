"""The widgets of ptmon's live screen; each reads Dashboard values, none fetches data."""

from monitor.widgets.cards import CARDS, Card, card_for_alert, card_level, card_rows
from monitor.widgets.chart import Chart, ChartData, plot
from monitor.widgets.header import HeaderState, StatusHeader, header_text
from monitor.widgets.help import HelpScreen
from monitor.widgets.sparks import SparkCell
from monitor.widgets.tables import AlertsTable, SortFilterTable, TargetsTable, WorkersTable

__all__ = [
    "CARDS",
    "AlertsTable",
    "Card",
    "Chart",
    "ChartData",
    "HeaderState",
    "HelpScreen",
    "SortFilterTable",
    "SparkCell",
    "StatusHeader",
    "TargetsTable",
    "WorkersTable",
    "card_for_alert",
    "card_level",
    "card_rows",
    "header_text",
    "plot",
]
