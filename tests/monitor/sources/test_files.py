"""File targets through a real LiveFeed: a prime-rl-shaped metrics.jsonl read as its bridge would serve it,
across truncation, rotation, malformed and half-written lines and a missing file, with health in words.

The lines are exactly what prime-rl's FileMonitor writes (src/prime_rl/monitors/file.py: ``{"step", "time",
**metrics}``, trainer and orchestrator in one file) with the dicts of tests/exporters/bridges/samples.py;
verl's FileLogger lines (verl/utils/tracking.py: ``{"step", "data"}``) carry no time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptmon.exporters.schema import SAMPLE_STALENESS, TRAINER_STEPS
from ptmon.monitor.dashboard import Dashboard, TargetHealth
from ptmon.monitor.file_target import target_from_path
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.settings import Settings
from tests.exporters.bridges import samples
from tests.support.clock import FakeClock

T0 = 1_800_000_000.0
STEP_S = samples.STEP_S


def step_time(step: int) -> float:
    return T0 + step * STEP_S


def prime_rl_lines(step: int) -> Iterator[str]:
    """One step's lines as prime-rl's FileMonitor writes them (each dict stamped a little after the last)."""
    for i, (metrics, _) in enumerate(samples.prime_rl(step)):
        yield json.dumps({**metrics, "step": step, "time": step_time(step) + i * 0.01}) + "\n"


def append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def write_steps(path: Path, steps: range) -> None:
    append(path, "".join(line for s in steps for line in prime_rl_lines(s)))


def feed_on(path: Path, clock: FakeClock, **target: object) -> LiveFeed:
    t = target_from_path(str(path), framework=target.pop("framework", None))  # type: ignore[arg-type]
    return LiveFeed(Settings(targets=(t,), interval_s=1.0), clock=clock)


async def look(feed: LiveFeed, clock: FakeClock, *, at: float) -> tuple[Dashboard, TargetHealth]:
    clock.now = at
    await feed.collect_once()
    d = await feed.dashboard(window_s=60.0)
    (health,) = d.targets
    return d, health


def last(feed: LiveFeed, name: str, **labels: str) -> float | None:
    for series in (s for target in feed.store.targets() for s in feed.store.series(target, name)):
        if all(series.labels.get(k) == v for k, v in labels.items()):
            point = series.last()
            return None if point is None else point[1]
    return None


async def test_a_prime_rl_file_reads_as_a_trainer_with_its_syncs_steps_and_staleness(tmp_path: Path) -> None:
    run = tmp_path / "my-run"
    run.mkdir()
    f = run / "metrics.jsonl"
    write_steps(f, range(1, 5))
    clock = FakeClock(step_time(4) + 1.0)
    feed = feed_on(f, clock)
    try:
        d, health = await look(feed, clock, at=step_time(4) + 1.0)
    finally:
        await feed.aclose()
    assert health.up is True and health.error is None and health.recognised is True
    assert health.role == "trainer"
    assert d.run == "my-run"
    # time/broadcast_weights: every step's sync, in the window at the times they were written
    assert d.weight_sync_last_s == samples.SYNC
    assert d.weight_sync_count == 4
    assert d.weight_sync_p50_s == pytest.approx(samples.SYNC, rel=0.25)
    # time/step: four steps of 9.5 s, ten seconds apart in the file's own time
    assert d.step_seconds == pytest.approx(samples.STEP_TIME)
    assert d.steps_per_s == pytest.approx(4 / (3 * STEP_S + 1.0), rel=0.1)
    assert d.seconds_since_last_step == pytest.approx(1.0 - 0.03, abs=0.01)  # the time dict is the 5th line
    # off_policy/max: the framework's staleness of the samples it consumed, beside ptmon's own
    assert last(feed, SAMPLE_STALENESS.name, stat="max", source="prime-rl") == 2.0
    assert d.staleness_max == 0.0  # ptmon's version difference: the rollouts' policy is the last sync's
    assert d.rollout_rate_per_s is not None and d.rollout_rate_per_s > 0
    assert d.spend_dollars is None  # a file says nothing of GPUs: unknown, not $0
    assert d.started_at == pytest.approx(step_time(1), abs=0.01)  # the first line, not when ptmon started


async def test_new_lines_are_read_as_they_are_appended(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    write_steps(f, range(1, 3))
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        d, _ = await look(feed, clock, at=step_time(2) + 1)
        assert d.weight_sync_count == 2
        write_steps(f, range(3, 5))
        d, _ = await look(feed, clock, at=step_time(4) + 1)
        assert d.weight_sync_count == 4
        assert last(feed, TRAINER_STEPS.name) == 4
    finally:
        await feed.aclose()


async def test_truncating_the_file_mid_run_loses_nothing_shown(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    write_steps(f, range(1, 3))
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        before, _ = await look(feed, clock, at=step_time(2) + 1)
        f.write_text("")  # copytruncate, or verl's "wb" on a restart
        write_steps(f, range(3, 5))
        d, health = await look(feed, clock, at=step_time(4) + 1)
    finally:
        await feed.aclose()
    assert before.weight_sync_count == 2
    assert d.weight_sync_count == 4  # the two read before the truncation still count
    assert last(feed, TRAINER_STEPS.name) == 4
    assert health.up is True
    assert health.error == "file truncated once: read again from its start"


async def test_rotation_is_picked_up_and_the_old_files_last_lines_kept(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    write_steps(f, range(1, 2))
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        await look(feed, clock, at=step_time(1) + 1)
        write_steps(f, range(2, 3))  # appended just before the rotation
        f.rename(tmp_path / "metrics.jsonl.1")
        write_steps(f, range(3, 5))
        d, health = await look(feed, clock, at=step_time(4) + 1)
    finally:
        await feed.aclose()
    assert d.weight_sync_count == 4
    assert last(feed, TRAINER_STEPS.name) == 4
    assert health.up is True and health.error == "file replaced once: read again from its start"


async def test_a_malformed_line_is_counted_and_skipped(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    write_steps(f, range(1, 2))
    append(f, '{"step": 2, "time/broadcast_weights": \n')  # the 6th line
    write_steps(f, range(2, 3))
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        d, health = await look(feed, clock, at=step_time(2) + 1)
    finally:
        await feed.aclose()
    assert health.up is True
    assert health.error is not None
    assert health.error.startswith("1 malformed line skipped (last: line 6: not JSON")
    assert d.weight_sync_count == 2


async def test_a_half_written_last_line_waits_for_the_rest(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    lines = list(prime_rl_lines(1))
    append(f, "".join(lines[:-1]) + lines[-1][:20])  # the time dict, cut mid-write
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        _, health = await look(feed, clock, at=step_time(1) + 1)
        assert health.up is True and health.error is None
        assert last(feed, TRAINER_STEPS.name) == 0
        append(f, lines[-1][20:])
        d, health = await look(feed, clock, at=step_time(1) + 2)
    finally:
        await feed.aclose()
    assert health.error is None
    assert last(feed, TRAINER_STEPS.name) == 1
    assert d.weight_sync_last_s == samples.SYNC


async def test_a_missing_file_is_down_with_why_until_it_appears(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        _, health = await look(feed, clock, at=step_time(1))
        assert health.up is False
        assert health.error == "no such file (yet): waiting for it to appear"
        write_steps(f, range(1, 3))
        d, health = await look(feed, clock, at=step_time(2) + 1)
        assert health.up is True and d.weight_sync_count == 2
        f.unlink()
        d, health = await look(feed, clock, at=step_time(2) + 2)
        assert health.up is False and health.error == "no such file (yet): waiting for it to appear"
        assert last(feed, TRAINER_STEPS.name) == 2  # what was read stays
    finally:
        await feed.aclose()


async def test_a_file_of_nothing_ptmon_knows_is_up_and_says_so(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    append(f, '{"step": 1, "loss": 0.5}\n{"step": 2, "loss": 0.4}\n')  # "loss" alone could be anyone's
    clock = FakeClock()
    feed = feed_on(f, clock)
    try:
        _, health = await look(feed, clock, at=T0)
    finally:
        await feed.aclose()
    assert health.up is True and health.recognised is False and health.series == 0


async def test_a_verl_file_takes_its_time_from_the_files_mtime(tmp_path: Path) -> None:
    f = tmp_path / "exp.jsonl"
    with f.open("wb") as out:  # verl/utils/tracking.py FileLogger: {"step": step, "data": data}, no time
        for step in (1, 2):
            metrics = {k: v for d, _ in samples.verl(step) for k, v in d.items()}
            out.write(json.dumps({"step": step, "data": metrics}).encode() + b"\n")
    os.utime(f, (step_time(2), step_time(2)))
    clock = FakeClock()
    feed = feed_on(f, clock, framework="verl")
    try:
        d, health = await look(feed, clock, at=step_time(2) + 5)
    finally:
        await feed.aclose()
    assert health.up is True and health.recognised is True
    assert d.run == "exp"
    assert d.weight_sync_last_s == samples.SYNC  # timing_s/update_weights
    assert d.seconds_since_last_step == pytest.approx(5.0)  # the mtime: when the newest line landed


async def test_an_hour_of_backlog_fills_the_windows_as_it_happened(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    (*_, (time_dict, _)) = samples.prime_rl(1)[:5]  # the trainer's time dict: step time, sync
    with f.open("w") as out:
        for step in range(1, 3601):  # one step a second for an hour, read at the end of it
            out.write(json.dumps({**time_dict, "step": step, "time": T0 + step}) + "\n")
    clock = FakeClock(T0 + 3600.5)  # the hour window then starts before the zeros read out before step 1
    t = target_from_path(str(f))
    feed = LiveFeed(Settings(targets=(t,), interval_s=5.0, window_s=3600.0), clock=clock)
    try:
        await feed.collect_once()
        minute = await feed.dashboard(window_s=60.0)
        hour = await feed.dashboard(window_s=3600.0)
    finally:
        await feed.aclose()
    (target,) = feed.store.targets()
    # one read-out per 5 s interval the lines fall in (721), the zeros before the first, the read itself
    assert len(feed.store.scrape_times(target)) == 3600 // 5 + 3
    assert minute.steps_per_s == pytest.approx(1.0, rel=0.05)
    assert hour.steps_per_s == pytest.approx(1.0, rel=0.05)
    assert minute.weight_sync_count == pytest.approx(60, abs=5)
    assert hour.weight_sync_count == 3600


async def test_a_backlog_larger_than_one_read_is_caught_up_over_several(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from ptmon.monitor.sources import files

    monkeypatch.setattr(files, "_READ_BYTES", 4096)  # a few steps' lines per read
    f = tmp_path / "metrics.jsonl"
    write_steps(f, range(1, 21))
    clock = FakeClock(step_time(20) + 1)
    feed = feed_on(f, clock)
    try:
        reads = 0
        while last(feed, TRAINER_STEPS.name) != 20:
            await feed.collect_once()
            reads += 1
            assert reads < 50
        d = await feed.dashboard(window_s=300.0)
    finally:
        await feed.aclose()
    assert reads > 3
    (target,) = feed.store.targets()
    times = feed.store.scrape_times(target)
    assert times == sorted(times) and times[-1] == step_time(20) + 1
    assert times[-2] < step_time(20) + 1 - 0.5  # the lines kept their own times: none squashed onto a read's
    assert d.weight_sync_count == 20


async def test_the_read_out_step_follows_the_interval(tmp_path: Path) -> None:
    f = tmp_path / "metrics.jsonl"
    (*_, (time_dict, _)) = samples.prime_rl(1)[:5]
    clock = FakeClock(T0 + 101)
    feed = feed_on(f, clock)
    try:
        feed.set_interval(10.0)
        with f.open("w") as out:
            for step in range(1, 101):  # a step a second
                out.write(json.dumps({**time_dict, "step": step, "time": T0 + step}) + "\n")
        await feed.collect_once()
    finally:
        await feed.aclose()
    (target,) = feed.store.targets()
    assert len(feed.store.scrape_times(target)) == 100 // 10 + 3  # 10 s slots (11 hit), the zeros, the read


async def test_a_hung_read_fails_the_target_after_a_while_and_never_holds_up_closing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import threading
    import time

    from ptmon.monitor.sources import files
    from ptmon.monitor.sources.tail import Tail
    from ptmon.monitor.store import Store

    monkeypatch.setattr(files, "_HUNG_S", 1.5)
    release = threading.Event()
    read = Tail.read

    def hung(self: Tail) -> object:
        release.wait(10.0)  # a network filesystem that stopped answering
        return read(self)

    monkeypatch.setattr(Tail, "read", hung)
    f = tmp_path / "metrics.jsonl"
    write_steps(f, range(1, 2))
    source = files.FileSource([target_from_path(str(f))], store=Store(), interval_s=0.2, timeout_s=0.1)
    try:
        await source.start()
        await asyncio.sleep(0.3)
        (health,) = source.health()
        assert health.up is None  # past the deadline, but a backlog takes a while: not judged yet
        deadline = time.monotonic() + 5.0
        while source.health()[0].up is not False and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        (health,) = source.health()
        assert health.up is False
        assert health.error == "reading the file has taken over 1.5 s (a hung filesystem?)"
        began = time.monotonic()
        await source.aclose()
        assert time.monotonic() - began < 1.0  # quitting does not wait for the stuck thread
    finally:
        release.set()
