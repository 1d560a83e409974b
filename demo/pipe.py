"""Reading a child process's stdout up to a marker, with a deadline.

The launcher waits this way for each child's port announcement, and the demo
tests for the headless demo's banner. ``select`` with a short timeout rather
than a blocking ``read``: a child that hangs is noticed at the deadline, and
one that dies is noticed at once (end of file), instead of the parent
blocking forever.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable

__all__ = ["PipeClosed", "PipeTimeout", "read_until"]


class PipeClosed(EOFError):
    """The writer closed the pipe (the child exited) before the marker came; ``data`` is what came."""

    def __init__(self, data: bytes) -> None:
        super().__init__(f"pipe closed after {len(data)} bytes")
        self.data = data


class PipeTimeout(TimeoutError):
    """The deadline passed before the marker came; ``data`` is what came."""

    def __init__(self, data: bytes) -> None:
        super().__init__(f"deadline passed after {len(data)} bytes")
        self.data = data


def read_until(fd: int, marker: bytes, *, deadline: float,
               clock: Callable[[], float] = time.monotonic) -> bytes:
    """Bytes read from ``fd`` until they contain ``marker`` (the last read may run past it).

    ``deadline`` is a time of ``clock`` (``time.monotonic`` by default).
    """
    buf = b""
    while marker not in buf:
        left = deadline - clock()
        if left <= 0:
            raise PipeTimeout(buf)
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                raise PipeClosed(buf)
            buf += chunk
    return buf
