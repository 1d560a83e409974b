"""demo.pipe.read_until on real OS pipes: the marker across reads, a writer that exits, a deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ptmon.demo.pipe import PipeClosed, PipeTimeout, read_until


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


@pytest.mark.slow  # starts a process
def test_reads_until_the_marker_even_when_it_arrives_in_pieces() -> None:
    code = "import sys, time; w = sys.stdout.buffer; w.write(b'{\"po'); w.flush(); time.sleep(0.3); " \
           "w.write(b'rt\": 1}\\nafter'); w.flush()"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        data = read_until(proc.stdout.fileno(), b"\n", deadline=time.monotonic() + 30)
    finally:
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    assert data.split(b"\n", 1)[0] == b'{"port": 1}'


def test_a_writer_that_closes_first_raises_pipe_closed_with_what_came(pipe) -> None:
    r, w = pipe
    os.write(w, b"half a line")
    os.close(w)
    with pytest.raises(PipeClosed) as info:
        read_until(r, b"\n", deadline=time.monotonic() + 30)
    assert info.value.data == b"half a line"
    assert isinstance(info.value, EOFError)


def test_the_deadline_raises_pipe_timeout_with_what_came(pipe) -> None:
    r, w = pipe
    os.write(w, b"no newline yet")
    now = [100.0]

    def clock() -> float:  # every look at the clock is 0.1 s later: the loop reaches its deadline
        now[0] += 0.1
        return now[0]

    with pytest.raises(PipeTimeout) as info:
        read_until(r, b"\n", deadline=100.5, clock=clock)
    assert info.value.data == b"no newline yet"
    assert isinstance(info.value, TimeoutError)
