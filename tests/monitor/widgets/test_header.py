from __future__ import annotations

from ptmon.monitor.dashboard import Dashboard, TargetHealth
from ptmon.monitor.widgets.header import HeaderState, header_text


def _d(**kw) -> Dashboard:
    targets = (TargetHealth("a", "http://a", "trainer", True), TargetHealth("b", "http://b", "rollout", False))
    return Dashboard(now=1000.0, window_s=300.0, interval_s=1.0, run="r1", model="m", started_at=10.0,
                     spend_dollars=12.5, burn_dollars_per_hour=98.2, targets=targets, **kw)


def test_one_line_when_wide_two_when_narrow() -> None:
    state = HeaderState(_d(), interval_s=1.0, window_s=300.0)
    wide = header_text(state, 160).plain
    assert "\n" not in wide and len(wide) == 160
    for part in ("r1 · m", "up 16m30s", "$12.50 @ $98.20/h", "targets 1/2", "every 1s · window 5m"):
        assert part in wide
    narrow = header_text(state, 40).plain
    assert narrow.count("\n") == 1


def test_paused_error_and_no_dashboard_yet() -> None:
    text = header_text(HeaderState(_d(), interval_s=2.0, window_s=60.0, paused=True, frozen_s=75.0,
                                   error="boom [x]"), 200).plain
    assert "PAUSED 1m15s" in text and "feed error: boom [x]" in text and "every 2s · window 1m" in text
    assert "waiting for the first dashboard" in header_text(HeaderState(None, interval_s=1.0, window_s=300.0),
                                                            120).plain


def test_identity_is_literal() -> None:
    text = header_text(HeaderState(_d().__class__(now=0.0, window_s=60.0, interval_s=1.0, run="[b]x[/b]\x1b[2J"),
                                   interval_s=1.0, window_s=60.0), 120)
    assert r"[b]x[/b]\x1b[2J" in text.plain


def test_a_demo_says_its_speed_and_that_rates_are_per_real_second() -> None:
    state = HeaderState(_d(), interval_s=1.0, window_s=300.0, time_scale=40.0)
    assert "40x time · rates per real s" in header_text(state, 200).plain
    assert "40x time" in header_text(state, 80).plain  # the short form at 80 columns, never cut
    assert "x time" not in header_text(HeaderState(_d(), interval_s=1.0, window_s=300.0), 200).plain


def test_the_alerts_are_counted_and_nothing_is_cut_at_80_columns() -> None:
    from ptmon.monitor.dashboard import Alert

    alerts = (Alert("target_down", "critical", "b is down", since=900.0, subject="b"),
              Alert("staleness", "warn", "behind", since=950.0))
    state = HeaderState(_d(alerts=alerts), interval_s=1.0, window_s=300.0, time_scale=40.0, paused=True,
                        frozen_s=3.0)
    wide = header_text(state, 200).plain
    assert "alerts 1 crit 1 warn" in wide and "every 1s · window 5m" in wide
    for width in (80, 100, 120):
        lines = header_text(state, width).plain.split("\n")
        assert len(lines) == 2 and all(len(line) <= width and not line.endswith("…") for line in lines), lines
        assert "alerts" in lines[1] and "PAUSED 3s" in lines[1] and "40x" in lines[1]
    assert "no alerts" in header_text(HeaderState(_d(), interval_s=1.0, window_s=300.0), 200).plain
