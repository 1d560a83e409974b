"""The recording's size per sample next to Prometheus's TSDB, and the recorder's CPU next to the data layer's.

Run: ``python -m tests.bench.bench_record [--seconds 600] [--baseline-seconds 120] [--interval 1] [--promtool PATH]``

1. ``ptmon demo``'s fleet (a trainer, 6 rollout workers and an eval job: 8
   targets, the crash scenario so a worker dies and comes back) is scraped by
   a ``LiveFeed`` with one Dashboard per interval (the data layer of ``ptmon
   watch``), for ``--baseline-seconds``: its CPU per wall second.
2. The same, recording into a file (``ptmon watch --record``'s path) for
   ``--seconds``: the process's CPU, and the recorder's own (the tap's CPU on
   the event loop's thread plus the writer thread's CPU clock).
3. Bytes per stored sample: the file on disk after a clean stop, over the
   samples recorded. The same samples then go, as OpenMetrics text with their
   timestamps, through ``promtool tsdb create-blocks-from openmetrics``: the
   block Prometheus writes (chunks + index) over the same sample count.
4. The codec choice, measured: every chunk of the file re-encoded with each
   codec (and zstd when ``backports.zstd`` is importable, level 3 and 19, on
   the same shuffled layout), and with chunks of 2, 30 and 120 scrapes.

Goal: within 2x of Prometheus's bytes per sample; the recorder under 1% of
a core at 8 targets and 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "measure"]


def _thread_cpu(thread: Any) -> float:
    if thread is None or thread.ident is None:
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (OSError, AttributeError):  # the thread is gone
        return 0.0


async def _data_layer(settings: Any, seconds: float, *, record_to: Path | None) -> dict[str, float]:
    from ptmon.monitor.live import LiveFeed
    from ptmon.monitor.recording.feed import recording_feed

    if record_to is None:
        feed: Any = LiveFeed(settings)
        recorder = None
    else:
        feed = recording_feed(settings, str(record_to))
        recorder = feed.recorder
        tap = recorder.tap
        spent = [0.0]

        def timed_tap(*args: Any) -> None:
            t0 = time.thread_time()  # CPU of the loop's thread: not the waits for the GIL the writer holds
            tap(*args)
            spent[0] += time.thread_time() - t0

        recorder.tap = timed_tap  # type: ignore[method-assign]
    await feed.start()
    await asyncio.sleep(3.0)  # first scrapes, connections, imports
    cpu0, wall0 = time.process_time(), time.monotonic()
    writer0 = _thread_cpu(getattr(recorder, "_thread", None))
    tap0 = spent[0] if recorder is not None else 0.0
    polls = 0
    while time.monotonic() - wall0 < seconds:
        began = time.monotonic()
        await feed.dashboard(window_s=settings.window_s)
        polls += 1
        await asyncio.sleep(max(0.0, settings.interval_s - (time.monotonic() - began)))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    out = dict(cpu=cpu, wall=wall, polls=float(polls))
    if recorder is not None:
        out["writer"] = _thread_cpu(recorder._thread) - writer0
        out["tap"] = spent[0] - tap0
    await feed.aclose()
    return out


def _openmetrics(path: Path, out: Path) -> int:
    """The recording's samples as OpenMetrics with timestamps (one family per series name); the sample count."""
    from ptmon.monitor.recording.reader import Recording

    by_series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with Recording(path) as r:
        for target, stamp, _, samples in r.scrapes():
            for s in samples:
                labels = {**s.labels, "instance": target}
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
                by_series.setdefault((s.name, text), []).append((s.timestamp or stamp, s.value))
    count = 0
    with open(out, "w") as f:
        names: dict[str, list[tuple[str, list[tuple[float, float]]]]] = {}
        for (name, text), pts in by_series.items():
            names.setdefault(name, []).append((text, pts))
        for name, group in names.items():
            f.write(f"# TYPE {name} unknown\n")
            for text, pts in group:
                last = -math.inf
                for t, v in pts:
                    ms = round(t * 1000) / 1000
                    if ms <= last:  # Prometheus keeps milliseconds: a second sample in one ms is dropped
                        continue
                    last = ms
                    f.write(f"{name}{{{text}}} {_value(v)} {ms:.3f}\n")
                    count += 1
        f.write("# EOF\n")
    return count


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _prometheus_bytes(path: Path, promtool: str, work: Path) -> tuple[int, int, int]:
    om = work / "samples.om"
    count = _openmetrics(path, om)
    blocks = work / "blocks"
    proc = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(blocks)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"promtool failed: {proc.stderr.strip()[-500:]}")
    chunks = sum(_tree_bytes(d) for d in blocks.rglob("chunks") if d.is_dir())
    return _tree_bytes(blocks), count, chunks


def _codecs(path: Path) -> dict[str, float]:
    """Bytes per sample of the file's scrapes re-encoded per codec and chunk length (values + health + layouts)."""
    import lzma
    import zlib

    from ptmon.monitor.recording.codec import CODECS, decode_chunk, encode_chunk
    from ptmon.monitor.recording.file import open_for_reading

    db = open_for_reading(path)
    by_target: dict[int, list[Any]] = {}
    health: dict[int, list[Any]] = {}
    for target, blob in db.execute("SELECT target, data FROM chunks ORDER BY t0"):
        chunk = decode_chunk(blob)
        by_target.setdefault(target, []).extend(chunk.scrapes)
        health.setdefault(target, []).extend(chunk.health)
    db.close()
    samples = sum(len(s.values) for ss in by_target.values() for s in ss)
    compressors: dict[str, Any] = {}
    try:
        from backports import zstd  # type: ignore[import-not-found]

        compressors = {"zstd-3": lambda b: zstd.compress(b, 3), "zstd-19": lambda b: zstd.compress(b, 19)}
    except ImportError:
        pass
    out: dict[str, float] = {}
    for n in (2, 30, 120):
        for codec in CODECS:
            total = 0
            for target, scrapes in by_target.items():
                for i in range(0, len(scrapes), n):
                    total += len(encode_chunk(scrapes[i:i + n], health[target] if i == 0 else [], codec=codec))
            out[f"{codec}, {n} scrapes"] = total / samples
        for name, fn in compressors.items():
            total = 0
            for target, scrapes in by_target.items():
                for i in range(0, len(scrapes), n):
                    raw = encode_chunk(scrapes[i:i + n], health[target] if i == 0 else [], codec="none")
                    total += len(fn(raw[1:])) + 1
            out[f"{name}, {n} scrapes"] = total / samples
    del lzma, zlib
    return out


def measure(*, seconds: float, baseline_seconds: float, interval_s: float, promtool: str | None,
            workdir: Path, codecs: bool = True) -> dict[str, Any]:
    from dataclasses import replace

    from ptmon.demo.launcher import DemoOptions, Fleet, demo_settings
    from ptmon.monitor.recording.reader import Recording

    path = workdir / "bench.rec"
    with Fleet(DemoOptions(workers=6, scenario="crash")) as fleet:
        settings = replace(demo_settings(fleet.endpoints, interval_s=interval_s), window_s=300.0)
        base = asyncio.run(_data_layer(settings, baseline_seconds, record_to=None)) if baseline_seconds else None
        rec = asyncio.run(_data_layer(settings, seconds, record_to=path))
    with Recording(path) as r:
        scrapes, samples, chunk_bytes = r.stats()
    result: dict[str, Any] = dict(baseline=base, recording=rec, scrapes=scrapes, samples=samples,
                                  chunk_bytes=chunk_bytes, file_bytes=path.stat().st_size)
    if promtool:
        prom_bytes, prom_samples, prom_chunks = _prometheus_bytes(path, promtool, workdir)
        result.update(prometheus_bytes=prom_bytes, prometheus_samples=prom_samples, prometheus_chunks=prom_chunks)
    if codecs:
        result["codecs"] = _codecs(path)
    return result


def _pct(cpu: float, wall: float) -> str:
    return f"{100 * cpu / wall:.2f}% of a core"


def report(r: dict[str, Any]) -> None:
    rec = r["recording"]
    print(f"recorded {r['samples']:,} samples in {r['scrapes']:,} scrapes over {rec['wall']:.0f} s (8 targets)")
    per = r["file_bytes"] / r["samples"]
    print(f"  ptmon file on disk    {r['file_bytes']:>12,} B  {per:.2f} B/sample "
          f"(chunk data alone {r['chunk_bytes'] / r['samples']:.2f} B/sample)")
    if "prometheus_bytes" in r:
        prom = r["prometheus_bytes"] / r["prometheus_samples"]
        print(f"  Prometheus TSDB block {r['prometheus_bytes']:>12,} B  {prom:.2f} B/sample "
              f"({r['prometheus_samples']:,} samples; chunks alone "
              f"{r['prometheus_chunks'] / r['prometheus_samples']:.2f} B/sample)  -> ptmon/Prometheus "
              f"{per / prom:.2f}x (goal <= 2x)")
    recorder = rec["tap"] + rec["writer"]
    print(f"  recorder CPU          {_pct(recorder, rec['wall'])} (tap {_pct(rec['tap'], rec['wall'])}, "
          f"writer thread {_pct(rec['writer'], rec['wall'])}; goal < 1%)")
    print(f"  data layer + recorder {_pct(rec['cpu'], rec['wall'])} ({rec['polls']:.0f} dashboards)")
    if r["baseline"]:
        b = r["baseline"]
        print(f"  data layer alone      {_pct(b['cpu'], b['wall'])} ({b['polls']:.0f} dashboards, same targets, "
              f"before)  -> recorder/data layer {recorder / rec['wall'] / (b['cpu'] / b['wall']):.2f}x")
    if "codecs" in r:
        print("codec and chunk length, bytes per sample of the same scrapes:")
        for name, value in sorted(r["codecs"].items(), key=lambda kv: kv[1]):
            print(f"  {name:<22} {value:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_record", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="seconds recorded (default 600)")
    parser.add_argument("--baseline-seconds", type=float, default=120.0,
                        help="seconds of the data layer alone, before (default 120; 0 skips)")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--promtool", default=shutil.which("promtool"), help="promtool binary (default: on PATH)")
    parser.add_argument("--keep", metavar="DIR", help="keep the recording and the blocks in DIR")
    args = parser.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ptmon-bench-record-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        r = measure(seconds=args.seconds, baseline_seconds=args.baseline_seconds, interval_s=args.interval,
                    promtool=args.promtool, workdir=work)
        report(r)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
