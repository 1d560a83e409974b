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

The rest of the ecosystem teams deploy next to it is here the same way (same
skip/fail rule, same marker, killed at teardown): ``victoria_metrics_on_config``
(Debian's victoria-metrics), ``vmalert_server``, ``pushgateway_server``
(prometheus-pushgateway) and ``alertmanager_server`` (prometheus-alertmanager).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import pytest

# Every fixture that needs a binary of the Prometheus ecosystem (Debian's prometheus, victoria-metrics,
# prometheus-pushgateway, prometheus-alertmanager): a test using one is marked ``prometheus``.
PROMETHEUS_FIXTURES = frozenset({
    "prometheus_bin", "promtool_bin", "prometheus_server", "prometheus_on_config",
    "victoria_metrics_bin", "vmalert_bin", "pushgateway_bin", "alertmanager_bin",
    "victoria_metrics_on_config", "vmalert_server", "pushgateway_server", "alertmanager_server",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PROMETHEUS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.prometheus)


def _may_spawn(item: pytest.Item) -> bool:
    return item.get_closest_marker("slow") is not None or item.get_closest_marker("prometheus") is not None


@pytest.fixture(autouse=True)
def _no_users_ptmon_toml(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands find a ptmon.toml by themselves (./, $PTMON_CONFIG, ~/.config/ptmon): a test must not
    read the developer's own (tests that discover set these again)."""
    monkeypatch.delenv("PTMON_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent/ptmon-tests-read-no-user-config")


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


def _require_binary(name: str, package: str = "prometheus") -> str:
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} not found on PATH (Debian: apt-get install {package})"
    if os.environ.get("PTMON_REQUIRE_PROMETHEUS") == "1":
        pytest.fail(message + "; PTMON_REQUIRE_PROMETHEUS=1 forbids skipping", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def prometheus_bin() -> str:
    return _require_binary("prometheus")


@pytest.fixture(scope="session")
def promtool_bin() -> str:
    return _require_binary("promtool")


@pytest.fixture(scope="session")
def victoria_metrics_bin() -> str:
    return _require_binary("victoria-metrics", "victoria-metrics")


@pytest.fixture(scope="session")
def vmalert_bin() -> str:
    return _require_binary("vmalert", "victoria-metrics")


@pytest.fixture(scope="session")
def pushgateway_bin() -> str:
    return _require_binary("prometheus-pushgateway", "prometheus-pushgateway")


@pytest.fixture(scope="session")
def alertmanager_bin() -> str:
    return _require_binary("prometheus-alertmanager", "prometheus-alertmanager")


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
        port: int = sock.getsockname()[1]
        return port


def _scrape_configs(targets: Sequence[str] | Mapping[str, Sequence[str]], interval: str) -> list[dict[str, Any]]:
    jobs = {"ptmon": list(targets)} if not isinstance(targets, Mapping) else dict(targets)
    configs = []
    for job, urls in jobs.items():
        parts = [urlsplit(url if "://" in url else f"http://{url}/metrics") for url in urls]
        schemes_paths = {(part.scheme, part.path or "/metrics") for part in parts}
        if len(schemes_paths) > 1:
            raise ValueError(f"job {job!r}: targets must share scheme and path, got {sorted(schemes_paths)}")
        scheme, path = schemes_paths.pop() if schemes_paths else ("http", "/metrics")
        config: dict[str, Any] = {"job_name": job, "scrape_interval": interval, "scrape_timeout": interval,
                        "scheme": scheme, "metrics_path": path,
                        "static_configs": [{"targets": [part.netloc for part in parts]}]}
        if scheme == "https":
            config["tls_config"] = {"insecure_skip_verify": True}
        configs.append(config)
    return configs


class _ServerProcess:
    """One server binary on a free loopback port, its output in a log file; started, probed, stopped.

    Subclasses say how to start it (``_argv``) and where it answers once ready
    (``_ready_path``); the rest (port retry, readiness, log tail, teardown) is
    shared by every real server the tests start.
    """

    name = "server"
    _ready_path = "/-/ready"

    def __init__(self, *, binary: str, directory: Path) -> None:
        self.directory = directory
        self.log_path = directory / f"{self.name}.log"
        self.port = 0
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._binary = binary

    def _argv(self, port: int) -> list[str]:
        raise NotImplementedError

    def start(self, *, ready_timeout: float = 30.0) -> None:
        """Start on a free port (or the port it had, when restarted) and wait until it answers ready."""
        for _attempt in range(3):  # the free port can be taken between probing and binding: retry
            self.port = self.port or _free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            with open(self.log_path, "ab") as log:
                self._process = subprocess.Popen([self._binary, *self._argv(self.port)],
                                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + ready_timeout
            while time.monotonic() < deadline and self._process.poll() is None:
                try:
                    if httpx.get(f"{self.url}{self._ready_path}", timeout=1.0).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            self.stop()
            self.port = 0
        raise RuntimeError(f"{self.name} did not become ready; log:\n{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; a stopped server can be ``start``ed again on the same port."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL at once: a server that dies, not one shut down cleanly."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=5)


_Server = TypeVar("_Server", bound=_ServerProcess)


@contextmanager
def _started_servers(make: Callable[..., _Server]) -> Iterator[Callable[..., _Server]]:
    """The one shape of every server fixture: a factory that makes, starts and keeps each server, and
    stops them all at teardown (a test may start several, or restart one)."""
    servers: list[_Server] = []

    def start(*args: Any, **kwargs: Any) -> _Server:
        server = make(*args, **kwargs)
        servers.append(server)
        server.start()
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


class _QueryAPI(_ServerProcess):
    """Prometheus's HTTP query API (``/api/v1/...``), as Prometheus, VictoriaMetrics and vmalert serve it.

    A server process itself, so its failures quote the process's own log (a mixin's placeholder for it once came
    first in the servers' MRO and raised NotImplementedError instead)."""

    def api(self, path: str, **params: str) -> dict[str, Any]:
        """GET /api/v1/<path>; returns the ``data`` member, raising on an API error."""
        response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=10.0)
        body = response.json()
        if body.get("status") != "success":
            raise RuntimeError(f"{type(self).__name__} API {path} {params}: {body}")
        data: dict[str, Any] = body["data"]
        return data

    def query(self, promql: str, **params: str) -> list[dict[str, Any]]:
        """Instant query; the ``result`` list (each item has ``metric`` labels and ``value`` [ts, "str"])."""
        result: list[dict[str, Any]] = self.api("query", query=promql, **params)["result"]
        return result

    def wait_for(self, promql: str, predicate: Callable[[list[dict[str, Any]]], bool] = bool, *,
                 timeout: float = 20.0, **params: str) -> list[dict[str, Any]]:
        """Poll ``query(promql)`` until ``predicate(result)`` holds; on timeout fail with what it saw."""
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while True:
            result = self.query(promql, **params)
            if predicate(result):
                return result
            if time.monotonic() > deadline:
                targets = self.api("targets")["activeTargets"]
                health = [(t["scrapeUrl"], t["health"], t["lastError"]) for t in targets]
                raise AssertionError(f"{promql!r} never satisfied the predicate within {timeout}s; last result "
                                     f"{result}; targets {health}; log:\n{self.log_tail()}")
            time.sleep(0.2)


class PrometheusServer(_QueryAPI):
    """A running prometheus process on a loopback port; see the usage note above."""

    name = "prometheus"

    def __init__(self, *, binary: str, directory: Path, scrape_configs: list[dict[str, Any]], interval: str) -> None:
        super().__init__(binary=binary, directory=directory)
        self.config_path = directory / "prometheus.yml"
        # JSON is YAML: no YAML library needed.
        self.config_path.write_text(json.dumps({"global": {"scrape_interval": interval,
                                                           "evaluation_interval": interval},
                                                "scrape_configs": scrape_configs}, indent=2))

    def _argv(self, port: int) -> list[str]:
        return [f"--config.file={self.config_path}", f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]


@pytest.fixture
def prometheus_server(prometheus_bin: str, tmp_path_factory: pytest.TempPathFactory
                      ) -> Iterator[Callable[..., PrometheusServer]]:
    """Factory: ``prometheus_server(targets, scrape_interval=0.5)`` -> a ready PrometheusServer."""

    def make(targets: Sequence[str] | Mapping[str, Sequence[str]], *,
             scrape_interval: float = 0.5) -> PrometheusServer:
        interval = f"{int(scrape_interval * 1000)}ms"
        return PrometheusServer(binary=prometheus_bin, directory=tmp_path_factory.mktemp("prometheus"),
                                scrape_configs=_scrape_configs(targets, interval), interval=interval)

    with _started_servers(make) as start:
        yield start


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

    def make(config_path: Path) -> PrometheusServer:
        directory = tmp_path_factory.mktemp("prometheus")
        server = PrometheusServer(binary=prometheus_bin, directory=directory, scrape_configs=[], interval="1s")
        server.config_path.unlink()  # the class writes a config of its own: this server runs the given one
        server.config_path = Path(config_path)
        return server

    with _started_servers(make) as start:
        yield start


# --- the rest of the ecosystem: VictoriaMetrics, vmalert, Pushgateway, Alertmanager ----------------
#
#     def test_z(victoria_metrics_on_config, vmalert_server, pushgateway_server, alertmanager_server):
#         gateway = pushgateway_server()                        # .url; .kill() to make it die, .start() again
#         vm = victoria_metrics_on_config(assets / "victoria-metrics.yml")   # the query API, as PrometheusServer
#         am = alertmanager_server()                            # .alerts(): what its API v2 lists
#         rules = vmalert_server(vm.url, [assets / "ptmon.rules.yml"], notifier=am.url, evaluation_interval=5)
#
# Each is Debian's binary on a free loopback port with its data in a fresh temporary directory, skipped
# with a reason when the binary is missing and FAILING under PTMON_REQUIRE_PROMETHEUS=1 (the *_bin
# fixtures above), and killed at teardown. VictoriaMetrics gets only its storage path and listen address
# besides the config (``flags=`` adds more): the shipped config must work as a user starts it.


class VictoriaMetricsServer(_QueryAPI):
    """Single-node VictoriaMetrics scraping ``config_path`` (``-promscrape.config``), queried like Prometheus."""

    name = "victoria-metrics"
    _ready_path = "/health"

    def __init__(self, *, binary: str, directory: Path, config_path: Path, flags: Sequence[str] = ()) -> None:
        super().__init__(binary=binary, directory=directory)
        self.config_path = Path(config_path)
        self.flags = tuple(flags)

    def _argv(self, port: int) -> list[str]:
        return [f"-promscrape.config={self.config_path}", f"-storageDataPath={self.directory / 'data'}",
                f"-httpListenAddr=127.0.0.1:{port}", *self.flags]


class VMAlertServer(_QueryAPI):
    """vmalert evaluating rule files against ``datasource``, writing recorded series back to it.

    ``notifier``: an Alertmanager URL; vmalert refuses to start alerting
    rules without one, so by default it is a closed loopback port (the
    alerts still show in vmalert's own ``/api/v1/alerts``).
    """

    name = "vmalert"
    _ready_path = "/health"

    def __init__(self, *, binary: str, directory: Path, datasource: str, rule_files: Sequence[Path],
                 notifier: str | None, evaluation_interval: float, flags: Sequence[str] = ()) -> None:
        super().__init__(binary=binary, directory=directory)
        self.datasource = datasource
        self.rule_files = [Path(p) for p in rule_files]
        self.notifier = notifier or f"http://127.0.0.1:{_free_port()}"
        self.evaluation_interval = evaluation_interval
        self.flags = tuple(flags)

    def _argv(self, port: int) -> list[str]:
        # nocache=1 on every query, as the shipped victoria-metrics.yml says to run it: VictoriaMetrics
        # otherwise answers a query within -search.latencyOffset (30 s) of now as of 30 s ago, and every
        # alert would fire half a minute late. vmalert keeps a query string of the datasource URL.
        return [f"-datasource.url={self.datasource}/?nocache=1", f"-remoteWrite.url={self.datasource}",
                f"-remoteRead.url={self.datasource}", f"-notifier.url={self.notifier}",
                *(f"-rule={path}" for path in self.rule_files),
                f"-evaluationInterval={int(self.evaluation_interval * 1000)}ms",
                f"-httpListenAddr=127.0.0.1:{port}", *self.flags]


class PushgatewayServer(_ServerProcess):
    """A Pushgateway without a persistence file: a killed one forgets its groups, as one without a volume
    does (Debian's default file, /var/lib/prometheus/pushgateway.data, would carry groups between tests)."""

    name = "pushgateway"

    def _argv(self, port: int) -> list[str]:
        return [f"--web.listen-address=127.0.0.1:{port}", "--persistence.file=", "--log.level=warn"]

    @property
    def address(self) -> str:
        """``host:port``, as ``EvalExporter.push(gateway=...)`` and a scrape config's targets take it."""
        return f"127.0.0.1:{self.port}"

    def groups(self) -> list[dict[str, Any]]:
        """The groups it holds (its ``/api/v1/metrics``): each with its grouping ``labels``."""
        body = httpx.get(f"{self.url}/api/v1/metrics", timeout=10.0).json()
        return list(body.get("data") or [])


class AlertmanagerServer(_ServerProcess):
    """An Alertmanager with one receiver that sends nowhere, clustering off; ``alerts()`` reads its API."""

    name = "alertmanager"

    def __init__(self, *, binary: str, directory: Path) -> None:
        super().__init__(binary=binary, directory=directory)
        self.config_path = directory / "alertmanager.yml"
        self.config_path.write_text(json.dumps({
            "route": {"receiver": "nowhere", "group_wait": "1s", "group_interval": "1s", "repeat_interval": "1h"},
            "receivers": [{"name": "nowhere"}]}, indent=2))

    def _argv(self, port: int) -> list[str]:
        return [f"--config.file={self.config_path}", f"--storage.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=warn"]

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert it holds (API v2): each with ``labels``, ``annotations``, ``startsAt``, ``status``."""
        response = httpx.get(f"{self.url}/api/v2/alerts", timeout=10.0)
        response.raise_for_status()
        return list(response.json())


@pytest.fixture
def victoria_metrics_on_config(victoria_metrics_bin: str, tmp_path_factory: pytest.TempPathFactory
                               ) -> Iterator[Callable[..., VictoriaMetricsServer]]:
    """Factory: ``victoria_metrics_on_config(config_path, flags=())`` -> a ready VictoriaMetricsServer."""

    def make(config_path: Path, *, flags: Sequence[str] = ()) -> VictoriaMetricsServer:
        return VictoriaMetricsServer(binary=victoria_metrics_bin, directory=tmp_path_factory.mktemp("vm"),
                                     config_path=config_path, flags=flags)

    with _started_servers(make) as start:
        yield start


@pytest.fixture
def vmalert_server(vmalert_bin: str, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[Callable[..., VMAlertServer]]:
    """Factory: ``vmalert_server(datasource_url, rule_files, notifier=None, evaluation_interval=5.0)``."""

    def make(datasource: str, rule_files: Sequence[Path], *, notifier: str | None = None,
             evaluation_interval: float = 5.0, flags: Sequence[str] = ()) -> VMAlertServer:
        return VMAlertServer(binary=vmalert_bin, directory=tmp_path_factory.mktemp("vmalert"),
                             datasource=datasource, rule_files=rule_files, notifier=notifier,
                             evaluation_interval=evaluation_interval, flags=flags)

    with _started_servers(make) as start:
        yield start


@pytest.fixture
def pushgateway_server(pushgateway_bin: str, tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[Callable[[], PushgatewayServer]]:
    """Factory: ``pushgateway_server()`` -> a ready PushgatewayServer."""
    with _started_servers(lambda: PushgatewayServer(
            binary=pushgateway_bin, directory=tmp_path_factory.mktemp("pushgateway"))) as start:
        yield start


@pytest.fixture
def alertmanager_server(alertmanager_bin: str, tmp_path_factory: pytest.TempPathFactory
                        ) -> Iterator[Callable[[], AlertmanagerServer]]:
    """Factory: ``alertmanager_server()`` -> a ready AlertmanagerServer."""
    with _started_servers(lambda: AlertmanagerServer(
            binary=alertmanager_bin, directory=tmp_path_factory.mktemp("alertmanager"))) as start:
        yield start
