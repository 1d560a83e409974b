"""A metrics file's lines through the framework bridge, out as samples stamped when each line was written.

A file target is read with exactly the maps an in-process ``MetricsBridge``
uses: each line's dict goes to a bridge over its own ``Colocated`` exporters
(a private registry), and the registry's exposition, parsed as a scrape's
would be, is what the store gets. So a metrics file and a bridge served over
HTTP give the same series, and every section of the build reads them alike.

Time: each line is stamped when its writer says it was written (prime-rl's
``time``), else with the file's modification time at the read (verl writes
none; the mtime is when the newest line landed). The exporters' clocks are
set to that stamp while the line is logged (the trainer's last-step time is
the line's, not the read's), the registry is read out after the last line of
each interval (so a backlog lands in the store spread over the times it was
written, as a scrape would have seen it, and the window's rates, quantiles
and sync times count it), and once more at the read itself (gauges as of now,
as a scrape's are; not while a backlog is still being read, whose next lines
are older). Stamps only move forward. A backlog older than the store holds at
this interval is logged (totals) but not read out.

What is not the file's own is left out: ptmon's GPU and price series unless
the run's GPU count is given (a metrics file says nothing of GPUs: without
it the file's spend is unknown, not $0), and the counters' creation times,
replaced by the first line's time (when the run began, not when ptmon started
reading).

Not thread-safe; one poll at a time (the source runs it in a worker thread).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from ptmon.exporters import schema
from ptmon.exporters.bridges import MetricsBridge, detect
from ptmon.exporters.colocated import Colocated
from ptmon.monitor.parse import ExpositionParser, Sample
from ptmon.monitor.sources.jsonl import Entry, LineError, LineSplitter, decode_line
from ptmon.monitor.sources.tail import TailRead

__all__ = ["BridgedLines", "Batch", "run_name"]

_CREATED = frozenset(spec.created for spec in schema.CONTRACT if spec.kind in ("counter", "histogram"))
_BEFORE_FIRST_S = 1e-3  # the zeros' stamp, before the first line's
_NOT_THE_FILES = frozenset((schema.GPUS.name, schema.GPU_SECONDS.name, schema.GPU_SECONDS.created,
                            schema.GPU_HOUR_PRICE.name))


def run_name(path: str) -> str:
    """The run a metrics file belongs to: its name without the extension (verl's ``<experiment>.jsonl``),
    or, for prime-rl's ``<run dir>/metrics.jsonl``, the run directory's name."""
    stem = os.path.splitext(os.path.basename(path))[0] or path
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return parent if stem == "metrics" and parent else stem


@dataclass(slots=True)
class Batch:
    """What one read brought: samples to store at their stamps, and what was wrong with the lines."""

    stamped: list[tuple[float, list[Sample]]] = field(default_factory=list)
    lines: int = 0  # complete lines read
    malformed: int = 0
    last_malformed: str | None = None  # "line 7: not JSON (...)"
    restarts: list[str] = field(default_factory=list)  # "truncated", "replaced"


class BridgedLines:
    """One file target's lines into samples: a line splitter, a bridge, its registry and a parser."""

    def __init__(self, *, path: str, framework: str | None, interval_s: float, history_s: float,
                 gpus: float | None = None, max_label_value_length: int | None = schema.MAX_LABEL_VALUE_BYTES) -> None:
        self._t = 0.0  # the exporters' clock: the stamp of the line being logged
        self._run = run_name(path)
        self._framework = framework  # None: detected from the first line that tells
        self._gpus = gpus
        self._dropped = _NOT_THE_FILES if gpus is None else frozenset()
        self.registry: CollectorRegistry | None = None
        self.bridge: MetricsBridge | None = None  # made at the first line whose framework is known
        self._parser = ExpositionParser(max_label_value_length=max_label_value_length)
        self._splitter = LineSplitter()
        self._interval = interval_s
        self._history = history_s
        self._stamp: float | None = None  # the newest stamp handed out
        self._first: float | None = None  # the first line's stamp: the run's start as far as the file tells
        self.line_number = 0  # of the current file (a restart begins again at 1)
        self.seen_lines = False

    def _now(self) -> float:
        return self._t

    def set_interval(self, interval_s: float, *, history_s: float) -> None:
        """Read out at this step from the next read on (a float each: safe beside a read in its thread)."""
        self._interval, self._history = interval_s, history_s

    @property
    def framework(self) -> str | None:
        """The framework the lines are read as (None while no line has told)."""
        return None if self.bridge is None else self.bridge.framework

    def _bridge_for(self, entry: Entry, batch: Batch) -> MetricsBridge | None:
        """The bridge, made at the first line whose framework is known (given, or detected from its keys).

        Its exporters are read out once just before that line, all at zero: the file holds the run from
        its start, so the first step, sync and rollouts count in every rate and window like the rest.
        """
        if self.bridge is None:
            name = self._framework or detect(k for k in entry.metrics if isinstance(k, str))
            if name is None:
                return None
            self.registry = CollectorRegistry()
            loop = Colocated(run=self._run, gpus=self._gpus or 0, registry=self.registry, clock=self._now,
                             wall_clock=self._now)
            self.bridge = MetricsBridge(name, trainer=loop.trainer, rollouts=loop.rollouts, evals=loop.evals)
            self._first = self._t
            self._emit(self._t - _BEFORE_FIRST_S, batch)
        return self.bridge

    def consume(self, read: TailRead, *, now: float) -> Batch:
        """The samples ``read``'s complete lines and the registry at ``now`` make (``now``: the read's time)."""
        batch = Batch()
        entries: list[Entry] = []
        for chunk in read.chunks:
            if chunk.restart is not None:
                self._splitter.reset()
                self.line_number = 0
                batch.restarts.append(chunk.restart)
            for line in self._splitter.feed(chunk.data):
                self.line_number += 1
                batch.lines += 1
                entry = self._decode(line, batch)
                if entry is not None:
                    entries.append(entry)
        fallback = min(now, read.mtime) if read.mtime is not None else now
        self._log(_by_step(entries), now=now, fallback=fallback, batch=batch)
        if not read.more:  # caught up: the registry as of now
            self._emit(now, batch)
        return batch

    def _decode(self, line: bytes | None, batch: Batch) -> Entry | None:
        if line is not None and not line.strip():
            return None  # a blank line: nothing, and nothing wrong
        try:
            if line is None:
                raise LineError("longer than 4 MiB without a newline")
            return decode_line(line)
        except LineError as exc:
            batch.malformed += 1
            batch.last_malformed = f"line {self.line_number}: {exc}"
            return None

    def _log(self, entries: Sequence[Entry], *, now: float, fallback: float, batch: Batch) -> None:
        for i, entry in enumerate(entries):
            t = fallback if entry.time is None else min(entry.time, now)
            self._t = t if self._stamp is None else max(t, self._stamp)
            self.seen_lines = True
            bridge = self._bridge_for(entry, batch)
            if bridge is None:
                continue
            bridge.log(entry.metrics, step=entry.step)
            following = entries[i + 1] if i + 1 < len(entries) else None
            if self._t >= now - self._history and not self._same_slot(following, now=now, fallback=fallback):
                self._emit(self._t, batch)

    def _same_slot(self, following: Entry | None, *, now: float, fallback: float) -> bool:
        """Whether the next line falls in the same slot as the one just logged (read out once for both)."""
        if following is None:
            return False
        t = fallback if following.time is None else min(following.time, now)
        return math.floor(max(t, self._t) / self._interval) == math.floor(self._t / self._interval)

    def _emit(self, stamp: float, batch: Batch) -> None:
        if self._stamp is not None and stamp <= self._stamp:
            return
        if self.registry is None:
            return  # no line read yet is recognisably a framework's: no series (zeros would be no one's)
        self._stamp = stamp
        text = generate_latest(self.registry).decode("utf-8")
        samples = [self._own(s) for s in self._parser.parse(text, openmetrics=False) if s.name not in self._dropped]
        batch.stamped.append((stamp, samples))

    def _own(self, s: Sample) -> Sample:
        if s.name in _CREATED and self._first is not None:
            return s._replace(value=self._first)
        return s


def _by_step(entries: Sequence[Entry]) -> list[Entry]:
    """The entries with each step's dicts together, steps in the order they first appear.

    prime-rl's trainer and orchestrator append to one file, each at its own step (the orchestrator runs
    ahead): an orchestrator line between two of the trainer's dicts of one step would end that step in
    the bridge (it joins dicts by step number) before its throughput met its time. Lines with no step
    keep their place.
    """
    order: dict[object, int] = {}
    keyed: list[tuple[int, int, Entry]] = []
    for i, entry in enumerate(entries):
        key: object = entry.step if entry.step is not None else ("line", i)
        rank = order.setdefault(key, len(order))
        keyed.append((rank, i, entry))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [entry for _, _, entry in keyed]
