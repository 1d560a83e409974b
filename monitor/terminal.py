"""The screen's terminal after the process was stopped and continued (SIGSTOP or Ctrl-Z, then SIGCONT).

Textual's Linux driver restarts its application mode on every SIGCONT, from inside the signal
handler, whether or not it stopped it first. Only SIGTSTP (Ctrl-Z with signals on, ``kill -TSTP``)
goes through its stop; SIGSTOP cannot be caught (``kill -STOP``, a debugger, a paused tmux
pane, a job-control stop), so after it the driver starts a second input thread and a second
output thread over the first, and records the raw mode it is already in as the terminal's
"before" state. At exit it joins only the newer input thread: the older one, a non-daemon
thread, could miss the exit flag and keep the process alive after ``q``, and the terminal
was "restored" to raw mode (no echo) even when the process did end.

:class:`ResumeGuard` takes SIGCONT over on the app's event loop: after Textual's own
suspension it resumes as Textual does; after a stop Textual never saw it stops application
mode properly (one input thread joined, the output thread ended, the terminal as it was before
the app) and starts it again, then repaints the whole screen.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from types import FrameType
from typing import Any, TextIO

from textual.app import App

__all__ = ["ResumeGuard", "not_a_terminal"]


def not_a_terminal(command: str, instead: str, *, out: TextIO | None = None) -> str | None:
    """Why ``command``'s live screen cannot run when stdout (``out``) is no terminal, else None.

    Redirected (``ptmon watch > file``, a pipe, a CI step) the screen would fill the file with escape
    sequences and wait for keys nobody can press: refuse it, and name the command that prints instead.
    """
    stream = sys.stdout if out is None else out
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        pass
    return f"ptmon {command}: stdout is not a terminal, and the live screen needs one; {instead}"

_Handler = Any  # what signal.getsignal returns: a callable, SIG_DFL, SIG_IGN or None


class ResumeGuard:
    """Installed on a running app (main thread, a real terminal); ``remove`` puts things back."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous_tstp: _Handler = None
        self._previous_cont: _Handler = None
        self._suspended_by_textual = False

    def install(self) -> bool:
        """Take SIGCONT over; False (nothing changed) headless, off the main thread or on Windows."""
        driver = self._app._driver
        if (driver is None or driver.is_headless or not driver.can_suspend or not hasattr(signal, "SIGCONT")
                or threading.current_thread() is not threading.main_thread()):
            return False
        loop = asyncio.get_running_loop()
        previous_cont = signal.getsignal(signal.SIGCONT)
        try:
            loop.add_signal_handler(signal.SIGCONT, self._on_cont)
        except (NotImplementedError, RuntimeError, ValueError):  # a loop without signal support: Textual's way
            return False
        self._loop, self._previous_cont = loop, previous_cont
        self._previous_tstp = signal.getsignal(signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, self._on_tstp)
        return True

    def remove(self) -> None:
        if self._loop is None:
            return
        self._loop.remove_signal_handler(signal.SIGCONT)
        signal.signal(signal.SIGTSTP, self._previous_tstp)
        signal.signal(signal.SIGCONT, self._previous_cont)
        self._loop = None

    def _on_tstp(self, signum: int, frame: FrameType | None) -> None:
        # Textual's handler stops application mode, then stops the process: the next SIGCONT is its resume.
        self._suspended_by_textual = True
        if callable(self._previous_tstp):
            self._previous_tstp(signum, frame)

    def _on_cont(self) -> None:
        """On the event loop, between two of its callbacks: never in the middle of a write."""
        if self._suspended_by_textual:
            self._suspended_by_textual = False
            if callable(self._previous_cont):
                self._previous_cont(signal.SIGCONT, None)
        else:
            self.restart()
        self._app.refresh(layout=True)

    def restart(self) -> None:
        """Application mode stopped and started again: one input thread, the terminal's own state kept."""
        driver = self._app._driver
        if driver is None or not self._app.is_running:
            return
        driver.suspend_application_mode()
        driver.resume_application_mode()
