"""``ptmon snapshot PATH --json`` on a prime-rl metrics.jsonl that grows while it is read, and is truncated
halfway: the weight syncs, step rate and step time come from the file's keys, and nothing read before the
truncation is lost."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from ptmon.monitor.cli import main
from tests.exporters.bridges import samples

STEP_EVERY_S = 0.2


class Writer(threading.Thread):
    """prime-rl's FileMonitor in a thread: line-buffered appends, ``{"step", "time", **metrics}`` per dict
    (src/prime_rl/monitors/file.py), one step every STEP_EVERY_S; truncates the file once, halfway."""

    def __init__(self, path: Path, *, truncate_after_s: float) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.truncate_after_s = truncate_after_s
        self.stop = threading.Event()
        self.before_truncation = 0
        self.after_truncation = 0

    def run(self) -> None:
        start = time.time()
        step = 0
        f = self.path.open("a", buffering=1)
        try:
            while not self.stop.is_set():
                step += 1
                for metrics, _ in samples.prime_rl(step):
                    f.write(json.dumps({**metrics, "step": step, "time": time.time()}) + "\n")
                if self.before_truncation == 0 and time.time() - start > self.truncate_after_s:
                    self.before_truncation = step
                    f.truncate(0)  # the file restarts: what ptmon read of it must stay shown
                    f.seek(0)
                elif self.before_truncation:
                    self.after_truncation += 1
                self.stop.wait(STEP_EVERY_S)
        finally:
            f.close()


def test_snapshot_of_a_growing_and_truncated_prime_rl_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run" / "metrics.jsonl"
    path.parent.mkdir()
    writer = Writer(path, truncate_after_s=1.5)
    writer.start()
    try:
        time.sleep(0.5)
        code = main(["snapshot", str(path), "--json", "--over", "3", "--interval", "0.25"])
    finally:
        writer.stop.set()
        writer.join()
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    (target,) = out["targets"]
    assert target["up"] is True and target["recognised"] is True
    assert target["error"] == "file truncated once: read again from its start"
    assert out["run"] == "run"
    # time/broadcast_weights
    assert out["weight_sync_last_s"] == samples.SYNC
    assert out["weight_sync_p50_s"] == pytest.approx(samples.SYNC, rel=0.25)
    # every sync read stays counted: more than the truncated file still holds
    assert writer.before_truncation > 0
    assert out["weight_sync_count"] > writer.after_truncation
    assert out["weight_sync_count"] >= writer.before_truncation
    # time/step: the logged step time, and the rate the writer steps at
    assert out["step_seconds"] == pytest.approx(samples.STEP_TIME)
    assert out["steps_per_s"] == pytest.approx(1 / STEP_EVERY_S, rel=0.3)
    assert out["seconds_since_last_step"] < 1.0
