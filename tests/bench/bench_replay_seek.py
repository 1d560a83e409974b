"""A seek back in ``ptmon replay``: rebuilt from a checkpoint (new) next to rebuilt from the start (old).

Run: ``python -m tests.bench.bench_replay_seek [--hours 4] [--targets 8] [--series 60] [--back 600]``

A recording of ``--targets`` targets scraped every second for ``--hours``
(``--series`` series each: counters that grow, one GPU-seconds counter with a
restart, gauges that wander) is written with the real Recorder and an injected
clock. Two ReplayFeeds on it (each on its own Recording) play to the end, then
seek back ``--back`` seconds: one rebuilds from the latest checkpoint a Store's
depth before (``rewind="checkpoint"``, the default), the other from the start
of the file (``rewind="start"``, the code before). Both Dashboards must be
equal; the times are printed side by side with their ratio, for one length
and for twice that length (the new cost stays flat, the old one doubles).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ptmon.exporters import schema
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.recording.meta import settings_to_json
from ptmon.monitor.recording.reader import Recording
from ptmon.monitor.recording.replay import ReplayFeed
from ptmon.monitor.recording.writer import Recorder
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.snapshot import to_json

__all__ = ["main", "write_recording", "seek_back"]

T0 = 1_700_000_000.0


class _Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def write_recording(path: Path, *, hours: float, targets: int, series: int) -> Settings:
    """The recording described in the module's docstring; the settings it was made with."""
    names = [f"w{i}" for i in range(targets)]
    settings = Settings(targets=tuple(Target(name=n, url=f"http://127.0.0.1:{9000 + i}/metrics", role="rollout")
                                      for i, n in enumerate(names)), interval_s=1.0)
    clock = _Clock()
    recorder = Recorder(path, settings_json=settings_to_json(settings), clock=clock).open()
    gpu = Labels({schema.LABEL_ROLE: "rollout"})
    labels = [Labels({"env": f"e{k}"}) for k in range(series)]
    rounds = int(hours * 3600)
    restart = rounds // 3
    try:
        for r in range(rounds):
            clock.t = T0 + r
            for i, name in enumerate(names):
                seconds = 2.0 * (r - restart if r >= restart and i == 0 else r)  # w0 restarts a third in
                samples = [Sample(schema.GPU_SECONDS.name, gpu, seconds),
                           Sample(schema.GPU_HOUR_PRICE.name, gpu, 2.0)]
                samples += [Sample(schema.ROLLOUTS.name, lb, float(r * (k + 1))) for k, lb in enumerate(labels)]
                recorder.tap(name, clock.t, samples)
            if r % 60 == 0:
                recorder.observe_health(TargetHealth(name=n, url="", role="rollout", up=True, last_scrape=clock.t,
                                                     last_success=clock.t) for n in names)
            if r % 600 == 0:
                recorder.flush_now()
                time.sleep(0.01)  # let the writer drain the queue now and then
    finally:
        recorder.close()
    return settings


def seek_back(path: Path, settings: Settings, *, back_s: float, rewind: str) -> tuple[float, float, dict]:
    """(seconds to play to the end, seconds to seek back ``back_s`` from it, the Dashboard there)."""
    with Recording(path) as rec:
        feed = ReplayFeed(rec, settings, rewind=rewind)
        end = feed.playhead.end
        t = time.perf_counter()
        feed.dashboard_at(end, window_s=300.0)
        forward = time.perf_counter() - t
        t = time.perf_counter()
        d = feed.dashboard_at(end - back_s, window_s=300.0)
        return forward, time.perf_counter() - t, to_json(d)


def _row(label: str, path: Path, settings: Settings, back_s: float) -> tuple[float, float]:
    _, new, d_new = seek_back(path, settings, back_s=back_s, rewind="checkpoint")
    forward, old, d_old = seek_back(path, settings, back_s=back_s, rewind="start")
    assert d_new == d_old, "the two rebuilds disagree"
    print(f"{label:<22} play to the end {forward:7.2f} s   seek back: old {old:7.3f} s   new {new:7.3f} s   "
          f"old/new {old / new:6.1f}x")
    return old, new


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hours", type=float, default=2.0)
    p.add_argument("--targets", type=int, default=8)
    p.add_argument("--series", type=int, default=60)
    p.add_argument("--back", type=float, default=600.0, help="seconds to seek back from the end")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for hours in (args.hours, 2 * args.hours):
            path = Path(tmp) / f"run-{hours:g}h.rec"
            t = time.perf_counter()
            settings = write_recording(path, hours=hours, targets=args.targets, series=args.series)
            print(f"recording: {hours:g} h, {args.targets} targets x {args.series + 2} series at 1 s, "
                  f"{path.stat().st_size / 2**20:.1f} MiB, written in {time.perf_counter() - t:.1f} s")
            _row(f"{hours:g} h, back {args.back:g} s", path, settings, args.back)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
