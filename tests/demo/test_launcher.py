"""``ptmon demo`` as a user runs it: real processes, real ports, and no child outliving the launcher.

Children are found through /proc (their parent is the launcher) and checked
by pid with kill(pid, 0) after the launcher is stopped by SIGINT, SIGTERM,
its --duration, or a SIGKILL (then the children notice on their own).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ptmon.demo.launcher import Endpoint, prometheus_config
from ptmon.exporters.schema import RUN_INFO
from ptmon.monitor.parse import parse
from tests.demo.helpers import URL_RE, alive, children_of, start_headless, wait_gone


def _roles(text: str) -> dict[str, str]:
    """name -> role each printed URL serves, read from its posttrain_run_info."""
    out = {}
    with httpx.Client(timeout=10.0) as client:
        for name, url, _ in URL_RE.findall(text):
            samples = parse(client.get(url).text)
            info = [s for s in samples if s.name in (RUN_INFO.name, RUN_INFO.name + "_info")]
            assert info, f"{name} at {url} has no {RUN_INFO.name}"
            out[name] = info[0].labels["role"]
    return out


@pytest.mark.prometheus
def test_prometheus_config_passes_promtool(tmp_path: Path, promtool_bin: str) -> None:
    endpoints = [Endpoint("trainer", "trainer", 9001), Endpoint("rollout-0", "rollout", 9002),
                 Endpoint("rollout-1", "rollout", 9003), Endpoint("eval", "eval", 9004)]
    text = prometheus_config(endpoints, interval_s=0.5)
    assert "scrape_interval: 500ms" in text and text.count("targets:") == 4
    assert "role:" not in text and " run:" not in text  # would clash with the metrics' own labels
    path = tmp_path / "prometheus.yml"
    path.write_text(text)
    result = subprocess.run([promtool_bin, "check", "config", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.prometheus
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_headless_serves_every_role_and_a_signal_stops_every_child(signum: int, tmp_path: Path,
                                                                   promtool_bin: str) -> None:
    proc, text = start_headless()
    try:
        pids = children_of(proc.pid)
        assert len(pids) == 4 and all(alive(p) for p in pids)  # trainer, 2 workers, eval
        assert _roles(text) == {"trainer": "trainer", "rollout-0": "rollout", "rollout-1": "rollout",
                                "eval": "eval"}
        config = tmp_path / "prometheus.yml"
        config.write_text(text.split("# prometheus.yml\n", 1)[1].split("\nrunning;", 1)[0])
        check = subprocess.run([promtool_bin, "check", "config", str(config)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        proc.send_signal(signum)
        assert proc.wait(timeout=20) == 0
        assert wait_gone(pids, 1.0) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow  # starts a process
def test_children_stop_by_themselves_when_the_launcher_is_killed_hard() -> None:
    import shutil

    proc, _ = start_headless()
    pids = children_of(proc.pid)
    assert len(pids) == 4
    argv = Path(f"/proc/{pids[0]}/cmdline").read_bytes().split(b"\0")
    run_dir = Path(argv[argv.index(b"--run-dir") + 1].decode())
    try:
        proc.kill()  # SIGKILL: no finally runs in the launcher
        proc.wait()
        assert wait_gone(pids, 10.0) == []  # each child polls its parent pid
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)  # the one thing a SIGKILLed launcher cannot clean up


@pytest.mark.slow  # starts a process
def test_duration_ends_the_run_headless_never_imports_textual() -> None:
    # Every child the run ever had is collected while it runs (not at a fixed moment, which a slow start misses).
    code = (
        "import sys, threading, os, time\n"
        "from ptmon.monitor.cli import main\n"
        "from tests.demo.helpers import children_of\n"
        "seen, done = set(), threading.Event()\n"
        "def probe():\n"
        "    while not done.is_set():\n"
        "        seen.update(children_of(os.getpid()))\n"
        "        time.sleep(0.05)\n"
        "t = threading.Thread(target=probe, daemon=True)\n"
        "t.start()\n"
        "rc = main(['demo', '--headless', '--duration', '3', '--speed', '300', '--workers', '1'])\n"
        "done.set()\n"
        "t.join()\n"
        "print('PIDS', *sorted(seen))\n"
        "print('TEXTUAL', 'textual' in sys.modules)\n"
        "sys.exit(rc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("PIDS", "TEXTUAL")))
    pids = [int(p) for p in lines["PIDS"].split()]
    assert len(pids) == 3  # trainer, 1 worker, eval
    assert lines["TEXTUAL"] == "False"
    assert wait_gone(pids, 1.0) == []


def test_bad_options_are_refused_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    from ptmon.monitor.cli import main

    assert main(["demo", "--headless", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
    assert main(["demo", "--headless", "--speed", "5000"]) == 2
    assert "--speed must be above 0 and at most 1000" in capsys.readouterr().err


def test_cli_defaults_give_a_demo_that_moves() -> None:
    from ptmon.demo.launcher import DEFAULT_SPEED, DemoOptions
    from ptmon.monitor.cli import build_parser

    opts = DemoOptions.from_args(build_parser().parse_args(["demo"]))
    assert opts == DemoOptions(scenario="healthy", speed=DEFAULT_SPEED, workers=4, seed=0)
    assert DEFAULT_SPEED > 1
    assert DemoOptions.from_args(build_parser().parse_args(["demo", "--speed", "2"])).speed == 2.0


@pytest.mark.parametrize(("code", "message"), [
    ("import sys; sys.exit(3)", "exited with status 3 before reporting its port"),
    ("print('listening, probably')", "reported something that is not a port"),
    ("import time; time.sleep(30)", "timed out waiting for it to report its port"),
], ids=["exits", "garbage", "silent"])
@pytest.mark.slow  # starts a process
def test_a_child_that_never_reports_its_port_is_a_clear_error(code: str, message: str) -> None:
    import time

    from ptmon.demo.launcher import FleetError, _read_announcement

    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        with pytest.raises(FleetError, match=message):
            _read_announcement(child, time.monotonic() + (1.0 if "sleep" in code else 30.0))
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


@pytest.mark.slow  # starts a process
def test_package_exports_load_lazily() -> None:
    code = ("import sys\nimport ptmon.demo as demo\n"
            "assert 'ptmon.demo.launcher' not in sys.modules\n"
            "assert sorted(demo.__all__) == dir(demo)\n"
            "assert all(getattr(demo, name) is not None for name in demo.__all__)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.prometheus
def test_a_real_prometheus_scrapes_the_printed_config(prometheus_bin: str, tmp_path: Path) -> None:
    from tests.conftest import PrometheusServer

    proc, text = start_headless("--interval", "0.5")
    prom = PrometheusServer(binary=prometheus_bin, directory=tmp_path, scrape_configs=[], interval="500ms")
    try:
        prom.config_path.write_text(text.split("# prometheus.yml\n", 1)[1].split("\nrunning;", 1)[0])
        prom.start()
        up = prom.wait_for("up == 1", lambda r: len(r) == 4)
        assert {(s["metric"]["job"], s["metric"]["ptmon_name"]) for s in up} == {
            ("posttrain-trainer", "trainer"), ("posttrain-rollout", "rollout-0"),
            ("posttrain-rollout", "rollout-1"), ("posttrain-eval", "eval")}
        # The metrics keep their own role label (no target label clashed and got renamed exported_role).
        gpus = prom.wait_for("posttrain_gpus", lambda r: len(r) == 4)
        assert sorted(s["metric"]["role"] for s in gpus) == ["eval", "rollout", "rollout", "trainer"]
        assert not any(k.startswith("exported_") for s in gpus for k in s["metric"])
        prom.wait_for('sum(rate(posttrain_rollouts_total{job="posttrain-rollout"}[2s])) > 0')
    finally:
        prom.stop()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


# --- --port-base and the printed ptmon.toml ----------------------------------------------------------------------

def _free_base(count: int) -> int:
    """A base port with ``count`` free ports after it (checked now; another process may take one later)."""
    import random
    import socket

    for _ in range(100):
        base = random.randrange(20000, 60000)
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError("no free run of ports")


def test_the_printed_ptmon_toml_reads_back_as_the_demos_targets(tmp_path: Path) -> None:
    from ptmon.demo.launcher import DEMO_WINDOW_S, ptmon_config
    from ptmon.monitor.config import load_settings

    endpoints = [Endpoint("trainer", "trainer", 9001), Endpoint("rollout-0", "rollout", 9002),
                 Endpoint("eval", "eval", 9003)]
    path = tmp_path / "ptmon.toml"
    path.write_text(ptmon_config(endpoints, interval_s=0.5))
    settings = load_settings(config_path=str(path))
    assert [(t.name, t.url, t.role) for t in settings.targets] == [
        ("trainer", "http://127.0.0.1:9001/metrics", "trainer"),
        ("rollout-0", "http://127.0.0.1:9002/metrics", "rollout"),
        ("eval", "http://127.0.0.1:9003/metrics", "eval")]
    assert (settings.interval_s, settings.window_s) == (0.5, DEMO_WINDOW_S)


def test_a_port_base_that_does_not_fit_or_is_taken_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from ptmon.monitor.cli import main

    assert main(["demo", "--headless", "--workers", "4", "--port-base", "65531"]) == 2
    assert "--port-base must leave room for 6 ports (1 to 65530 with 4 workers), got 65531" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["demo", "--headless", "--workers", "1", "--port-base", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"--port-base {port}: port {port} (for trainer) is not free on 127.0.0.1" in err


@pytest.mark.slow  # starts the demo's processes
def test_headless_with_a_port_base_serves_there_and_prints_a_ptmon_toml_that_watches_it(tmp_path: Path) -> None:
    from ptmon.monitor.config import load_settings

    base = _free_base(4)
    proc, text = start_headless("--port-base", str(base))
    try:
        printed = {name: int(port) for name, _, port in URL_RE.findall(text)}
        assert printed == {"trainer": base, "rollout-0": base + 1, "rollout-1": base + 2, "eval": base + 3}
        assert f"ptmon watch trainer=127.0.0.1:{base} rollout-0=127.0.0.1:{base + 1}" in text
        toml = tmp_path / "ptmon.toml"
        toml.write_text(text.split("# ptmon.toml\n", 1)[1].split("\n# prometheus.yml", 1)[0])
        settings = load_settings(config_path=str(toml))
        assert {t.name: (t.url, t.role) for t in settings.targets} == {
            name: (url, name.split("-")[0]) for name, url, _ in URL_RE.findall(text)}
        assert _roles(text) == {"trainer": "trainer", "rollout-0": "rollout", "rollout-1": "rollout", "eval": "eval"}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
