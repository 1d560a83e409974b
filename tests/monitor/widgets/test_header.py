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
