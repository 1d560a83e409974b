"""Reading a recording: its targets, series, sessions, alerts, and its scrapes and health in time order.

A reader may open a file another process is recording into: each query
sees the file as of its last committed flush (SQLite's WAL snapshots).
"""

from __future__ import annotations

import heapq
import json
import os
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.recording.codec import Chunk, CodecError, HealthRecord, Scrape, decode_chunk
from ptmon.monitor.recording.file import RecordingError, open_for_reading

__all__ = ["Recording", "Session", "AlertSpan", "StoredScrape"]

_CACHE_CHUNKS = 64


@dataclass(frozen=True, slots=True)
class Session:
    """One recorder's run: when, which ptmon, and the settings it was given."""

    started: float
    ended: float | None
    pid: int
    version: str
    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AlertSpan:
    """An alert as a Dashboard showed it: from ``start`` (its since) to ``end`` (None: still firing)."""

    name: str
    subject: str | None
    level: str
    message: str
    start: float
    end: float | None


# One scrape ready for a Store: (target, stamp, stored_at, samples).
StoredScrape = tuple[str, float, float, list[Sample]]


class Recording:
    """A recording opened read-only. Not thread-safe."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._db = open_for_reading(path)
        self._cache: OrderedDict[int, Chunk] = OrderedDict()
        self._series: dict[int, tuple[str, Labels]] = {}
        self._layouts: dict[bytes, tuple[list[str], list[Labels]]] = {}
        self.refresh()

    def refresh(self) -> None:
        """Read series added since (a file still being recorded grows)."""
        rows = self._query("SELECT id, name, labels FROM series WHERE id > ?", (max(self._series, default=0),))
        for sid, name, labels in rows:
            self._series[sid] = (name, Labels(json.loads(labels)))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise RecordingError(f"{self.path}: cannot read: {exc}") from None

    # -- what it holds ------------------------------------------------------------------------------------

    def targets(self) -> list[str]:
        """Target names in the order they first appeared."""
        return [name for (name,) in self._query("SELECT name FROM targets ORDER BY id")]

    def span(self) -> tuple[float, float] | None:
        """(first, last) time the recording covers: its first data to its last data or its recorder's stop,
        whichever is later (the screen went on showing the data until then); None for an empty recording."""
        row = self._query("SELECT min(t0), max(t1), (SELECT max(ended) FROM sessions) FROM chunks")[0]
        if row[0] is None:
            return None
        return float(row[0]), max(float(row[1]), float(row[2] or row[1]))

    def sessions(self) -> list[Session]:
        return [Session(started=a, ended=b, pid=c, version=d, settings=json.loads(e))
                for a, b, c, d, e in self._query("SELECT started, ended, pid, version, settings FROM sessions "
                                                 "ORDER BY id")]

    def actions(self) -> list[tuple[float, str, float | None]]:
        """(time, kind, value) of each change made at the screen (``interval``, ``baseline``), in time order."""
        try:
            rows = self._db.execute("SELECT at, kind, value FROM actions ORDER BY at, id").fetchall()
        except sqlite3.OperationalError:  # a file from before actions were kept
            return []
        return [(float(at), str(kind), None if value is None else float(value)) for at, kind, value in rows]

    def rosters(self) -> list[tuple[float, tuple[str, ...]]]:
        """Which targets the source listed (in its order) from when: one entry per change."""
        try:
            rows = self._db.execute("SELECT at, names FROM rosters ORDER BY at, id").fetchall()
        except sqlite3.OperationalError:  # a file from before rosters were kept: the replay lists every target
            return []
        return [(float(at), tuple(json.loads(names))) for at, names in rows]

    def alerts(self) -> list[AlertSpan]:
        """Every alert recorded, by start."""
        return [AlertSpan(*row) for row in self._query(
            "SELECT name, subject, level, message, start, end FROM alerts ORDER BY start, id")]

    def stats(self) -> tuple[int, int, int]:
        """(scrapes, samples, bytes of chunk data) over the whole file."""
        row = self._query("SELECT coalesce(sum(scrapes), 0), coalesce(sum(samples), 0), "
                          "coalesce(sum(length(data)), 0) FROM chunks")[0]
        return int(row[0]), int(row[1]), int(row[2])

    # -- scrapes and health, in time order ----------------------------------------------------------------

    def _chunks(self, target_id: int, start: float | None, end: float | None) -> Iterator[Chunk]:
        lo = -1e300 if start is None else start
        hi = 1e300 if end is None else end
        ids = self._query("SELECT id FROM chunks WHERE target = ? AND t1 > ? AND t0 <= ? ORDER BY t0, id",
                          (target_id, lo, hi))
        for (cid,) in ids:
            chunk = self._cache.get(cid)
            if chunk is None:
                (blob,) = self._query("SELECT data FROM chunks WHERE id = ?", (cid,))[0]
                try:
                    chunk = decode_chunk(blob)
                except CodecError as exc:
                    raise RecordingError(f"{self.path}: chunk {cid}: {exc}") from None
                self._cache[cid] = chunk
                if len(self._cache) > _CACHE_CHUNKS:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(cid)
            yield chunk

    def _target_ids(self) -> list[tuple[int, str]]:
        return [(int(a), b) for a, b in self._query("SELECT id, name FROM targets ORDER BY id")]

    def scrapes(self, start: float | None = None, end: float | None = None) -> Iterator[StoredScrape]:
        """Every scrape stored in ``(start, end]`` (by when it was stored), oldest first, as Store input."""
        streams = [self._target_scrapes(tid, name, start, end) for tid, name in self._target_ids()]
        return heapq.merge(*streams, key=lambda e: e[2])

    def _target_scrapes(self, tid: int, target: str, start: float | None, end: float | None) -> Iterator[StoredScrape]:
        lo = -1e300 if start is None else start
        hi = 1e300 if end is None else end
        for chunk in self._chunks(tid, start, end):
            for s in sorted(chunk.scrapes, key=lambda s: s.stored_at):
                if lo < s.stored_at <= hi:
                    yield target, s.stamp, s.stored_at, self.samples(s)

    def health(self, start: float | None = None, end: float | None = None) -> Iterator[tuple[str, HealthRecord]]:
        """Every health change in ``(start, end]``, oldest first."""
        lo = -1e300 if start is None else start
        hi = 1e300 if end is None else end
        streams = [self._target_health(tid, name, lo, hi) for tid, name in self._target_ids()]
        return heapq.merge(*streams, key=lambda e: e[1].at)

    def _target_health(self, tid: int, target: str, lo: float, hi: float) -> Iterator[tuple[str, HealthRecord]]:
        for chunk in self._chunks(tid, lo, hi):
            for h in sorted(chunk.health, key=lambda h: h.at):
                if lo < h.at <= hi:
                    yield target, h

    def samples(self, scrape: Scrape) -> list[Sample]:
        """The scrape's samples with their names and labels (one shared ``Labels`` per series, as a parser gives)."""
        key = scrape.series.tobytes()
        layout = self._layouts.get(key)
        if layout is None:
            if any(sid not in self._series for sid in scrape.series):
                self.refresh()
            try:
                infos = [self._series[sid] for sid in scrape.series]
            except KeyError as exc:
                raise RecordingError(f"{self.path}: a chunk refers to series {exc} the file does not hold") from None
            if len(self._layouts) > 10_000:  # a source whose scrapes never repeat a layout
                self._layouts.clear()
            layout = self._layouts[key] = ([n for n, _ in infos], [lb for _, lb in infos])
        names, labels = layout
        stamps = repeat(None) if scrape.timestamps is None else (None if t != t else t for t in scrape.timestamps)
        return list(map(Sample._make, zip(names, labels, scrape.values, stamps, strict=False)))
