"""tests/bench/bench_scale.py runs end to end, prints every column, and leaves nothing behind.

The benchmark's figures go into the README and the issue's closing note, so
the tool itself must work: a short run at 2 targets against the real
Prometheus and VictoriaMetrics binaries, its scrape counts plausible, and an
interrupted run that stops every process it started and removes its
temporary directories.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("targets", "rep", "system", "cpu-s/M samples", "x prom", "% core", "RSS MB", "max MB",
           "scrapes made/expected", "missed", "load 1/5/15", "targets %", "build ms mean/max")
SYSTEMS = ("ptmon", "prometheus", "vm")


def _bench(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-m", "tests.bench.bench_scale", "--targets", "2", "--reps", "1",
                             "--systems", ",".join(SYSTEMS), *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _left_behind(tmp_path: Path, *, but: int) -> list[str]:
    """Processes started with this run's TMPDIR (a system, the ptmon child, py-spy), the benchmark ``but`` aside."""
    mark = f"TMPDIR={tmp_path}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == but:
            continue
        try:
            if mark in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{entry}: {cmdline!r}")
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.prometheus
def test_a_short_run_prints_every_column_for_every_system(tmp_path: Path, prometheus_bin: str,
                                                          victoria_metrics_bin: str) -> None:
    # Prometheus applies a new target set up to 5 s after it starts: the warm-up covers it.
    bench = _bench(tmp_path, "--seconds", "4", "--warmup", "6", "--rev", "HEAD")  # ptmon@HEAD: the --rev path
    out, err = bench.communicate(timeout=180)
    assert bench.returncode == 0, err
    lines = out.splitlines()
    header = lines[0]
    for column in COLUMNS:
        assert column in header, (column, header)
    rows = {line.split()[2]: line.split() for line in lines[1:] if line.strip()}
    assert set(rows) == {*SYSTEMS, "ptmon@HEAD"}, out
    for system, fields in rows.items():
        made, expected = (int(x) for x in fields[8].split("/"))
        # 3 targets (2 workers and the trainer) at 1 s for about 4 s: 12, give or take a scrape per target.
        assert 9 <= expected <= 15, (system, fields)
        assert expected - 3 <= made <= expected + 3, (system, fields)
        assert float(fields[3]) > 0 and float(fields[6]) > 0, (system, fields)  # CPU per sample, RSS
        assert len(fields[10].split("/")) == 3, (system, fields)  # the load average beside the figures
        assert fields[11].endswith("%"), (system, fields)  # the targets' own CPU
        builds = fields[12].split("/")  # ptmon's Dashboard times, mean/max ms; none for the others
        assert (len(builds) == 2 and 0 <= float(builds[0]) <= float(builds[1])) if system.startswith("ptmon") \
            else builds == ["-"], (system, fields)
    assert rows["prometheus"][4] == "1.00"
    assert _left_behind(tmp_path, but=bench.pid) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.prometheus
def test_an_interrupted_run_stops_what_it_started(tmp_path: Path, prometheus_bin: str) -> None:
    bench = _bench(tmp_path, "--seconds", "60", "--warmup", "1", "--json")
    deadline = time.monotonic() + 60
    while not _left_behind(tmp_path, but=bench.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # into the warm-up: the system is up and scraping
    assert _left_behind(tmp_path, but=bench.pid), "the benchmark never started a system"
    bench.send_signal(signal.SIGINT)
    out, err = bench.communicate(timeout=60)
    assert bench.returncode == 130, err
    assert "interrupted" in err
    assert isinstance(json.loads(out), list)
    assert _left_behind(tmp_path, but=bench.pid) == []
    assert list(tmp_path.iterdir()) == []
