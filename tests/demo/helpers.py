"""Process helpers for the demo tests: children by /proc, liveness by pid, a headless demo to drive."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptmon.demo import pipe

__all__ = ["children_of", "alive", "wait_gone", "start_headless", "read_until", "URL_RE"]

URL_RE = re.compile(r"^(\S+)\s+(http://127\.0\.0\.1:(\d+)/metrics)$", re.M)
PROC = Path("/proc")

if not PROC.is_dir():  # pragma: no cover - Linux only
    pytest.skip("needs /proc to find child processes", allow_module_level=True)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of ``pid`` from /proc, or None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1])


def children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid`` (what the launcher started)."""
    out = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None and st[1] == pid:
                out.append(int(entry.name))
    return sorted(out)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (checked with kill(pid, 0), no psutil)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's pid: it exists
        return True
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def wait_gone(pids: list[int], timeout_s: float) -> list[int]:
    """Pids still alive after ``timeout_s`` (empty when all are gone)."""
    deadline = time.monotonic() + timeout_s
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def read_until(proc: subprocess.Popen[bytes], marker: bytes, timeout_s: float) -> bytes:
    """Read ``proc``'s stdout until ``marker`` appears (or fail with what was read)."""
    assert proc.stdout is not None
    try:
        return pipe.read_until(proc.stdout.fileno(), marker, deadline=time.monotonic() + timeout_s)
    except pipe.PipeTimeout as exc:
        raise AssertionError(f"no {marker!r} after {timeout_s} s; got {exc.data.decode(errors='replace')!r}") from None
    except pipe.PipeClosed as exc:
        raise AssertionError(f"exited ({proc.wait()}) before {marker!r}; got {exc.data!r}") from None


def start_headless(*extra: str, speed: float = 300.0, workers: int = 2) -> tuple[subprocess.Popen[bytes], str]:
    """``ptmon demo --headless`` as a subprocess, returned once it printed its URLs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ptmon.monitor", "demo", "--headless", "--speed", str(speed), "--workers", str(workers),
         *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        text = read_until(proc, b"Ctrl-C stops every process", 60.0).decode()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, text
