"""However ``ptmon demo`` ends, its ``--sd-file`` lists no target and its run directory is gone.

A Prometheus on the shipped rules pages ``PtmonTargetDown`` (critical for the
trainer) for every target a file_sd file still lists: a demo that stopped
must take its targets with it. The run directory lives under ``$TMPDIR``,
which each test points at a directory of its own to see what is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.demo.helpers import URL_RE, read_until
from tests.demo.test_launcher_tui import DemoPty

pytestmark = pytest.mark.slow  # the demo's processes


def _headless(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    sd_file, tmpdir = tmp_path / "ptmon.demo.json", tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "ptmon.monitor", "demo", "--headless", "--speed", "300",
                             "--workers", "1", "--sd-file", str(sd_file), *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(tmpdir)})
    return proc, sd_file, tmpdir


def _listed(sd_file: Path) -> list[str]:
    return [t for group in json.loads(sd_file.read_text()) for t in group["targets"]]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT", "duration", "SIGTERM+SIGHUP"])
def test_headless_leaves_no_target_listed_and_no_run_directory(tmp_path: Path, how: str) -> None:
    proc, sd_file, tmpdir = _headless(tmp_path, *(("--duration", "3") if how == "duration" else ()))
    try:
        text = read_until(proc, b"Ctrl-C stops every process", 60.0).decode()
        assert len(_listed(sd_file)) == 3 == len(URL_RE.findall(text))
        assert [p.name for p in tmpdir.iterdir()][0].startswith("ptmon-demo-")
        if how != "duration":
            first, _, second = how.partition("+")
            proc.send_signal(getattr(signal, first))
            if second:  # a hang-up while it is already stopping its children
                time.sleep(0.05)
                proc.send_signal(getattr(signal, second))
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    assert _listed(sd_file) == []
    assert list(tmpdir.iterdir()) == []


def test_quitting_the_screen_leaves_no_target_listed(tmp_path: Path) -> None:
    sd_file = tmp_path / "ptmon.demo.json"
    run = DemoPty("--speed", "100", "--workers", "1", "--interval", "0.5", "--sd-file", str(sd_file))
    try:
        run.wait_for_children(b"rollout-0", children=3)
        assert len(_listed(sd_file)) == 3
        os.write(run.master, b"q")
        assert run.proc.wait(timeout=20) == 0
    finally:
        run.close()
    assert _listed(sd_file) == []
