"""Times a person types for a recording: ``+5m`` from its start, ``-30s`` before its end, a clock time, unix seconds."""

from __future__ import annotations

import datetime as _dt

from ptmon.monitor.config import parse_duration

__all__ = ["parse_at", "fmt_at"]


def parse_at(text: str, *, start: float, end: float) -> float:
    """A recorded time from ``text``: ``+90s``/``+5m`` (after the start), ``-30s`` (before the end), ``start``,
    ``end``, an ISO date-time (``2026-12-01T23:50:00``, local time unless it says its offset), a clock
    time on the recording's first day (``23:50:05``) or unix seconds. ValueError says what was expected."""
    s = text.strip()
    if s in ("start", "end"):
        return start if s == "start" else end
    if s[:1] in "+-" and len(s) > 1 and not _is_number(s):
        offset = parse_duration(s[1:])
        return start + offset if s[0] == "+" else end - offset
    if _is_number(s):
        return float(s)
    try:
        if "T" in s or " " in s or s.count("-") >= 2:
            when = _dt.datetime.fromisoformat(s)
        else:
            day = _dt.datetime.fromtimestamp(start).date()
            when = _dt.datetime.combine(day, _dt.time.fromisoformat(s))
    except ValueError:
        raise ValueError(f"expected +DURATION, -DURATION, start, end, a date-time, a clock time or unix seconds, "
                         f"got {text!r}") from None
    return when.timestamp()


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def fmt_at(t: float, *, start: float) -> str:
    """``23:51:02 (+1m12s)``: the local clock time and the offset into the recording."""
    from ptmon.monitor.format import fmt_duration

    clock = _dt.datetime.fromtimestamp(t).strftime("%H:%M:%S")
    return f"{clock} (+{fmt_duration(max(0.0, t - start))})"
