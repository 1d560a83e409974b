"""One line of a metrics file: prime-rl's and verl's shapes, and what is not a metrics dict."""

from __future__ import annotations

import json

import pytest

from ptmon.monitor.sources.jsonl import LineError, LineSplitter, decode_line


def test_prime_rl_line_gives_its_metrics_step_and_time() -> None:
    # src/prime_rl/monitors/file.py, FileMonitor.log_metrics: {"step": step, "time": time.time(), **metrics}
    entry = decode_line(json.dumps({"step": 7, "time": 1_700_000_000.5, "time/broadcast_weights": 1.25}).encode())
    assert entry.step == 7
    assert entry.time == 1_700_000_000.5
    assert entry.metrics["time/broadcast_weights"] == 1.25


def test_verl_envelope_gives_the_inner_dict_and_no_time() -> None:
    # verl/utils/tracking.py, FileLogger.log: {"step": step, "data": data}
    entry = decode_line(b'{"step": 3, "data": {"timing_s/update_weights": 0.5, "timing_s/step": 9.5}}')
    assert entry.step == 3
    assert entry.time is None
    assert dict(entry.metrics) == {"timing_s/update_weights": 0.5, "timing_s/step": 9.5}


@pytest.mark.parametrize("line, why", [
    (b'{"step": 1, "loss"', "not JSON"),
    (b"[1, 2, 3]", "a JSON list, not an object"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
])
def test_what_is_not_a_metrics_dict_says_why(line: bytes, why: str) -> None:
    with pytest.raises(LineError, match=why):
        decode_line(line)


def test_a_step_that_is_no_step_number_is_none() -> None:
    assert decode_line(b'{"step": "x", "loss": 1}').step is None
    assert decode_line(b'{"step": 1.5, "loss": 1}').step is None
    assert decode_line(b'{"step": true, "loss": 1}').step is None
    assert decode_line(b'{"step": 4.0, "time": "later"}').time is None


def test_a_half_written_line_waits_for_its_newline() -> None:
    split = LineSplitter()
    assert split.feed(b'{"step": 1}\n{"step"') == [b'{"step": 1}']
    assert split.pending == len(b'{"step"')
    assert split.feed(b": 2}") == []
    assert split.feed(b"\n") == [b'{"step": 2}']
    assert split.pending == 0


def test_an_endless_line_is_dropped_once_and_the_next_one_read() -> None:
    split = LineSplitter(max_line_bytes=10)
    assert split.feed(b"x" * 8) == []
    assert split.feed(b"x" * 8) == [None]  # over the limit: dropped, reported once
    assert split.feed(b"x" * 50) == []  # still the same line: dropped silently
    assert split.feed(b'x\n{"a": 1}\n') == [b'{"a": 1}']


def test_reset_forgets_half_a_line() -> None:
    split = LineSplitter()
    split.feed(b'{"step": 1, "lo')
    split.reset()
    assert split.feed(b'{"step": 2}\n') == [b'{"step": 2}']
