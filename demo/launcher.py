"""``ptmon demo``: start the synthetic run as real processes and watch it.

The launcher owns every child: it starts them in their own session (so a
terminal's Ctrl-C reaches only the launcher, which then stops them in
order), reads the port each one chose from its first stdout line, restarts
the ``crash`` scenario's worker on the same port after its down time, and
in a ``finally`` terminates, then kills, then reaps every child. Each child
also stops by itself when the launcher disappears (see ``ptmon.demo.proc``), so
even a ``kill -9`` of the launcher leaves no orphan.

Headless mode imports neither Textual nor the monitor: it only serves the
exporters and prints their URLs and a Prometheus scrape config. With
``--sd-file`` it also keeps the targets in a Prometheus file_sd JSON file
(rewritten atomically whenever a port changes), so ``ptmon assets``'s
``prometheus.yml`` scrapes the demo with ``targets/`` pointing at it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ptmon.demo.pipe import PipeClosed, PipeTimeout, read_until
from ptmon.demo.proc import CRASH_EXIT_CODE, HOST, child_argv
from ptmon.demo.rollout import worker_name
from ptmon.demo.scenarios import DEFAULT_SCENARIO, Scenario, get_scenario
from ptmon.exporters import schema

__all__ = [
    "DEFAULT_SPEED",
    "DemoOptions",
    "Endpoint",
    "Fleet",
    "FleetError",
    "prometheus_config",
    "ptmon_config",
    "file_sd_groups",
    "write_sd_file",
    "demo_settings",
    "DEMO_WINDOW_S",
    "run_demo",
]

# 40x: a 20 s training step takes half a real second, an eval lands every ~5 s, the
# marginal intelligence per dollar has its 5 evals after ~25 s, and a minute of demo
# covers 40 simulated minutes (about $35 of a 17-GPU fleet).
DEFAULT_SPEED = 40.0
MAX_SPEED = 1000.0
READY_TIMEOUT_S = 30.0  # a loaded 2-core machine can take seconds to start a handful of Pythons
STOP_GRACE_S = 3.0
# The TUI's shortest window: at 40x a minute of screen is 40 simulated minutes, so rates and
# quantiles follow the scenario instead of averaging over everything since the start.
DEMO_WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class DemoOptions:
    scenario: str = DEFAULT_SCENARIO
    speed: float = DEFAULT_SPEED
    workers: int = 4
    duration_s: float | None = None
    seed: int = 0
    headless: bool = False
    interval_s: float | None = None
    sd_file: str | None = None  # keep the targets in this Prometheus file_sd JSON file
    # The trainer on this port, the workers on the next ones, the eval job after them (None: any free ports),
    # so a saved prometheus.yml or ptmon.toml keeps working from one run to the next.
    port_base: int | None = None

    def __post_init__(self) -> None:
        get_scenario(self.scenario)
        if not 0 < self.speed <= MAX_SPEED:
            raise ValueError(f"--speed must be above 0 and at most {MAX_SPEED:g} (faster, the processes "
                             f"would only spin), got {self.speed:g}")
        if not 1 <= self.workers <= 64:
            raise ValueError(f"--workers must be between 1 and 64, got {self.workers}")
        if self.port_base is not None and not 1 <= self.port_base <= 65535 - (self.workers + 1):
            raise ValueError(f"--port-base must leave room for {self.workers + 2} ports (1 to "
                             f"{65535 - (self.workers + 1)} with {self.workers} workers), got {self.port_base}")
        if self.sd_file is not None and not Path(self.sd_file).resolve().parent.is_dir():
            raise ValueError(f"--sd-file {self.sd_file}: its directory does not exist")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> DemoOptions:
        speed = getattr(args, "speed", None)
        return cls(scenario=getattr(args, "scenario", None) or DEFAULT_SCENARIO,
                   speed=DEFAULT_SPEED if speed is None else float(speed),
                   workers=getattr(args, "workers", 4), duration_s=getattr(args, "duration", None),
                   seed=getattr(args, "seed", 0), headless=bool(getattr(args, "headless", False)),
                   interval_s=getattr(args, "interval", None), sd_file=getattr(args, "sd_file", None),
                   port_base=getattr(args, "port_base", None))

    @property
    def scenario_spec(self) -> Scenario:
        return get_scenario(self.scenario)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One scrape target of the demo."""

    name: str  # trainer, rollout-0 .. rollout-N, eval
    role: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/metrics"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


class FleetError(RuntimeError):
    """A child failed to start; the message carries the tail of its log."""


@dataclass(slots=True)
class _Child:
    name: str
    role: str
    index: int
    popen: subprocess.Popen[bytes]
    port: int = 0
    life: int = 0
    restart_at: float | None = None  # monotonic time the crashed child comes back
    gone: bool = False  # exited for good (reported once)
    past_pids: list[int] = field(default_factory=list)


def _read_announcement(popen: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
    """The child's first stdout line (a JSON object with its port), or FleetError on exit/timeout."""
    import json

    assert popen.stdout is not None
    try:
        buf = read_until(popen.stdout.fileno(), b"\n", deadline=deadline)
    except PipeTimeout:
        raise FleetError("timed out waiting for it to report its port") from None
    except PipeClosed:
        raise FleetError(f"exited with status {popen.wait()} before reporting its port") from None
    popen.stdout.close()
    try:
        data: dict[str, Any] = json.loads(buf.split(b"\n", 1)[0])  # int(data["port"]): a dict, or TypeError
        int(data["port"])
    except (ValueError, KeyError, TypeError) as exc:
        raise FleetError(f"reported something that is not a port: {buf[:200]!r}") from exc
    return data


class Fleet:
    """The demo's processes: start, supervise (crash restarts), stop. A context manager."""

    def __init__(self, opts: DemoOptions, *, run_dir: Path | None = None,
                 on_event: Callable[[str], None] | None = None,
                 on_endpoints: Callable[[tuple[Endpoint, ...]], None] | None = None) -> None:
        self.opts = opts
        self._own_dir = run_dir is None
        self.run_dir = Path(tempfile.mkdtemp(prefix="ptmon-demo-")) if run_dir is None else run_dir
        self._on_event = on_event or (lambda message: None)
        # Called with every endpoint once all have reported their ports, again when a restart moves one,
        # and with none once stopped (however the run ends), so a file_sd file never outlives the targets.
        self._on_endpoints = on_endpoints or (lambda endpoints: None)
        self._children: list[_Child] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._stop_lock = threading.Lock()
        self._started_endpoints = False  # on_endpoints was told of targets: tell it of none at the stop
        self.events: list[str] = []

    # -- lifecycle ----------------------------------------------------------------------------------------------

    def __enter__(self) -> Fleet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, *, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start every child, wait until each reports its port, then supervise."""
        plan = [("trainer", "trainer", 0)]
        plan += [(worker_name(i), "rollout", i) for i in range(self.opts.workers)]
        plan.append(("eval", "eval", 0))
        ports = [0] * len(plan) if self.opts.port_base is None else _free_ports(self.opts.port_base, plan)
        with self._lock:
            for (name, role, index), port in zip(plan, ports, strict=True):
                self._children.append(_Child(name, role, index, self._spawn(name, role, index, port=port)))
        deadline = time.monotonic() + ready_timeout_s
        for child in self._children:
            try:
                child.port = int(_read_announcement(child.popen, deadline)["port"])
            except FleetError as exc:
                raise FleetError(f"{child.name}: {exc}{self._log_tail(child.name)}") from None
        self._started_endpoints = True
        self._on_endpoints(self.endpoints)
        self._supervisor = threading.Thread(target=self._supervise, name="demo-supervisor", daemon=True)
        self._supervisor.start()

    def stop(self, *, grace_s: float = STOP_GRACE_S) -> None:
        """Terminate, then kill, then reap every child; idempotent, safe from any state and thread."""
        with self._stop_lock:
            self._stop(grace_s)

    def _stop(self, grace_s: float) -> None:
        self._stopping.set()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(timeout=2.0)
        with self._lock:
            popens = [c.popen for c in self._children]
        for p in popens:
            if p.poll() is None:
                try:
                    p.terminate()
                except OSError:
                    pass
        deadline = time.monotonic() + grace_s
        for p in popens:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in popens:
            if p.poll() is None:
                try:
                    p.kill()
                except OSError:
                    pass
                p.wait()
            if p.stdout is not None and not p.stdout.closed:
                p.stdout.close()
        if self._started_endpoints:
            self._started_endpoints = False
            self._on_endpoints(())
        if self._own_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    # -- what the launcher and the tests read ------------------------------------------------------------------

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        with self._lock:
            return tuple(Endpoint(c.name, c.role, c.port) for c in self._children)

    def pids(self) -> list[int]:
        """Pids of every child ever started (restarted workers included)."""
        with self._lock:
            return [pid for c in self._children for pid in (*c.past_pids, c.popen.pid)]

    def live_pids(self) -> list[int]:
        with self._lock:
            return [c.popen.pid for c in self._children if c.popen.poll() is None]

    # -- internals ----------------------------------------------------------------------------------------------

    def _spawn(self, name: str, role: str, index: int, *, port: int = 0, life: int = 0) -> subprocess.Popen[bytes]:
        argv = child_argv(role, run_dir=self.run_dir, scenario=self.opts.scenario, speed=self.opts.speed,
                          seed=self.opts.seed, workers=self.opts.workers, index=index, port=port, life=life)
        with open(self.run_dir / f"{name}.log", "ab") as log:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                    cwd=self.run_dir, start_new_session=True, close_fds=True)

    def _log_tail(self, name: str, lines: int = 8) -> str:
        try:
            text = (self.run_dir / f"{name}.log").read_text(errors="replace").strip().splitlines()[-lines:]
        except OSError:
            return ""
        return ("\n  " + "\n  ".join(text)) if text else ""

    def _event(self, message: str) -> None:
        self.events.append(message)
        self._on_event(message)

    def _supervise(self) -> None:
        down_s = self.opts.scenario_spec.crash_down_s / self.opts.speed
        while not self._stopping.wait(0.1):
            for child in list(self._children):
                if child.gone:
                    continue
                if child.restart_at is None:
                    rc = child.popen.poll()
                    if rc is None:
                        continue
                    if rc == CRASH_EXIT_CODE:
                        child.restart_at = time.monotonic() + down_s
                        self._event(f"{child.name} crashed (simulated); restarting on port {child.port} "
                                    f"in {down_s:.1f} s")
                    else:
                        child.gone = True
                        self._event(f"{child.name} exited with status {rc}{self._log_tail(child.name, 3)}")
                elif time.monotonic() >= child.restart_at:
                    self._restart(child)

    def _restart(self, child: _Child) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            child.past_pids.append(child.popen.pid)
            if child.popen.stdout is not None and not child.popen.stdout.closed:
                child.popen.stdout.close()
            child.life += 1
            child.popen = self._spawn(child.name, child.role, child.index, port=child.port, life=child.life)
            child.restart_at = None
        try:
            port = int(_read_announcement(child.popen, time.monotonic() + READY_TIMEOUT_S)["port"])
            moved = port != child.port
            if moved:  # it asks for its old port, but a child that got another one is still at that one
                with self._lock:
                    child.port = port
            self._event(f"{child.name} restarted on port {child.port}")
            if moved:
                self._on_endpoints(self.endpoints)
        except FleetError as exc:
            child.gone = True
            self._event(f"{child.name} failed to restart: {exc}{self._log_tail(child.name, 3)}")


def _free_ports(base: int, plan: Sequence[tuple[str, str, int]]) -> list[int]:
    """``base``, ``base + 1``, ... for the plan's processes, each checked free now (FleetError naming the
    first that is not: the child would otherwise retry it for seconds, then fail with a bind error)."""
    import socket

    ports = [base + i for i in range(len(plan))]
    for (name, _, _), port in zip(plan, ports, strict=True):
        with socket.socket() as s:
            try:
                s.bind((HOST, port))
            except OSError as exc:
                raise FleetError(f"--port-base {base}: port {port} (for {name}) is not free on {HOST} "
                                 f"({exc.strerror or exc}); choose another base") from None
    return ports


def ptmon_config(endpoints: Sequence[Endpoint], *, interval_s: float = 1.0, window_s: float = DEMO_WINDOW_S) -> str:
    """A ready ``ptmon.toml`` for the demo: each target named and typed by its role, the demo's window.

    ``ptmon watch`` in a directory holding it (or ``-c`` it) shows what ``ptmon demo`` shows.
    """
    lines = [f"interval = {_toml_duration(interval_s)}", f"window = {_toml_duration(window_s)}"]
    for e in endpoints:
        lines += ["", "[[targets]]", f'name = "{e.name}"', f'url = "{e.url}"', f'role = "{e.role}"']
    return "\n".join(lines) + "\n"


def _toml_duration(seconds: float) -> str:
    ms = max(1, round(seconds * 1000))
    return f'"{ms // 1000}s"' if ms % 1000 == 0 else f'"{ms}ms"'


def prometheus_config(endpoints: Sequence[Endpoint], *, interval_s: float = 1.0) -> str:
    """A ready ``prometheus.yml`` scraping the demo: one job per role, one target per process.

    Target labels deliberately avoid ``role``/``run`` (the metrics carry those;
    a clash would make Prometheus rename them ``exported_*``).
    """
    ms = max(1, round(interval_s * 1000))
    interval = f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"
    lines = ["global:", f"  scrape_interval: {interval}", f"  scrape_timeout: {interval}", "scrape_configs:"]
    for role in ("trainer", "rollout", "eval"):
        members = [e for e in endpoints if e.role == role]
        if not members:
            continue
        lines += [f"  - job_name: {schema.DEMO_JOB_PREFIX}{role}", "    static_configs:"]
        for e in members:
            label = f"{{{schema.TARGET_NAME_LABEL}: '{e.name}'}}"
            lines += [f"      - targets: ['{e.address}']", f"        labels: {label}"]
    return "\n".join(lines) + "\n"


def file_sd_groups(endpoints: Sequence[Endpoint]) -> list[dict[str, Any]]:
    """Prometheus file_sd target groups for the demo: the jobs and names ``prometheus_config`` gives them.

    ``job`` as a target label overrides the scrape config's job name, so one
    file gives the per-role jobs; no ``role``/``run`` target label (the
    metrics carry those, see ``prometheus_config``).
    """
    return [{"targets": [e.address],
             "labels": {schema.LABEL_JOB: f"{schema.DEMO_JOB_PREFIX}{e.role}", schema.TARGET_NAME_LABEL: e.name}}
            for e in endpoints]


def write_sd_file(path: str | os.PathLike[str], endpoints: Sequence[Endpoint]) -> None:
    """Write ``file_sd_groups`` to ``path`` atomically: Prometheus watches the file and must never read half."""
    import json

    from ptmon.monitor.atomic import write_atomically

    write_atomically(path, json.dumps(file_sd_groups(endpoints), indent=2) + "\n")


def _sd_writer(opts: DemoOptions) -> Callable[[tuple[Endpoint, ...]], None] | None:
    """The Fleet's ``on_endpoints`` for ``--sd-file``: rewrite the file; a failure is reported, not fatal."""
    if opts.sd_file is None:
        return None
    path = opts.sd_file

    def write(endpoints: tuple[Endpoint, ...]) -> None:
        try:
            write_sd_file(path, endpoints)
        except OSError as exc:
            print(f"ptmon demo: cannot write --sd-file {path}: {exc.strerror or exc}", file=sys.stderr, flush=True)

    return write


class _Shutdown(Exception):
    """SIGTERM/SIGHUP in headless mode: unwind to the ``finally`` that stops the children."""


@contextmanager
def _signals(handler: Callable[[int, Any], None], signums: Sequence[int]) -> Iterator[None]:
    old = {s: signal.getsignal(s) for s in signums}
    try:
        for s in signums:
            signal.signal(s, handler)
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _print_headless(fleet: Fleet, opts: DemoOptions, out: TextIO) -> None:
    sc = opts.scenario_spec
    out.write(f"ptmon demo: scenario {sc.name} at {opts.speed:g}x, {opts.workers} rollout workers\n")
    out.write(f"  {sc.summary}\n  look for: {sc.look_for}\n\n")
    for e in fleet.endpoints:
        out.write(f"{e.name:<12} {e.url}\n")
    out.write(f"\nwatch it:  ptmon watch {' '.join(f'{e.name}={e.address}' for e in fleet.endpoints)}\n")
    out.write("  or save the ptmon.toml below and run `ptmon watch` in its directory\n")
    out.write("\n# ptmon.toml\n")
    out.write(ptmon_config(fleet.endpoints, interval_s=opts.interval_s or 1.0))
    out.write("\n# prometheus.yml\n")
    out.write(prometheus_config(fleet.endpoints, interval_s=opts.interval_s or 1.0))
    if opts.sd_file is not None:
        out.write(f"\n# file_sd targets: {opts.sd_file}\n")
    out.write("\nrunning; Ctrl-C stops every process\n")
    out.flush()


def _run_headless(opts: DemoOptions, out: TextIO) -> int:
    stopping = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if not stopping.is_set():  # a second signal must not interrupt the stopping itself
            stopping.set()
            raise _Shutdown(signal.Signals(signum).name)

    with _signals(on_signal, (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)):
        fleet = Fleet(opts, on_event=lambda m: print(f"ptmon demo: {m}", file=sys.stderr, flush=True),
                      on_endpoints=_sd_writer(opts))
        try:
            fleet.start()
            _print_headless(fleet, opts, out)
            end = None if opts.duration_s is None else time.monotonic() + opts.duration_s
            while end is None or time.monotonic() < end:
                time.sleep(0.2 if end is None else max(0.0, min(0.2, end - time.monotonic())))
        except (KeyboardInterrupt, _Shutdown):
            pass
        except FleetError as exc:
            print(f"ptmon demo: {exc}", file=sys.stderr)
            return 1
        finally:
            stopping.set()
            fleet.stop()
    return 0


def demo_settings(endpoints: Sequence[Endpoint], *, interval_s: float | None = None,
                  window_s: float = DEMO_WINDOW_S) -> Any:
    """The monitor's Settings for the demo's endpoints, each target named and typed by its role."""
    from dataclasses import replace

    from ptmon.monitor.config import load_settings

    settings = load_settings(urls=[e.url for e in endpoints], interval_s=interval_s, window_s=window_s)
    targets = tuple(replace(t, name=e.name, role=e.role) for t, e in zip(settings.targets, endpoints, strict=True))
    return replace(settings, targets=targets)


def _title(opts: DemoOptions) -> str:
    return f"ptmon demo · {opts.scenario} · {opts.speed:g}x time"


def _exit_app(app: Any, fleet: Fleet, main_done: threading.Event) -> None:
    """Ask the app to exit from outside its loop; if it has not within a few seconds, end the process.

    ``call_from_thread`` runs in its own thread because it blocks until the
    app's loop runs the call, and a wedged loop must not wedge the fallback:
    the children are stopped and the process exits either way.
    """
    def ask() -> None:
        try:
            app.call_from_thread(app.exit)
        except Exception:  # noqa: BLE001 - not running (yet, or any more): the finally handles it
            pass

    threading.Thread(target=ask, name="demo-exit-ask", daemon=True).start()
    if not main_done.wait(STOP_GRACE_S + 2.0):
        fleet.stop()
        os._exit(1)


def _hang_up(fleet: Fleet) -> None:
    """The terminal is gone: there is no screen to restore, so stop the children and leave at once.

    A graceful Textual shutdown writes to the dead terminal and can block
    forever (seen with ``tmux kill-session``), which would leave the
    launcher behind; the default SIGHUP action (exit) is what ``ptmon watch``
    does, plus stopping the children.
    """
    fleet.stop()
    os._exit(128 + signal.SIGHUP)


def _run_tui(opts: DemoOptions) -> int:
    try:
        from ptmon.monitor.app import PtmonApp
        from ptmon.monitor.live import LiveFeed
    except ImportError as exc:
        print(f"ptmon demo: the TUI is not available ({exc}); try --headless", file=sys.stderr)
        return 2
    from ptmon.monitor.terminal import not_a_terminal

    refusal = not_a_terminal("demo", "run `ptmon demo --headless` to serve the exporters without the screen")
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    fleet = Fleet(opts, on_endpoints=_sd_writer(opts))
    requested = threading.Event()
    main_done = threading.Event()
    apps: list[Any] = []

    def request_exit() -> None:
        threading.Thread(target=_exit_app, args=(apps[0], fleet, main_done), name="demo-exit", daemon=True).start()

    def on_signal(signum: int, frame: Any) -> None:
        if apps and signum == signal.SIGHUP:
            threading.Thread(target=_hang_up, args=(fleet,), name="demo-hangup", daemon=True).start()
            return
        if requested.is_set():
            return
        requested.set()
        if not apps:  # still starting: unwind straight to the finally
            raise _Shutdown(signal.Signals(signum).name)
        request_exit()  # the app's loop runs on this thread: exit it from another one

    timer: threading.Timer | None = None
    with _signals(on_signal, (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)):
        try:
            print(f"ptmon demo: starting {opts.workers + 2} processes ({opts.scenario}, {opts.speed:g}x)...",
                  file=sys.stderr, flush=True)
            fleet.start()
            settings = demo_settings(fleet.endpoints, interval_s=opts.interval_s)
            app = PtmonApp(LiveFeed(settings, settle_heap=True), interval_s=settings.interval_s,
                           window_s=settings.window_s,
                           thresholds=settings.thresholds, timeout_s=settings.timeout_s, title=_title(opts),
                           time_scale=opts.speed)
            apps.append(app)
            if requested.is_set():
                return 0
            if opts.duration_s is not None:
                timer = threading.Timer(opts.duration_s, request_exit)
                timer.daemon = True
                timer.start()
            app.run()
            return app.return_code or 0
        except (KeyboardInterrupt, _Shutdown):
            return 0
        except FleetError as exc:
            print(f"ptmon demo: {exc}", file=sys.stderr)
            return 1
        finally:
            requested.set()
            if timer is not None:
                timer.cancel()
            fleet.stop()
            main_done.set()


def run_demo(args: argparse.Namespace) -> int:
    """Entry point of ``ptmon demo`` (see monitor.cli)."""
    try:
        opts = DemoOptions.from_args(args)
    except ValueError as exc:
        print(f"ptmon demo: {exc}", file=sys.stderr)
        return 2
    if opts.headless:
        return _run_headless(opts, sys.stdout)
    return _run_tui(opts)
