"""The targets a Prometheus server scrapes, as its answers show them: names, samples, health.

- **Targets are (job, instance) pairs**, named by the ``ptmon_name`` target
  label when present (``ptmon demo --headless`` writes one), else the
  instance, else ``job/instance`` when one instance is in two jobs; those
  three labels are removed before storing, as a direct scrape never has them.
- Prometheus's own ``up``, ``scrape_duration_seconds`` and
  ``scrape_samples_scraped`` give each target's health and are not stored.
- **A Pushgateway's groups** (scraped with ``honor_labels``) arrive under the
  pushing job, not the gateway's: a target with pushed groups
  (``push_time_seconds``) and no ``up`` of its own takes its health from the
  ``up`` of the gateway targets (those exposing ``pushgateway_build_info``),
  so a dead gateway marks its evals down instead of leaving them up forever.
- **With a run** (``--run``), a series is that run's when it carries the
  run's ``run`` label itself (a group pushed with ``run`` in its grouping
  key), else when the run info of its group (same target, same labels but
  each metric's own) says the run: several runs on one gateway stay apart.
- A job is listed only when it has at least one ptmon/engine/GPU series, so a
  company-wide Prometheus does not list every node exporter it scrapes.
- Answers overlap (each poll looks back past the last one): a target's
  samples are ingested per Prometheus scrape time and only when newer than the
  last one ingested, so a sample seen twice is stored once and ``rate()``
  never sees a zero interval.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ptmon.exporters import schema
from ptmon.monitor import promql
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.roles import run_info_names
from ptmon.monitor.sources.errors import series_limit_error, short
from ptmon.monitor.sources.prometheus_api import points
from ptmon.monitor.store import Store

__all__ = ["RemoteTargets", "TARGET_LABELS", "GONE_MIN_S"]

_JOB, _INSTANCE = promql.TARGET_BY
# Labels Prometheus attaches to every series of a target (and the demo's name for it).
TARGET_LABELS = (_JOB, _INSTANCE, schema.TARGET_NAME_LABEL)
_UP = schema.PROMETHEUS_UP
_GATEWAY = schema.PUSHGATEWAY_BUILD_INFO  # a Pushgateway's own series: marks the target that is one
_META = frozenset((*schema.PROMETHEUS_SCRAPE_SERIES, _GATEWAY))
_RUN_INFO = frozenset(run_info_names())
_NOT_GROUP = frozenset(("__name__", *promql.TARGET_BY, schema.TARGET_NAME_LABEL))
GONE_MIN_S = 30.0  # no `up` for max(this, 3 scrape spacings) behind the others: no longer scraped

_Key = tuple[str, str]  # (job, instance)
_Meta = tuple[float, str, float]  # (Prometheus scrape time, up or scrape_*, value)


def _key(metric: Mapping[str, Any]) -> _Key:
    return metric.get(_JOB, ""), metric.get(_INSTANCE, "")


def _own_labels() -> dict[str, frozenset[str]]:
    """Each contract sample name's own labels (a histogram bucket's with ``le``), by every name it is exposed as."""
    out: dict[str, frozenset[str]] = {}
    for spec in schema.CONTRACT:
        own = frozenset(spec.labels)
        names = list(schema.counter_aliases(spec.name)) if spec.kind == "counter" else [spec.name]
        if spec.kind == "histogram":
            names += [spec.sum, spec.count]
            out[spec.bucket] = own | {schema.LABEL_LE}
        if spec.kind in ("counter", "histogram"):
            names.append(spec.created)
        out.update(dict.fromkeys(names, own))
    return out


_OWN_LABELS = _own_labels()
_REFUSED = "\0refused"  # the name _classify gives a series over the label-size contract: not stored
# The series cache's label text, past which it starts afresh (label churn through the server's answers).
_CACHE_BYTES = 64 * 2**20


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def label_size_problem(name: str, labels: Mapping[str, str]) -> str | None:
    """Why this series is over the label-size contract the scraper keeps (schema.MAX_LABEL_VALUE_BYTES a
    value, MAX_SERIES_BYTES name and labels as written), in the scraper's words; None when it is within."""
    size = _utf8_len(name) + 2
    for k, v in labels.items():
        value = _utf8_len(v)
        if value > schema.MAX_LABEL_VALUE_BYTES:
            return (f"label value of {value:,} bytes exceeds the limit of {schema.MAX_LABEL_VALUE_BYTES:,} "
                    f"(label {k[:64]!r} of {name[:64]})")
        size += _utf8_len(k) + value + 4
    if size > schema.MAX_SERIES_BYTES:
        return (f"series of {size:,} bytes (name and labels) exceeds the limit of {schema.MAX_SERIES_BYTES:,} "
                f"({name[:64]})")
    return None


def _group(metric: Mapping[str, Any]) -> tuple[_Key, tuple[tuple[str, Any], ...]]:
    """(target, group): the labels a series shares with every series of its registry or Pushgateway group,
    which are all but its metric's own (an unknown metric's are all its labels: it is in no group)."""
    own = _OWN_LABELS.get(metric.get("__name__", ""), frozenset())
    return _key(metric), tuple(sorted((k, v) for k, v in metric.items() if k not in _NOT_GROUP and k not in own))


@dataclass(slots=True)
class _Remote:
    """One (job, instance) as Prometheus scrapes it."""

    key: _Key
    name: str
    up: bool | None = None
    last_up_ts: float | None = None  # Prometheus's last scrape of it
    up_spacing: float = 0.0
    last_success: float | None = None
    scrape_seconds: float | None = None
    samples: int = 0
    dropped_series: int = 0
    over_label_bytes: int = 0  # of dropped_series, refused by the store's label budget
    refused: str | None = None  # why series of the last answer were refused (label sizes), in words
    pushed: bool = False  # holds groups a Pushgateway carries (push_time_seconds): no scrape of its own
    carried_ts: float | None = None  # pushed: the last scrape of the gateway(s) carrying it
    ingested_ts: float = -math.inf  # newest Prometheus scrape time stored
    first_ts: float = math.inf  # oldest Prometheus scrape time stored
    error: str | None = None


class RemoteTargets:
    """Every target seen in a server's answers, each answer split by target into ``store``.

    With ``run``, only targets whose run info has said that run are kept (and
    remembered: a target that goes down keeps its place, with `up` saying so).
    """

    def __init__(self, store: Store, *, run: str | None = None) -> None:
        self._store = store
        self._run = run
        self._run_keys: set[_Key] = set()  # targets with a group of the run
        self._run_groups: set[tuple[_Key, tuple[tuple[str, Any], ...]]] = set()
        self._gateways: dict[_Key, _Remote] = {}  # Pushgateway targets: not listed, their `up` carries groups
        self._gateway_keys: set[_Key] = set()  # with a run: the gateways seen, whose health is kept
        self._remotes: dict[_Key, _Remote] = {}
        self._names: set[str] = set()
        self._jobs: set[str] = set()  # jobs with at least one series ptmon reads
        self._ptmon_names: dict[_Key, str] = {}
        # The answer's label items of a series -> (target, name, Labels); see ingest.
        self._series: dict[tuple[tuple[str, Any], ...], tuple[_Key, str, Labels | None]] = {}
        self._series_bytes = 0  # label text the cache holds
        self._refusals: dict[tuple[tuple[str, Any], ...], str] = {}  # cached series refused: why

    def __bool__(self) -> bool:
        return bool(self._remotes)

    def name_of(self, metric: Mapping[str, Any]) -> str | None:
        """The name of the target a series' labels belong to; None for one not listed."""
        remote = self._remotes.get(_key(metric))
        return remote.name if remote is not None else None

    def first_times(self) -> list[float]:
        """Each target's oldest stored Prometheus scrape time (targets with none stored left out)."""
        return [r.first_ts for r in self._remotes.values() if r.first_ts < math.inf]

    def scrape_spacing(self) -> float:
        """The longest spacing between two Prometheus scrapes of a target seen; 0 before two."""
        return max((r.up_spacing for r in self._remotes.values()), default=0.0)

    def health(self, *, server_error: str | None) -> tuple[TargetHealth, ...]:
        """Each target's health, grouped by job then name (stable whatever the answer's order).

        ``server_error``: the server itself is failing, so what it last said is no longer current.
        """
        out = []
        for r in sorted(self._remotes.values(), key=lambda r: (r.key[0], r.name)):
            up, error = (False, server_error) if server_error is not None else (r.up, r.error)
            out.append(TargetHealth(
                name=r.name, url=r.key[1], role=None, up=up,
                last_scrape=r.last_up_ts if r.last_up_ts is not None else r.carried_ts,
                last_success=r.last_success, scrape_seconds=r.scrape_seconds, samples=r.samples,
                series=self._store.series_count(r.name), dropped_series=r.dropped_series, error=error,
                # Listed for its job, but none of its own series is one ptmon reads (or fetches).
                recognised=r.ingested_ts > -math.inf if r.last_success is not None else None))
        return tuple(out)

    # -- one answer --------------------------------------------------------------

    def ingest(self, result: list[dict[str, Any]]) -> None:
        """Split the answer by target, store each Prometheus scrape once, and update health."""
        cache = self._series
        if len(cache) > 2 * len(result) + 10_000 or self._series_bytes > _CACHE_BYTES:
            # label churn: start afresh (bounded by the answer, itself bounded by the body cap)
            cache.clear()
            self._refusals.clear()
            self._series_bytes = 0
        if self._run is not None:
            result = self._of_run(result)
        for remote in self._remotes.values():
            remote.refused = None
        data, meta = self._split(result)
        for key in meta:
            if key[0] in self._jobs:
                self._remote(key, self._ptmon_names.get(key))
        newest_up = max((ts for rows in meta.values() for ts, n, _ in rows if n == _UP), default=None)
        for key, rows in meta.items():
            if key not in self._remotes and any(n == _GATEWAY for _, n, _ in rows):
                self._gateways.setdefault(key, _Remote(key=key, name=f"{key[0]}/{key[1]}"))
        for key, gateway in self._gateways.items():
            self._update_health(gateway, sorted(meta.get(key, ())), newest_up)
        for key, remote in self._remotes.items():
            self._store_scrapes(remote, data.get(key, {}))
            if remote.pushed and remote.last_up_ts is None:
                self._carried_health(remote)
            else:
                self._update_health(remote, sorted(meta.get(key, ())), newest_up)

    def _split(self, result: list[dict[str, Any]]
               ) -> tuple[dict[_Key, dict[float, list[Sample]]], dict[_Key, list[_Meta]]]:
        """(target -> Prometheus scrape time -> samples newer than stored, target -> its up/scrape_* rows)."""
        data: dict[_Key, dict[float, list[Sample]]] = {}
        meta: dict[_Key, list[_Meta]] = defaultdict(list)
        cache = self._series
        for item in result:
            try:
                metric, values = item["metric"], item["values"]
                # Prometheus lists a series' labels in the same order every time: its items are the key.
                ident = tuple(metric.items())
                series = cache.get(ident)
            except (TypeError, KeyError, AttributeError):
                continue  # a native histogram ("histograms") or something new: not ours to read
            if series is None:
                series = cache[ident] = self._classify(metric, ident)
            key, name, labels = series
            if name is _REFUSED:  # over the label-size contract: its target says so, the rest is kept
                self._remotes[key].refused = self._refusals.get(ident)
                continue
            if labels is None:  # the scrape-health series, or unusable labels
                if name:
                    meta[key].extend((ts, name, v) for ts, v in points(values))
                continue
            if name == schema.PUSHGATEWAY_PUSH_TIME:
                self._remotes[key].pushed = True
            by_ts = data.get(key)
            if by_ts is None:
                by_ts = data[key] = {}
            floor = self._remotes[key].ingested_ts  # older points came in an earlier, overlapping poll
            # Non-finite points are left out: VictoriaMetrics's raw answers carry Prometheus's staleness
            # markers (NaN) where a series paused, and a NaN in a counter hid its restart (issue 14).
            try:
                fresh = [(t, x) for ts, v in values if (t := float(ts)) > floor and math.isfinite(x := float(v))]
            except (TypeError, ValueError):  # a malformed pair: keep the good ones
                fresh = [(t, v) for t, v in points(values) if t > floor and math.isfinite(v)]
            for ts, v in fresh:
                group = by_ts.get(ts)
                if group is None:
                    group = by_ts[ts] = []
                group.append(Sample(name, labels, v, ts))
        return data, meta

    def _of_run(self, result: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Only the run's series: its own ``run`` label when it has one, else its group's run info (remembered
        once said); the health series of the run's targets and of every Pushgateway."""
        for item in result:
            metric = item.get("metric") if isinstance(item, dict) else None
            if not isinstance(metric, dict):
                continue
            if metric.get("__name__") in _RUN_INFO and metric.get(promql.RUN_LABEL) == self._run:
                self._run_groups.add(_group(metric))
                self._run_keys.add(_key(metric))
            elif metric.get("__name__") == _GATEWAY:
                self._gateway_keys.add(_key(metric))
        return [item for item in result if isinstance(item, dict) and isinstance(m := item.get("metric"), dict)
                and self._is_the_runs(m)]

    def _is_the_runs(self, metric: Mapping[str, Any]) -> bool:
        name = metric.get("__name__")
        if name in _META:
            return _key(metric) in self._run_keys or _key(metric) in self._gateway_keys
        own = metric.get(promql.RUN_LABEL)
        if own is not None:
            return bool(own == self._run)
        return _group(metric) in self._run_groups

    def _classify(self, metric: Mapping[str, Any], ident: tuple[Any, ...]) -> tuple[_Key, str, Labels | None]:
        """(target, name, labels to store) of a series seen for the first time; labels None: not stored.

        A series over the label-size contract is refused as the scraper refuses a page holding one (its
        name is ``_REFUSED``, the reason kept for its target's row): the same target seen through a server
        costs no more memory than scraped directly.
        """
        labels = {k: v for k, v in metric.items() if isinstance(k, str) and isinstance(v, str)}
        name = labels.pop("__name__", "")
        key = (labels.pop(_JOB, ""), labels.pop(_INSTANCE, ""))
        ptmon_name = labels.pop(schema.TARGET_NAME_LABEL, None)
        if ptmon_name:
            self._ptmon_names[key] = ptmon_name
        if name in _META or not name:
            return key, name, None
        self._jobs.add(key[0])
        self._remote(key, self._ptmon_names.get(key))
        problem = label_size_problem(name, labels)
        if problem is not None:
            self._refusals[ident] = problem
            return key, _REFUSED, None
        self._series_bytes += sum(_utf8_len(k) + _utf8_len(v) for k, v in labels.items())
        # One read-only Labels object per series for as long as it is cached: the store finds it by identity.
        return key, name, Labels(labels)

    def _remote(self, key: _Key, ptmon_name: str | None) -> _Remote:
        remote = self._remotes.get(key)
        if remote is None:
            remote = self._remotes[key] = _Remote(key=key, name=self._name_for(key, ptmon_name))
            self._names.add(remote.name)
        return remote

    def _name_for(self, key: _Key, ptmon_name: str | None) -> str:
        """ptmon_name, else the instance, else job/instance: unique, and fixed once given."""
        job, instance = key
        for candidate in (ptmon_name, instance or job, f"{job}/{instance}"):
            if candidate and candidate not in self._names:
                return candidate
        n = 2
        while f"{job}/{instance}#{n}" in self._names:
            n += 1
        return f"{job}/{instance}#{n}"

    def _store_scrapes(self, remote: _Remote, by_ts: Mapping[float, list[Sample]]) -> None:
        dropped = over = None
        for ts in sorted(by_ts):
            if ts <= remote.ingested_ts:
                continue  # seen in an earlier, overlapping poll
            result = self._store.ingest(remote.name, ts, by_ts[ts])
            remote.first_ts = min(remote.first_ts, ts)
            remote.ingested_ts = ts
            dropped, over = result.dropped_series, result.over_label_bytes
        if dropped is not None:
            remote.dropped_series, remote.over_label_bytes = dropped, over or 0

    def _carried_health(self, remote: _Remote) -> None:
        """A target seen only through a Pushgateway's groups: up while a gateway carrying them is.

        Prometheus cannot say which gateway carried a group (honor_labels keeps the pusher's job and
        instance), so with several it is up while any is; with none seen, its data says it answers.
        """
        gateways = list(self._gateways.values())
        if not gateways:
            if remote.up is None and remote.ingested_ts > -math.inf:
                remote.up, remote.last_success = True, remote.ingested_ts
            return
        up = [g for g in gateways if g.up]
        remote.up = bool(up)
        remote.carried_ts = max((g.last_up_ts for g in gateways if g.last_up_ts is not None), default=None)
        remote.last_success = max((g.last_success for g in gateways if g.last_success is not None), default=None)
        remote.up_spacing = max(g.up_spacing for g in gateways)
        if up:
            remote.error = None
        else:
            down = ", ".join(f"{job}/{instance}" for job, instance in sorted(g.key for g in gateways))
            remote.error = short(f"its Pushgateway is down according to Prometheus ({down})")
            remote.samples = 0

    def _update_health(self, remote: _Remote, rows: list[_Meta], newest_up: float | None) -> None:
        job, instance = remote.key
        where = f"job={job}, instance={instance}"
        for ts, name, value in rows:
            if remote.last_up_ts is not None and ts < remote.last_up_ts:
                continue
            if name == _UP:
                if remote.last_up_ts is not None and ts > remote.last_up_ts:
                    remote.up_spacing = ts - remote.last_up_ts
                remote.last_up_ts = ts
                remote.up = value == 1.0
                if remote.up:
                    remote.last_success = ts
                    remote.error = None
                else:
                    remote.error = short(f"down according to Prometheus ({where})")
                    remote.samples = 0
            elif name == schema.PROMETHEUS_SCRAPE_DURATION and math.isfinite(value):
                remote.scrape_seconds = value
            elif name == schema.PROMETHEUS_SCRAPE_SAMPLES and math.isfinite(value):
                remote.samples = int(value)
        if remote.up is None and remote.ingested_ts > -math.inf:
            # Data but no `up` (recording rules, remote-written series): it answers, as far as we can tell.
            remote.up, remote.last_success = True, remote.ingested_ts
        if newest_up is not None and remote.last_up_ts is not None:
            behind = newest_up - remote.last_up_ts
            if behind > max(GONE_MIN_S, 3 * remote.up_spacing):
                remote.up = False
                remote.error = short(f"not scraped by Prometheus for {behind:.0f} s ({where})")
        if remote.up and remote.refused:
            # As the scraper refuses a page holding such a series: down, so the alert fires; the rest is kept.
            remote.up = False
            remote.error = short(f"series refused: {remote.refused}")
        if remote.up and remote.dropped_series:
            # As the scraper does (and Prometheus over sample_limit): down, so the alert fires; what fit is kept.
            remote.up = False
            remote.error = series_limit_error(self._store.max_series, remote.dropped_series,
                                              over_label_bytes=remote.over_label_bytes,
                                              max_label_bytes=self._store.max_label_bytes)
