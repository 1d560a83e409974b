"""Shared test fixtures.

Markers mean what they say. A test that uses a Prometheus or promtool fixture
gets the ``prometheus`` marker here, from its fixtures (no hand-written marker to
forget). A test that starts a process (subprocess, asyncio subprocess, fork) or a
pty must be marked ``slow`` (or need Prometheus): the guard below fails it
otherwise, so ``pytest -m "not slow and not prometheus"`` stays a fast,
in-process lane.

Tests that need Debian's prometheus/promtool use the ``prometheus_bin`` and
``promtool_bin`` fixtures: they skip with a reason when the binaries are absent,
and fail instead when PTMON_REQUIRE_PROMETHEUS=1 (as .ci/run sets), so CI can
never go green by skipping them. ``prometheus_server`` (below) starts a real
Prometheus on a loopback port for tests of the scrape and query paths.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

PROMETHEUS_FIXTURES = frozenset({"prometheus_bin", "promtool_bin", "prometheus_server", "prometheus_on_config"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROMETHEUS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.prometheus)


def _may_spawn(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None or item.get_closest_marker("prometheus") is not None


@pytest.fixture(autouse=True)
def _processes_need_the_slow_marker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test outside the slow lane that starts a process or a pty, naming what it started."""
    if _may_spawn(request.node):
        return
    nodeid = request.node.nodeid

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            pytest.fail(f"{nodeid} starts {what}: mark it @pytest.mark.slow (see tests/README.md)", pytrace=False)
        return refused

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("a process (subprocess.Popen)"))
    monkeypatch.setattr(os, "fork", refuse("a process (os.fork)"))
    monkeypatch.setattr(os, "forkpty", refuse("a pty (os.forkpty)"))
    monkeypatch.setattr(os, "posix_spawn", refuse("a process (os.posix_spawn)"))


def _require_binary(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} not found on PATH (Debian: apt-get install prometheus)"
    if os.environ.get("PTMON_REQUIRE_PROMETHEUS") == "1":
        pytest.fail(message + "; PTMON_REQUIRE_PROMETHEUS=1 forbids skipping", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def prometheus_bin() -> str:
    return _require_binary("prometheus")


@pytest.fixture(scope="session")
def promtool_bin() -> str:
    return _require_binary("promtool")


# --- a real Prometheus server, started per test -------------------------------------------------
#
# Usage (a factory fixture: call it once or more per test):
#
#     def test_x(prometheus_server):
#         prom = prometheus_server({"trainer": [srv.url]}, scrape_interval=0.5)
#         result = prom.wait_for("posttrain_trainer_steps_total", lambda r: r and r[0]["value"][1] == "3")
#         prom.query("up")  # -> the ``data.result`` list of an instant query
#
# Targets are full URLs ("http://127.0.0.1:PORT/metrics") or "host:port" (http, /metrics), as a list
# (one job named "ptmon") or a {job_name: [targets]} mapping; the targets of one job must share
# scheme and path. https targets are scraped with insecure_skip_verify (test certificates).
# The fixture depends on ``prometheus_bin``, so it skips locally without Debian's prometheus and
# FAILS under PTMON_REQUIRE_PROMETHEUS=1. Every server is killed at teardown.

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _scrape_configs(targets: Sequence[str] | Mapping[str, Sequence[str]], interval: str) -> list[dict]:
    jobs = {"ptmon": list(targets)} if not isinstance(targets, Mapping) else dict(targets)
    configs = []
    for job, urls in jobs.items():
        parts = [urlsplit(url if "://" in url else f"http://{url}/metrics") for url in urls]
        schemes_paths = {(part.scheme, part.path or "/metrics") for part in parts}
        if len(schemes_paths) > 1:
            raise ValueError(f"job {job!r}: targets must share scheme and path, got {sorted(schemes_paths)}")
        scheme, path = schemes_paths.pop() if schemes_paths else ("http", "/metrics")
        config: dict = {"job_name": job, "scrape_interval": interval, "scrape_timeout": interval,
                        "scheme": scheme, "metrics_path": path,
                        "static_configs": [{"targets": [part.netloc for part in parts]}]}
        if scheme == "https":
            config["tls_config"] = {"insecure_skip_verify": True}
        configs.append(config)
    return configs


class PrometheusServer:
    """A running prometheus process on a loopback port; see the usage note above."""

    def __init__(self, *, binary: str, directory: Path, scrape_configs: list[dict], interval: str) -> None:
        self.directory = directory
        self.config_path = directory / "prometheus.yml"
        # JSON is YAML: no YAML library needed.
        self.config_path.write_text(json.dumps({"global": {"scrape_interval": interval,
                                                           "evaluation_interval": interval},
                                                "scrape_configs": scrape_configs}, indent=2))
        self.log_path = directory / "prometheus.log"
        self.port = 0
        self.url = ""
        self._process: subprocess.Popen | None = None
        self._binary = binary

    def start(self, *, ready_timeout: float = 30.0) -> None:
        for _attempt in range(3):  # the free port can be taken between probing and binding: retry
            self.port = _free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            with open(self.log_path, "ab") as log:
                self._process = subprocess.Popen(
                    [self._binary, f"--config.file={self.config_path}",
                     f"--storage.tsdb.path={self.directory / 'data'}",
                     f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + ready_timeout
            while time.monotonic() < deadline and self._process.poll() is None:
                try:
                    if httpx.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            self.stop()
        raise RuntimeError(f"prometheus did not become ready; log:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def api(self, path: str, **params: str) -> dict:
        """GET /api/v1/<path>; returns the ``data`` member, raising on an API error."""
        response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=10.0)
        body = response.json()
        if body.get("status") != "success":
            raise RuntimeError(f"prometheus API {path} {params}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        """Instant query; the ``result`` list (each item has ``metric`` labels and ``value`` [ts, "str"])."""
        return self.api("query", query=promql)["result"]

    def wait_for(self, promql: str, predicate: Callable[[list[dict]], bool] = bool, *,
                 timeout: float = 20.0) -> list[dict]:
        """Poll ``query(promql)`` until ``predicate(result)`` holds; on timeout fail with what it saw."""
        deadline = time.monotonic() + timeout
        result: list[dict] = []
        while True:
            result = self.query(promql)
            if predicate(result):
                return result
            if time.monotonic() > deadline:
                targets = self.api("targets")["activeTargets"]
                health = [(t["scrapeUrl"], t["health"], t["lastError"]) for t in targets]
                raise AssertionError(f"{promql!r} never satisfied the predicate within {timeout}s; last result "
                                     f"{result}; targets {health}; log:\n{self.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
def prometheus_server(prometheus_bin: str, tmp_path_factory: pytest.TempPathFactory
                      ) -> Iterator[Callable[..., PrometheusServer]]:
    """Factory: ``prometheus_server(targets, scrape_interval=0.5)`` -> a ready PrometheusServer."""
    servers: list[PrometheusServer] = []

    def start(targets: Sequence[str] | Mapping[str, Sequence[str]], *,
              scrape_interval: float = 0.5) -> PrometheusServer:
        interval = f"{int(scrape_interval * 1000)}ms"
        server = PrometheusServer(binary=prometheus_bin, directory=tmp_path_factory.mktemp("prometheus"),
                                  scrape_configs=_scrape_configs(targets, interval), interval=interval)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()


# --- a real Prometheus on a config file of your own ----------------------------------------------
#
#     def test_y(prometheus_on_config):
#         prom = prometheus_on_config(assets / "prometheus.yml")  # e.g. the shipped config, unchanged
#
# The file is used as it is: its rule_files and file_sd paths resolve against its own directory, as
# they do for a user. Data and log go to a fresh temporary directory. Same class, same skip/fail rule
# (``prometheus_bin``), same teardown as ``prometheus_server``.

@pytest.fixture
def prometheus_on_config(prometheus_bin: str, tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[Callable[[Path], PrometheusServer]]:
    """Factory: ``prometheus_on_config(config_path)`` -> a ready PrometheusServer running that file."""
    servers: list[PrometheusServer] = []

    def start(config_path: Path) -> PrometheusServer:
        directory = tmp_path_factory.mktemp("prometheus")
        server = PrometheusServer(binary=prometheus_bin, directory=directory, scrape_configs=[], interval="1s")
        server.config_path.unlink()  # the class writes a config of its own: this server runs the given one
        server.config_path = Path(config_path)
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.stop()
