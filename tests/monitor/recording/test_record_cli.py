"""``ptmon record`` as a process: SIGTERM flushes, kill -9 loses only the last seconds, one writer per file."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.recording.reader import Recording
from ptmon.monitor.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture
def worker_url():
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=2, gpu_hour_price=3.0)
    worker.record_rollout(env="math", tokens=100, reward=1.0, seconds=1.0, policy_version=1)
    server = serve(worker.registry)
    yield server.url
    server.close()


def _record(url: str, out, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "ptmon.monitor", "record", url, "--out", str(out),
                             "--interval", "0.2", *extra],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_scrapes(path, n: int, timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with Recording(path) as r:
                got = r.stats()[0]
            if got >= n:
                return got
        except Exception:
            pass
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} scrapes recorded after {timeout_s} s")


def _last_stored(path) -> float:
    with Recording(path) as r:
        return max(stored for _, _, stored, _ in r.scrapes())


def test_sigterm_flushes_and_exits_0(tmp_path, worker_url):
    out = tmp_path / "run.rec"
    proc = _record(worker_url, out)
    _wait_for_scrapes(out, 5)
    stop = time.time()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert b"is complete" in err
    assert _last_stored(out) >= stop - 0.5  # the scrapes of the last flush interval were written too
    with Recording(out) as r:
        assert all(s.ended is not None for s in r.sessions())


def test_kill_9_loses_only_the_last_seconds_and_a_new_recorder_appends(tmp_path, worker_url):
    out = tmp_path / "run.rec"
    proc = _record(worker_url, out)
    _wait_for_scrapes(out, 15)
    killed = time.time()
    proc.kill()
    proc.wait(timeout=10)
    db = sqlite3.connect(out)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    before = _last_stored(out)
    assert before >= killed - 2.5, f"lost {killed - before:.1f} s"
    with Recording(out) as r:
        scrapes_before = r.stats()[0]

    again = _record(worker_url, out, "--duration", "2")
    _, err = again.communicate(timeout=30)
    assert again.returncode == 0, err
    with Recording(out) as r:
        assert r.stats()[0] > scrapes_before
        sessions = r.sessions()
        assert len(sessions) == 2 and sessions[0].ended is not None and sessions[0].ended <= before + 1
        store = Store()
        for target, stamp, _, samples in r.scrapes():
            assert store.ingest(target, stamp, samples).accepted == len(samples)  # nothing out of order or twice
        (gpu,) = store.series(r.targets()[0], "posttrain_gpu_seconds_total")
        times = [t for t, _ in gpu.points()]
        assert times[0] < killed < times[-1]


def test_a_second_recorder_is_a_clear_error(tmp_path, worker_url):
    out = tmp_path / "run.rec"
    first = _record(worker_url, out)
    try:
        _wait_for_scrapes(out, 2)
        second = _record(worker_url, out)
        _, err = second.communicate(timeout=20)
        assert second.returncode == 2
        assert f"another ptmon is recording into this file (pid {first.pid})".encode() in err
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=20)
    assert first.returncode == 0


def test_bad_arguments(tmp_path, worker_url):
    proc = subprocess.run([sys.executable, "-m", "ptmon.monitor", "record", worker_url, "--out",
                           str(tmp_path / "r.rec"), "--retention", "soon"], capture_output=True, timeout=30)
    assert proc.returncode == 2 and b"--retention" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "ptmon.monitor", "record", "--out", str(tmp_path / "r.rec")],
                          capture_output=True, timeout=30)
    assert proc.returncode == 2 and b"no targets" in proc.stderr


def test_a_hang_up_stops_it_unless_ignored_as_under_nohup(tmp_path, worker_url):
    out = tmp_path / "run.rec"
    hup = _record(worker_url, out)
    _wait_for_scrapes(out, 2)
    hup.send_signal(signal.SIGHUP)
    hup.communicate(timeout=20)
    assert hup.returncode == 0  # a terminal closing: flush and stop

    def nohup() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    out2 = tmp_path / "nohup.rec"
    proc = subprocess.Popen([sys.executable, "-m", "ptmon.monitor", "record", worker_url, "--out", str(out2),
                             "--interval", "0.2"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=nohup)
    try:
        _wait_for_scrapes(out2, 2)
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert proc.poll() is None  # nohup: the hang-up is ignored, recording goes on
        n = _wait_for_scrapes(out2, 2)
        _wait_for_scrapes(out2, n + 3)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0
