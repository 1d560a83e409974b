"""tests/bench/bench_record.py, short: the recording's size next to Prometheus's block for the same samples.

The bench's 10-minute run is the measurement (README "Performance"); this runs its code for 20 s so it
cannot rot, and checks what does not depend on the machine's speed: both stores hold the same samples,
and ptmon's compressed chunks stay within 2x of Prometheus's per sample (fixed costs, the SQLite pages
and Prometheus's index, dominate a run this short; the bench reports them).
"""

from __future__ import annotations

import pytest

from tests.bench.bench_record import measure

pytestmark = pytest.mark.slow


def test_bench_record_short_run(tmp_path, promtool_bin):
    r = measure(seconds=20.0, baseline_seconds=0.0, interval_s=1.0, promtool=promtool_bin, workdir=tmp_path,
                codecs=False)
    assert r["samples"] > 8 * 15 * 10  # 8 targets scraped for 20 s
    assert r["prometheus_samples"] == r["samples"]  # the same samples went into both
    ours = r["chunk_bytes"] / r["samples"]
    theirs = r["prometheus_chunks"] / r["prometheus_samples"]
    assert ours <= 2 * theirs, (ours, theirs)
    assert r["recording"]["writer"] > 0 and r["recording"]["tap"] > 0  # the recorder's CPU was measured
