"""A run's history from its recording, for a monitor that starts in the middle of the run.

``ptmon watch --record FILE`` on a file that already holds the run (the
monitor was restarted, the head node rebooted) reads it first: every eval
the run had, placed at the spend of its time, and the event log so far.
The live feed goes on from there, so the intelligence-per-dollar curve
starts at the run's first recorded eval instead of at this monitor's start.
Rates and charts still start with this monitor's own scrapes: a gap while
nothing was watching must not look like a stretch of zero rollouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ptmon.monitor.evals import EvalLog
from ptmon.monitor.events import Event
from ptmon.monitor.recording.reader import Recording
from ptmon.monitor.recording.replay import ReplayFeed
from ptmon.monitor.settings import Settings

__all__ = ["History", "load_history"]


@dataclass(frozen=True, slots=True)
class History:
    evals: EvalLog
    events: tuple[Event, ...]
    until: float  # the recording's last time


def load_history(path: str, settings: Settings) -> History | None:
    """What the recording at ``path`` holds of the run, read with ``settings``; None when there is none yet."""
    if not Path(path).is_file() or Path(path).stat().st_size == 0:
        return None
    recording = Recording(path)
    try:
        if recording.span() is None:
            return None
        feed = ReplayFeed(recording, settings)
        end = feed.playhead.end
        feed.dashboard_at(end, window_s=settings.window_s)  # plays it all: evals and events on the way
        return History(evals=feed.evals, events=feed.events(), until=end)
    finally:
        recording.close()
