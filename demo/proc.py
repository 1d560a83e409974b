"""What every demo process shares: its options, compressed clock, stop signal and run directory.

Each role (trainer, rollout worker, eval job) is its own OS process started
by the launcher as ``python -m ptmon.demo ROLE ...``. The processes never talk to
each other over sockets: the trainer writes its step and published policy
version to a small JSON file in the run directory, which the workers and
the eval job poll. A file survives any process crashing, needs no ports and
cannot deadlock, which is all a demo's coordination needs.

A child stops on SIGTERM/SIGINT, and also on its own when the launcher
disappears (its parent pid changes), so a ``kill -9`` of the launcher
leaves no orphan behind.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptmon.demo.model import RunSpec
from ptmon.demo.scenarios import SCENARIO_NAMES, Scenario, get_scenario

__all__ = [
    "ROLES",
    "CRASH_EXIT_CODE",
    "HOST",
    "STATE_FILE",
    "SimClock",
    "TrainerState",
    "ChildOptions",
    "Runtime",
    "parse_child_args",
    "child_argv",
    "write_state",
    "read_state",
    "serve_and_announce",
    "main",
]

ROLES = ("trainer", "rollout", "eval")
CRASH_EXIT_CODE = 86  # a simulated crash: the launcher restarts the worker on the same port
HOST = "127.0.0.1"
STATE_FILE = "trainer.json"
_TICK_REAL_S = 0.1  # longest real sleep between checks of the stop flag, the parent and the run dir
_BIND_RETRY_S = 10.0


class SimClock:
    """A monotonic clock that runs ``speed`` times faster than real time.

    Handed to the exporters as their ``clock``, so GPU-seconds (hence spend),
    step times and sync times all advance in simulated time, consistently.
    Wall-clock timestamps stay real: the monitor compares them with its own
    real clock (seconds since the last step).
    """

    __slots__ = ("speed", "_base", "_origin")

    def __init__(self, speed: float, *, base: Callable[[], float] = time.monotonic) -> None:
        if not speed > 0:
            raise ValueError(f"speed must be positive, got {speed!r}")
        self.speed = float(speed)
        self._base = base
        self._origin = base()

    def __call__(self) -> float:
        return self._origin + (self._base() - self._origin) * self.speed

    def elapsed(self) -> float:
        """Simulated seconds since this process started."""
        return (self._base() - self._origin) * self.speed


@dataclass(frozen=True, slots=True)
class TrainerState:
    step: int
    version: int


@dataclass(frozen=True, slots=True)
class ChildOptions:
    role: str
    run_dir: Path
    scenario: Scenario
    spec: RunSpec
    speed: float
    seed: int
    index: int
    port: int
    life: int  # how many times this worker has been restarted


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ptmon.demo", description="one process of ptmon's demo run")
    p.add_argument("role", choices=ROLES)
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--scenario", default="healthy", choices=SCENARIO_NAMES)
    p.add_argument("--speed", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--life", type=int, default=0)
    return p


def parse_child_args(argv: Sequence[str]) -> ChildOptions:
    ns = _parser().parse_args(list(argv))
    if not ns.speed > 0:
        raise SystemExit(f"--speed must be positive, got {ns.speed}")
    scenario = get_scenario(ns.scenario)
    spec = RunSpec(run=f"demo-{scenario.name}", workers=max(1, ns.workers))
    return ChildOptions(role=ns.role, run_dir=ns.run_dir, scenario=scenario, spec=spec, speed=ns.speed,
                        seed=ns.seed, index=ns.index, port=ns.port, life=ns.life)


def child_argv(role: str, *, run_dir: Path, scenario: str, speed: float, seed: int, workers: int,
               index: int = 0, port: int = 0, life: int = 0) -> list[str]:
    """The command line the launcher runs for one child (the inverse of ``parse_child_args``)."""
    return [sys.executable, "-P", "-m", "ptmon.demo", role, "--run-dir", str(run_dir), "--scenario", scenario,
            "--speed", repr(float(speed)), "--seed", str(seed), "--workers", str(workers),
            "--index", str(index), "--port", str(port), "--life", str(life)]


def write_state(run_dir: Path, state: TrainerState) -> None:
    """Atomically replace the trainer's state file (readers never see half a file)."""
    path = run_dir / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"step": state.step, "version": state.version}))
    os.replace(tmp, path)


def read_state(run_dir: Path) -> TrainerState | None:
    """The trainer's last published state, or None before it wrote one (or if it is unreadable)."""
    try:
        data = json.loads((run_dir / STATE_FILE).read_text())
        return TrainerState(step=int(data["step"]), version=int(data["version"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Runtime:
    """Stop flag, simulated clock and real-time sleeping for one child process."""

    def __init__(self, speed: float, *, parent_pid: int | None = None) -> None:
        self.clock = SimClock(speed)
        self.stop = threading.Event()
        self._parent = os.getppid() if parent_pid is None else parent_pid

    @property
    def stopping(self) -> bool:
        return self.stop.is_set()

    def sleep(self, sim_seconds: float) -> bool:
        """Sleep ``sim_seconds`` of simulated time; False as soon as the process is told to stop."""
        deadline = time.monotonic() + max(0.0, sim_seconds) / self.clock.speed
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return not self.stop.is_set()
            if self.stop.wait(min(left, _TICK_REAL_S)):
                return False

    def install(self) -> None:
        """Stop on SIGTERM/SIGINT, and when orphaned (the launcher died without stopping us)."""
        def on_signal(signum: int, frame: Any) -> None:
            self.stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        threading.Thread(target=self._watch_parent, name="parent-watch", daemon=True).start()

    def _watch_parent(self) -> None:
        while not self.stop.wait(0.2):
            if os.getppid() != self._parent:
                print("demo: launcher gone, stopping", file=sys.stderr, flush=True)
                self.stop.set()
                time.sleep(2.0)  # the main loop had its chance to stop cleanly
                os._exit(0)


def serve_and_announce(registry: Any, opts: ChildOptions, name: str) -> Any:
    """Serve ``registry`` on ``opts.port`` (0: any free port) and tell the launcher where, on stdout.

    A restarted worker asks for its old port; right after a crash the port
    can still be held for a moment, so binding is retried for a few seconds.
    """
    from ptmon.exporters import serve

    deadline = time.monotonic() + _BIND_RETRY_S
    while True:
        try:
            server = serve(registry, port=opts.port, host=HOST)
            break
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or opts.port == 0 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    line = json.dumps({"name": name, "role": opts.role, "index": opts.index, "port": server.port,
                       "url": server.url, "pid": os.getpid(), "life": opts.life})
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return server


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_child_args(sys.argv[1:] if argv is None else argv)
    runtime = Runtime(opts.speed)
    runtime.install()
    if opts.role == "trainer":
        from ptmon.demo.trainer import run_trainer as run
    elif opts.role == "rollout":
        from ptmon.demo.rollout import run_rollout as run
    else:
        from ptmon.demo.evals import run_eval as run
    try:
        return run(opts, runtime)
    except KeyboardInterrupt:
        return 0
