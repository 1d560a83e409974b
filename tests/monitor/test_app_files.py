"""``ptmon watch outputs/run/metrics.jsonl 127.0.0.1:PORT`` driven with Pilot: a prime-rl metrics file
growing beside a rollout exporter on real HTTP. Both are rows of the targets table; the file's syncs and
steps fill the cards; the file removed, its row goes red with why, and the HTTP row stays up."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.app import PtmonApp
from ptmon.monitor.config import load_settings
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.widgets import Card
from tests.exporters.bridges import samples
from tests.monitor.screen import screen_text

SIZE = (220, 56)
NAME, ROLE, UP, ERROR = 0, 1, 2, 6  # TargetsTable columns


class PrimeRL(threading.Thread):
    """prime-rl's FileMonitor (src/prime_rl/monitors/file.py): a step's dicts every 0.2 s, line-buffered."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()

    def run(self) -> None:
        step = 0
        with self.path.open("a", buffering=1) as f:
            while not self.stop.is_set():
                step += 1
                for metrics, _ in samples.prime_rl(step):
                    f.write(json.dumps({**metrics, "step": step, "time": time.time()}) + "\n")
                self.stop.wait(0.2)


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "outputs" / "run-7"
    path.mkdir(parents=True)
    writer = PrimeRL(path / "metrics.jsonl")
    writer.start()
    try:
        yield path
    finally:
        writer.stop.set()
        writer.join()


async def until(pilot: Pilot, predicate: Callable[[], object], *, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                break
        except (KeyError, ValueError, IndexError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen_text(pilot.app)}")
        await pilot.pause(0.1)
    await pilot.pause()


def rows(app: PtmonApp) -> dict[str, list[str]]:
    table = app.table("targets")
    return {key: [cell.plain for cell in table.get_row(key)] for key in table.visible_keys()}


def card(app: PtmonApp, name: str) -> dict[str, str]:
    return {str(label): str(value) for label, value in app.query_one(f"#card-{name}", Card).rows}


async def test_a_metrics_file_and_an_endpoint_side_by_side(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(run_dir.parent.parent)
    worker = RolloutExporter(run="run-7", model="m", algorithm="grpo", gpus=1)
    worker.record_rollouts(env="gsm8k", count=32, tokens=3200, reward_mean=0.375)
    server = serve(worker.registry)
    file_name = "outputs/run-7/metrics.jsonl"
    endpoint = f"127.0.0.1:{server.port}"
    settings = load_settings(urls=[file_name, endpoint], interval_s=0.5, window_s=60.0)
    app = PtmonApp(LiveFeed(settings), interval_s=settings.interval_s, window_s=settings.window_s)
    try:
        async with app.run_test(size=SIZE) as pilot:
            def both_up_and_syncing() -> bool:
                r = rows(app)
                return (r[file_name][UP] == "● up" and r[endpoint][UP] == "● up"
                        # a step every 0.2 s, read every 0.5 s: several syncs to a read, so "last avg"
                        # (every sync here takes 1.25 s, so the mean is each one's)
                        and "1.25s" in (card(app, "sync").get("last"), card(app, "sync").get("last avg")))
            await until(pilot, both_up_and_syncing, what="the file and the endpoint up, the file's syncs shown")
            r = rows(app)
            assert r[file_name][ROLE] == "trainer" and r[file_name][ERROR] == ""
            assert r[endpoint][ROLE] == "rollout"
            assert "run-7" in screen_text(app)
            assert card(app, "trainer")["steps"] != "—"

            (run_dir / "metrics.jsonl").unlink()
            await until(pilot, lambda: rows(app)[file_name][UP] == "✗ DOWN", what="the removed file's row down")
            assert rows(app)[file_name][ERROR] == "no such file (yet): waiting for it to appear"
            # the endpoint goes on (on a loaded machine a scrape can miss its 0.4 s deadline: wait that out)
            await until(pilot, lambda: rows(app)[endpoint][UP] == "● up", what="the endpoint still up")
            assert rows(app)[file_name][UP] == "✗ DOWN"
            await pilot.press("q")
    finally:
        server.close()
