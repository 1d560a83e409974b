"""Timing rules in one place: the config refuses a pair, and ``fit_timing`` never makes one it would refuse."""

from __future__ import annotations

import itertools

import pytest

from ptmon.monitor.config import ConfigError, load_settings
from ptmon.monitor.settings import WINDOWS_S, Settings, effective_timeout, fit_timing

INTERVALS_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # the TUI's + / - steps (ptmon.monitor.app)


def test_the_settings_timeout_and_the_sources_are_one_rule() -> None:
    for interval, timeout in ((0.1, None), (1.0, None), (60.0, None), (1.0, 0.3)):
        assert Settings(interval_s=interval, timeout_s=timeout).effective_timeout_s == effective_timeout(
            interval, timeout)


def test_every_minute_with_a_one_minute_window_is_fitted_not_refused() -> None:
    # The TUI's `+` up to 1m with a 1m window: the window moves up to the first step holding two intervals.
    assert fit_timing(60.0, 60.0, keep="interval", intervals=INTERVALS_S) == (60.0, 300.0)
    # `[` down to a 1m window while every minute: the interval comes down to the last step that fits.
    assert fit_timing(60.0, 60.0, keep="window", intervals=INTERVALS_S) == (30.0, 60.0)
    # A pair that fits is left alone.
    assert fit_timing(5.0, 60.0, keep="interval", intervals=INTERVALS_S) == (5.0, 60.0)
    assert fit_timing(5.0, 60.0, keep="window", intervals=INTERVALS_S) == (5.0, 60.0)
    # Past the steps: exactly two intervals, or half the window.
    assert fit_timing(7200.0, 3600.0, keep="interval", intervals=INTERVALS_S) == (7200.0, 14400.0)
    assert fit_timing(60.0, 50.0, keep="window", windows=()) == (25.0, 50.0)


def test_an_interval_not_above_the_timeout_moves_up_to_the_first_step_that_is() -> None:
    assert fit_timing(0.5, 300.0, keep="interval", timeout_s=0.8, intervals=INTERVALS_S) == (1.0, 300.0)
    assert fit_timing(0.5, 60.0, keep="window", timeout_s=0.8, intervals=INTERVALS_S) == (1.0, 60.0)
    assert fit_timing(0.5, 60.0, keep="interval", timeout_s=0.8) == (1.6, 60.0)  # no steps: twice the timeout


def test_an_interval_below_the_minimum_moves_up() -> None:
    assert fit_timing(1e-7, 300.0, keep="interval") == (0.1, 300.0)


@pytest.mark.parametrize("timeout", [None, 0.8, 5.0, 45.0])
def test_no_key_press_reaches_a_pair_the_config_refuses(timeout: float | None) -> None:
    for interval, window, keep in itertools.product(INTERVALS_S, WINDOWS_S, ("interval", "window")):
        fitted = fit_timing(interval, window, keep=keep, timeout_s=timeout,  # type: ignore[arg-type]
                            intervals=INTERVALS_S)
        try:
            load_settings(interval_s=fitted[0], window_s=fitted[1], timeout_s=timeout)
        except ConfigError as exc:
            raise AssertionError(f"{interval}, {window}, keep {keep} -> {fitted}: {exc}") from None
        assert fitted[1 if keep == "interval" else 0] in (INTERVALS_S + WINDOWS_S)
        kept = fitted[0] if keep == "interval" else fitted[1]
        asked = interval if keep == "interval" else window
        # What was changed stays, unless no interval above the timeout could ever be (or fit that window).
        floor = next(i for i in INTERVALS_S if timeout is None or i > timeout)
        assert kept == asked or (keep == "interval" and asked < floor) or (keep == "window" and asked < 2 * floor)
