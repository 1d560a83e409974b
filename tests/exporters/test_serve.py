"""Serving over real sockets: HTTP, TLS, port errors, promtool, multiprocess pools, a real Prometheus."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import mark_process_dead
from prometheus_client.parser import text_string_to_metric_families

from ptmon.exporters import RolloutExporter, TrainerExporter, multiprocess_registry, serve
from ptmon.exporters.schema import (
    EXPORTER_ERRORS,
    GPU_HOUR_PRICE,
    GPU_SECONDS,
    GPUS,
    POLICY_VERSION,
    ROLLOUT_POLICY_VERSION,
    ROLLOUT_REWARD,
    ROLLOUT_SECONDS,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    RUN_INFO,
    TRAINER_STEPS,
    TRAINER_TOKENS,
    WEIGHT_SYNC_BYTES,
    WEIGHT_SYNC_SECONDS,
)
from tests.exporters.helpers import FakeClock

REPO = Path(__file__).resolve().parents[2]


def scrape(url: str, **kwargs: object) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Fetch over a real socket and parse with prometheus_client's parser: {(name, labels): value}."""
    response = httpx.get(url, timeout=5.0, **kwargs)  # type: ignore[arg-type]
    response.raise_for_status()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def busy_trainer(clock: FakeClock | None = None) -> TrainerExporter:
    clock = clock or FakeClock()
    trainer = TrainerExporter(run="r1", model="qwen3-8b", algorithm="grpo", gpus=8, gpu_hour_price=3.0, clock=clock)
    for _ in range(3):
        with trainer.step():
            clock.advance(2.0)
    trainer.record(tokens=4096, loss=0.7, kl=0.01, entropy=1.2, grad_norm=0.9, learning_rate=1e-6)
    with trainer.weight_sync(version=8, nbytes=16e9):
        clock.advance(1.5)
    return trainer


def busy_rollout(clock: FakeClock | None = None) -> RolloutExporter:
    rollout = RolloutExporter(run="r1", model="qwen3-8b", algorithm="grpo", gpus=2, gpu_hour_price=3.0,
                              clock=clock or FakeClock())
    for i in range(10):
        rollout.record_rollout(env="math", tokens=812, reward=1.0, seconds=3.2, policy_version=7,
                               outcome="ok" if i < 9 else "truncated")
    return rollout


def test_served_exporter_over_http_parses_to_what_was_recorded() -> None:
    trainer = busy_trainer()
    with serve(trainer.registry, port=0) as server:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}/metrics"
        samples = scrape(server.url)
    assert samples[(TRAINER_STEPS.name, ())] == 3
    assert samples[(TRAINER_TOKENS.name, ())] == 4096
    assert samples[(WEIGHT_SYNC_BYTES.name, ())] == 16e9
    assert samples[(WEIGHT_SYNC_SECONDS.sum, ())] == 1.5
    assert samples[(POLICY_VERSION.name, ())] == 8
    assert samples[(GPU_SECONDS.name, (("role", "trainer"),))] == 8 * 7.5
    assert samples[(GPU_HOUR_PRICE.name, (("role", "trainer"),))] == 3.0
    assert samples[(RUN_INFO.name, (("algorithm", "grpo"), ("model", "qwen3-8b"), ("role", "trainer"),
                                    ("run", "r1")))] == 1


def test_close_frees_the_port() -> None:
    server = serve(CollectorRegistry(), port=0)
    port = server.port
    server.close()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0)
    serve(CollectorRegistry(), port=port).close()  # and it can be bound again


def test_port_in_use_names_the_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"port {port} is already in use"):
            serve(CollectorRegistry(), port=port)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"port": -1}, ValueError, "port"),
    ({"port": 70000}, ValueError, "port"),
    ({"certfile": "cert.pem"}, ValueError, "keyfile"),
    ({"certfile": "/nonexistent/cert.pem", "keyfile": "/nonexistent/key.pem"}, FileNotFoundError, "cert.pem"),
])
def test_bad_serve_configuration_is_refused_clearly(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        serve(CollectorRegistry(), **kwargs)


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[str, str]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl CLI not found: cannot make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


@pytest.mark.slow  # starts a process
def test_tls_serving(self_signed: tuple[str, str]) -> None:
    cert, key = self_signed
    trainer = busy_trainer()
    with serve(trainer.registry, port=0, certfile=cert, keyfile=key) as server:
        assert server.url.startswith("https://127.0.0.1:")
        verified = ssl.create_default_context(cafile=cert)
        samples = scrape(server.url, verify=verified)
        assert samples[(TRAINER_STEPS.name, ())] == 3
        with pytest.raises(httpx.HTTPError):  # plain HTTP to the TLS port gets no metrics
            httpx.get(server.url.replace("https://", "http://"), timeout=2.0).raise_for_status()
        with pytest.raises(httpx.ConnectError):  # and an unverified certificate is refused by a default client
            httpx.get(server.url, timeout=2.0)


@pytest.mark.prometheus
def test_output_passes_promtool_check_metrics(promtool_bin: str) -> None:
    trainer = busy_trainer()
    rollout = RolloutExporter(run="r1", model="m", algorithm="grpo", gpus=2, gpu_hour_price=3.0,
                              registry=trainer.registry)
    rollout.record_rollout(env="math", tokens=812, reward=1.0, seconds=3.2, policy_version=7)
    rollout.record_rollout(env="math", tokens=-1)  # an error series with a non-zero count
    with serve(trainer.registry, port=0) as server:
        text = httpx.get(server.url, timeout=5.0).text
    assert "posttrain_rollouts_total" in text and "posttrain_loss" in text
    checked = subprocess.run([promtool_bin, "check", "metrics"], input=text, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip() == "" and checked.stderr.strip() == "", checked.stdout + checked.stderr


@pytest.mark.slow
def test_multiprocess_pool_aggregates_real_child_processes(tmp_path: Path) -> None:
    directory = tmp_path / "multiproc"
    directory.mkdir()
    children, calls = 4, 500
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.exporters.pool_worker", str(i), str(calls)],
                              cwd=REPO, env=env) for i in range(children)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    clock = FakeClock()
    registry = multiprocess_registry(run="r1", model="qwen3-8b", algorithm="grpo", gpus=8, gpu_hour_price=3.0,
                                     path=str(directory), clock=clock)
    clock.advance(10)
    with serve(registry, port=0) as server:
        samples = scrape(server.url)
        total = children * calls
        assert samples[(ROLLOUTS.name, (("env", "math"), ("outcome", "ok")))] == total + children
        assert samples[(ROLLOUT_TOKENS.name, (("env", "math"),))] == 10 * total
        assert samples[(ROLLOUT_SECONDS.count, (("env", "math"),))] == total
        assert samples[(ROLLOUT_REWARD.bucket, (("env", "math"), ("le", "0.5")))] == total
        assert samples[(EXPORTER_ERRORS.name, (("call", "record_rollout"),))] == children
        # livemin: the pool reports its stalest live worker (versions 5..8 -> 5).
        assert samples[(ROLLOUT_POLICY_VERSION.name, ())] == 5
        # Run info and cost come from the parent, once, for the whole pool; the children's
        # collect-time cost collectors are invisible in multiprocess mode.
        assert [k for k in samples if k[0] == GPUS.name] == [(GPUS.name, (("role", "rollout"),))]
        assert samples[(GPUS.name, (("role", "rollout"),))] == 8
        assert samples[(GPU_SECONDS.name, (("role", "rollout"),))] == 80.0
        assert samples[(RUN_INFO.name, (("algorithm", "grpo"), ("model", "qwen3-8b"), ("role", "rollout"),
                                        ("run", "r1")))] == 1
        for proc in procs:  # the pool's parent does this bookkeeping when a worker exits
            mark_process_dead(proc.pid, path=str(directory))
        after = scrape(server.url)
    assert (ROLLOUT_POLICY_VERSION.name, ()) not in after  # dead workers no longer count as live
    assert after[(ROLLOUTS.name, (("env", "math"), ("outcome", "ok")))] == total + children  # counts survive


def test_multiprocess_registry_needs_a_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    with pytest.raises(ValueError, match="PROMETHEUS_MULTIPROC_DIR"):
        multiprocess_registry(run="r", model="m", algorithm="a", gpus=1, gpu_hour_price=3.0)
    with pytest.raises(ValueError, match="PROMETHEUS_MULTIPROC_DIR"):
        multiprocess_registry(run="r", model="m", algorithm="a", gpus=1, gpu_hour_price=3.0,
                              path=str(tmp_path / "missing"))


@pytest.mark.prometheus
def test_real_prometheus_scrapes_trainer_and_rollout(prometheus_server) -> None:  # noqa: ANN001
    trainer_clock = FakeClock()
    trainer, rollout = busy_trainer(trainer_clock), busy_rollout()
    trainer_clock.advance(3600 - 7.5)  # 8 GPUs x 1 h exactly, whenever Prometheus scrapes
    with serve(trainer.registry, port=0) as trainer_srv, serve(rollout.registry, port=0) as rollout_srv:
        prom = prometheus_server({"trainer": [trainer_srv.url], "rollout": [rollout_srv.url]},
                                 scrape_interval=0.5)
        up = prom.wait_for("up", lambda r: len(r) == 2 and all(x["value"][1] == "1" for x in r))
        assert {x["metric"]["job"] for x in up} == {"trainer", "rollout"}

        def single(promql: str) -> float:
            result = prom.wait_for(promql, lambda r: len(r) == 1)
            return float(result[0]["value"][1])

        assert single(TRAINER_STEPS.name) == 3
        assert single(TRAINER_TOKENS.name) == 4096
        assert single(WEIGHT_SYNC_BYTES.name) == 16e9
        assert single(f'{GPU_SECONDS.name}{{role="trainer"}}') == 8 * 3600
        assert single(f'{ROLLOUTS.name}{{env="math",outcome="ok"}}') == 9
        assert single(f'{ROLLOUTS.name}{{env="math",outcome="truncated"}}') == 1
        assert single(f'{ROLLOUT_TOKENS.name}{{env="math"}}') == 8120
        assert single(ROLLOUT_POLICY_VERSION.name) == 7
        # The run identity is joinable in PromQL, as the monitor's Prometheus source will do.
        info = prom.wait_for(f'{RUN_INFO.name}{{role="rollout"}}', lambda r: len(r) == 1)
        assert info[0]["metric"]["run"] == "r1" and info[0]["metric"]["algorithm"] == "grpo"
        # And a value recorded after Prometheus started shows up on a later scrape.
        rollout.record_rollout(env="math", tokens=1, outcome="ok")
        prom.wait_for(f'{ROLLOUTS.name}{{env="math",outcome="ok"}}', lambda r: r and r[0]["value"][1] == "10")
