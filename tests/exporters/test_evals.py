"""EvalExporter: recording, and pushing to a (real, loopback) Pushgateway-shaped HTTP peer."""

from __future__ import annotations

import base64
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ptmon.exporters import EvalExporter
from ptmon.exporters.schema import EVAL_POLICY_VERSION, EVAL_SAMPLES, EVAL_SCORE, GPU_SECONDS, RUN_INFO
from tests.exporters.helpers import FakeClock, errors, exporter, value


def make(**kwargs: object) -> EvalExporter:
    return exporter(EvalExporter, **kwargs)


def test_record_eval_sets_score_version_and_samples() -> None:
    evals = make()
    evals.record_eval(benchmark="gsm8k", score=0.71, policy_version=7, samples=1319)
    evals.record_eval(benchmark="math500", score=0.4)
    evals.record_eval(benchmark="gsm8k", score=0.74, policy_version=9, samples=1319)
    reg = evals.registry
    assert value(reg, EVAL_SCORE, benchmark="gsm8k") == 0.74
    assert value(reg, EVAL_POLICY_VERSION, benchmark="gsm8k") == 9
    assert value(reg, EVAL_SAMPLES, benchmark="gsm8k") == 1319
    assert value(reg, EVAL_SCORE, benchmark="math500") == 0.4
    assert errors(reg, "record_eval") == 0


@pytest.mark.parametrize("bad", [{"benchmark": ""}, {"benchmark": None}, {"score": math.nan}, {"score": "0.7"}])
def test_bad_benchmark_or_score_drops_the_call(bad: dict) -> None:
    evals = make()
    evals.record_eval(**{"benchmark": "gsm8k", "score": 0.7, "policy_version": 3, **bad})
    assert value(evals.registry, EVAL_SCORE, benchmark="gsm8k") is None
    assert value(evals.registry, EVAL_POLICY_VERSION, benchmark="gsm8k") is None
    assert errors(evals.registry, "record_eval") == 1


def test_bad_version_or_samples_keep_the_score() -> None:
    evals = make()
    evals.record_eval(benchmark="gsm8k", score=0.7, policy_version=-2, samples="many")  # type: ignore[arg-type]
    assert value(evals.registry, EVAL_SCORE, benchmark="gsm8k") == 0.7
    assert value(evals.registry, EVAL_SAMPLES, benchmark="gsm8k") == 0
    assert errors(evals.registry, "record_eval") == 1


class _Gateway(BaseHTTPRequestHandler):
    """Records each request the way a Pushgateway would receive it."""

    received: list[tuple[str, str, dict[str, str], bytes]]
    status = 200

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received.append(("PUT", self.path, dict(self.headers), body))
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def gateway() -> Iterator[tuple[str, type[_Gateway]]]:
    handler = type("Gateway", (_Gateway,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_push_puts_the_registry_to_the_gateway(gateway: tuple[str, type[_Gateway]]) -> None:
    address, handler = gateway
    clock = FakeClock()
    evals = make(clock=clock, gpus=2)
    evals.record_eval(benchmark="gsm8k", score=0.71, policy_version=7, samples=1319)
    clock.advance(30)
    assert evals.push(gateway=address, job="eval", grouping_key={"run": "r1"}) is True
    method, path, headers, body = handler.received[0]
    assert (method, path) == ("PUT", "/metrics/job/eval/run/r1")
    assert "Authorization" not in headers
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(body.decode()) for s in f.samples}
    assert samples[(EVAL_SCORE.name, (("benchmark", "gsm8k"),))] == 0.71
    assert samples[(EVAL_SAMPLES.name, (("benchmark", "gsm8k"),))] == 1319
    assert samples[(GPU_SECONDS.name, (("role", "eval"),))] == 60.0  # cost computed at push time
    assert samples[(RUN_INFO.name, (("algorithm", "grpo"), ("model", "qwen3-8b"), ("role", "eval"),
                                    ("run", "r1")))] == 1


def test_push_with_basic_auth(gateway: tuple[str, type[_Gateway]]) -> None:
    address, handler = gateway
    evals = make()
    evals.record_eval(benchmark="gsm8k", score=0.5)
    assert evals.push(gateway=f"http://{address}", job="eval", username="ptmon", password="s3cret") is True
    _, _, headers, _ = handler.received[0]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"ptmon:s3cret").decode()


def test_push_failure_is_returned_and_counted_not_raised(gateway: tuple[str, type[_Gateway]]) -> None:
    address, handler = gateway
    handler.status = 500
    evals = make()
    assert evals.push(gateway=address, job="eval") is False
    assert errors(evals.registry, "push") == 1


def test_push_to_a_closed_port_is_returned_and_counted() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    evals = make()
    assert evals.push(gateway=f"127.0.0.1:{port}", job="eval", timeout=2.0) is False
    assert errors(evals.registry, "push") == 1


def test_a_benchmark_that_is_not_valid_unicode_is_dropped_so_the_endpoint_keeps_serving() -> None:
    from prometheus_client import generate_latest

    evals = make()
    evals.record_eval(benchmark="gsm8k\udcff", score=0.7)
    evals.record_eval(benchmark="gsm8k", score=0.71)
    assert errors(evals.registry, "record_eval") == 1
    assert b'posttrain_eval_score{benchmark="gsm8k"} 0.71' in generate_latest(evals.registry)


def test_a_benchmark_name_over_the_label_limit_is_dropped_and_counted() -> None:
    from prometheus_client import generate_latest

    from ptmon.exporters.schema import MAX_LABEL_VALUE_BYTES
    from ptmon.monitor.parse import ExpositionParser

    evals = make()
    evals.record_eval(benchmark="b" * (MAX_LABEL_VALUE_BYTES + 1), score=0.7)
    evals.record_eval(benchmark="gsm8k", score=0.71)
    assert errors(evals.registry, "record_eval") == 1
    assert [s.labels for s in ExpositionParser().parse(generate_latest(evals.registry).decode())
            if "benchmark" in s.labels] == [{"benchmark": "gsm8k"}] * 3
