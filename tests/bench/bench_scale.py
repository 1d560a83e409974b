"""ptmon's direct scraping against a real Prometheus and VictoriaMetrics on the same targets: CPU, RSS, misses.

Run: ``/work/venv/bin/python -m tests.bench.bench_scale [--targets 8,64,128,256] [--seconds 60] [--warmup 10]
[--reps 3] [--systems ptmon,prometheus,vm] [--rev REV] [--profile] [--minutes M [--together]] [--json]``

One process (this one, tests/bench/scale_targets.py) serves N synthetic
rollout workers of ~1,000 samples each, counters moving every second, and a
trainer. Then, one system at a time and interleaved (ptmon, Prometheus, VM,
ptmon, ... per size and repetition, so drifting load hits all alike), each
scrapes every target at 1 s:

- ``ptmon``: its data layer as its own process (tests/bench/scale_child.py:
  a ``LiveFeed`` and one Dashboard a second, as the TUI asks, no UI);
- ``ptmon@REV`` (``--rev``): the same child on that commit's code, the before beside the after;
- ``prometheus``: Debian's /usr/bin/prometheus, TSDB in a temporary directory;
- ``vm``: Debian's /usr/bin/victoria-metrics (``-promscrape.config``), where installed.

After ``--warmup`` seconds (caches and buffers filling) it measures
``--seconds``: CPU as utime+stime from /proc/PID/stat of that system's
process and its descendants only (not this process, not the targets), per
million samples scraped and as % of one core; RSS (VmRSS of the same
processes) at the end and the most seen; scrapes made against expected,
as the targets counted them (a miss is a scrape expected and never made);
and the 1-minute load average, since the machine is shared and a figure
means little without it. The ratio column is ptmon's CPU per sample over
Prometheus's in the same repetition; "targets %" is this process's CPU
(what serving the targets adds to the machine); "build ms" how long each
of ptmon's ``dashboard()`` calls held its event loop, mean and most.

``--profile``: py-spy (``py-spy record --nonblocking --subprocesses``,
beside this interpreter or on PATH; else cProfile on CPU time inside the
child) samples the ptmon child (and any worker process it starts) over the
measured interval; its top 25 functions by own time are printed.
``--minutes M``: a memory run instead, each system for M minutes at each
size, RSS and CPU per sample every minute. ``--together``: every system at
once for those M minutes on the same targets (an hour side by side in an
hour), each counting only its own scrapes (its URLs end ``?by=NAME``); their
CPU figures then include their contention with each other.

Every process started here runs under ``setpriv --pdeathsig KILL`` in its own
session, and is stopped (SIGTERM, then SIGKILL) in a ``finally``: Ctrl-C, an
error or a SIGTERM leaves no Prometheus, VictoriaMetrics or child behind, and
the temporary directories are removed.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType

import httpx

from tests.bench.scale_targets import TargetServer

__all__ = ["Run", "main"]

ROOT = Path(__file__).resolve().parents[2]
BINARIES = {"prometheus": "/usr/bin/prometheus", "vm": "/usr/bin/victoria-metrics"}
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Run:
    """One system's measured interval at one size."""

    system: str
    targets: int
    rep: int
    seconds: float
    cpu_s: float
    samples: int
    made: int
    expected: int
    rss_mb: float
    rss_max_mb: float
    load: tuple[float, float, float]
    server_pct: float = 0.0  # the targets' process (this one), % of a core: the load the targets add
    builds_ms: list[float] = field(default_factory=list)  # ptmon: each dashboard() over the interval, ms
    rss_by_minute: list[float] = field(default_factory=list)
    cpu_per_m_by_minute: list[float] = field(default_factory=list)
    profile: list[tuple[str, float, float]] = field(default_factory=list)  # (function, own %, total %)

    @property
    def cpu_per_m(self) -> float:
        return self.cpu_s / self.samples * 1e6 if self.samples else float("nan")

    @property
    def core_pct(self) -> float:
        return 100.0 * self.cpu_s / self.seconds

    @property
    def missed_pct(self) -> float:
        return max(0.0, 100.0 * (1 - self.made / self.expected)) if self.expected else 0.0


# --- /proc ---------------------------------------------------------------------------------------

def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # fields from 3 (state) on; the name may hold spaces


def tree(pid: int) -> list[int]:
    """``pid`` and every descendant alive now."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            children[int(fields[1])].append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    total = 0
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14 and 15)
    return total / TICK


def rss_mb(pids: Sequence[int]) -> float:
    kb = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kb += int(line.split()[1])
        except OSError:
            pass
    return kb / 1024


def load_average() -> tuple[float, float, float]:
    one, five, fifteen = Path("/proc/loadavg").read_text().split()[:3]
    return float(one), float(five), float(fifteen)


# --- the systems ---------------------------------------------------------------------------------

class System:
    """One system's process: started on the targets in a temporary directory, ready-checked, stopped."""

    def __init__(self, name: str, urls: Sequence[str], directory: Path, *, interval_s: float,
                 cprofile: bool, tag: str | None = None) -> None:
        self.name, self.urls, self.directory, self.interval_s = name, list(urls), directory, interval_s
        self.tag = tag  # --together: its requests end ?by=TAG, so the targets count its scrapes apart
        self.cprofile_path = directory / "child.prof" if cprofile and name.startswith("ptmon") else None
        self.log_path = directory / "log"
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.cprofile_top: list[tuple[str, float, float]] = []  # read at stop, before the directory goes
        self.builds_ms: list[float] = []  # the ptmon child's dashboard() times, printed at its exit

    def argv(self) -> list[str]:
        if self.name.startswith("ptmon"):
            rev = ["--rev", self.name.split("@", 1)[1]] if "@" in self.name else []
            prof = ["--cprofile", str(self.cprofile_path)] if self.cprofile_path else []
            urls = [f"{u}?by={self.tag}" for u in self.urls] if self.tag else self.urls
            return [sys.executable, "-m", "tests.bench.scale_child", *urls,
                    "--interval", str(self.interval_s), *rev, *prof]
        config = self.directory / "scrape.yml"  # JSON is YAML
        ms = f"{int(self.interval_s * 1000)}ms"
        job: dict[str, object] = {"job_name": "scale", "scrape_interval": ms, "scrape_timeout": ms,
               "static_configs": [{"targets": [u.split("/")[2] for u in self.urls]}]}
        if self.tag:
            job["params"] = {"by": [self.tag]}
        config.write_text(json.dumps({"global": {"scrape_interval": ms}, "scrape_configs": [job]}))
        if self.name == "prometheus":
            return [BINARIES["prometheus"], f"--config.file={config}", f"--storage.tsdb.path={self.directory / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"]
        return [BINARIES["vm"], f"-promscrape.config={config}", f"-storageDataPath={self.directory / 'data'}",
                f"-httpListenAddr=127.0.0.1:{self.port}", "-loggerLevel=WARN"]

    def start(self, *, timeout_s: float = 60.0) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", *self.argv()], cwd=ROOT,
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.process.returncode}:\n{self.log_tail()}")
            if self._ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready in {timeout_s:.0f} s:\n{self.log_tail()}")

    def _ready(self) -> bool:
        if self.name.startswith("ptmon"):
            return b"ready" in self.log_path.read_bytes()
        path = "/-/ready" if self.name == "prometheus" else "/health"
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s (the whole session: a worker process the child started too)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        _signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


def _builds_ms(log: Path) -> list[float]:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("builds ")]
    except OSError:
        return []
    return [1000 * float(x) for x in json.loads(lines[-1][len("builds "):])] if lines else []


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def running(name: str, urls: Sequence[str], *, interval_s: float, cprofile: bool,
            tag: str | None = None) -> Iterator[System]:
    directory = Path(tempfile.mkdtemp(prefix=f"ptmon-scale-{name.replace('@', '-')}-"))
    system = System(name, urls, directory, interval_s=interval_s, cprofile=cprofile, tag=tag)
    try:
        system.start()
        yield system
    finally:
        system.stop()
        if system.cprofile_path is not None and system.cprofile_path.exists():
            system.cprofile_top = top_of_cprofile(system.cprofile_path)
        system.builds_ms = _builds_ms(system.log_path)
        shutil.rmtree(directory, ignore_errors=True)


# --- profiles ------------------------------------------------------------------------------------

def py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def start_py_spy(pid: int, seconds: float, out: Path) -> subprocess.Popen[bytes] | None:
    binary = py_spy()
    if binary is None:
        return None
    return subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--", binary, "record", "--pid", str(pid),
                             "--duration", str(int(seconds)), "--rate", "50", "--nonblocking", "--subprocesses",
                             "--format", "raw",
                             "--output", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def top_of_raw(path: Path, n: int = 25) -> list[tuple[str, float, float]]:
    """(function, own %, total %) of a py-spy raw (collapsed stacks) file, by own time."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_frame(f) for f in stack.split(";")]
        samples += int(count)
        own[frames[-1]] += int(count)
        for f in set(frames):
            total[f] += int(count)
    return [(f, 100 * c / samples, 100 * total[f] / samples) for f, c in own.most_common(n)] if samples else []


def _frame(frame: str) -> str:
    """``func (path/to/file.py:123)`` -> ``func (file.py)``: one entry per function, not per line."""
    func, _, where = frame.partition(" (")
    file = where.rstrip(")").rsplit(":", 1)[0]
    parts = file.split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else file
    return f"{func} ({short})"


def top_of_cprofile(path: Path, n: int = 25) -> list[tuple[str, float, float]]:
    stats = pstats.Stats(str(path))
    entries = stats.stats  # type: ignore[attr-defined]
    whole = sum(tt for (_cc, _nc, tt, _ct, _callers) in entries.values()) or 1.0
    rows = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:n]
    return [(f"{func} ({'/'.join(file.split('/')[-2:])}:{line})", 100 * v[2] / whole, 100 * v[3] / whole)
            for (file, line, func), v in rows]


# --- one measured interval -----------------------------------------------------------------------

class Watch:
    """One system's counters from the start of its measured interval: CPU, scrapes (its own with ``tag``), RSS."""

    def __init__(self, system: System, server: TargetServer, *, minutes: int) -> None:
        self.system, self.server, self.minutes = system, server, minutes
        if system.name.startswith("ptmon"):
            os.kill(system.pid, signal.SIGUSR1)  # its dashboard() times count from here
        self.scrapes0, self.cpu0, self.t0 = self.scrapes(), cpu_seconds(tree(system.pid)), time.monotonic()
        self.own0 = time.process_time()
        self.rss_max = 0.0
        self.by_minute: list[float] = []
        self.cpm: list[float] = []
        self.minute_mark = (self.cpu0, self.scrapes0)

    def scrapes(self) -> list[int]:
        return self.server.scrapes(by=self.system.tag)

    def tick(self) -> None:
        """Once a second: the most RSS seen, and each minute of a memory run its RSS and CPU per sample."""
        pids = tree(self.system.pid)
        self.rss_max = max(self.rss_max, rss_mb(pids))
        if self.minutes and time.monotonic() - self.t0 >= 60 * (len(self.by_minute) + 1):
            self.by_minute.append(rss_mb(pids))
            now_cpu, now_scrapes = cpu_seconds(pids), self.scrapes()
            cpu0, scrapes0 = self.minute_mark
            self.cpm.append((now_cpu - cpu0) / max(1, _samples(self.server, scrapes0, now_scrapes)) * 1e6)
            self.minute_mark = (now_cpu, now_scrapes)

    def run(self, *, targets: int, rep: int, interval_s: float) -> Run:
        pids = tree(self.system.pid)
        cpu1, scrapes1, t1, own1 = cpu_seconds(pids), self.scrapes(), time.monotonic(), time.process_time()
        rss = rss_mb(pids)
        made = sum(b - a for a, b in zip(self.scrapes0, scrapes1, strict=True))
        return Run(system=self.system.name, targets=targets, rep=rep, seconds=t1 - self.t0, cpu_s=cpu1 - self.cpu0,
                   samples=_samples(self.server, self.scrapes0, scrapes1), made=made,
                   expected=round(len(scrapes1) * (t1 - self.t0) / interval_s), rss_mb=rss,
                   rss_max_mb=max(self.rss_max, rss), load=load_average(),
                   server_pct=100 * (own1 - self.own0) / (t1 - self.t0), rss_by_minute=self.by_minute,
                   cpu_per_m_by_minute=self.cpm)


def _watch_for(watches: Sequence[Watch], seconds: float) -> None:
    t0 = time.monotonic()
    while (elapsed := time.monotonic() - t0) < seconds:
        time.sleep(min(1.0, seconds - elapsed))
        for w in watches:
            w.tick()


def measure(system: System, server: TargetServer, *, targets: int, rep: int, seconds: float, warmup: float,
            interval_s: float, profile: bool, minutes: int = 0) -> Run:
    time.sleep(warmup)
    spy_out = system.directory / "py-spy.txt"
    spy = start_py_spy(system.pid, seconds, spy_out) if profile and system.name.startswith("ptmon") else None
    if spy is None and profile and system.cprofile_path is None and system.name.startswith("ptmon"):
        print("  (no py-spy: run with --profile=cprofile for a cProfile)", file=sys.stderr)
    watch = Watch(system, server, minutes=minutes)
    _watch_for([watch], seconds)
    run = watch.run(targets=targets, rep=rep, interval_s=interval_s)
    if spy is not None:
        _, err = spy.communicate(timeout=seconds + 30)
        if spy_out.exists():
            run.profile = top_of_raw(spy_out)
        else:
            print(f"  py-spy wrote nothing: {err.decode(errors='replace')[-500:]}", file=sys.stderr)
    return run


def measure_together(systems: Sequence[System], server: TargetServer, *, targets: int, minutes: int,
                     warmup: float, interval_s: float) -> list[Run]:
    """Every system at once on the same targets (a memory run an hour long, side by side, in an hour): each
    counts only its own scrapes (its URLs end ``?by=NAME``); CPU figures then include their contention."""
    time.sleep(warmup)
    watches = [Watch(s, server, minutes=minutes) for s in systems]
    _watch_for(watches, 60.0 * minutes)
    return [w.run(targets=targets, rep=1, interval_s=interval_s) for w in watches]


def _samples(server: TargetServer, before: Sequence[int], after: Sequence[int]) -> int:
    return sum((b - a) * n for a, b, n in zip(before, after, server.samples, strict=True))


# --- output --------------------------------------------------------------------------------------

HEADER = (f"{'targets':>7} {'rep':>3} {'system':<18} {'cpu-s/M samples':>15} {'x prom':>6} {'% core':>7} "
          f"{'RSS MB':>7} {'max MB':>7} {'scrapes made/expected':>22} {'missed':>7} {'load 1/5/15':>16} "
          f"{'targets %':>9} {'build ms mean/max':>17}")


def row(run: Run, prom: Run | None) -> str:
    ratio = f"{run.cpu_per_m / prom.cpu_per_m:6.2f}" if prom is not None and prom.cpu_per_m > 0 else f"{'-':>6}"
    load = "/".join(f"{x:.2f}" for x in run.load)
    return (f"{run.targets:>7} {run.rep:>3} {run.system:<18} {run.cpu_per_m:>15.2f} {ratio} {run.core_pct:>6.1f}% "
            f"{run.rss_mb:>7.0f} {run.rss_max_mb:>7.0f} {f'{run.made}/{run.expected}':>22} "
            f"{run.missed_pct:>6.1f}% {load:>16} {run.server_pct:>8.1f}% {_builds(run):>17}")


def _builds(run: Run) -> str:
    if not run.builds_ms:
        return "-"
    return f"{sum(run.builds_ms) / len(run.builds_ms):.0f}/{max(run.builds_ms):.0f}"


def _prom_of(run: Run, runs: Sequence[Run]) -> Run | None:
    return next((r for r in runs if r.system == "prometheus" and r.targets == run.targets and r.rep == run.rep), None)


def _span(values: Sequence[float], fmt: str) -> str:
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low}-{high}"


def summary(runs: Sequence[Run]) -> list[str]:
    """Per size and system over the repetitions: the range of each figure (the issue's table's form)."""
    groups: dict[tuple[int, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.targets, r.system), []).append(r)
    lines = ["", f"{'targets':>7} {'system':<18} {'reps':>4} {'cpu-s/M samples':>15} {'x prom':>11} "
                 f"{'% core':>11} {'RSS MB':>11} {'missed %':>11} {'load 1m':>11}"]
    for (targets, system), group in groups.items():
        ratios = [r.cpu_per_m / p.cpu_per_m for r in group if (p := _prom_of(r, runs)) is not None and p.cpu_per_m]
        lines.append(f"{targets:>7} {system:<18} {len(group):>4} {_span([r.cpu_per_m for r in group], '.2f'):>15} "
                     f"{_span(ratios, '.2f') if ratios else '-':>11} {_span([r.core_pct for r in group], '.1f'):>11} "
                     f"{_span([r.rss_mb for r in group], '.0f'):>11} {_span([r.missed_pct for r in group], '.1f'):>11} "
                     f"{_span([r.load[0] for r in group], '.2f'):>11}")
    return lines


def table(runs: Sequence[Run]) -> str:
    lines = [HEADER] + [row(r, _prom_of(r, runs)) for r in runs]
    if any(r.rep > 1 for r in runs):
        lines += summary(runs)
    for r in runs:
        if r.rss_by_minute:
            lines.append(f"{r.targets:>7} {r.system:<18} RSS MB by minute: "
                         + " ".join(f"{x:.0f}" for x in r.rss_by_minute)
                         + "  cpu-s/M by minute: " + " ".join(f"{x:.2f}" for x in r.cpu_per_m_by_minute))
    for r in runs:
        if r.profile:
            lines += ["", f"{r.system} at {r.targets} targets, rep {r.rep}: top {len(r.profile)} by own time "
                          f"(% of samples on CPU; total = inclusive)", f"{'own %':>6} {'total %':>7}  function"]
            lines += [f"{own:6.1f} {tot:7.1f}  {func}" for func, own, tot in r.profile]
    return "\n".join(lines)


def as_json(runs: Sequence[Run]) -> str:
    out = []
    for r in runs:
        prom = _prom_of(r, runs)
        out.append({**asdict(r), "cpu_s_per_million_samples": r.cpu_per_m, "core_pct": r.core_pct,
                    "missed_pct": r.missed_pct,
                    "cpu_vs_prometheus": r.cpu_per_m / prom.cpu_per_m if prom and prom.cpu_per_m else None})
    return json.dumps(out, indent=2)


# --- main ----------------------------------------------------------------------------------------

def _systems(spec: str, rev: str | None) -> list[str]:
    systems = [s.strip() for s in spec.split(",") if s.strip()]
    for s in systems:
        if s not in ("ptmon", "prometheus", "vm") and not s.startswith("ptmon@"):
            raise SystemExit(f"unknown system {s!r} (ptmon, ptmon@REV, prometheus, vm)")
    if rev is not None and f"ptmon@{rev}" not in systems:
        systems.insert(systems.index("ptmon") + 1 if "ptmon" in systems else 0, f"ptmon@{rev}")
    missing = [s for s in systems if s in BINARIES and not os.access(BINARIES[s], os.X_OK)]
    for s in missing:
        print(f"skipping {s}: {BINARIES[s]} is not installed", file=sys.stderr)
    return [s for s in systems if s not in missing]


def _together(names: Sequence[str], server: TargetServer, *, size: int, args: argparse.Namespace) -> list[Run]:
    with ExitStack() as stack:
        systems = [stack.enter_context(running(n, server.urls, interval_s=args.interval, cprofile=False, tag=n))
                   for n in names]
        runs = measure_together(systems, server, targets=size, minutes=args.minutes, warmup=args.warmup,
                                interval_s=args.interval)
    for run, system in zip(runs, systems, strict=True):
        run.builds_ms = system.builds_ms
        print(row(run, _prom_of(run, runs)), file=sys.stderr, flush=True)
    return runs


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="8,64,128,256", help="rollout workers per size, comma-separated "
                                                                  "(a trainer is added to each)")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured seconds per system and repetition")
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--interval", type=float, default=1.0, help="scrape interval, seconds")
    parser.add_argument("--systems", default="ptmon,prometheus,vm")
    parser.add_argument("--rev", default=None, help="also run ptmon at this commit (ptmon@REV)")
    parser.add_argument("--profile", nargs="?", const="auto", choices=("auto", "py-spy", "cprofile"), default=None,
                        help="profile the ptmon child(ren): top 25 functions by own time")
    parser.add_argument("--minutes", type=int, default=0, help="a memory run: each system this long per size, "
                                                               "RSS and CPU per sample every minute")
    parser.add_argument("--together", action="store_true",
                        help="with --minutes: every system at once on the same targets, each counting its own "
                             "scrapes (an hour side by side takes an hour)")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON instead of the table")
    args = parser.parse_args(argv)
    if args.together and not args.minutes:
        parser.error("--together is a memory run: give --minutes")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(x) for x in args.targets.split(",")]
    systems = _systems(args.systems, args.rev)
    cprofile = args.profile == "cprofile" or (args.profile == "auto" and py_spy() is None)
    seconds = 60.0 * args.minutes if args.minutes else args.seconds
    reps = 1 if args.minutes else args.reps
    signal.signal(signal.SIGTERM, _interrupt)
    runs: list[Run] = []
    print(HEADER, file=sys.stderr)
    try:
        for size in sizes:
            with TargetServer(workers=size) as server:
                if args.together:
                    runs += _together(systems, server, size=size, args=args)
                    continue
                for rep in range(1, reps + 1):
                    for name in systems:
                        with running(name, server.urls, interval_s=args.interval, cprofile=cprofile) as system:
                            run = measure(system, server, targets=size, rep=rep, seconds=seconds,
                                          warmup=args.warmup, interval_s=args.interval,
                                          profile=args.profile is not None and not cprofile, minutes=args.minutes)
                        run.profile = run.profile or system.cprofile_top
                        run.builds_ms = system.builds_ms
                        runs.append(run)
                        print(row(run, _prom_of(run, runs)), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("interrupted: every process stopped; the runs so far:", file=sys.stderr)
        print(as_json(runs) if args.json else table(runs))
        return 130
    print(as_json(runs) if args.json else table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
