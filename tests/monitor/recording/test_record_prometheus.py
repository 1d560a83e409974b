"""Recording through ``--prometheus``: the raw samples the server returned, replayed into the same numbers."""

from __future__ import annotations

import asyncio
import threading
import time

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.config import load_settings
from ptmon.monitor.recording.commands import open_replay
from ptmon.monitor.recording.feed import recording_feed
from ptmon.monitor.snapshot import to_json


async def test_a_prometheus_recording_replays_the_stored_samples_numbers(tmp_path, prometheus_server):
    worker = RolloutExporter(run="r", model="m", algorithm="grpo", gpus=2, gpu_hour_price=3.0)
    server = serve(worker.registry)
    stop = threading.Event()

    def work() -> None:
        while not stop.wait(0.05):
            worker.record_rollout(env="math", tokens=10, reward=0.5, seconds=0.1, policy_version=1)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        prom = prometheus_server([server.url], scrape_interval=0.5)
        prom.wait_for("posttrain_rollouts_total", lambda r: bool(r))
        settings = load_settings(prometheus_url=prom.url, interval_s=1.0, window_s=60.0)
        path = tmp_path / "prom.rec"
        feed = recording_feed(settings, str(path))
        await feed.start()
        for _ in range(8):
            await asyncio.sleep(1.0)
            live = await feed.dashboard(window_s=60.0)
        await feed.aclose()
        inner = feed.feed
        # What the stored samples and the last health alone give once everything is in (the server's own
        # evaluation aside). Compared at the close, not at ``live.now``: a poll made during or after that
        # build learns of a scrape the server made before it, so the recording rightly holds health and
        # samples stamped before ``live.now`` that ``live`` never saw.
        end = time.time()
        stored = build_dashboard(inner.store, tuple(inner.health()), inner.settings, now=end, window_s=60.0,
                                 evals=inner.evals)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert live.targets and live.rollout_rate_per_s and live.rollout_rate_per_s > 0
    replay = open_replay(str(path))
    try:
        d = replay.dashboard_at(end, window_s=60.0)
    finally:
        await replay.aclose()
    got, want = to_json(d), to_json(stored)
    for key in ("alerts",):
        got.pop(key)
        want.pop(key)
    assert [(t["name"], t["up"]) for t in got["targets"]] == [(t["name"], t["up"]) for t in want["targets"]]
    assert got["rollout_rate_per_s"] == want["rollout_rate_per_s"] and got["spend_dollars"] == want["spend_dollars"]
    assert got == want
