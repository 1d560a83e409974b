"""One line of a framework's JSONL metrics file: the metrics dict it holds, its step and its time.

Two writers are known, and any per-step JSON object is read the same way:

- prime-rl's ``FileMonitor`` (PrimeIntellect-ai/prime-rl, ``src/prime_rl/monitors/file.py``,
  ``log_metrics``) writes ``{"step": step, "time": time.time(), **metrics}`` to
  ``<run dir>/metrics.jsonl``, opened ``"a"`` with ``buffering=1`` "so a concurrently-running
  dashboard can tail the file"; trainer and orchestrator append to the same file, each with its own
  step numbers, and non-finite values are dropped before writing (``prime_rl/utils/utils.py``
  ``sanitize``).
- verl's ``FileLogger`` (volcengine/verl, ``verl/utils/tracking.py``) writes
  ``{"step": step, "data": metrics}`` with orjson (NaN becomes null) to
  ``$VERL_FILE_LOGGER_PATH`` or ``<project>/<experiment>.jsonl``, opened ``"wb"``: a restart
  truncates the file. Its lines carry no time.

Anything else that is one JSON object per line with numbers under string keys is a metrics dict; a
``step`` key, when it holds an integer, is its step number. What each key means is the framework's
table's business (``ptmon.exporters.bridges``), not this module's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Entry", "LineError", "decode_line", "LineSplitter", "MAX_LINE_BYTES"]

# A metrics dict of a few thousand keys is tens of KiB; a "line" past this is not one (a binary file, a
# log without newlines): it is skipped as malformed rather than held in memory until a newline comes.
MAX_LINE_BYTES = 4 * 2**20

_STEP = "step"  # both writers
_TIME = "time"  # prime-rl: unix seconds when the line was written
_DATA = "data"  # verl: the metrics dict, beside "step"


class LineError(ValueError):
    """A line that is not a metrics dict; the message says why in a few words."""


@dataclass(frozen=True, slots=True)
class Entry:
    metrics: Mapping[str, object]
    step: int | None
    time: float | None  # when the writer says the line was written (unix seconds), if it says


def _step(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        return None
    return int(value) if value >= 0 else None


def _time(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    t = float(value)
    return t if math.isfinite(t) and t > 0 else None


def decode_line(line: bytes) -> Entry:
    """The entry one complete line (without its newline) holds; ``LineError`` when it holds none."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LineError(f"not UTF-8 (byte 0x{line[exc.start]:02x} at {exc.start})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise LineError("not JSON (nested too deeply)") from None
    if not isinstance(obj, dict):
        raise LineError(f"a JSON {type(obj).__name__}, not an object")
    step = _step(obj.get(_STEP))
    data = obj.get(_DATA)
    if isinstance(data, dict) and set(obj) <= {_STEP, _DATA}:  # verl's envelope
        return Entry(metrics=data, step=step, time=None)
    return Entry(metrics=obj, step=step, time=_time(obj.get(_TIME)))


class LineSplitter:
    """Bytes as they are read in, complete lines out; a last line with no newline yet waits for the rest.

    A line that grows past ``max_line_bytes`` without a newline is dropped up to its newline and
    reported once as too long (``feed`` returns it as ``None`` in the list).
    """

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._max = max_line_bytes
        self._pending = bytearray()
        self._skipping = False  # inside an over-long line: drop until its newline

    @property
    def pending(self) -> int:
        """Bytes of a line not finished yet."""
        return len(self._pending)

    def reset(self) -> None:
        """Forget a half-read line (its file was truncated or replaced: the rest will never come)."""
        self._pending.clear()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | None]:
        """The lines ``data`` completes (``None`` for each over-long line dropped), in order."""
        out: list[bytes | None] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            elif len(self._pending) + end - start > self._max:
                self._pending.clear()
                out.append(None)
            else:
                self._pending += data[start:end]
                out.append(bytes(self._pending).rstrip(b"\r"))
                self._pending.clear()
            start = end + 1
        rest = len(data) - start
        if not self._skipping and rest:
            if len(self._pending) + rest > self._max:
                self._pending.clear()
                self._skipping = True
                out.append(None)
            else:
                self._pending += data[start:]
        return out
