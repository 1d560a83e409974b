"""Numbers and scraped strings as short, honest screen text.

Shared by the live screen (``ptmon.monitor.widgets``, ``ptmon.monitor.app``) and the
``ptmon snapshot`` table, so both print a number the same way; it lives
outside ``ptmon.monitor.widgets`` and needs only Rich, so the snapshot command (and
anything below the TUI) can use it without importing Textual.

Every value on a Dashboard may be ``None`` (not known yet); the screen shows
an em dash for it rather than a zero that would look like a measurement.
Scraped strings go through :func:`lit`, which returns a ``rich.text.Text``
(never parsed as markup) of :func:`ptmon.monitor.text.safe` (control characters made
visible), so a hostile label can neither style the screen nor drive the
terminal.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rich.text import Text

from ptmon.monitor.text import safe

__all__ = [
    "DASH",
    "lit",
    "fmt_num",
    "fmt_rate",
    "fmt_seconds",
    "fmt_duration",
    "fmt_money",
    "fmt_bytes_rate",
    "fmt_window",
    "fmt_score",
    "fmt_version",
    "against_limits",
    "fmt_pm",
    "fmt_point",
    "fmt_next_point",
    "fmt_eta",
]

DASH = "—"

# Beyond these a number is shown in scientific notation at 3 figures: still honest about its size,
# never a 300-digit string (a counter that wrapped, a price of 1e300) that eats a card or a column.
_HUGE = 1e15
_HUGE_MONEY = 1e12
_HUGE_SCORE = 1e6
_EXACT_INT = 2.0**53  # floats above it are not every integer: a version there is not exact
_HUGE_DAYS = 1e5


def _known(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def lit(s: str | None, style: str = "") -> Text:
    """Scraped text shown literally: markup stays brackets, controls become escapes."""
    if s is None:
        return Text(DASH, style="dim")
    return Text(safe(s), style=style)


def _sig(x: float, digits: int) -> str:
    """``x`` (at least 0.01 in size) to ``digits`` significant figures, without an exponent."""
    a = abs(x)
    decimals = digits - 1 if a < 10 else digits - 2 if a < 100 else digits - 3
    return f"{x:.{max(decimals, 0)}f}"


def fmt_num(x: float | None, digits: int = 3) -> str:
    """A compact number: 3 significant figures, k/M/G/T above ten thousand."""
    if not _known(x):
        return DASH
    assert x is not None
    a = abs(x)
    if a >= _HUGE:
        return f"{x:.2e}"
    for limit, unit, suffix in ((1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if a >= limit:
            return f"{_sig(x / unit, digits)}{suffix}"
    if x == int(x):
        return f"{int(x)}"  # counts, versions, staleness: no fake decimals
    if a >= 0.01:
        return _sig(x, digits)
    return f"{x:.1e}"


def fmt_version(x: float | None) -> str:
    """A policy version, exact (v12345, never 12.3k): trainer and worker versions are compared by eye."""
    if not _known(x):
        return DASH
    assert x is not None
    return f"v{x:.0f}" if abs(x) < _EXACT_INT else f"v{x:.2e}"


def fmt_rate(x: float | None, unit: str = "/s") -> str:
    return DASH if not _known(x) else f"{fmt_num(x)}{unit}"


def fmt_seconds(s: float | None) -> str:
    """A latency: ms below one second, seconds with a decimal below a minute."""
    if not _known(s):
        return DASH
    assert s is not None
    if s < 0:
        return f"-{fmt_seconds(-s)}"
    if s < 1:
        return f"{s * 1000:.0f}ms"
    if s < 10:
        return f"{s:.2f}s"
    if s < 60:
        return f"{s:.1f}s"
    return fmt_duration(s)


def fmt_duration(s: float | None) -> str:
    """A span of time at the two largest units that matter: 45s, 3m12s, 2h05m, 3d04h."""
    if not _known(s):
        return DASH
    assert s is not None
    s = max(0.0, s)
    if s >= _HUGE_DAYS * 86400:
        return f"{s / 86400:.1e}d"
    whole = int(s)
    days, rem = divmod(whole, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, seconds = divmod(rem, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{whole}s"


def fmt_money(x: float | None) -> str:
    """Dollars: cents below $100, whole dollars with thousands separators above."""
    if not _known(x):
        return DASH
    assert x is not None
    sign = "-" if x < 0 else ""
    a = abs(x)
    if a >= _HUGE_MONEY:
        return f"{sign}${a:.2e}"
    if a >= 1e6:
        return f"{sign}${a / 1e6:.2f}M"
    if a >= 100:
        return f"{sign}${a:,.0f}"
    return f"{sign}${a:.2f}"


def fmt_bytes_rate(x: float | None) -> str:
    """Bytes per second in decimal units (GB/s is what NICs and NVLink are sold in)."""
    if not _known(x):
        return DASH
    assert x is not None
    if abs(x) >= _HUGE:
        return f"{x:.2e} B/s"
    for limit, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if abs(x) >= limit:
            return f"{_sig(x / limit, 3)} {unit}"
    return f"{x:.0f} B/s"


def fmt_window(s: float) -> str:
    """A window or interval as people say it: 1m, 5m, 1h, 0.5s."""
    if s >= 3600 and s % 3600 == 0:
        return f"{s / 3600:.0f}h"
    if s >= 60 and s % 60 == 0:
        return f"{s / 60:.0f}m"
    if s == int(s):
        return f"{s:.0f}s"
    return f"{s:g}s"


def fmt_score(x: float | None) -> str:
    """An eval score: three decimals for [0, 1] scores, fewer for points."""
    if not _known(x):
        return DASH
    assert x is not None
    a = abs(x)
    return f"{x:.3f}" if a < 10 else f"{x:.1f}" if a < _HUGE_SCORE else f"{x:.2e}"


def against_limits(value: float | None, warn: float, critical: float) -> Text:
    """A number coloured like the alert rules judge it: yellow above ``warn``, red above ``critical``."""
    text = Text(fmt_num(value))
    if value is not None:
        if value > critical:
            text.stylize("bold red")
        elif value > warn:
            text.stylize("yellow")
    return text


def fmt_pm(text: str, se: float | None, fmt: Callable[[float | None], str] = fmt_num) -> str:
    """``text`` with its one-standard-error ± when known: ``0.591 ±0.048``, ``$500 ±135`` (one $ is enough)."""
    if text == DASH or se is None or not _known(se):
        return text
    return f"{text} ±{fmt(se).removeprefix('$')}"


def fmt_point(point: float) -> str:
    """The score step ``$ per next point`` prices, as a label: ``+0.01``, ``+1``."""
    return f"+{point:g}"


def fmt_next_point(dollars: float | None, never: bool) -> str:
    """``$ per next point``: dollars, ``never`` (the slope is ≤ 0), or ``—`` (not known)."""
    return "never" if never else fmt_money(dollars)


def fmt_eta(status: str | None, dollars: float | None, dollars_se: float | None, hours: float | None,
            hours_se: float | None, maybe_never: bool) -> str:
    """The budget ETA: ``$500 ±135 · 10h00m ±2h41m``; ``reached``, ``never``, ``unreachable``, ``—``."""
    if status in ("reached", "never", "unreachable"):
        return status
    if status != "estimated":
        return DASH
    out = fmt_pm(fmt_money(dollars), None if maybe_never else dollars_se, fmt_money)
    if hours is not None:
        h = fmt_duration(hours * 3600.0)
        out += f" · {h}" if maybe_never or hours_se is None else f" · {h} ±{fmt_duration(hours_se * 3600.0)}"
    return f"{out}, maybe never" if maybe_never else out
