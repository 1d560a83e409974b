"""A metrics file's cost to read, next to the same run served by a bridge and scraped.

Run: ``python -m tests.bench.bench_files [--steps 2000] [--interval 1] [--repeat 3]``

A prime-rl-shaped ``metrics.jsonl`` of ``--steps`` steps (five dicts a step,
as its trainer and orchestrator write them; tests/exporters/bridges/samples.py),
one step every 10 s of its own time, is:

1. baseline: the same dicts given to a ``MetricsBridge`` in memory, its
   registry rendered and parsed once per step's interval (what a bridge
   served over HTTP and scraped at that interval costs, sockets aside);
2. the file target's path: ``Tail`` + ``BridgedLines`` (decode, bridge,
   read-outs at the lines' own times), from the file on disk.

Printed: seconds for each, the ratio, MiB/s and lines/s of the file path.
Side by side in one process; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

T0 = 1_800_000_000.0


def _write(path: Path, steps: int) -> int:
    from tests.exporters.bridges import samples

    lines = 0
    with path.open("w") as f:
        for step in range(1, steps + 1):
            for i, (metrics, _) in enumerate(samples.prime_rl(step)):
                f.write(json.dumps({**metrics, "step": step, "time": T0 + step * 10 + i * 0.01}) + "\n")
                lines += 1
    return lines


def _baseline(steps: int) -> float:
    from prometheus_client.exposition import generate_latest

    from ptmon.exporters.bridges import MetricsBridge
    from ptmon.exporters.colocated import Colocated
    from ptmon.monitor.parse import ExpositionParser
    from tests.exporters.bridges import samples

    loop = Colocated(run="bench", gpus=0)
    bridge = MetricsBridge("prime-rl", trainer=loop.trainer, rollouts=loop.rollouts, evals=loop.evals)
    parser = ExpositionParser()
    dicts = [[m for m, _ in samples.prime_rl(step)] for step in range(1, steps + 1)]
    start = time.perf_counter()
    for step, batch in enumerate(dicts, 1):
        for metrics in batch:
            bridge.log(metrics, step=step)
        parser.parse(generate_latest(bridge.registry).decode(), openmetrics=False)
    return time.perf_counter() - start


def _file_path(path: Path, steps: int, interval: float) -> float:
    from ptmon.monitor.sources.bridged import BridgedLines
    from ptmon.monitor.sources.tail import Tail

    tail = Tail(str(path), max_bytes=2**20)
    lines = BridgedLines(path=str(path), framework=None, interval_s=interval, history_s=3600.0 * 24 * 365)
    now = T0 + steps * 10 + 5
    start = time.perf_counter()
    while True:
        read = tail.read()
        lines.consume(read, now=now)
        if not read.more:
            break
    tail.close()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metrics.jsonl"
        n_lines = _write(path, args.steps)
        size = os.path.getsize(path)
        base = min(_baseline(args.steps) for _ in range(args.repeat))
        files = min(_file_path(path, args.steps, args.interval) for _ in range(args.repeat))
    print(f"{args.steps} steps, {n_lines} lines, {size / 2**20:.2f} MiB")
    print(f"baseline (bridge in memory, one scrape a step): {base:.3f} s")
    print(f"file target (tail, decode, bridge, read-outs):  {files:.3f} s  = {files / base:.2f}x baseline")
    print(f"file target: {size / 2**20 / files:.1f} MiB/s, {n_lines / files:,.0f} lines/s")


if __name__ == "__main__":
    main()
