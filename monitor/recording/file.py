"""The recording file: one SQLite database (standard library), its schema, its lock.

SQLite because it is everywhere, a single file, and crash-safe by design: in
WAL mode every committed transaction survives the writer being killed (-9
included), and an uncommitted one leaves no trace, so a crashed recorder
loses at most its last flush and never what was written before it. The
samples themselves live in compressed chunks (``codec``); the tables index
them by target and time.

One writer per file: a recorder holds an exclusive ``flock`` on the database
file for its whole life (released by the kernel if it dies), so a second
recorder fails at once with a message naming the first one's pid, while
readers (``ptmon replay``, ``snapshot --from``) may open the file at any time.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

__all__ = ["RecordingError", "RecordingLocked", "FORMAT", "open_for_writing", "open_for_reading", "Lock"]

FORMAT = "ptmon-recording-1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(id INTEGER PRIMARY KEY, started REAL NOT NULL, ended REAL,
    pid INTEGER NOT NULL, version TEXT NOT NULL, settings TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS targets(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, target INTEGER NOT NULL, name TEXT NOT NULL,
    labels TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, target INTEGER NOT NULL, t0 REAL NOT NULL,
    t1 REAL NOT NULL, scrapes INTEGER NOT NULL, samples INTEGER NOT NULL, level INTEGER NOT NULL,
    data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks(t1);
CREATE TABLE IF NOT EXISTS actions(id INTEGER PRIMARY KEY, at REAL NOT NULL, kind TEXT NOT NULL, value REAL);
CREATE TABLE IF NOT EXISTS rosters(id INTEGER PRIMARY KEY, at REAL NOT NULL, names TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS alerts(id INTEGER PRIMARY KEY, name TEXT NOT NULL, subject TEXT, level TEXT NOT NULL,
    message TEXT NOT NULL, start REAL NOT NULL, end REAL);
"""


class RecordingError(Exception):
    """A recording that cannot be opened, read or written; the message says which file and why."""


class RecordingLocked(RecordingError):
    """Another recorder is writing the file."""


class Lock:
    """An exclusive ``flock`` on the database file, held until ``release`` (or the process's death).

    flock and SQLite's fcntl locks are independent on Linux. The descriptor
    stays open for the recorder's life: closing any descriptor of a file
    drops the process's fcntl locks on it, so this one closes only after
    SQLite has.
    """

    def __init__(self, path: Path) -> None:
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise RecordingLocked(f"{path}: another ptmon is recording into this file{_holder(path)}") from None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _holder(path: Path) -> str:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
        try:
            row = db.execute("SELECT pid FROM sessions WHERE ended IS NULL ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return ""
    return f" (pid {row[0]})" if row else ""


def _check_format(db: sqlite3.Connection, path: Path) -> None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise RecordingError(f"{path}: not a ptmon recording ({exc})") from None
    if row is None:
        raise RecordingError(f"{path}: not a ptmon recording (no format marker)")
    if row[0] != FORMAT:
        raise RecordingError(f"{path}: recording format {row[0]!r}, this ptmon reads {FORMAT!r}")


def _has_tables(db: sqlite3.Connection) -> bool:
    try:
        return db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    except sqlite3.DatabaseError:
        return True  # not a database at all: _check_format says so


def open_for_writing(path: str | os.PathLike[str]) -> tuple[sqlite3.Connection, Lock]:
    """The file locked and opened for appending (created with the schema when new or empty)."""
    p = Path(path)
    if p.is_dir():
        raise RecordingError(f"{p}: is a directory")
    if not p.parent.is_dir():
        raise RecordingError(f"{p}: directory {p.parent} does not exist")
    try:
        lock = Lock(p)
    except OSError as exc:
        raise RecordingError(f"{p}: cannot open: {exc.strerror}") from None
    try:
        db = sqlite3.connect(p, isolation_level=None, check_same_thread=False, timeout=10.0)
        try:
            if not _has_tables(db):
                db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # before the first table: retention can shrink it
                db.execute("PRAGMA journal_mode = WAL")
                db.executescript(_SCHEMA)
                db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            _check_format(db, p)
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                raise RecordingError(f"{p}: cannot use write-ahead logging here (journal mode {mode})")
            db.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable across a crash of this process
            db.executescript(_SCHEMA)  # tables a newer minor version added
        except BaseException:
            db.close()
            raise
    except sqlite3.DatabaseError as exc:
        lock.release()
        raise RecordingError(f"{p}: not a ptmon recording ({exc})") from None
    except BaseException:
        lock.release()
        raise
    return db, lock


def open_for_reading(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """The file opened read-only (another process may be recording into it)."""
    p = Path(path)
    if not p.is_file():
        raise RecordingError(f"{p}: no such recording")
    try:
        db = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=10.0, check_same_thread=False)
        _check_format(db, p)
    except sqlite3.DatabaseError as exc:
        raise RecordingError(f"{p}: not a ptmon recording ({exc})") from None
    return db
