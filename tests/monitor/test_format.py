from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from ptmon.monitor.format import (
    DASH,
    fmt_bytes_rate,
    fmt_duration,
    fmt_money,
    fmt_num,
    fmt_score,
    fmt_seconds,
    fmt_version,
    fmt_window,
    lit,
)


@pytest.mark.parametrize("fmt", [fmt_num, fmt_seconds, fmt_duration, fmt_money, fmt_bytes_rate, fmt_score])
@pytest.mark.parametrize("value", [None, math.nan, math.inf])
def test_unknown_is_a_dash_never_a_zero(fmt, value) -> None:
    assert fmt(value) == DASH


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (2.0, "2"), (0.6667, "0.67"), (15.73, "15.7"), (842.4, "842"), (18240.0, "18.2k"),
     (339_640.0, "340k"), (3.2e6, "3.20M"), (0.00042, "4.2e-04"), (-1.5, "-1.50")],
)
def test_fmt_num(value, text) -> None:
    assert fmt_num(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0042, "4ms"), (2.791, "2.79s"), (45.2, "45.2s"), (192, "3m12s"), (7500, "2h05m"),
     (3 * 86400 + 4 * 3600, "3d04h")],
)
def test_fmt_seconds(value, text) -> None:
    assert fmt_seconds(value) == text


def test_money_bytes_window() -> None:
    assert fmt_money(12.345) == "$12.35"
    assert fmt_money(1234.5) == "$1,234"
    assert fmt_money(2.5e6) == "$2.50M"
    assert fmt_bytes_rate(6.33e9) == "6.33 GB/s"
    assert fmt_bytes_rate(15.98e9) == "16.0 GB/s"
    assert fmt_bytes_rate(512) == "512 B/s"
    assert [fmt_window(w) for w in (60, 300, 900, 3600, 0.5, 2)] == ["1m", "5m", "15m", "1h", "0.5s", "2s"]


def test_lit_keeps_markup_as_text_and_makes_controls_visible() -> None:
    text = lit("[bold red]x[/]\x1b]0;t\x07")
    assert text.plain == r"[bold red]x[/]\x1b]0;t\x07"
    assert text.spans == []
    assert lit(None).plain == DASH


def test_against_limits_colours_like_the_alert_rules_strictly_above() -> None:
    from ptmon.monitor.format import against_limits

    assert against_limits(2.0, 2.0, 4.0).spans == []  # at the limit: no alert fires, no colour
    assert "yellow" in str(against_limits(3.0, 2.0, 4.0).spans[0].style)
    assert "red" in str(against_limits(5.0, 2.0, 4.0).spans[0].style)
    assert against_limits(None, 2.0, 4.0).plain == DASH


@pytest.mark.slow  # starts a process
def test_importing_it_does_not_import_textual() -> None:
    """``ptmon snapshot`` uses these formatters and must not pay for (or need) Textual."""
    import subprocess
    import sys

    code = ("import sys, ptmon.monitor.format, ptmon.monitor.snapshot\n"
            "print(sorted(m for m in sys.modules if m.startswith('textual')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_policy_versions_are_exact_never_abbreviated() -> None:
    from ptmon.monitor.format import fmt_version

    assert fmt_version(12345.0) == "v12345"
    assert fmt_version(7.0) == "v7"
    assert fmt_version(None) == "—"
    assert fmt_version(float("nan")) == "—"


@pytest.mark.parametrize(
    ("fmt", "value", "text"),
    [
        (fmt_num, 1e308, "1.00e+308"), (fmt_num, -1e308, "-1.00e+308"), (fmt_num, 2.0**53, "9.01e+15"),
        (fmt_num, 9.9e14, "990T"),  # below the cut: unchanged
        (fmt_money, 1e308, "$1.00e+308"), (fmt_money, -9e15, "-$9.00e+15"), (fmt_money, 5.2e6, "$5.20M"),
        (fmt_score, 1e308, "1.00e+308"), (fmt_score, 42.0, "42.0"),
        (fmt_version, 2.0**53, "v9.01e+15"), (fmt_version, 2.0**53 - 1, "v9007199254740991"),
        (fmt_duration, 1e308, "1.2e+303d"), (fmt_duration, 99 * 86400.0, "99d00h"),
        (fmt_seconds, 1e308, "1.2e+303d"), (fmt_seconds, -1e308, "-1.2e+303d"),
        (fmt_bytes_rate, 1e308, "1.00e+308 B/s"), (fmt_bytes_rate, 6.3e9, "6.30 GB/s"),
    ],
)
def test_numbers_beyond_a_cell_are_scientific_never_hundreds_of_digits(
        fmt: Callable[[float], str], value: float, text: str) -> None:
    assert fmt(value) == text


@pytest.mark.parametrize("fmt", [fmt_num, fmt_seconds, fmt_duration, fmt_money, fmt_bytes_rate, fmt_score, fmt_version])
def test_every_finite_float_formats_short(fmt: Callable[[float], str]) -> None:
    edges = [2.0**53, 2.0**54 + 4, 1e16, 1e20, 1e100, 1e300, 1.7976931348623157e308, 5e-324, 1e-300]
    for value in edges + [-v for v in edges]:
        assert len(fmt(value)) <= 14, (value, fmt(value))
