from __future__ import annotations

from dataclasses import replace
from typing import Any

from rich.text import Text

from ptmon.monitor.alerts import RULE_CARDS, RULES
from ptmon.monitor.dashboard import Alert, Dashboard, TargetHealth
from ptmon.monitor.format import DASH
from ptmon.monitor.settings import Thresholds
from ptmon.monitor.widgets.cards import CARDS, card_age, card_for_alert, card_level, card_rows, trend_arrow


def test_every_alert_rule_but_target_down_lands_on_a_card() -> None:
    cards = {card for card, _ in CARDS}
    for rule in RULES:
        if rule == "target_down":
            assert card_for_alert(rule) is None
        else:
            assert card_for_alert(rule) in cards, rule
    # The card is the rule's declaration, not a guess from words in its name.
    assert {rule: card_for_alert(rule) for rule in RULES} == dict(RULE_CARDS)
    assert card_for_alert("worker_stale") is None and card_for_alert("weight_sync_failures") is None


def test_card_level_is_the_worst_matching_alert() -> None:
    alerts = [
        Alert("weight_sync_slow", "warn", "p99 40 s", since=0.0),
        Alert("trainer_stalled", "critical", "no step", since=0.0),
        Alert("target_down", "critical", "x down", since=0.0, subject="x"),
    ]
    assert card_level("sync", alerts) == "warn"
    assert card_level("trainer", alerts) == "critical"
    assert card_level("ipd", alerts) == "ok"


def test_an_empty_dashboard_shows_dashes_on_every_card() -> None:
    d = Dashboard(now=0.0, window_s=300.0, interval_s=1.0)
    for card, _ in CARDS:
        values = [str(value) for _, value in card_rows(card, d, Thresholds())]
        numbers = [v for v in values if "/" not in v]  # staleness shows its limits, which are known
        assert numbers and all(DASH in v for v in numbers), (card, values)


def test_staleness_is_coloured_against_the_limits() -> None:
    th = Thresholds(staleness_warn=2, staleness_critical=4)
    d = Dashboard(now=0.0, window_s=300.0, interval_s=1.0, staleness_max=5.0, staleness_mean=2.5)
    rows: dict[Any, Any] = dict((label, value) for label, value in card_rows("staleness", d, th))  # values: Text
    assert rows["max"].plain == "5 / 2"
    assert "red" in str(rows["max"].spans[0].style)
    assert "yellow" in str(rows["mean"].spans[0].style)


def test_trend_arrow() -> None:
    assert trend_arrow(12.0, 10.0).plain == " ▲"
    assert trend_arrow(8.0, 10.0).plain == " ▼"
    assert trend_arrow(10.2, 10.0).plain == " ▶"
    assert trend_arrow(None, 10.0).plain == ""
    assert trend_arrow(5.0, 0.0).plain == ""


def test_card_age_is_the_oldest_old_input_and_nothing_when_not_judged() -> None:
    def target(name: str, role: str, age: float | None, up: bool | None = True) -> TargetHealth:
        return TargetHealth(name=name, url="", role=role, up=up, age_s=age)

    targets = (target("t", "trainer", 1.0), target("r0", "rollout", 40.0), target("r1", "rollout", 90.0),
               target("r2", "rollout", 500.0, up=False), target("e", "eval", None))
    d = Dashboard(now=0.0, window_s=60.0, interval_s=1.0, targets=targets, stale_after_s=2.8)
    ages = {card: card_age(card, d) for card in ("ipd", "rollout", "sync", "staleness", "trainer")}
    # r2 is down (the table and the alert say so), e has no age: neither makes a card old
    assert ages == {"ipd": 90.0, "rollout": 90.0, "sync": None, "staleness": 90.0, "trainer": None}
    assert card_age("rollout", Dashboard(now=0.0, window_s=60.0, interval_s=1.0, targets=targets)) is None


async def test_a_value_too_wide_for_the_card_is_cut_visibly_never_into_another_number() -> None:
    from textual.app import App, ComposeResult

    from ptmon.monitor.widgets.cards import Card

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield Card("ipd", "intelligence/$", id="c")

    app = One()
    async with app.run_test(size=(16, 7)) as pilot:  # a compact card: 14 cells inside
        card = app.query_one(Card)
        card.compact = True
        card.show([("marginal", "-1.00e+308/k$"), ("cumulative", "-1.00e+308/k$ x"), ("baseline", "0.552")], "ok")
        await pilot.pause()
        lines = [line.plain for line in card.lines(14, 5)]
        assert lines[0] == " -1.00e+308/k$"  # fits with no room for a label: the label goes, not "mar…"
        assert lines[1] == "-1.00e+308/k$…"  # wider than the card: cut with an ellipsis
        assert lines[2] == "base     0.552"
        assert all(len(line) <= 14 for line in lines)


# --- the eval card says how old the last Pushgateway push is (issue 14) ----------------------------------

def test_the_ipd_card_shows_the_last_push_age_and_calls_out_an_old_one() -> None:
    th = Thresholds(eval_push_max_age_s=3600.0)
    now = 10_000.0

    def last_row(pushed_at: float | None) -> tuple[str, Text]:
        label, value = card_rows("ipd", Dashboard(now=now, window_s=300.0, interval_s=1.0, baseline_score=0.4,
                                                  eval_pushed_at=pushed_at), th)[-1]
        return str(label), value if isinstance(value, Text) else Text(value)

    assert last_row(None)[0] == "baseline"  # evals scraped directly: no push to age
    label, value = last_row(now - 125.0)
    assert (label, value.plain) == ("pushed", "2m05s ago") and not value.spans and not value.style
    label, value = last_row(now - 7200.0)  # over eval_push_max_age_s: said, in the eval_stale alert's colour
    assert (label, value.plain, str(value.style)) == ("pushed", "⚠ 2h00m ago", "yellow")
    assert last_row(now - 3600.0)[1].plain == "1h00m ago"  # at the limit: not over it


def test_the_ipd_card_shows_each_plus_minus_the_point_size_never_and_the_eta() -> None:
    d = Dashboard(now=0.0, window_s=60.0, interval_s=1.0, benchmark="gsm8k", score=0.6, score_se=0.0123,
                  ipd_points_per_kilodollar=0.59, ipd_se_points_per_kilodollar=0.048,
                  marginal_ipd_points_per_kilodollar=-0.1, marginal_ipd_se_points_per_kilodollar=0.2,
                  eval_point=0.01, next_point_never=True, baseline_score=0.55)
    rows = {str(label): str(value) for label, value in card_rows("ipd", d, Thresholds())}
    assert rows["cumulative"] == "0.59 ±0.05/k$"
    assert rows["marginal"] == "-0.10 ±0.20/k$"
    assert rows["$/+0.01"] == "never"  # the slope is <= 0: no amount buys the next point
    assert rows["gsm8k"] == "0.600 ±0.012"
    assert rows["baseline"] == "0.550"  # no target score: no ETA row
    unknown = {str(label): str(value) for label, value in card_rows("ipd", replace(d, next_point_never=False),
                                                                    Thresholds())}
    assert unknown["$/+0.01"] == "—"
    eta = replace(d, target_score=0.8, eta_status="estimated", eta_dollars=500.0, eta_dollars_se=134.6,
                  eta_hours=10.0, eta_hours_se=2.69)
    rows = {str(label): str(value) for label, value in card_rows("ipd", eta, Thresholds())}
    assert rows["→0.800"] == "$500 ±135 · 10h00m ±2h41m" and "baseline" not in rows
    over = replace(eta, target_score=1.2, eta_status="unreachable")
    assert dict((str(k), str(v)) for k, v in card_rows("ipd", over, Thresholds()))["→1.200"] == "unreachable"
