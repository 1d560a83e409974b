"""The issue's demonstration: ``ptmon demo --scenario crash`` recorded for 60 s and read back.

``ptmon snapshot URL... --over 60 --record FILE --json`` is a live snapshot taken at its end, T; then
``ptmon snapshot --from FILE --at T --json`` must give the same targets, the same rates (within 1%; in
fact every field is equal) and the same alerts, and its event log each crash's ``target_down`` with its
end and duration.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.demo.helpers import URL_RE, start_headless

pytestmark = pytest.mark.slow

RATES = ("rollout_rate_per_s", "rollout_tokens_per_s", "steps_per_s", "trainer_tokens_per_s",
         "weight_sync_bytes_per_s", "burn_dollars_per_hour", "spend_dollars", "weight_sync_p50_s",
         "weight_sync_p99_s", "staleness_max", "ipd_points_per_kilodollar")


def _ptmon(*args: str, timeout: float) -> dict:
    proc = subprocess.run([sys.executable, "-m", "ptmon.monitor", *args], capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_a_crash_run_recorded_for_60_s_replays_as_the_live_snapshot(tmp_path):
    demo, text = start_headless("--scenario", "crash", speed=40.0, workers=2)
    try:
        urls = {name: url for name, url, _ in URL_RE.findall(text)}
        out = tmp_path / "crash.rec"
        live = _ptmon("snapshot", *urls.values(), "--over", "60", "--json", "--record", str(out), timeout=120)
    finally:
        demo.terminate()
        demo.wait(timeout=30)
    replay = _ptmon("snapshot", "--from", str(out), "--at", repr(live["now"]), "--window", repr(live["window_s"]),
                    "--json", timeout=120)

    assert replay["now"] == live["now"] and replay["window_s"] == live["window_s"]
    # Not only within 1%: the same samples in the same Store at the same now give every field exactly.
    assert sorted(k for k in live if k != "events" and replay[k] != live[k]) == []
    assert [(t["name"], t["up"], t["role"]) for t in replay["targets"]] == \
        [(t["name"], t["up"], t["role"]) for t in live["targets"]]
    for key in RATES:
        if live[key] is None:
            assert replay[key] is None, key
        else:
            assert replay[key] == pytest.approx(live[key], rel=0.01), key
    assert [(w["name"], w["status"]) for w in replay["workers"]] == [(w["name"], w["status"]) for w in live["workers"]]
    assert [(a["name"], a["level"], a["subject"], a["since"]) for a in replay["alerts"]] == \
        [(a["name"], a["level"], a["subject"], a["since"]) for a in live["alerts"]]

    # rollout-1 dies every 10 simulated minutes (15 s at 40x) and is back 3 simulated minutes (4.5 s) later.
    crashed = urls["rollout-1"].removeprefix("http://").removesuffix("/metrics")
    downs = [e for e in replay["events"] if e["kind"] == "target_down"]
    assert {e["subject"] for e in downs} == {crashed}
    ended = [e for e in downs if e["end"] is not None]
    assert len(ended) >= 2, downs
    for e in ended:
        assert e["duration_s"] == pytest.approx(e["end"] - e["at"]) and 2.0 < e["duration_s"] < 10.0, e
        assert "back after" in e["message"]
    restarts = [e for e in replay["events"] if e["kind"] == "restart"]
    assert {e["subject"] for e in restarts} == {crashed} and len(restarts) >= len(ended)
    assert [e["at"] for e in replay["events"]] == sorted(e["at"] for e in replay["events"])
