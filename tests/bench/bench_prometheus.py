"""Reading a fleet through Prometheus against scraping it directly: CPU per collection round.

Run: ``/work/venv/bin/python -m tests.bench.bench_prometheus [--workers 64] [--rounds 8] [--points 1 3]``

Both paths store the same samples of the same fleet (real ``RolloutExporter``
registries rendered by ``generate_latest``, the collectors moving on between
rounds). Direct: each target's exposition parsed by its warm
``ExpositionParser`` and ingested. Through Prometheus: the one JSON answer a
poll gets (every series with its job/instance labels and ``--points`` raw
samples, as an overlapping range returns them) decoded, split by target and
ingested by ``PrometheusSource``. No sockets on either side: this is the
monitor's own CPU, and the ratio is the figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from typing import Any

from prometheus_client import generate_latest

from ptmon.exporters.rollout import RolloutExporter
from ptmon.monitor import promql
from ptmon.monitor.parse import ExpositionParser, parse
from ptmon.monitor.settings import Target
from ptmon.monitor.sources.prometheus import UNREAD, PrometheusSource, parse_matrix, parse_vector
from ptmon.monitor.sources.prometheus_eval import read_evaluation
from ptmon.monitor.store import Store

__all__ = ["main"]

ENVS = ("math", "code")


def _rounds(workers: int, rounds: int, points: int) -> tuple[list[list[str]], list[bytes], list[bytes]]:
    """Per round: the text of every target, the Prometheus answer holding the same samples, and the
    answer to the selector ptmon sends since server-side evaluation (the series nothing reads left out)."""
    fleet = [RolloutExporter(run="r", model="m", algorithm="grpo", gpus=4, gpu_hour_price=2.0)
             for _ in range(workers)]
    texts: list[list[str]] = []
    answers: list[bytes] = []
    read: list[bytes] = []
    t0 = 1_700_000_000.0
    history: list[dict[tuple[str, str, tuple], list]] = []
    for r in range(rounds + points):
        for i, w in enumerate(fleet):
            for k in range(1 + (i + r) % 3):
                w.record_rollout(env=ENVS[k % 2], tokens=100 + k, reward=0.5, seconds=2.0 + k)
        bodies = [generate_latest(w.registry).decode() for w in fleet]
        by_series: dict[tuple[str, str, tuple], list] = {}
        for i, body in enumerate(bodies):
            for s in parse(body):
                by_series[(f"127.0.0.1:{9000 + i}", s.name, tuple(sorted(s.labels.items())))] = [
                    t0 + r, repr(s.value)]
        history.append(by_series)
        if r >= points - 1:
            texts.append(bodies)
            result: list[dict[str, Any]] = []
            for (instance, name, labels), _ in by_series.items():
                values = [h[(instance, name, labels)] for h in history[-points:] if (instance, name, labels) in h]
                metric = {"__name__": name, **dict(labels), "job": "rollout", "instance": instance}
                result.append({"metric": metric, "values": values})
            for i in range(workers):
                result.append({"metric": {"__name__": "up", "job": "rollout", "instance": f"127.0.0.1:{9000 + i}"},
                               "values": [[t0 + r - p, "1"] for p in reversed(range(points))]})
            for out, items in ((answers, result), (read, [x for x in result if x["metric"]["__name__"] not in UNREAD])):
                out.append(json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                                     "result": items}}).encode())
    return texts[:rounds], answers[:rounds], read[:rounds]


def _evaluation(workers: int) -> tuple[bytes, bytes]:
    """The server-side answers of one poll: per-target rates and GPUs, the fleet numbers, a 120-point chart."""
    items: list[dict[str, Any]] = []
    for i in range(workers):
        target = {"job": "rollout", "instance": f"127.0.0.1:{9000 + i}"}
        items += [{"metric": {promql.Q_LABEL: "rollouts", **target}, "value": [0, "4.5"]},
                  {"metric": {promql.Q_LABEL: "rollout_tokens", **target}, "value": [0, "450.5"]},
                  {"metric": {promql.Q_LABEL: "gpus", "role": "rollout", **target}, "value": [0, "4"]}]
    items += [{"metric": {promql.Q_LABEL: key}, "value": [0, "1.25"]} for key in promql.instant_queries(300)
              if key not in ("rollouts", "rollout_tokens", "gpus", "engine_tokens")]
    vector = json.dumps({"status": "success", "data": {"resultType": "vector", "result": items}}).encode()
    chart = [{"metric": {}, "values": [[1_700_000_000 + 2.5 * k, "288.0"] for k in range(120)]}]
    matrix = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": chart}}).encode()
    return vector, matrix


def _direct(texts: list[list[str]]) -> float:
    store = Store()
    parsers = [ExpositionParser() for _ in texts[0]]
    best = float("inf")
    for r, bodies in enumerate(texts):
        t = time.perf_counter()
        for i, body in enumerate(bodies):
            store.ingest(f"127.0.0.1:{9000 + i}", 1_700_000_000.0 + r, parsers[i].parse(body))
        if r:  # the first round fills caches on both sides
            best = min(best, time.perf_counter() - t)
    return best


def _via_prometheus(answers: list[bytes]) -> float:
    src = PrometheusSource(Target(name="p", url="http://p:9090"), store=Store())
    best = float("inf")
    for r, body in enumerate(answers):
        t = time.perf_counter()
        src._targets.ingest(parse_matrix(body))  # noqa: SLF001 - the poll minus the HTTP exchange
        if r:
            best = min(best, time.perf_counter() - t)
    return best


def _via_prometheus_now(answers: list[bytes], evaluation: tuple[bytes, bytes]) -> float:
    """A poll as ptmon makes it now: the raw samples it reads, plus the server-side answers."""
    src = PrometheusSource(Target(name="p", url="http://p:9090"), store=Store())
    vector, matrix = evaluation
    best = float("inf")
    for r, body in enumerate(answers):
        t = time.perf_counter()
        src._targets.ingest(parse_matrix(body))  # noqa: SLF001 - the poll minus the HTTP exchanges
        read_evaluation(at=1.0, window=300.0, range_s=300.0, vector=parse_vector(vector), matrix=parse_matrix(matrix),
                        name_of=src._targets.name_of)  # noqa: SLF001
        if r:
            best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--points", type=int, nargs="+", default=[1, 3])
    args = ap.parse_args(argv)
    gc.collect()
    for points in args.points:
        texts, answers, read = _rounds(args.workers, args.rounds, points)
        evaluation = _evaluation(args.workers)
        # Interleave the two, three times, and keep each one's best round: a shared, loaded machine
        # slows whichever runs during a spike, not one side systematically.
        direct = min(_direct(texts) for _ in range(3))
        via = min(_via_prometheus(answers) for _ in range(3))
        now = min(_via_prometheus_now(read, evaluation) for _ in range(3))
        text_bytes = sum(len(b.encode()) for b in texts[-1])
        print(f"{args.workers} targets, {points} point(s) per series per poll: "
              f"direct {direct * 1e3:.1f} ms/round ({text_bytes / 1e6:.2f} MB of text), "
              f"via Prometheus {via * 1e3:.1f} ms/poll ({len(answers[-1]) / 1e6:.2f} MB of JSON): "
              f"ratio {via / direct:.2f}x; as polled now (unread series left out, server-side answers "
              f"{sum(map(len, evaluation)) / 1e3:.0f} kB) {now * 1e3:.1f} ms ({len(read[-1]) / 1e6:.2f} MB): "
              f"ratio {now / direct:.2f}x")


if __name__ == "__main__":
    main()
