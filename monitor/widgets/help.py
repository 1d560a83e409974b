"""The ``?`` screen: every key, and what every label, unit, arrow and colour on the screen means.

The keys come from the app's own bindings and the card labels from the cards' own short forms
(``cards.SHORT_LABELS``), so neither can drift from what is on screen; a test checks that every
label a card, a table or the header can show is explained here.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ptmon.monitor.widgets.cards import SHORT_LABELS

__all__ = ["HelpScreen", "LABELS", "MARKS", "help_table", "legend"]

# Every card title and label (full form), and what it means; the short form shown below 120 columns is
# looked up in SHORT_LABELS. "<benchmark>" stands for the eval's benchmark name (gsm8k).
LABELS: tuple[tuple[str, str], ...] = (
    ("intelligence/$", "card: eval score gained per dollar (pts/k$: score points per $1,000)"),
    ("cumulative", "score gained since the baseline per $1,000 spent since it"),
    ("marginal", "the recent slope: score points per $1,000 over the last evals"),
    ("$/+0.01", "dollars to gain one point ([eval] point, 0.01 by default, is in the label) at the marginal "
                "slope; never: the slope is <= 0; — unknown"),
    ("<benchmark>", "the latest eval score on that benchmark (score when it has no name)"),
    ("baseline", "the score at the baseline (b sets it to the latest eval); ┄ on the eval chart"),
    ("rollouts", "card and row: rollouts finished per second over the window, arrow against the 10m median"),
    ("tokens", "rollout (or trainer) tokens generated per second"),
    ("10m median", "the median rollouts per second over the last 10 minutes"),
    ("errors", "rollouts ending in an error, per second"),
    ("$/M tok", "dollars per million rollout tokens at the current burn"),
    ("weight sync", "card: trainer-to-rollout weight syncs over the window"),
    ("p50", "median sync latency (seconds) over the window"),
    ("p99", "99th-percentile sync latency (seconds) over the window"),
    ("last", "the latest sync's latency"),
    ("last avg", "through a server scraping less often than syncs happen: the mean of the syncs in the last "
                 "scrape interval, not one sync (the chart says per-scrape means too)"),
    ("rate", "bytes of weights moved per second over the window"),
    ("failures", "failed syncs in the window (red when any)"),
    ("staleness", "card: how many policy versions the rollout workers are behind the trainer"),
    ("max", "the worst worker's staleness, then / the warn limit (below)"),
    ("mean", "the mean staleness over the workers"),
    ("warn/crit", "the staleness warn and critical limits (from the config)"),
    ("wait batch", "the framework's own bubble: share of wall time the trainer waited for a batch, and $/h "
                   "burnt waiting (prime-rl time/wait_for_batch)"),
    ("wait policy", "the framework's own bubble: share of wall time inference waited for a new policy, and "
                    "$/h burnt waiting (prime-rl time/wait_for_policy)"),
    ("policy", "the trainer's policy version (v192); per worker: the version it generates with"),
    ("trainer", "card: the optimizer"),
    ("steps", "optimizer steps per second"),
    ("step time", "mean time of one step over the window"),
    ("last step", "time since the last step finished"),
    ("loss", "the trainer's latest loss"),
)

# The tables' short column labels (below the width their full labels need) and the header's parts.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("scraped", "targets: last scrape (how long ago)"),
    ("took", "targets: how long the last scrape took"),
    ("samples", "targets: samples in the last scrape"),
    ("roll/s", "workers: rollouts per second (rollouts/s)"),
    ("tok/s", "workers: tokens per second (tokens/s)"),
    ("stale", "workers: policy versions behind the trainer (staleness)"),
    ("reward", "workers: mean reward of its rollouts"),
    ("status", "workers: ok, stale (too far behind), slow, down"),
    ("up 3h12m", "header: time since the run started"),
    ("$315 @ $98.20/h", "header: spent so far @ burn in dollars per hour"),
    ("targets 7/8 · tgt", "header: targets answering / configured"),
    ("alerts 1 crit 1 warn", "header: active alerts (also when the alerts table is not shown)"),
    ("every 1s · window 5m  1s/5m", "header: refresh interval / the window rates and quantiles cover"),
    ("40x time", "a demo running 40x faster than real time: rates are per real second, durations "
                 "(step time, sync latency) are the run's own"),
)

# Units, arrows, marks and colours.
MARKS: tuple[tuple[str, str], ...] = (
    ("/s /h /k$ /Mt", "per second (of real time), per hour, per $1,000, per million tokens"),
    ("ms s m h", "milliseconds, seconds, minutes, hours; 3h12m = 3 hours 12 minutes"),
    ("max 3 / 2", "a value / its warn limit (staleness card)"),
    ("▲ ▼ ▶", "rollout rate at least 10% above / below its 10m median (▼ red at half), ▶ level"),
    ("▲ ▼ in a header", "the table is sorted by that column, ascending / descending"),
    ("╎", "rollouts chart: a weight sync (few syncs); ╵ on the axis row when syncs are many"),
    ("┄", "eval chart: the baseline score; ╎ the baseline spend"),
    ("—", "not known yet (no data for it)"),
    ("…", "text cut to fit (numbers are never cut: their column is left out)"),
    ("⚠ 58s old", "the numbers come from a scrape this old"),
    ("● up  ✗ DOWN", "a target answering / not answering"),
    ("▲ warn  ● CRIT", "alert levels"),
    ("green yellow red", "ok / warn or old / critical or down (card borders, values, rows)"),
    ("dim", "labels, and rows or values that are old"),
    ("cyan magenta", "chart lines / the baseline"),
)


def _grid(rows: Sequence[tuple[str, str]], title: str) -> Table:
    table = Table.grid(padding=(0, 2))
    table.title = title
    table.title_justify = "left"
    table.title_style = "bold"
    table.add_column(justify="right", style="bold cyan", no_wrap=True)
    table.add_column()
    for key, meaning in rows:
        table.add_row(Text(key), Text(meaning))
    return table


def help_table(bindings: Sequence[Binding]) -> Table:
    return _grid([(b.key_display or b.key, b.tooltip or b.description) for b in bindings], "keys")


def legend() -> Group:
    """What the screen says: card labels with their short forms, table columns, header, marks and colours."""
    labels = []
    for label, meaning in LABELS:
        short = SHORT_LABELS.get(label)
        labels.append((f"{label} ({short})" if short else label, meaning))
    return Group(_grid(labels, "\ncards (short form below 120 columns)"),
                 _grid(COLUMNS, "\ntables and header"), _grid(MARKS, "\nunits, arrows, marks, colours"))


class HelpScreen(ModalScreen[None]):
    """Keys and what they do, then what the screen's labels mean; Escape or ``?`` closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: auto;
        max-width: 96%;
        height: auto;
        max-height: 94%;
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
        with VerticalScroll() as box:
            box.border_title = "ptmon keys and labels"
            box.border_subtitle = "↑↓ scroll · Esc or ? closes"
            yield Static(help_table(self._keys), id="keys")
            yield Static(
                Text(
                    "Mouse: click a table header to sort by it, again to reverse.\n"
                    "Ctrl+P: the command palette."
                ),
                classes="note",
            )
            yield Static(legend(), id="legend")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()  # the arrows and page keys scroll it at once
