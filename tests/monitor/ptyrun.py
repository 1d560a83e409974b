"""A ``ptmon`` command on a real pseudo-terminal, read and typed into as a person would.

The command runs exactly as a user starts it (``python -m ptmon.monitor ...``) on a
160x48 pty; the test reads what it writes (colour and style sequences removed, so a
cell's text stays contiguous), types keys into it, signals it, and reads the pty's
termios afterwards to check the terminal was handed back as it was.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time

__all__ = ["ENTER_ALT_SCREEN", "LEAVE_ALT_SCREEN", "PtyRun"]

ENTER_ALT_SCREEN = b"\x1b[?1049h"
LEAVE_ALT_SCREEN = b"\x1b[?1049l"
_SGR = re.compile(rb"\x1b\[[0-9;:]*m")  # colours and text styles; cursor moves stay


class PtyRun:
    def __init__(self, *args: str, size: tuple[int, int] = (160, 48)) -> None:
        master, slave = os.openpty()
        width, height = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
        self.modes_before = termios.tcgetattr(master)  # the terminal as a shell leaves it (cooked, echo)
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(width), "LINES": str(height)}
        env.pop("TEXTUAL_ALLOW_SIGNALS", None)  # Ctrl-C is a key to the app, as in a user's terminal
        self.proc = subprocess.Popen([sys.executable, "-m", "ptmon.monitor", *args],
                                     stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def screen_text(self, since: int = 0) -> bytes:
        """What was written from byte ``since`` on, without colour/style sequences."""
        return _SGR.sub(b"", bytes(self.output[since:]))

    def wait_for(self, needle: bytes, timeout_s: float = 40.0, *, since: int = 0) -> None:
        """Until the screen shows ``needle`` (in what was written from byte ``since`` on)."""
        deadline = time.monotonic() + timeout_s
        while needle not in self.screen_text(since):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"screen never showed {needle!r} within {timeout_s:g} s (process "
                                     f"{'running' if self.proc.poll() is None else f'exited {self.proc.poll()}'}); "
                                     f"last output: {self.screen_text()[-1500:]!r}")
            time.sleep(0.1)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout_s: float) -> int | None:
        """The exit status, or None if the process is still running after ``timeout_s``."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def modes_restored(self) -> bool:
        """The pty's line discipline (echo, canonical input, signals) is what it was before the app."""
        return termios.tcgetattr(self.master)[3] == self.modes_before[3]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=2)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
