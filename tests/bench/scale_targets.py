"""Synthetic scrape targets for tests/bench/bench_scale.py: N rollout workers and a trainer, one process.

Every system the benchmark compares scrapes these same pages, so the
targets must be cheap to serve (this process shares the 2 cores with the
systems measured) and count what is asked of them, neutrally across systems.

A worker's page is about 1,000 samples, shaped as a real one is: ptmon's
``RolloutExporter`` series for one worker (four envs) and prometheus_client's
process/platform/GC collectors, rendered once by ``generate_latest``, plus a
vLLM engine block (the V0 capture in the shared corpus, histograms included)
repeated for four models on two engines each (``model_name`` and ``engine``
labels). The trainer's page is a ``TrainerExporter``'s. Each page is cut
once into a template: on every second (a tick), every counter-like sample
(``_total``, ``_count``, ``_sum``, ``_bucket``) moves on by its own rate, a
histogram's buckets and count by the same rate so they stay cumulative;
gauges hold. Worker i serves step tick + i, so each step is rendered once
and served by every worker in turn: about one render a second in all.

The server is a minimal HTTP/1.1 keep-alive responder on one loopback port
per target (Prometheus and VictoriaMetrics name targets by host:port), run
on an asyncio loop in a thread; ``scrapes()`` is each target's request count.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector, generate_latest

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.trainer import TrainerExporter

__all__ = ["Page", "TargetServer", "trainer_page", "worker_page"]

VLLM_CAPTURE = Path("/work/shared/corpus/third-party/vllm_v0_opt125m_datadog_fixture.prom")
VLLM_MODEL = 'model_name="facebook/opt-125m"'
VLLM_VARIANTS = tuple(f'model_name="org/model-{m}",engine="{e}"' for m in range(4) for e in range(2))
ENVS = ("math", "code", "tool", "chat")
_SAMPLE = re.compile(r"^(?P<series>(?P<name>[^{\s]+)(?:\{(?P<labels>.*)\})?)\s+(?P<value>\S+)(?P<ts>\s+\S+)?$")
_LE = re.compile(r',?le="[^"]*"')
_HIST = ("_bucket", "_count", "_sum")


def _collectors(registry: CollectorRegistry) -> CollectorRegistry:
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def _vllm_block() -> str:
    """The capture's vLLM families, each with its samples for every (model, engine) variant."""
    if not VLLM_CAPTURE.exists():
        return ""
    families: list[tuple[list[str], list[str]]] = []
    for line in VLLM_CAPTURE.read_text().splitlines():
        if not line.strip() or line.startswith(("# source", "# note")):
            continue
        if line.startswith("# HELP "):
            families.append(([line], []))
        elif families and line.startswith("#"):
            families[-1][0].append(line)
        elif families:
            families[-1][1].append(line)
    out: list[str] = []
    for comments, samples in families:
        if not samples or not samples[0].startswith("vllm:"):
            continue  # the python_/process_ families come from this page's own collectors
        out += comments
        out += [s.replace(VLLM_MODEL, v) for v in VLLM_VARIANTS for s in samples]
    return "\n".join(out) + "\n"


def worker_page() -> str:
    """One rollout worker's page (~1,000 samples), before its counters move."""
    registry = _collectors(CollectorRegistry())
    worker = RolloutExporter(run="scale", model="org/model-0", algorithm="grpo", gpus=4, gpu_hour_price=2.0,
                             registry=registry)
    for k, env in enumerate(ENVS):
        worker.record_rollout(env=env, tokens=200 + k, reward=0.25 * k, seconds=1.5 + k)
    worker.set_policy_version(3)
    return generate_latest(registry).decode() + _vllm_block()


def trainer_page() -> str:
    """The trainer's page, before its counters move."""
    registry = _collectors(CollectorRegistry())
    trainer = TrainerExporter(run="scale", model="org/model-0", algorithm="grpo", gpus=8, gpu_hour_price=2.0,
                              registry=registry)
    trainer.record_step(seconds=1.0, tokens=4096)
    trainer.record_weight_sync(seconds=2.0, nbytes=1e9, version=3)
    trainer.publish_policy(3)
    return generate_latest(registry).decode()


@dataclass
class Page:
    """A page cut into text between values: ``render(tick)`` is the page with every counter moved ``tick`` steps."""

    parts: list[str] = field(default_factory=list)  # text before each value; parts[-1] after the last
    bases: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)

    @classmethod
    def of(cls, text: str) -> Page:
        page, pending = cls(), []
        for line in text.splitlines():
            m = _SAMPLE.match(line)
            if line.startswith("#") or m is None:
                pending.append(line + "\n")
                continue
            page.parts.append("".join(pending) + m["series"] + " ")
            pending = [(m["ts"] or "") + "\n"]
            page.bases.append(float(m["value"]))
            page.rates.append(_rate(m["name"], m["labels"] or ""))
        page.parts.append("".join(pending))
        return page

    @property
    def samples(self) -> int:
        return len(self.bases)

    def render(self, tick: int) -> bytes:
        parts, out = self.parts, []
        for i, (base, rate) in enumerate(zip(self.bases, self.rates, strict=True)):
            out.append(parts[i])
            out.append(repr(base + rate * tick) if rate else repr(base))
        out.append(parts[-1])
        return "".join(out).encode()


def _rate(name: str, labels: str) -> float:
    """How far a sample moves per tick: counters by a rate of their own; a histogram's series together."""
    if name.endswith(_HIST):
        stem = name.rsplit("_", 1)[0] + "{" + _LE.sub("", labels) + "}"
        rate = 1.0 + zlib.crc32(stem.encode()) % 4
        return rate * 0.5 if name.endswith("_sum") else rate
    if name.endswith("_total"):
        return 1.0 + zlib.crc32(f"{name}{labels}".encode()) % 5
    return 0.0


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %d\r\n\r\n"
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"


def _tag(head: bytes) -> str:
    """The ``by`` of a request line ``GET /metrics?by=TAG HTTP/1.1``; "" without one."""
    line = head.split(b"\r\n", 1)[0].rsplit(b" ", 1)[0]
    return line.partition(b"?by=")[2].decode("ascii", "replace")


class TargetServer:
    """``workers`` rollout-worker targets and one trainer target on loopback ports, served from a thread.

    ``urls`` lists the trainer first; ``samples[i]`` is target i's samples per
    scrape and ``scrapes()`` the requests each has answered so far; ``scrapes(by=TAG)`` only those whose URL
    ended ``?by=TAG`` (systems scraping at once, each counted apart: bench_scale ``--together``).
    """

    def __init__(self, *, workers: int) -> None:
        worker, trainer = Page.of(worker_page()), Page.of(trainer_page())
        self.pages = [trainer] + [worker] * workers
        self.samples = [p.samples for p in self.pages]
        self.urls: list[str] = []
        self._counts = [0] * len(self.pages)
        self._counts_by: dict[str, list[int]] = {}
        self._renders: dict[tuple[int, int], bytes] = {}  # (trainer 0 / worker 1, step) -> body
        self._t0 = time.monotonic()
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.Server] = []
        self._thread = threading.Thread(target=self._loop.run_forever, name="scale-targets", daemon=True)

    def __enter__(self) -> TargetServer:
        self._thread.start()
        ports = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=30)
        self.urls = [f"http://127.0.0.1:{port}/metrics" for port in ports]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def scrapes(self, by: str | None = None) -> list[int]:
        if by is None:
            return list(self._counts)
        return list(self._counts_by.get(by, [0] * len(self.pages)))

    async def _listen(self) -> list[int]:
        ports = []
        for i in range(len(self.pages)):
            server = await asyncio.start_server(functools.partial(self._serve, i), "127.0.0.1", 0, backlog=64)
            self._servers.append(server)
            ports.append(server.sockets[0].getsockname()[1])
        return ports

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for task in asyncio.all_tasks(self._loop):
            if task is not asyncio.current_task():
                task.cancel()

    def _body(self, i: int) -> bytes:
        # Worker i at tick t serves the page at step t + i: no two workers' bodies are the same at any one
        # time, yet a step is rendered once and served by every worker in turn (one render a second, not N).
        tick = int(time.monotonic() - self._t0)
        key = (0 if i == 0 else 1, tick + i)
        body = self._renders.get(key)
        if body is None:
            body = self._renders[key] = self.pages[i].render(tick + i)
            if len(self._renders) > 2 * len(self.pages) + 8:
                for old in [k for k in self._renders if k[1] < tick]:
                    del self._renders[old]
        return body

    async def _serve(self, i: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"GET /metrics"):
                    writer.write(_NOT_FOUND)
                    continue
                self._counts[i] += 1
                tag = _tag(head)
                if tag:
                    self._counts_by.setdefault(tag, [0] * len(self.pages))[i] += 1
                body = self._body(i)
                writer.write(_HEAD % len(body) + body)
                await writer.drain()
                if b"connection: close" in head.lower():
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def serve_forever(workers: int) -> Sequence[str]:  # pragma: no cover - a manual aid
    """Serve ``workers`` targets until interrupted (``python -m tests.bench.scale_targets 8``)."""
    with TargetServer(workers=workers) as server:
        print("\n".join(server.urls), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        return server.urls


if __name__ == "__main__":
    import sys

    serve_forever(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
