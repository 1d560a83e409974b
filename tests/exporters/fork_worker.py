"""Fork while threads record: ``python -m tests.exporters.fork_worker FORKS [--multiprocess DIR]``.

A training process whose threads are busy in the exporters forks FORKS
children, one after another (as a rollout worker forks code sandboxes). Each
child records through every exporter, collects the registry and closes the
inherited server, then exits 0; the parent gives each child a deadline and
prints one JSON line: how many completed, failed, or hung (killed; the first
hang ends the run).
Run in its own process: with ``--multiprocess`` PROMETHEUS_MULTIPROC_DIR must
be set before prometheus_client is imported.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported for real inside main(), after PROMETHEUS_MULTIPROC_DIR is set
    from prometheus_client import CollectorRegistry

    from ptmon.exporters import EvalExporter, MetricsServer, RolloutExporter, TrainerExporter

__all__ = ["main"]


def main(forks: int, *, deadline_s: float = 10.0) -> dict[str, int]:
    from prometheus_client import CollectorRegistry, generate_latest

    from ptmon.exporters import EvalExporter, RolloutExporter, TrainerExporter, serve

    registry = CollectorRegistry()
    rollout = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=2, gpu_hour_price=3.0, registry=registry)
    trainer = TrainerExporter(run="r", model="m", algorithm="grpo", gpus=4, gpu_hour_price=3.0, registry=registry)
    evals = EvalExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=3.0, registry=registry)
    server = serve(registry)
    stop = threading.Event()

    def busy(work: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            if work == 0:
                rollout.set_gpus(n % 5)
            elif work == 1:
                rollout.record_rollout(env=f"env{n % 50}", tokens=10, reward=0.5, seconds=1.0, policy_version=n)
            else:
                trainer.set_gpus(n % 3)
                trainer.record(tokens_total=n, loss=0.1)  # a running total: the Cumulative's lock
                trainer.record_dropped(reason="stale")
                generate_latest(registry)  # a scrape: the registry's and every collector's locks

    threads = [threading.Thread(target=busy, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    outcome = {"completed": 0, "hung": 0, "failed": 0}
    try:
        for _ in range(forks):
            time.sleep(0.01)
            pid = os.fork()
            if pid == 0:
                _child(rollout, trainer, evals, server, registry)
            outcome[_wait(pid, deadline_s)] += 1
            if outcome["hung"]:
                break  # one is enough to fail; the rest would each wait out the deadline
    finally:
        stop.set()
        for t in threads:
            t.join()
        server.close()
    return outcome


def _child(rollout: RolloutExporter, trainer: TrainerExporter, evals: EvalExporter, server: MetricsServer,
           registry: CollectorRegistry) -> None:
    """In the forked child: every call must return; exit 0 only if the child's own records show."""
    code = 1
    try:
        from prometheus_client import generate_latest

        rollout.set_gpus(1)
        rollout.record_rollout(env="child", tokens=7, reward=1.0, seconds=0.5)
        with trainer.step():
            trainer.record(tokens_total=10**9, loss=0.5)
        trainer.record_dropped(reason="stale")
        evals.record_eval(benchmark="b", score=0.5)
        text = generate_latest(registry).decode()
        server.close()
        code = 0 if 'posttrain_rollout_tokens_total{env="child"} 7.0' in text else 2
    finally:
        os._exit(code)


def _wait(pid: int, deadline_s: float) -> str:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "completed" if os.waitstatus_to_exitcode(status) == 0 else "failed"
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung"


if __name__ == "__main__":
    if "--multiprocess" in sys.argv:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = sys.argv[sys.argv.index("--multiprocess") + 1]
    print(json.dumps(main(int(sys.argv[1]))))
