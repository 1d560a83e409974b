"""The recorder: what the source stores, appended to a recording file as it happens.

Data flows one way: source -> Store -> recorder. ``TappedStore`` is a Store
that also hands every ingest (target, stamp, samples) to the recorder; the
feed decorator in ``ptmon.monitor.recording.feed`` adds the targets' health
and the alerts each Dashboard carried. Nothing here reaches back.

The event loop's share is small and never blocks: the tap turns a scrape
into an array of series ids and an array of values (a dict lookup per
sample) and queues it. A writer thread owns the SQLite connection: every
``flush_s`` it writes each target's new scrapes as a small *head* chunk in
one transaction (a crash loses at most that long), and once a target has
``chunk_scrapes`` of them it writes one compacted chunk and deletes the
head chunks it replaces, again in one transaction (small chunks compress
poorly: 2.4 bytes a sample at 2 scrapes, 0.8 at 120; tests/bench/bench_record.py).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ptmon.monitor.dashboard import Alert, TargetHealth
from ptmon.monitor.parse import Sample
from ptmon.monitor.recording.codec import DEFAULT_CODEC, HealthRecord, Scrape, encode_chunk
from ptmon.monitor.recording.file import Lock, RecordingError, open_for_writing
from ptmon.monitor.store import IngestResult, Store
from ptmon.monitor.text import mask_secrets

__all__ = ["Recorder", "TappedStore", "DEFAULT_FLUSH_S", "DEFAULT_CHUNK_SCRAPES"]

DEFAULT_FLUSH_S = 1.0
DEFAULT_CHUNK_SCRAPES = 120
_KNOWN_CAP = 200_000  # identity-cache entries before it starts afresh (series churn)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ptmon")
    except Exception:  # pragma: no cover - a source tree
        return "0+unknown"


@dataclass(slots=True)
class _Pending:
    """One target's scrapes and health not yet in a compacted chunk, and the head chunks holding them."""

    scrapes: list[Scrape] = field(default_factory=list)
    health: list[HealthRecord] = field(default_factory=list)
    flushed_scrapes: int = 0  # how many of them are already in head chunks
    flushed_health: int = 0
    heads: list[int] = field(default_factory=list)


def _public(h: TargetHealth) -> TargetHealth:
    """``h`` as the file may keep it: a secret query value in its URL or error masked (``?token=***``)."""
    return replace(h, url=mask_secrets(h.url), error=None if h.error is None else mask_secrets(h.error))


class Recorder:
    """Appends scrapes, health and alerts to the recording at ``path``; ``open`` takes the file's lock.

    ``settings_json``: what the session was told (interval, thresholds,
    prices, targets without credentials), for replay. ``retention_s``:
    compacted chunks older than this are deleted. ``clock`` stamps when
    samples were stored and when alerts ended (the source's clock).
    """

    def __init__(self, path: str | os.PathLike[str], *, settings_json: str = "{}",
                 clock: Callable[[], float] = time.time, flush_s: float = DEFAULT_FLUSH_S,
                 chunk_scrapes: int = DEFAULT_CHUNK_SCRAPES,
                 retention_s: float | None = None, codec: str = DEFAULT_CODEC) -> None:
        if not flush_s > 0:
            raise ValueError(f"flush_s must be positive, got {flush_s!r}")
        if chunk_scrapes < 1:
            raise ValueError(f"chunk_scrapes must be at least 1, got {chunk_scrapes!r}")
        if retention_s is not None and not retention_s > 0:
            raise ValueError(f"retention must be positive, got {retention_s!r}")
        self.path = os.fspath(path)
        self._settings_json = settings_json
        self._clock = clock
        self._flush_s = flush_s
        self._chunk_scrapes = chunk_scrapes
        self._retention_s = retention_s
        self._codec = codec
        self._queue: deque[tuple] = deque()
        self._known: dict[tuple[str, str, int], tuple[Mapping[str, str], int]] = {}
        self._sids: dict[tuple[str, str, str], int] = {}
        self._next_sid = 1
        self._health: dict[str, TargetHealth] = {}
        self._roster: tuple[str, ...] | None = None
        self._open_alerts: dict[tuple[str, str | None], Alert] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._db: sqlite3.Connection | None = None
        self._lock: Lock | None = None
        self._session = 0
        self._target_ids: dict[str, int] = {}
        self._pending: dict[str, _Pending] = {}
        self.error: str | None = None  # the writer's failure, in words; recording stopped
        self.flushes = 0  # transactions committed: tests wait on it

    # -- lifecycle (any thread) ---------------------------------------------------------------------------

    def open(self) -> Recorder:
        """Lock and open the file (creating it), load what it already holds, start the writer thread."""
        db, lock = open_for_writing(self.path)
        try:
            for sid, target, name, labels in db.execute("SELECT s.id, t.name, s.name, s.labels FROM series s "
                                                        "JOIN targets t ON t.id = s.target"):
                self._sids[(target, name, labels)] = sid
                self._next_sid = max(self._next_sid, sid + 1)
            self._target_ids = dict(db.execute("SELECT name, id FROM targets"))
            db.execute("UPDATE sessions SET ended = coalesce((SELECT max(t1) FROM chunks), started) "
                       "WHERE ended IS NULL")  # a recorder that died: its session ended with its last data
            db.execute("UPDATE alerts SET end = coalesce((SELECT max(t1) FROM chunks), start) WHERE end IS NULL")
            cur = db.execute("INSERT INTO sessions(started, pid, version, settings) VALUES (?, ?, ?, ?)",
                             (self._clock(), os.getpid(), _version(), self._settings_json))
            self._session = int(cur.lastrowid or 0)
        except sqlite3.Error as exc:
            db.close()
            lock.release()
            raise RecordingError(f"{self.path}: {exc}") from None
        self._db, self._lock = db, lock
        self._thread = threading.Thread(target=self._run, name="ptmon-recorder", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Write everything queued, end the session, release the lock. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._wake.set()
            thread.join()
        db, self._db = self._db, None
        if db is not None:
            try:
                db.execute("UPDATE sessions SET ended = ? WHERE id = ?", (self._clock(), self._session))
                db.executescript("PRAGMA incremental_vacuum;")  # run to completion (execute() frees one page)
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass
            db.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Recorder:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the taps (the event loop's thread) ----------------------------------------------------------------

    def tap(self, target: str, stamp: float, samples: Sequence[Sample]) -> None:
        """One ingest, as the Store got it: queued, never written here."""
        if self.error is not None:
            return
        ids = array("I")
        values = array("d")
        own: array | None = None
        known = self._known
        for i, s in enumerate(samples):
            key = (target, s.name, id(s.labels))
            hit = known.get(key)
            if hit is None or hit[0] is not s.labels:
                hit = known[key] = (s.labels, self._sid(target, s.name, s.labels))
            ids.append(hit[1])
            values.append(s.value)
            if s.timestamp is not None:
                if own is None:
                    own = array("d", [math.nan]) * i
                own.append(s.timestamp)
            elif own is not None:
                own.append(math.nan)
        if len(known) > _KNOWN_CAP:
            known.clear()
        self._queue.append(("scrape", target, Scrape(stamp=stamp, stored_at=self._clock(), series=ids,
                                                     values=values, timestamps=own)))

    def _sid(self, target: str, name: str, labels: Mapping[str, str]) -> int:
        text = json.dumps(sorted(labels.items()), separators=(",", ":"), ensure_ascii=False)
        key = (target, name, text)
        sid = self._sids.get(key)
        if sid is None:
            sid = self._sids[key] = self._next_sid
            self._next_sid += 1
            self._queue.append(("series", target, (sid, name, text)))
        return sid

    def observe_health(self, health: Iterable[TargetHealth]) -> None:
        """Each target's health, queued when it changed since the last call; and which targets the source
        listed, in its order, when that changed (a Prometheus server's row gives way to its targets)."""
        if self.error is not None:
            return
        now = self._clock()
        health = tuple(health)
        roster = tuple(h.name for h in health)
        if roster != self._roster:
            self._roster = roster
            self._queue.append(("roster", "", (now, roster)))
        for h in health:
            if self._health.get(h.name) != h:
                self._health[h.name] = h
                at = h.last_scrape if h.last_scrape is not None else now
                self._queue.append(("health", h.name, HealthRecord(at=min(at, now), health=_public(h))))

    def observe_action(self, kind: str, value: float | None = None) -> None:
        """What the person at the screen changed that changes numbers: ``interval`` (rates restart there),
        ``baseline`` (the IPD baseline pinned to the latest eval)."""
        if self.error is None:
            self._queue.append(("action", "", (self._clock(), kind, value)))

    def observe_alerts(self, alerts: Iterable[Alert], *, now: float) -> None:
        """The alerts a Dashboard carried: each one's start, and its end when a later Dashboard lacks it."""
        if self.error is not None:
            return
        current = {(a.name, a.subject): a for a in alerts}
        for key, alert in current.items():
            old = self._open_alerts.get(key)
            if old is None or old.since != alert.since or old.level != alert.level:
                self._queue.append(("alert", "", alert))
        for key, alert in self._open_alerts.items():
            if key not in current:
                self._queue.append(("alert_end", "", (alert, now)))
        self._open_alerts = current

    # -- the writer thread --------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._flush_s)
            self._wake.clear()
            self._flush_guarded(final=False)
        self._flush_guarded(final=True)

    def flush_now(self) -> None:
        """Ask the writer thread to flush at once (tests; SIGTERM goes through ``close``)."""
        self._wake.set()

    def _flush_guarded(self, *, final: bool) -> None:
        if self.error is not None:
            self._queue.clear()
            return
        try:
            self._flush(final=final)
        except Exception as exc:  # a full disk, a removed file: stop recording, say why; the screen goes on
            self.error = f"recording to {self.path} stopped: {type(exc).__name__}: {exc}"
            self._queue.clear()

    def _flush(self, *, final: bool) -> None:
        db = self._db
        assert db is not None
        new_series: list[tuple[str, tuple[int, str, str]]] = []
        alerts: list[tuple] = []
        touched: set[str] = set()
        while self._queue:
            kind, target, item = self._queue.popleft()
            if kind == "scrape":
                self._pending.setdefault(target, _Pending()).scrapes.append(item)
                touched.add(target)
            elif kind == "health":
                self._pending.setdefault(target, _Pending()).health.append(item)
                touched.add(target)
            elif kind == "series":
                new_series.append((target, item))
            else:
                alerts.append((kind, item))
        if final:  # compact what is left: the next session starts from whole chunks
            touched.update(t for t, p in self._pending.items() if p.heads)
        if not (touched or new_series or alerts):
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            for target, (sid, name, labels) in new_series:
                db.execute("INSERT INTO series VALUES (?, ?, ?, ?)", (sid, self._target_id(db, target), name, labels))
            compacted = [self._write_target(db, target, final=final) for target in touched]
            self._write_alerts(db, alerts)
            expired = self._retention_s is not None and any(compacted) and self._expire(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if expired:  # outside the transaction: executescript commits first
            db.executescript("PRAGMA incremental_vacuum;")
        self.flushes += 1

    def _target_id(self, db: sqlite3.Connection, name: str) -> int:
        tid = self._target_ids.get(name)
        if tid is None:
            cur = db.execute("INSERT INTO targets(name) VALUES (?)", (name,))
            tid = self._target_ids[name] = int(cur.lastrowid or 0)
        return tid

    def _write_target(self, db: sqlite3.Connection, target: str, *, final: bool) -> bool:
        """The target's new scrapes as a head chunk, or all of them as one compacted chunk (True)."""
        p = self._pending[target]
        tid = self._target_id(db, target)
        if len(p.scrapes) >= self._chunk_scrapes or (final and p.heads and p.scrapes):
            self._compact(db, tid, p)
            if p.heads:
                db.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * len(p.heads))})", p.heads)
            self._pending[target] = _Pending()
            return True
        scrapes, health = p.scrapes[p.flushed_scrapes:], p.health[p.flushed_health:]
        if scrapes or health:
            p.heads.append(self._insert_chunk(db, tid, scrapes, health, level=0))
            p.flushed_scrapes, p.flushed_health = len(p.scrapes), len(p.health)
        return False

    def _compact(self, db: sqlite3.Connection, tid: int, p: _Pending) -> None:
        """Everything pending as chunks of at most ``chunk_scrapes`` scrapes, health going with its time."""
        n = self._chunk_scrapes
        health = sorted(p.health, key=lambda h: h.at)
        scrapes = sorted(p.scrapes, key=lambda s: s.stored_at)
        for i in range(0, max(len(scrapes), 1), n):
            piece = scrapes[i:i + n]
            last = i + n >= len(scrapes)
            until = math.inf if last else piece[-1].stored_at
            k = next((j for j, h in enumerate(health) if h.at > until), len(health))
            mine, health = health[:k], health[k:]
            if piece or mine:
                self._insert_chunk(db, tid, piece, mine, level=1)

    def _insert_chunk(self, db: sqlite3.Connection, tid: int, scrapes: Sequence[Scrape],
                      health: Sequence[HealthRecord], *, level: int) -> int:
        times = [s.stored_at for s in scrapes] + [h.at for h in health]
        # A head chunk lives a couple of minutes at most (compaction replaces it): fast zlib is enough.
        blob = encode_chunk(scrapes, health, codec=self._codec) if level else encode_chunk(
            scrapes, health, codec="zlib", level=1)
        cur = db.execute("INSERT INTO chunks(target, t0, t1, scrapes, samples, level, data) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (tid, min(times), max(times), len(scrapes), sum(len(s.values) for s in scrapes), level, blob))
        return int(cur.lastrowid or 0)

    def _write_alerts(self, db: sqlite3.Connection, alerts: Sequence[tuple]) -> None:
        for kind, item in alerts:
            if kind == "action":
                db.execute("INSERT INTO actions(at, kind, value) VALUES (?, ?, ?)", item)
            elif kind == "roster":
                at, names = item
                db.execute("INSERT INTO rosters(at, names) VALUES (?, ?)", (at, json.dumps(list(names))))
            elif kind == "alert":
                a: Alert = item
                row = db.execute("SELECT id FROM alerts WHERE name = ? AND subject IS ? AND start = ? AND end IS NULL",
                                 (a.name, a.subject, a.since)).fetchone()
                if row is None:
                    db.execute("INSERT INTO alerts(name, subject, level, message, start) VALUES (?, ?, ?, ?, ?)",
                               (a.name, a.subject, a.level, a.message, a.since))
                elif a.level == "critical":
                    db.execute("UPDATE alerts SET level = 'critical', message = ? WHERE id = ?", (a.message, row[0]))
            else:
                a, end = item
                db.execute("UPDATE alerts SET end = ? WHERE name = ? AND subject IS ? AND start = ? AND end IS NULL",
                           (end, a.name, a.subject, a.since))

    def _expire(self, db: sqlite3.Connection) -> bool:
        """Delete compacted chunks and ended alerts older than the retention; whether anything went."""
        assert self._retention_s is not None
        cutoff = self._clock() - self._retention_s
        if not db.execute("DELETE FROM chunks WHERE level = 1 AND t1 < ?", (cutoff,)).rowcount:
            return False
        db.execute("DELETE FROM alerts WHERE end IS NOT NULL AND end < ?", (cutoff,))
        return True


class TappedStore(Store):
    """A Store that hands every ingest to a recorder, after storing it (the tap never changes what is stored)."""

    def __init__(self, recorder: Recorder, *, capacity: int | None = None, max_series: int | None = None,
                 max_label_bytes: int | None = None, keep: Callable[[str], bool] | None = None) -> None:
        """``keep``: the Store's (which names' history it keeps); the recorder is handed every sample."""
        kwargs: dict[str, Any] = {"keep": keep}
        if max_label_bytes is not None:
            kwargs["max_label_bytes"] = max_label_bytes
        if capacity is not None:
            kwargs["capacity"] = capacity
        if max_series is not None:
            kwargs["max_series"] = max_series
        super().__init__(**kwargs)
        self.recorder = recorder

    @property
    def wanted(self) -> Callable[[str], bool] | None:
        """Every sample: the recording keeps every series, read or not (a replay's detail lists them)."""
        return None

    def ingest(self, target: str, timestamp: float, samples: Iterable[Sample]) -> IngestResult:
        batch = samples if isinstance(samples, (list, tuple)) else list(samples)
        result = super().ingest(target, timestamp, batch)
        self.recorder.tap(target, timestamp, batch)
        return result
