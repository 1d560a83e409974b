"""The suite's one loopback fleet: a trainer and rollout workers, real exporters served over HTTP.

Each worker's rollout counter follows ``rate_per_worker * elapsed``, set from
the wall clock every 10 ms, so scheduling delays on a loaded machine never
accumulate (at any instant a counter is within a count or two of the line).
``tick`` (optional) runs on the same thread each 10 ms with the seconds
elapsed: a test that wants the trainer stepping or syncing does it there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import MetricsServer, serve
from ptmon.exporters.trainer import TrainerExporter

__all__ = ["Fleet", "loopback_fleet"]


@dataclass
class Fleet:
    trainer: TrainerExporter
    workers: list[RolloutExporter]
    servers: list[MetricsServer]  # the trainer's first, then each worker's

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def jobs(self) -> dict[str, list[str]]:
        return {"trainer": [self.servers[0].url], "rollout": [s.url for s in self.servers[1:]]}

    def sync(self, version: int, *, seconds: float) -> None:
        with self.trainer.weight_sync(version=version, nbytes=1e9):
            time.sleep(seconds)


@contextmanager
def loopback_fleet(*, run: str, rate_per_worker: float, workers: int = 2, reward: float = 1.0,
                   tick: Callable[[Fleet, float], None] | None = None) -> Iterator[Fleet]:
    ident: dict[str, Any] = dict(run=run, model="qwen-7b", algorithm="grpo")
    trainer = TrainerExporter(gpus=8, gpu_hour_price=3.0, **ident)
    pool = [RolloutExporter(gpus=4, gpu_hour_price=2.0, **ident) for _ in range(workers)]
    trainer.publish_policy(0)
    for w in pool:
        w.set_policy_version(0)
    fleet = Fleet(trainer, pool, [serve(trainer.registry), *(serve(w.registry) for w in pool)])
    stop = threading.Event()

    def drive() -> None:
        t0, done = time.monotonic(), [0] * len(pool)
        while not stop.wait(0.01):
            now = time.monotonic() - t0
            due = int(rate_per_worker * now)
            for i, w in enumerate(pool):
                for _ in range(due - done[i]):
                    w.record_rollout(env="math", tokens=100, reward=reward, seconds=0.5)
                done[i] = due
            if tick is not None:
                tick(fleet, now)

    thread = threading.Thread(target=drive, name="loopback-fleet", daemon=True)
    thread.start()
    try:
        yield fleet
    finally:
        stop.set()
        thread.join(timeout=5)
        for s in fleet.servers:
            try:
                s.close()
            except Exception:  # noqa: BLE001 - the test closed it already
                pass
