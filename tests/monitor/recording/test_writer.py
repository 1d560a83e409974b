"""The recorder in process: what the Store got is what the file holds; one writer per file; appending."""

from __future__ import annotations

import sqlite3

import pytest

from ptmon.monitor.dashboard import Alert, TargetHealth
from ptmon.monitor.parse import ExpositionParser
from ptmon.monitor.recording.file import RecordingError, RecordingLocked
from ptmon.monitor.recording.reader import Recording
from ptmon.monitor.recording.writer import Recorder, TappedStore
from ptmon.monitor.store import Store
from tests.monitor.helpers import Clock

TEXT = """# TYPE posttrain_rollouts_total counter
posttrain_rollouts_total{{env="math",outcome="ok"}} {n}
posttrain_rollouts_total{{env="code",outcome="ok"}} {m}
posttrain_gpu_seconds_total{{role="rollout"}} {g}
"""


def _scrapes(parser: ExpositionParser, rounds: int, *, start: int = 0):
    for i in range(start, start + rounds):
        text = TEXT.format(n=3 * i, m=i // 2, g=1.5 * i)
        if i % 4 == 3:  # a series that comes and goes
            text += "posttrain_loss 0.25\n"
        yield float(i), parser.parse(text)


def _record(path, rounds: int, *, start: int = 0, chunk_scrapes: int = 5, clock=None):
    clock = clock or Clock(0.0)
    rec = Recorder(path, clock=clock, chunk_scrapes=chunk_scrapes).open()
    store = TappedStore(rec)
    plain = Store()
    parser = ExpositionParser()
    for t, samples in _scrapes(parser, rounds, start=start):
        clock.t = t + 0.01
        store.ingest("w", t, samples)
        plain.ingest("w", t, samples)
        rec.observe_health([TargetHealth(name="w", url="http://w/metrics", role="rollout", up=True,
                                         last_scrape=t + 0.01, last_success=t + 0.01, samples=len(samples))])
    rec.close()
    return store, plain


def _points(store: Store):
    return {(s.name, tuple(sorted(s.labels.items()))): s.points()
            for n in list(store.names("w")) for s in store.series("w", n)}


def test_tap_changes_nothing_and_the_file_holds_every_scrape(tmp_path):
    path = tmp_path / "r.rec"
    tapped, plain = _record(path, 23)
    assert _points(tapped) == _points(plain)
    with Recording(path) as r:
        replayed = Store()
        for target, stamp, stored_at, samples in r.scrapes():
            assert stored_at == stamp + 0.01
            replayed.ingest(target, stamp, samples)
        assert _points(replayed) == _points(plain)
        assert r.targets() == ["w"]
        health = list(r.health())
        assert [h.at for _, h in health] == [i + 0.01 for i in range(23)]
        scrapes, samples, _ = r.stats()
        assert (scrapes, samples) == (23, 3 * 23 + 5)
        # Compacted into chunks of 5; what was left at close compacted too: no head chunk survives a clean stop.
        db = sqlite3.connect(path)
        levels = [row[0] for row in db.execute("SELECT level FROM chunks ORDER BY t0")]
        db.close()
        assert levels == [1] * 5


def test_a_second_recorder_on_the_same_file_is_refused_with_the_holder(tmp_path):
    path = tmp_path / "r.rec"
    first = Recorder(path).open()
    try:
        with pytest.raises(RecordingLocked, match=r"another ptmon is recording into this file \(pid \d+\)"):
            Recorder(path).open()
    finally:
        first.close()
    Recorder(path).open().close()  # released: the next one may


def test_a_new_recorder_appends_and_keeps_series_ids(tmp_path):
    path = tmp_path / "r.rec"
    _, plain_a = _record(path, 7)
    _, plain_b = _record(path, 6, start=7)
    with Recording(path) as r:
        replayed = Store()
        for target, stamp, _, samples in r.scrapes():
            replayed.ingest(target, stamp, samples)
        assert [len(s.points()) for s in replayed.series("w", "posttrain_rollouts_total")] == [13, 13]
        assert len(r.sessions()) == 2 and all(s.ended is not None for s in r.sessions())
        db = sqlite3.connect(path)
        assert db.execute("SELECT count(*) FROM series").fetchone()[0] == 4  # the same four series, not eight
        db.close()


def test_not_a_recording(tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("hello, not a database\n" * 100)
    with pytest.raises(RecordingError, match="not a ptmon recording"):
        Recorder(junk).open()
    assert junk.read_text().startswith("hello")  # left as it was
    other = tmp_path / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    with pytest.raises(RecordingError, match="not a ptmon recording"):
        Recorder(other).open()
    with pytest.raises(RecordingError, match="no such recording"):
        Recording(tmp_path / "missing.rec")
    with pytest.raises(RecordingError, match="does not exist"):
        Recorder(tmp_path / "no" / "dir.rec").open()


def test_alerts_are_kept_with_start_and_end(tmp_path):
    path = tmp_path / "r.rec"
    clock = Clock(100.0)
    rec = Recorder(path, clock=clock).open()
    down = Alert(name="target_down", level="warn", message="w is down", since=100.0, subject="w")
    stale = Alert(name="staleness", level="warn", message="3 behind", since=101.0)
    rec.observe_alerts([down], now=100.0)
    rec.observe_alerts([down, stale], now=101.0)
    rec.observe_alerts([stale], now=105.0)  # w is back at 105
    rec.observe_alerts([Alert(name="staleness", level="critical", message="5 behind", since=101.0)], now=106.0)
    rec.close()
    with Recording(path) as r:
        spans = [(a.name, a.subject, a.level, a.start, a.end) for a in r.alerts()]
    assert spans == [("target_down", "w", "warn", 100.0, 105.0), ("staleness", None, "critical", 101.0, None)]


def test_retention_drops_compacted_chunks_older_than_it(tmp_path):
    path = tmp_path / "r.rec"
    clock = Clock(0.0)
    rec = Recorder(path, clock=clock, chunk_scrapes=5, retention_s=10.0).open()
    store = TappedStore(rec)
    parser = ExpositionParser()
    for t, samples in _scrapes(parser, 30):
        clock.t = t
        store.ingest("w", t, samples)
        if t % 5 == 4:  # let the writer compact each chunk as it fills, as it would in real time
            before = rec.flushes
            rec.flush_now()
            while rec.flushes == before:
                pass
    rec.close()
    with Recording(path) as r:
        stamps = [stamp for _, stamp, _, _ in r.scrapes()]
    assert stamps[0] >= 29 - 10 - 5 and stamps[-1] == 29.0  # only what is younger than 10 s (a chunk at a time)


def test_a_writer_that_cannot_write_stops_and_says_why(tmp_path):
    path = tmp_path / "r.rec"
    rec = Recorder(path).open()
    store = TappedStore(rec)
    parser = ExpositionParser()
    assert rec._db is not None
    rec._db.execute("PRAGMA query_only = ON")  # as good as a full disk: every write now fails
    for t, samples in _scrapes(parser, 3):
        store.ingest("w", t, samples)
    rec.flush_now()
    for _ in range(500):
        if rec.error is not None:
            break
        import time

        time.sleep(0.01)
    assert rec.error is not None and str(path) in rec.error and "recording" in rec.error
    store.ingest("w", 10.0, parser.parse(TEXT.format(n=1, m=1, g=1)))  # the Store goes on; the tap is off
    assert len(store.series("w", "posttrain_rollouts_total")[0]) == 4
    rec.close()


def test_the_file_keeps_no_query_string_secret_of_a_targets_url_or_error(tmp_path):
    path = tmp_path / "r.rec"
    rec = Recorder(path, clock=Clock(1.0)).open()
    url = "http://w:1/metrics?token=s3cr3t&x=1"
    rec.observe_health([TargetHealth(name="w", url=url, role="rollout", up=False, last_scrape=1.0,
                                     error=f"GET {url}: refused")])
    rec.close()
    with Recording(path) as r:
        ((_, kept),) = list(r.health())
    assert kept.health.url == "http://w:1/metrics?token=***&x=1"
    assert kept.health.error == "GET http://w:1/metrics?token=***&x=1: refused"
