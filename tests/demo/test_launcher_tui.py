"""``ptmon demo`` with its screen, in a real pseudo-terminal: q, SIGINT and SIGTERM leave no child behind.

The launcher runs exactly as a user starts it (``python -m ptmon.monitor demo``)
on a pty sized 160x48; the test waits until the children are up and the
screen shows a worker row, then quits it one way or another and checks
every child pid is gone and the terminal was handed back (alternate screen
left), i.e. Textual shut down rather than being killed.

The screen is read as the bytes written to the pty with their colour and
style sequences removed: Textual writes a cell's text as one segment between
cursor moves at widget edges, but a name drawn in two styles (a highlight, a
filter match) would otherwise not be contiguous. When the screen never shows
the row, the failure says why (children alive, alternate screen entered, the
header's "feed error"), since "not ready yet" and "the table cannot draw"
look the same from outside.
"""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from tests.demo.helpers import alive, children_of, wait_gone
from tests.monitor.ptyrun import ENTER_ALT_SCREEN, LEAVE_ALT_SCREEN, PtyRun

pytestmark = pytest.mark.slow  # real processes (a pty or the demo's children)


class DemoPty(PtyRun):
    """``ptmon demo ARGS`` on the suite's pty, with the launcher's children in view."""

    def __init__(self, *args: str) -> None:
        super().__init__("demo", *args)

    def wait_for_children(self, needle: bytes, children: int, timeout_s: float = 40.0) -> list[int]:
        """Pids of the launcher's children once ``children`` are alive and the app has drawn ``needle``."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids = [p for p in children_of(self.proc.pid) if alive(p)]
            text = self.screen_text()
            if len(pids) >= children and ENTER_ALT_SCREEN in text and needle in text:
                return pids
            if self.proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        errors = re.findall(rb"feed error: [^\r\n\x1b]*", text)
        raise AssertionError(
            f"screen never showed {needle!r} with {children} live children within {timeout_s:g} s: "
            f"{len(pids)} alive, launcher {'running' if self.proc.poll() is None else f'exited {self.proc.poll()}'}, "
            f"alternate screen {'entered' if ENTER_ALT_SCREEN in text else 'never entered'}"
            + (f", header says {errors[-1].decode(errors='replace')!r}" if errors else ", no feed error shown")
            + f"; last output, styles removed: {text[-1500:]!r}")

    def hang_up(self) -> None:
        """What closing a terminal window does: the terminal goes away, then SIGHUP."""
        os.close(self.master)
        self.master = -1
        self.proc.send_signal(signal.SIGHUP)


@pytest.mark.parametrize("how", ["q", "SIGINT", "SIGTERM", "duration"])
def test_quitting_the_screen_stops_every_child(how: str) -> None:
    extra = ("--duration", "4") if how == "duration" else ()
    run = DemoPty("--speed", "100", "--workers", "1", "--interval", "0.5", *extra)
    try:
        # With --duration the screen may already be closing on a slow machine: only the children are awaited.
        pids = run.wait_for_children(b"" if how == "duration" else b"rollout-0", children=3)
        assert all(alive(p) for p in pids)
        time.sleep(0.5)  # let the app settle into its poll loop
        if how == "q":
            os.write(run.master, b"q")
        elif how != "duration":  # --duration: the launcher ends the screen itself
            run.proc.send_signal(getattr(signal, how))
        assert run.proc.wait(timeout=20) == 0
        assert wait_gone(pids, 1.0) == []
        run._reader.join(timeout=2)
        assert LEAVE_ALT_SCREEN in run.output  # Textual restored the terminal
    finally:
        run.close()


def test_a_hung_up_terminal_stops_every_child_and_the_launcher() -> None:
    run = DemoPty("--speed", "100", "--workers", "1", "--interval", "0.5")
    try:
        pids = run.wait_for_children(b"rollout-0", children=3)
        time.sleep(0.5)
        run.hang_up()
        assert run.proc.wait(timeout=20) == 128 + signal.SIGHUP  # no screen to restore: out at once
        assert wait_gone(pids, 1.0) == []
    finally:
        run.close()
