"""Process plumbing: the compressed clock, the trainer's state file, child command lines, stopping."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ptmon.demo.proc import (
    ROLES,
    Runtime,
    SimClock,
    TrainerState,
    child_argv,
    parse_child_args,
    read_state,
    write_state,
)


def test_sim_clock_runs_speed_times_faster_from_its_origin() -> None:
    now = [100.0]
    clock = SimClock(40.0, base=lambda: now[0])
    assert clock() == 100.0 and clock.elapsed() == 0.0
    now[0] = 102.5
    assert clock() == pytest.approx(100.0 + 2.5 * 40)
    assert clock.elapsed() == pytest.approx(100.0)
    with pytest.raises(ValueError):
        SimClock(0.0)


def test_state_file_round_trips_and_tolerates_absence_and_garbage(tmp_path: Path) -> None:
    assert read_state(tmp_path) is None
    write_state(tmp_path, TrainerState(step=12, version=6))
    assert read_state(tmp_path) == TrainerState(12, 6)
    (tmp_path / "trainer.json").write_text('{"step": 1')  # a torn write from some other writer
    assert read_state(tmp_path) is None


def test_child_argv_parses_back(tmp_path: Path) -> None:
    for role in ROLES:
        argv = child_argv(role, run_dir=tmp_path, scenario="crash", speed=12.5, seed=3, workers=5, index=2,
                          port=4567, life=1)
        # -P: the working directory is not put on the child's import path (a user's demo.py stays unrun).
        assert argv[1:4] == ["-P", "-m", "ptmon.demo"]
        opts = parse_child_args(argv[4:])
        assert (opts.role, opts.run_dir, opts.scenario.name, opts.speed, opts.seed, opts.index, opts.port,
                opts.life) == (role, tmp_path, "crash", 12.5, 3, 2, 4567, 1)
        assert opts.spec.workers == 5 and opts.spec.run == "demo-crash"


def test_runtime_sleep_is_compressed_and_stops_at_once() -> None:
    rt = Runtime(100.0, parent_pid=0)
    start = time.monotonic()
    assert rt.sleep(10.0) is True  # 10 simulated seconds = 0.1 s real
    assert 0.09 <= time.monotonic() - start < 2.0
    threading.Timer(0.05, rt.stop.set).start()
    start = time.monotonic()
    assert rt.sleep(1e6) is False  # would be hours; returns as soon as it is told to stop
    assert time.monotonic() - start < 2.0
