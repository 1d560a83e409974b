"""File targets: a framework's JSONL metrics file tailed into the Store, with health like a scrape's.

``ptmon watch outputs/run/metrics.jsonl host:8000`` puts prime-rl's metrics
file (or verl's file logger's, or any per-step JSON lines) next to an engine.
Each file is a target polled on the interval like an endpoint: its new lines
are read (``tail``), decoded (``jsonl``) and mapped by the framework bridge
(``bridged``); the store gets samples as a scrape of that bridge would have
given them, so everything downstream reads a file target as a trainer.

Health in words, never a crash: a missing file is down ("no such file (yet)"),
so is one that cannot be read; a malformed line is skipped and counted on an
up target; a truncated or replaced file is read again from its start (what
was read stays in the store); a last line with no newline yet waits for the
rest. The data age is the time since the last good read (the file said
what it had then), and the trainer's last step is the last line's time.

File reads block, so each poll runs in a daemon thread of its own, reading
at most 1 MiB (about a second's work: a long backlog is caught up over a few
polls). A read that outlasts the fetch deadline is waited for by the next
poll rather than started twice; one still running after 30 s (a hung network
filesystem) fails the target, and closing the source (quitting) never waits
for it.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ptmon.exporters import schema
from ptmon.exporters._defaults import ENV_GPUS
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.settings import DEFAULT_MAX_BODY_BYTES, Settings, Target
from ptmon.monitor.sources.bridged import Batch, BridgedLines
from ptmon.monitor.sources.errors import short
from ptmon.monitor.sources.poller import Poller, PollState
from ptmon.monitor.sources.tail import Tail, TailRead
from ptmon.monitor.store import Store

__all__ = ["FileSource", "file_targets"]

R = TypeVar("R")
_READ_BYTES = 2**20  # per poll: a backlog is read over several polls, each about a second's work
_HUNG_S = 30.0


def file_targets(targets: Sequence[Target]) -> list[Target]:
    return [t for t in targets if t.path is not None]


@dataclass(slots=True, kw_only=True)
class _FileState(PollState):
    target: Target
    tail: Tail
    lines: BridgedLines
    reading: asyncio.Future[tuple[TailRead, Batch]] | None = None
    reading_since: float = 0.0  # perf_counter() when the read in flight began
    last_success: float | None = None
    samples: int = 0
    malformed: int = 0
    last_malformed: str | None = None
    restarts: dict[str, int] = field(default_factory=dict)


class FileSource(Poller[_FileState]):
    """Tails every file target on its own schedule into ``store``; a ``Source``."""

    def __init__(self, targets: Sequence[Target], *, store: Store, interval_s: float = 1.0,
                 timeout_s: float | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                 max_label_value_length: int | None = schema.MAX_LABEL_VALUE_BYTES) -> None:
        super().__init__(interval_s=interval_s, timeout_s=timeout_s, max_body_bytes=max_body_bytes,
                         clock=clock, sleep=sleep)
        self._store = store
        # A backlog older than the store can hold at this interval is logged (totals) but not read out.
        history = store.capacity * self._interval
        self._states: list[_FileState] = []
        for t in targets:
            if t.path is None:
                raise ValueError(f"target {t.name} is not a file target")
            lines = BridgedLines(path=t.path, framework=t.framework, interval_s=self._interval, history_s=history,
                                 gpus=t.gpus if t.gpus is not None else _env_gpus(),
                                 max_label_value_length=max_label_value_length)
            tail = Tail(t.path, max_bytes=min(max_body_bytes, _READ_BYTES))
            self._states.append(_FileState(target=t, tail=tail, lines=lines))

    @classmethod
    def from_settings(cls, settings: Settings, *, store: Store, clock: Callable[[], float] = time.time) -> FileSource:
        return cls(file_targets(settings.targets), store=store, interval_s=settings.interval_s,
                   timeout_s=settings.timeout_s, max_body_bytes=settings.max_body_bytes, clock=clock)

    def health(self) -> tuple[TargetHealth, ...]:
        return tuple(self._health(st) for st in self._states)

    def _health(self, st: _FileState) -> TargetHealth:
        recognised = st.lines.framework is not None if st.lines.seen_lines else None
        return TargetHealth(name=st.target.name, url=st.target.url, role=st.target.role, up=st.up,
                            last_scrape=st.last_attempt, last_success=st.last_success, scrape_seconds=st.seconds,
                            samples=st.samples, series=self._store.series_count(st.target.name),
                            error=st.error if st.up is False else _notes(st), recognised=recognised)

    def set_interval(self, interval_s: float) -> None:
        """The new interval, also the step the lines from now on are read out at (and the history it keeps)."""
        super().set_interval(interval_s)
        for st in self._states:
            st.lines.set_interval(self._interval, history_s=self._store.capacity * self._interval)

    async def scrape_once(self) -> None:
        """Read every file now and return when what was read is stored (a long backlog: all of one read)."""
        self._check_open()
        await asyncio.gather(*(self._read_fully(st) for st in self._states))

    async def _read_fully(self, st: _FileState) -> None:
        await self._poll(st)
        while st.reading is not None:  # outlasted the deadline: wait it out, then store it
            await asyncio.wait((st.reading,))
            await self._poll(st)

    async def aclose(self) -> None:
        await super().aclose()
        for st in self._states:
            if st.reading is None or st.reading.done():
                st.tail.close()  # else its thread still reads: the descriptor goes with the process

    # -- one file's read -------------------------------------------------------------------------------

    def _units(self) -> Sequence[tuple[str, _FileState]]:
        return [(f"ptmon-file:{st.target.name}", st) for st in self._states]

    async def _poll_locked(self, st: _FileState) -> None:
        if st.reading is None:
            st.reading_since = time.perf_counter()
            st.reading = _in_daemon_thread(self._read, st, self._clock(), name=f"ptmon-file:{st.target.name}")
        try:
            read, batch = await asyncio.wait_for(asyncio.shield(st.reading), self._deadline())
        except TimeoutError:
            took = time.perf_counter() - st.reading_since
            if took > _HUNG_S:  # a MiB of lines is mapped in a second or so; this long, the filesystem hangs
                st.failed(f"reading the file has taken over {_HUNG_S:g} s (a hung filesystem?)", at=self._clock(),
                          seconds=took)
            return
        finally:
            if st.reading is not None and st.reading.done():
                st.reading = None
        self._store_batch(st, read, batch, seconds=time.perf_counter() - st.reading_since)

    @staticmethod
    def _read(st: _FileState, now: float) -> tuple[TailRead, Batch]:
        read = st.tail.read()
        return read, st.lines.consume(read, now=now)

    def _store_batch(self, st: _FileState, read: TailRead, batch: Batch, *, seconds: float) -> None:
        for stamp, samples in batch.stamped:
            self._store.ingest(st.target.name, stamp, samples)
        st.malformed += batch.malformed
        st.last_malformed = batch.last_malformed or st.last_malformed
        for restart in batch.restarts:
            st.restarts[restart] = st.restarts.get(restart, 0) + 1
        if batch.stamped:
            st.samples = len(batch.stamped[-1][1])
        at = self._clock()
        if read.problem is not None:
            st.failed(short(read.problem), at=at, seconds=seconds)
            return
        st.answered(at=at, seconds=seconds)
        st.last_success = at


def _in_daemon_thread(fn: Callable[..., R], *args: object, name: str) -> asyncio.Future[R]:
    """``fn(*args)`` in a daemon thread, as a future of the running loop: unlike ``asyncio.to_thread``'s
    executor, a thread stuck in a hung filesystem is not waited for when the program exits."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[R] = loop.create_future()

    def settle(result: R | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = fn(*args), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting poll, which reports it
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed while this read ran: nobody waits for it
            pass

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def _env_gpus() -> float | None:
    """``PTMON_GPUS``, the exporters' variable, as the GPU count of a file target's run (None: unset or
    unreadable, and the spend stays unknown)."""
    try:
        gpus = float(os.environ.get(ENV_GPUS, "").strip())
    except ValueError:
        return None
    return gpus if 0 <= gpus < math.inf else None


def _notes(st: _FileState) -> str | None:
    """What an up file target's row says beside "up": lines skipped, restarts seen (counted since start)."""
    notes = []
    if st.malformed:
        lines = "line" if st.malformed == 1 else "lines"
        notes.append(f"{st.malformed} malformed {lines} skipped (last: {st.last_malformed})")
    for kind, count in st.restarts.items():
        times = "once" if count == 1 else f"{count} times"
        notes.append(f"file {kind} {times}: read again from its start")
    return short("; ".join(notes)) if notes else None
