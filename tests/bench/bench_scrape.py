"""Per-scrape CPU of the direct scraper, today's against an earlier commit's, on the same loopback targets.

Run: ``python -m tests.bench.bench_scrape [--targets 64] [--samples 1000] [--rounds 20] [--reps 3]
[--mode keepalive|close|gzip] [--page synthetic|worker] [--host 127.0.0.1] [--rev 7c5fd71] [--h11] [--profile FILE]``

``--page worker`` serves ``tests/bench/scale_targets.py``'s rollout worker page (1,021 samples, 213 of
names ptmon reads, its values moving) to scrapers over the live feed's store (``Store(keep=is_read)``),
as ``ptmon watch`` scrapes: what skipping the unread series saves.

A child process serves ``--targets`` synthetic worker pages (``--samples``
lines each, ~100 bytes a line, counters moving every scrape) on as many
loopback ports: ``keepalive`` answers HTTP/1.1 with a Content-Length and keeps
the connection, ``close`` answers as prometheus_client's HTTP/1.0 server does
(a connection per scrape), ``gzip`` keeps the connection and gzips when asked
(as prometheus_client does). This process builds a Scraper from today's code
and one from ``--rev`` (extracted whole from git history by
``tests/bench/history.py``), each with its own Store, and runs rounds of
``scrape_once`` over every target, alternating the two, timing each round in
process CPU. Printed: CPU per scrape (µs) and per million samples for each,
and the ratio, both for the whole scrape (fetch + parse + store) and for the
fetch alone (the transport's share: each version's ``_fetch`` of the same
targets); with ``keepalive``, also the floor: a bare asyncio client that
reads the same pages with ``recv_into`` and checks nothing (what any HTTP layer
in Python costs at least). Both versions must store the same number of
samples, or the run stops. ``--h11`` adds today's scraper over h11 (``StreamTransport``,
the path before ``LeanTransport``) as a third. ``--profile`` writes a cProfile of today's scraper's rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import gzip
import importlib
import os
import pstats
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ptmon.monitor.reads import is_read
from tests.bench.history import at_revision

__all__ = ["Code", "current", "at", "page", "main"]

BASELINE = "7c5fd71"  # main before issue 18's work
_ENVS = ("math", "code", "agent", "search")
_VARIANTS = 8  # distinct pages a target cycles through: values move, series stay


@dataclass(frozen=True)
class Code:
    """One version's scraper and store."""

    label: str
    Scraper: Any
    Store: Any
    Target: Any


def _code(label: str, module: Callable[[str], ModuleType]) -> Code:
    return Code(label, module("monitor.sources.scrape").Scraper, module("monitor.store").Store,
                module("monitor.settings").Target)


def current() -> Code:
    return _code("now", lambda name: importlib.import_module(f"ptmon.{name}"))


def current_h11() -> Code:
    """Today's scraper with its http:// targets through ``StreamTransport`` (h11), not ``LeanTransport``:
    the measurement behind the hand-written client, in the same run."""
    from ptmon.monitor.sources import _lean as lean

    now = current()

    def scraper(*args: Any, **kwargs: Any) -> Any:
        lean.ENABLED = False
        try:
            return now.Scraper(*args, **kwargs)
        finally:
            lean.ENABLED = True

    return Code("now, h11", scraper, now.Store, now.Target)


def at(rev: str) -> Code:
    revision = at_revision(rev)
    return _code(f"{rev} ({revision.sha[:9]})", revision.module)


def worker_pages() -> list[bytes]:
    """The scale benchmark's worker page in ``_VARIANTS`` versions, every value moved by the version."""
    from tests.bench.scale_targets import worker_page
    base = worker_page()

    def moved(v: int) -> bytes:
        return re.sub(r" (\d+\.\d+)$", lambda m: f" {float(m.group(1)) + v}", base, flags=re.M).encode()
    return [moved(v) for v in range(_VARIANTS)]


def page(worker: int, samples: int, variant: int) -> bytes:
    """A synthetic worker page: one counter over ``samples`` label sets, ~110 bytes a line (no name ptmon reads)."""
    lines = ["# HELP worker_tokens_total Tokens generated.\n# TYPE worker_tokens_total counter\n"]
    for i in range(samples):
        env = _ENVS[i % len(_ENVS)]
        value = (i * 7919 + variant * (i % 13 + 1)) % 1_000_003
        lines.append(f'worker_tokens_total{{worker="rollout-{worker}",env="{env}",'
                     f'policy="p{i % 5}",shard="{i:05d}",run="bench-run-0001"}} {value}.0\n')
    return "".join(lines).encode()


# -- the child process serving the targets --------------------------------------------------------------


def _answer(mode: str, body: bytes, zipped: bytes, accept_gzip: bool) -> bytes:
    if mode == "close":
        return (b"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body)) + body
    if mode == "gzip" and accept_gzip:
        return (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(zipped)) + zipped
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


async def _serve(targets: int, samples: int, mode: str, kind: str = "synthetic") -> None:
    ports: list[int] = []
    workers = worker_pages() if kind == "worker" else []
    for w in range(targets):
        bodies = workers or [page(w, samples, v) for v in range(_VARIANTS)]
        zipped = [gzip.compress(b, 1) for b in bodies]
        count = [0]

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         bodies: list[bytes] = bodies, zipped: list[bytes] = zipped,
                         count: list[int] = count) -> None:
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    v = count[0] % _VARIANTS
                    count[0] += 1
                    writer.write(_answer(mode, bodies[v], zipped[v], b"gzip" in head.lower()))
                    await writer.drain()
                    if mode == "close":
                        break
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
        ports.append(server.sockets[0].getsockname()[1])
    print(" ".join(map(str, ports)), flush=True)
    await asyncio.Event().wait()


def _start_server(targets: int, samples: int, mode: str, kind: str) -> tuple[subprocess.Popen[str], list[int]]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.bench.bench_scrape", "--serve", mode,
                             "--targets", str(targets), "--samples", str(samples), "--page", kind],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("the target server did not start")
    return proc, [int(p) for p in line.split()]


# -- this process: the scrapers -------------------------------------------------------------------------


def _scraper(code: Code, ports: list[int], host: str = "127.0.0.1", *, kind: str = "synthetic") -> Any:
    targets = [code.Target(name=f"w{i}", url=f"http://{host}:{p}/metrics") for i, p in enumerate(ports)]
    store = code.Store(keep=is_read) if kind == "worker" else code.Store()
    return code.Scraper(targets, store=store, interval_s=1.0, timeout_s=30.0, concurrency=16)


async def _round(scraper: Any) -> float:
    t0 = time.process_time()
    await scraper.scrape_once()
    return time.process_time() - t0


async def _fetch_round(scraper: Any) -> float:
    states = scraper._states
    sem = asyncio.Semaphore(16)

    async def one(st: Any) -> None:
        async with sem:
            await scraper._fetch(st)

    t0 = time.process_time()
    await asyncio.gather(*(one(st) for st in states))
    return time.process_time() - t0


class _Bare(asyncio.BufferedProtocol):
    """The floor: one kept-alive GET answered with a Content-Length, read with recv_into, nothing checked."""

    def __init__(self) -> None:
        self.buf = memoryview(bytearray(1 << 20))
        self.got, self.want = 0, -1
        self.done: asyncio.Future[bytes] | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.buf[self.got:]

    def buffer_updated(self, nbytes: int) -> None:
        self.got += nbytes
        if self.want < 0:
            end = bytes(self.buf[: self.got]).find(b"\r\n\r\n")
            if end >= 0:
                length = bytes(self.buf[:end]).lower().split(b"content-length:")[1].split(b"\r\n")[0]
                self.want = end + 4 + int(length)
        if 0 <= self.want <= self.got and self.done is not None and not self.done.done():
            self.done.set_result(bytes(self.buf[: self.got]))

    async def get(self, request: bytes) -> bytes:
        assert self.transport is not None
        self.got, self.want = 0, -1
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.done


async def _floor_round(links: list[_Bare]) -> float:
    request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n\r\n"
    t0 = time.process_time()
    for body in await asyncio.gather(*(link.get(request) for link in links)):
        body.decode()
    return time.process_time() - t0


async def _bare_links(ports: list[int]) -> list[_Bare]:
    loop = asyncio.get_running_loop()
    return [(await loop.create_connection(_Bare, "127.0.0.1", p))[1] for p in ports]


def _samples(scraper: Any) -> int:
    return sum(h.samples for h in scraper.health())


async def _run(args: argparse.Namespace, codes: list[Code], ports: list[int]) -> dict[str, dict[str, float]]:
    scrapers = [_scraper(c, ports, args.host, kind=args.page) for c in codes]
    for s in scrapers:  # warm: connections, parser caches, series created
        await s.scrape_once()
        await s.scrape_once()
    counts = {_samples(s) for s in scrapers}
    errors = [h.error for s in scrapers for h in s.health() if h.error]
    if len(counts) != 1 or errors:
        raise SystemExit(f"the versions disagree or fail: samples {counts}, errors {errors[:3]}")
    whole: dict[str, list[float]] = {c.label: [] for c in codes}
    fetch: dict[str, list[float]] = {c.label: [] for c in codes}
    floor: list[float] = []
    links = await _bare_links(ports) if args.mode == "keepalive" else []
    profiler = cProfile.Profile() if args.profile else None
    gc.collect()
    pairs = list(zip(codes, scrapers, strict=True))
    for _rep in range(args.reps):
        for i in range(args.rounds):  # ABBA: neither version always runs first
            for code, s in pairs if i % 2 == 0 else pairs[::-1]:
                if profiler is not None and code is codes[0]:
                    profiler.enable()
                whole[code.label].append(await _round(s))
                if profiler is not None:
                    profiler.disable()
        for i in range(args.rounds):
            for code, s in pairs if i % 2 == 0 else pairs[::-1]:
                fetch[code.label].append(await _fetch_round(s))
            if links:
                floor.append(await _floor_round(links))
    for s in scrapers:
        await s.aclose()
    for link in links:
        if link.transport is not None:
            link.transport.close()
    if profiler is not None:
        profiler.dump_stats(args.profile)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    n = len(ports)
    per = {c.label: {"whole": statistics.median(whole[c.label]) / n, "fetch": statistics.median(fetch[c.label]) / n}
           for c in codes}
    if floor:
        per["floor"] = {"fetch": statistics.median(floor) / n}
    return per


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=64)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mode", choices=("keepalive", "close", "gzip"), default="keepalive")
    ap.add_argument("--rev", default=BASELINE)
    ap.add_argument("--page", choices=("synthetic", "worker"), default="synthetic")
    ap.add_argument("--host", default="127.0.0.1", help="the targets' host as configured (localhost: resolved)")
    ap.add_argument("--h11", action="store_true", help="also today's scraper over StreamTransport (h11)")
    ap.add_argument("--profile", default=None, help="write a cProfile of today's rounds here")
    ap.add_argument("--serve", choices=("keepalive", "close", "gzip"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        asyncio.run(_serve(args.targets, args.samples, args.serve, args.page))
        return {}
    codes = [current(), at(args.rev), *([current_h11()] if args.h11 else [])]
    proc, ports = _start_server(args.targets, args.samples, args.mode, args.page)
    try:
        per = asyncio.run(_run(args, codes, ports))
    finally:
        proc.terminate()
        proc.wait()
    now, before = per[codes[0].label], per[codes[1].label]
    body = len(worker_pages()[0] if args.page == "worker" else page(0, args.samples, 0))
    if args.page == "worker":
        args.samples = 1021
    print(f"{args.targets} targets x {args.samples} samples ({body / 1024:.0f} KiB a page), mode {args.mode}, "
          f"{args.rounds} rounds x {args.reps} reps, medians, process CPU")
    for part in ("whole", "fetch"):
        for c in codes:
            us = per[c.label][part] * 1e6
            print(f"  {part:5} {c.label:22} {us:8.0f} µs/scrape  {us / args.samples:5.2f} cpu-s per M samples")
        print(f"  {part:5} ratio now/{args.rev}: {now[part] / before[part]:.2f}x")
        if args.h11:
            print(f"  {part:5} ratio now/now-over-h11: {now[part] / per[codes[2].label][part]:.2f}x")
    if "floor" in per:
        us = per["floor"]["fetch"] * 1e6
        print(f"  floor: a bare recv_into GET of the same pages (no HTTP checks, no parse): {us:.0f} µs/fetch; "
              f"now's fetch is {now['fetch'] / per['floor']['fetch']:.1f}x it")
    return per


if __name__ == "__main__":
    main()
