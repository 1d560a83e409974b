"""What the terminal went through, in a real pty: stopped and continued, then ``q`` (issue 12 item 11),
and Ctrl-C (issue 13 item 7).

``ptmon watch`` on a loopback exporter and ``ptmon demo`` with its children are
stopped with SIGSTOP (what ``kill -STOP``, a debugger or a paused tmux pane do;
it cannot be caught) and continued, three times; then ``q`` must end the
process (Textual's SIGCONT handler used to start an input thread per resume and
leave one running at exit), leave the alternate screen, and hand the terminal
back in the modes it had (it used to be "restored" to raw mode, no echo), with
every child of the demo gone. Ctrl-C does the same as ``q``, with no "press
ctrl+q" toast (it used to show one and keep running).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest

from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from tests.demo.helpers import alive, children_of, wait_gone
from tests.monitor.ptyrun import LEAVE_ALT_SCREEN, PtyRun

pytestmark = pytest.mark.slow  # a pty and the processes on it


@pytest.fixture
def exporter_url() -> Iterator[str]:
    trainer = TrainerExporter(run="pty-run", model="tiny", algorithm="grpo", gpus=1, gpu_hour_price=2.0)
    with serve(trainer.registry) as server:
        yield server.url


def stop_and_continue(run: PtyRun, *, times: int = 3) -> int:
    """Where the output stood just before the last SIGCONT."""
    mark = 0
    for _ in range(times):
        run.proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        mark = len(run.output)
        run.proc.send_signal(signal.SIGCONT)
        time.sleep(0.5)
    return mark


def quit_and_check(run: PtyRun, keys: bytes) -> None:
    """``keys`` end the process with status 0, out of the alternate screen, the terminal's modes back."""
    mark = len(run.output)
    run.type(keys)
    status = run.wait(15)
    assert status == 0, (f"{keys!r} did not end the process (status {status}); "
                         f"after the keys it wrote: {run.screen_text(mark)[-800:]!r}")
    run._reader.join(timeout=2)
    assert LEAVE_ALT_SCREEN in run.output[mark:]
    assert run.modes_restored(), "the terminal was left in the app's raw mode (no echo, no line editing)"


def test_q_ends_watch_after_the_process_was_stopped_and_continued(exporter_url: str) -> None:
    run = PtyRun("watch", exporter_url, "--interval", "0.5")
    try:
        run.wait_for(b"targets 1/1")
        resumed = stop_and_continue(run)
        run.wait_for(b"targets 1/1", 10.0, since=resumed)  # the whole screen drawn again after the resume
        quit_and_check(run, b"q")
    finally:
        run.close()


def test_q_ends_the_demo_and_its_children_after_the_launcher_was_stopped_and_continued() -> None:
    run = PtyRun("demo", "--speed", "100", "--workers", "1", "--interval", "0.5")
    try:
        run.wait_for(b"rollout-0")
        pids = [p for p in children_of(run.proc.pid) if alive(p)]
        assert len(pids) == 3
        stop_and_continue(run)
        quit_and_check(run, b"q")
        assert wait_gone(pids, 2.0) == []
    finally:
        run.close()


def test_ctrl_c_ends_watch_like_q(exporter_url: str) -> None:
    run = PtyRun("watch", exporter_url, "--interval", "0.5")
    try:
        run.wait_for(b"targets 1/1")
        mark = len(run.output)
        quit_and_check(run, b"\x03")
        assert b"to quit" not in run.screen_text(mark)
    finally:
        run.close()


@pytest.mark.parametrize("stopped_first", [False, True], ids=["fresh", "after-stop-and-continue"])
def test_ctrl_c_ends_the_demo_and_every_child(stopped_first: bool) -> None:
    run = PtyRun("demo", "--speed", "100", "--workers", "1", "--interval", "0.5")
    try:
        run.wait_for(b"rollout-0")
        pids = [p for p in children_of(run.proc.pid) if alive(p)]
        assert len(pids) == 3
        if stopped_first:
            stop_and_continue(run, times=1)
        mark = len(run.output)
        quit_and_check(run, b"\x03")
        assert b"to quit" not in run.screen_text(mark)
        assert wait_gone(pids, 2.0) == []
    finally:
        run.close()
