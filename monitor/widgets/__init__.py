"""The widgets of ptmon's live screen; each reads Dashboard values, none fetches data."""

from ptmon.monitor.widgets.cards import CARDS, Card, card_age, card_for_alert, card_level, card_rows
from ptmon.monitor.widgets.chart import Chart, ChartData, plot
from ptmon.monitor.widgets.footer import FittedFooter
from ptmon.monitor.widgets.header import HeaderState, StatusHeader, header_text
from ptmon.monitor.widgets.help import HelpScreen
from ptmon.monitor.widgets.lines import DrawFailed
from ptmon.monitor.widgets.sparks import SparkCell
from ptmon.monitor.widgets.tables import AlertsTable, SortFilterTable, TargetsTable, WorkersTable

__all__ = [
    "CARDS",
    "AlertsTable",
    "Card",
    "Chart",
    "ChartData",
    "DrawFailed",
    "FittedFooter",
    "HeaderState",
    "HelpScreen",
    "SortFilterTable",
    "SparkCell",
    "StatusHeader",
    "TargetsTable",
    "WorkersTable",
    "card_age",
    "card_for_alert",
    "card_level",
    "card_rows",
    "header_text",
    "plot",
]
