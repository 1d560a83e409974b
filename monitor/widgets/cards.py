"""The five headline cards: the answers to "is this run healthy and worth it?".

Each card is a titled box of label/value rows whose border takes the colour
of the worst alert about it. Which card an alert is about is declared by its
rule (``ptmon.monitor.alerts.RULE_CARDS``), read by :func:`card_for_alert`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.reactive import var

from ptmon.exporters import schema
from ptmon.monitor.alerts import RULE_CARDS
from ptmon.monitor.dashboard import Alert, Dashboard, Level
from ptmon.monitor.format import (
    DASH,
    against_limits,
    fmt_bytes_rate,
    fmt_duration,
    fmt_eta,
    fmt_money,
    fmt_next_point,
    fmt_num,
    fmt_pm,
    fmt_point,
    fmt_rate,
    fmt_score,
    fmt_seconds,
    fmt_version,
    lit,
)
from ptmon.monitor.settings import Thresholds
from ptmon.monitor.widgets.lines import LineWidget

__all__ = [
    "CARDS",
    "Card",
    "CardRow",
    "SHORT_LABELS",
    "card_age",
    "card_for_alert",
    "card_level",
    "card_rows",
    "trend_arrow",
]

CardRow = tuple[Text | str, Text | str]

# (card id, title) in screen order.
CARDS: tuple[tuple[str, str], ...] = (
    ("ipd", "intelligence/$"),
    ("rollout", "rollouts"),
    ("sync", "weight sync"),
    ("staleness", "staleness"),
    ("trainer", "trainer"),
)

# At 80 columns a card has 14 cells: shorter titles and labels keep the values whole.
_SHORT = {
    "intelligence/$": "pts/k$",
    "weight sync": "sync",
    "staleness": "stale",
    "cumulative": "cum",
    "marginal": "marg",
    "$/+0.01": "$/pt",
    "baseline": "base",
    "rollouts": "roll",
    "tokens": "tok",
    "10m median": "med",
    "errors": "err",
    "$/M tok": "$/Mt",
    "failures": "fail",
    "warn/crit": "lim",
    "policy": "ver",
    "step time": "step",
    "last step": "last",
    "last avg": "l.avg",
    "wait batch": "wait",
    "wait policy": "wait",
}

SHORT_LABELS = _SHORT  # what the help screen explains
# A title keeps its full form when the short one would only repeat a label ("roll" over "roll 13.2/s").
_SHORT_TITLES = {title: _SHORT[title] for title in ("intelligence/$", "weight sync", "staleness")}

_RANK = {"ok": 0, "warn": 1, "critical": 2}


def card_for_alert(name: str) -> str | None:
    """The card an alert rule is about, as the rule declares it; None for ``target_down`` (the header and
    tables show it) and for a name that is no rule."""
    return RULE_CARDS.get(name)


def card_level(card: str, alerts: Iterable[Alert]) -> Level:
    level: Level = "ok"
    for alert in alerts:
        if card_for_alert(alert.name) == card and _RANK.get(alert.level, 0) > _RANK[level]:
            level = alert.level
    return level


# The target roles each card's numbers come from: when one of them is old, so is the card.
_CARD_ROLES: dict[str, tuple[str, ...]] = {
    "ipd": ("eval", "trainer", "rollout", "engine", "gpu"),  # scores, and the spend every GPU adds to
    "rollout": ("rollout", "engine"),
    "sync": ("trainer",),
    "staleness": ("trainer", "rollout", "engine"),
    "trainer": ("trainer",),
}


def card_age(card: str, d: Dashboard) -> float | None:
    """The age of the oldest data a card shows when that is older than the Dashboard's stale_after_s, else None."""
    roles = _CARD_ROLES.get(card, ())
    ages = [t.age_s for t in d.targets
            if t.up and t.role in roles and t.is_old(d.stale_after_s) and t.age_s is not None]
    return max(ages) if ages else None


def trend_arrow(rate: float | None, median: float | None) -> Text:
    """▲/▼ when the rate is 10% off its 10-minute median, ▶ when level, nothing when unknown."""
    if rate is None or median is None or median <= 0:
        return Text("")
    ratio = rate / median
    if ratio >= 1.1:
        return Text(" ▲", style="green")
    if ratio <= 0.9:
        return Text(" ▼", style="red" if ratio <= 0.5 else "yellow")
    return Text(" ▶", style="dim")


def _ago(seconds: float | None) -> str:
    return DASH if seconds is None else f"{fmt_duration(seconds)} ago"


def _push_age(age_s: float, limit_s: float) -> Text:
    """The last eval push's age; "⚠ … ago" in yellow once it is over the limit (the eval_stale alert's)."""
    text = _ago(max(0.0, age_s))
    return Text(f"⚠ {text}", style="yellow") if age_s > limit_s else Text(text)


def card_rows(card: str, d: Dashboard, thresholds: Thresholds) -> list[CardRow]:
    """The label/value rows of one card; pure, so tests read them without a screen."""
    if card == "ipd":
        bench = lit(d.benchmark) if d.benchmark is not None else Text("score")
        return [
            ("cumulative", f"{fmt_pm(fmt_num(d.ipd_points_per_kilodollar), d.ipd_se_points_per_kilodollar)}/k$"),
            ("marginal", fmt_pm(fmt_num(d.marginal_ipd_points_per_kilodollar),
                                d.marginal_ipd_se_points_per_kilodollar) + "/k$"),
            (f"$/{fmt_point(d.eval_point)}", fmt_next_point(d.dollars_per_next_point, d.next_point_never)),
            (bench, fmt_pm(fmt_score(d.score), d.score_se, fmt_score)),
            # With a target score the ETA takes the baseline's row (the chart's ┄ line still shows it); evals
            # through a Pushgateway: the last push's age does (past eval_push_max_age_s it is called out).
            ("pushed", _push_age(d.now - d.eval_pushed_at, thresholds.eval_push_max_age_s))
            if d.eval_pushed_at is not None and d.target_score is None else
            ("baseline", fmt_score(d.baseline_score)) if d.target_score is None else
            (f"→{fmt_score(d.target_score)}", fmt_eta(d.eta_status, d.eta_dollars, d.eta_dollars_se, d.eta_hours,
                                                       d.eta_hours_se, d.eta_maybe_never)),
        ]
    if card == "rollout":
        rate = Text(fmt_rate(d.rollout_rate_per_s))
        rate.append_text(trend_arrow(d.rollout_rate_per_s, d.rollout_rate_median_10m))
        return [
            ("rollouts", rate),
            ("tokens", fmt_rate(d.rollout_tokens_per_s)),
            ("10m median", fmt_rate(d.rollout_rate_median_10m)),
            ("errors", fmt_rate(d.rollout_error_rate_per_s)),
            ("$/M tok", fmt_money(d.dollars_per_million_rollout_tokens)),
        ]
    if card == "sync":
        failures = Text(fmt_num(d.weight_sync_failures))
        if d.weight_sync_failures:
            failures.stylize("bold red")
        return [
            ("p50", fmt_seconds(d.weight_sync_p50_s)),
            ("p99", fmt_seconds(d.weight_sync_p99_s)),
            # a scrape interval's mean when it held several syncs (through a server, say): labelled so
            ("last avg" if d.weight_sync_averaged else "last", fmt_seconds(d.weight_sync_last_s)),
            ("rate", fmt_bytes_rate(d.weight_sync_bytes_per_s)),
            ("failures", failures),
        ]
    if card == "staleness":
        worst = against_limits(d.staleness_max, thresholds.staleness_warn, thresholds.staleness_critical)
        worst.append(f" / {fmt_num(thresholds.staleness_warn)}", style="dim")
        rows: list[CardRow] = [
            ("max", worst),
            ("mean", against_limits(d.staleness_mean, thresholds.staleness_warn, thresholds.staleness_critical)),
            _bubble_row(d) or ("warn/crit",
                               f"{fmt_num(thresholds.staleness_warn)}/{fmt_num(thresholds.staleness_critical)}"),
            ("policy", fmt_version(d.policy_version)),
        ]
        own = _framework_staleness_row(d)
        return rows + [own] if own is not None else rows
    if card == "trainer":
        return [
            ("steps", fmt_rate(d.steps_per_s)),
            ("step time", fmt_seconds(d.step_seconds)),
            ("last step", _ago(d.seconds_since_last_step)),
            _trainer_tokens_row(d),
            _trainer_phase_row(d),
        ]
    raise ValueError(f"unknown card {card!r}")


def _framework_staleness_row(d: Dashboard) -> CardRow | None:
    """The first framework's own staleness (its max, else its mean), labelled with its name; the definitions
    are in the snapshot and the README."""
    for source, mean, worst, _ in d.framework_staleness:
        stat, value = ("max", worst) if worst is not None else ("mean", mean)
        label = lit(source)
        label.append(f" {stat}")
        return (label, fmt_num(value))
    return None


def _bubble_row(d: Dashboard) -> CardRow | None:
    """The biggest bubble a framework timed: its share of wall time, and $/h burnt waiting where known."""
    if not d.bubbles:
        return None
    reason, share, dollars, _ = max(d.bubbles, key=lambda b: b[1])
    value = f"{fmt_num(share * 100, 2)}%"
    if dollars is not None:
        value += f" {fmt_money(dollars)}/h"
    return (_BUBBLE_LABELS.get(reason, reason), value)


_BUBBLE_LABELS = {schema.IDLE_WAIT_FOR_BATCH: "wait batch", schema.IDLE_WAIT_FOR_POLICY: "wait policy"}


def _trainer_tokens_row(d: Dashboard) -> CardRow:
    """Tokens/s; where no trainer says (a loop serving only its own gauges), the loop's generation buffer."""
    if d.trainer_tokens_per_s is None and d.generation_buffer is not None:
        return ("buffer", f"{fmt_num(d.generation_buffer)}/{fmt_num(d.generation_buffer_max)}")
    return ("tokens", fmt_rate(d.trainer_tokens_per_s))


def _trainer_phase_row(d: Dashboard) -> CardRow:
    """The loop's phase where it serves one ("in sync_weights": what it is doing now beats the last loss;
    the snapshot keeps both), else the loss."""
    if d.trainer_phase is not None:
        phase = Text("in ")
        phase.append_text(lit(d.trainer_phase))
        return ("phase", phase)
    return ("loss", fmt_num(d.loss))


class Card(LineWidget):
    """One headline card: label/value rows in a box coloured by its alert level."""

    DEFAULT_CSS = """
    Card {
        width: 1fr;
        height: 100%;
        border: round $panel-lighten-2;
        border-title-color: $text;
        border-title-style: bold;
        padding: 0 1;
    }
    Card.-compact { padding: 0; }
    Card.-warn { border: round $warning; border-title-color: $warning; }
    Card.-critical { border: heavy $error; border-title-color: $error; }
    """

    compact = var(False, toggle_class="-compact", init=False)  # the 80-column form: short title and labels

    def __init__(self, card: str, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.card = card
        self.title = title
        self.border_title = title
        self._rows: Sequence[CardRow] = ()
        self._plain: tuple[str, ...] = ()
        self._note = ""
        self.level: Level = "ok"

    def show(self, rows: Sequence[CardRow], level: Level, *, age_s: float | None = None) -> None:
        """``age_s``: its inputs are this old (beyond the Dashboard's limit): said in the bottom border."""
        note = "" if age_s is None else f"⚠ {fmt_duration(age_s)} old"
        if note != self._note:
            self._note = note
            self.set_border_subtitle(Text(note, style="yellow"))
        if level != self.level:
            self.remove_class(f"-{self.level}")
            self.level = level
            self.add_class(f"-{level}")
        plain = tuple(f"{label}\0{value}" for label, value in rows) + tuple(
            repr(value.spans) for _, value in rows if isinstance(value, Text)
        )
        if plain != self._plain:
            self._rows, self._plain = rows, plain
            self.redraw()

    @property
    def rows(self) -> Sequence[CardRow]:
        return self._rows

    def watch_compact(self, compact: bool) -> None:
        self.border_title = _SHORT_TITLES.get(self.title, self.title) if compact else self.title
        self.invalidate()

    def lines(self, width: int, height: int) -> list[Text]:
        """Label on the left, value flush right; the label gives way first when space is short."""
        compact = self.compact
        out = []
        for label, value in self._rows:  # Text, never a str: a str would be parsed as markup
            if isinstance(label, str):
                label = Text(_SHORT.get(label, label) if compact else label)
            value = Text(value) if isinstance(value, str) else value
            if value.cell_len > width:  # cut where it shows (…), never cropped into another number (e+30 of e+308)
                value = value.copy()
                value.truncate(width, overflow="ellipsis")
                out.append(value)
                continue
            room = width - value.cell_len - 1
            label = label.copy()
            label.stylize_before("dim")
            if room < label.cell_len:
                if room > 0:
                    label.truncate(room, overflow="ellipsis")
                else:  # Rich's truncate(0) keeps all but one character: no label at all
                    label = Text("")
            out.append(Text.assemble(label, " " * max(0 if not label else 1, width - label.cell_len - value.cell_len),
                                     value))
        return out
