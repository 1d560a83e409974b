"""Following a file as it grows, like ``tail -F``: across truncation and across replacement.

A training run's metrics file is appended to; it can also start over. verl's
file logger opens it with ``"wb"`` (a restart truncates it), ``logrotate``'s
``copytruncate`` truncates it, a plain rotation renames it away and a new
file appears under the name. The follower keeps its file open between reads
and each read compares the path with what it holds:

- another file under the path (device and inode differ): the old one is read
  to its end first (lines appended before the rename are not lost), then the
  new one from its start;
- the file shorter than what was read, or the bytes just before the read
  offset changed (truncated and rewritten past the offset between two reads):
  read again from the start;
- no file (yet, or any more): a problem, said in words; a file that appears
  later is read from its start.

Each read returns at most ``max_bytes``, so a long backlog is read over
several reads instead of into memory at once. Blocking calls: run it off the
event loop.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

__all__ = ["Tail", "Chunk", "TailRead", "RESTART_TRUNCATED", "RESTART_REPLACED"]

RESTART_TRUNCATED = "truncated"
RESTART_REPLACED = "replaced"
_MARK_BYTES = 64  # the bytes before the offset compared on every read: a rewrite past it is seen


@dataclass(frozen=True, slots=True)
class Chunk:
    data: bytes
    restart: str | None = None  # the file began again before ``data`` (truncated, replaced): half a line is gone


@dataclass(frozen=True, slots=True)
class TailRead:
    chunks: tuple[Chunk, ...]
    problem: str | None  # why the path could not be read now, in words; None when it was
    mtime: float | None  # the file's modification time at this read (unix seconds), if it was read
    more: bool = False  # the read stopped at its size limit: the file holds more already


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file (yet): waiting for it to appear"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot read it: permission denied"
    if exc.errno == errno.EISDIR:
        return "is a directory, not a metrics file"
    return f"cannot read it: {exc.strerror or exc}"


class Tail:
    """The new bytes of the file at ``path`` since the last read."""

    def __init__(self, path: str, *, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
        self.path = path
        self._max = max_bytes
        self._fd: int | None = None
        self._id: tuple[int, int] | None = None  # (device, inode) of the open file
        self._offset = 0
        self._mark = b""  # the last bytes read (up to _MARK_BYTES), as they were
        self._opened_once = False

    @property
    def offset(self) -> int:
        return self._offset

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd, self._id = None, None

    def read(self) -> TailRead:
        chunks: list[Chunk] = []
        budget = self._max
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if self._fd is not None:  # renamed away or deleted: what was appended before is still readable
                chunks.append(Chunk(self._drain(budget)))
                self.close()
            return TailRead(tuple(c for c in chunks if c.data), _reason(exc), None)
        if not stat.S_ISREG(st.st_mode):
            self.close()
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            return TailRead((), f"is {kind}, not a metrics file", None)
        if self._fd is not None and self._id != (st.st_dev, st.st_ino):
            old = self._drain(budget)
            budget -= len(old)
            chunks.append(Chunk(old))
            if budget <= 0:
                return TailRead(tuple(c for c in chunks if c.data), None, st.st_mtime, more=True)
            self.close()
        restart: str | None = None
        if self._fd is None:
            try:
                self._open()
            except OSError as exc:
                return TailRead(tuple(c for c in chunks if c.data), _reason(exc), None)
            restart = RESTART_REPLACED if self._opened_once else None
            self._opened_once = True
        try:
            size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
            if self._offset and (size < self._offset or not self._mark_holds()):
                self._offset, self._mark, restart = 0, b"", RESTART_TRUNCATED
            data = self._pread(min(size - self._offset, budget))
        except OSError as exc:
            self.close()
            return TailRead(tuple(c for c in chunks if c.data), _reason(exc), None)
        if data or restart:
            chunks.append(Chunk(data, restart))
        more = self._offset < size
        return TailRead(tuple(c for c in chunks if c.data or c.restart), None, st.st_mtime, more=more)

    def _open(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._id = fd, (st.st_dev, st.st_ino)
        self._offset, self._mark = 0, b""

    def _mark_holds(self) -> bool:
        """Whether the bytes before the offset are still the ones read there."""
        n = len(self._mark)
        return os.pread(self._fd, n, self._offset - n) == self._mark  # type: ignore[arg-type]

    def _pread(self, n: int) -> bytes:
        if n <= 0:
            return b""
        data = os.pread(self._fd, n, self._offset)  # type: ignore[arg-type]
        self._offset += len(data)
        self._mark = (self._mark + data)[-_MARK_BYTES:]
        return data

    def _drain(self, budget: int) -> bytes:
        """The rest of the open file (a replaced or removed one), up to ``budget`` bytes."""
        try:
            size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
            return self._pread(min(size - self._offset, budget))
        except OSError:
            return b""
