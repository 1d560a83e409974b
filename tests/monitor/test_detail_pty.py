"""The detail screen in a real terminal, as a person reaches it: ``ptmon demo``, arrow to a worker, Enter, Esc."""

from __future__ import annotations

import time

import pytest

from tests.monitor.ptyrun import PtyRun
from tests.monitor.test_terminal import quit_and_check

pytestmark = pytest.mark.slow  # a pty and the processes on it

DOWN, ENTER, ESC = b"\x1b[B", b"\r", b"\x1b"


def test_enter_on_a_demo_worker_opens_its_detail_and_esc_goes_back() -> None:
    run = PtyRun("demo", "--speed", "100", "--workers", "2", "--interval", "0.5")
    try:
        run.wait_for(b"rollout-1")
        run.type(b"w")
        time.sleep(0.5)
        run.type(DOWN)  # from rollout-0 to rollout-1
        time.sleep(0.5)
        mark = len(run.output)
        run.type(ENTER)
        # Sections only the detail screen draws (not its title: on a loaded machine a key typed before the
        # table filled may leave the cursor on rollout-0, and that is fine here).
        for section in (b"per env", b"outcomes", b"scrape history", b"good scrapes stored", b"raw series"):
            run.wait_for(section, 30.0, since=mark)
        mark = len(run.output)
        run.type(ESC)
        run.wait_for(b"rollout workers", 15.0, since=mark)  # the main screen drawn again
        quit_and_check(run, b"q")
    finally:
        run.close()
