"""Following a file like ``tail -F``: growth, truncation, a rewrite past the offset, rotation, no file."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from ptmon.monitor.sources.tail import RESTART_REPLACED, RESTART_TRUNCATED, Tail


def data(tail: Tail) -> bytes:
    read = tail.read()
    assert read.problem is None
    return b"".join(c.data for c in read.chunks)


def test_only_new_bytes_each_read(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"a\n")
    tail = Tail(str(f), max_bytes=1 << 20)
    assert data(tail) == b"a\n"
    assert data(tail) == b""
    with f.open("ab") as out:
        out.write(b"b\n")
    assert data(tail) == b"b\n"


def test_a_backlog_is_read_in_bounded_reads(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"x" * 25)
    tail = Tail(str(f), max_bytes=10)
    assert [len(data(tail)) for _ in range(4)] == [10, 10, 5, 0]


def test_truncation_reads_again_from_the_start(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"one\ntwo\n")
    tail = Tail(str(f), max_bytes=1 << 20)
    data(tail)
    f.write_bytes(b"3\n")  # shorter than what was read
    read = tail.read()
    assert [(c.data, c.restart) for c in read.chunks] == [(b"3\n", RESTART_TRUNCATED)]


def test_a_rewrite_past_the_offset_is_seen(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"old line 1\n")
    tail = Tail(str(f), max_bytes=1 << 20)
    data(tail)
    f.write_bytes(b"new line 1\nnew line 2\n")  # truncated and rewritten longer between two reads
    read = tail.read()
    assert [(c.data, c.restart) for c in read.chunks] == [(b"new line 1\nnew line 2\n", RESTART_TRUNCATED)]


def test_rotation_drains_the_old_file_then_reads_the_new(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"1\n")
    tail = Tail(str(f), max_bytes=1 << 20)
    data(tail)
    with f.open("ab") as out:
        out.write(b"2\n")  # appended just before the rotation: must not be lost
    f.rename(tmp_path / "m.jsonl.1")
    f.write_bytes(b"3\n")
    read = tail.read()
    assert [(c.data, c.restart) for c in read.chunks] == [(b"2\n", None), (b"3\n", RESTART_REPLACED)]
    assert data(tail) == b""


def test_no_file_is_a_problem_until_it_appears(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    tail = Tail(str(f), max_bytes=1 << 20)
    read = tail.read()
    assert read.problem is not None and "no such file" in read.problem
    f.write_bytes(b"1\n")
    assert data(tail) == b"1\n"


def test_removed_file_keeps_what_was_appended_and_says_it_is_gone(tmp_path: Path) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"1\n")
    tail = Tail(str(f), max_bytes=1 << 20)
    data(tail)
    with f.open("ab") as out:
        out.write(b"2\n")
    f.unlink()
    read = tail.read()
    assert b"".join(c.data for c in read.chunks) == b"2\n"
    assert read.problem is not None and "no such file" in read.problem


def test_a_directory_is_not_a_metrics_file(tmp_path: Path) -> None:
    read = Tail(str(tmp_path), max_bytes=1 << 20).read()
    assert read.problem == "is a directory, not a metrics file"


def test_an_unreadable_file_says_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "m.jsonl"
    f.write_bytes(b"1\n")

    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(os, "open", refuse)  # the tests run as root, where chmod 000 still reads
    read = Tail(str(f), max_bytes=1 << 20).read()
    assert read.problem == "cannot read it: permission denied"
