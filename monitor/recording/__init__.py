"""Recordings: a run's samples, health and alerts in one file, for replay, history and comparison.

``ptmon record`` / ``ptmon watch --record`` write one (``writer``, ``feed``);
``ptmon replay`` and ``ptmon snapshot --from`` read one back through the same
Store and Dashboard build as the live screen (``reader``, ``replay``).
"""

from ptmon.monitor.recording.feed import RecordingFeed, recording_feed
from ptmon.monitor.recording.file import RecordingError, RecordingLocked
from ptmon.monitor.recording.reader import AlertSpan, Recording
from ptmon.monitor.recording.writer import Recorder, TappedStore

__all__ = ["Recorder", "TappedStore", "RecordingFeed", "recording_feed", "Recording", "AlertSpan",
           "RecordingError", "RecordingLocked"]
