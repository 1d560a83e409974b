"""Reading a Prometheus server (or an engine with its HTTP API) instead of scraping targets.

Past one machine, Prometheus (VictoriaMetrics, Thanos, Mimir) already scrapes
the fleet and keeps its history; ptmon asks it for the raw samples and fills
the same ``Store`` a direct scrape would, so the Dashboard cannot tell the two
apart. Choices and why:

- **The PromQL query API, not /federate.** Each poll is one instant query of a
  range selector, ``{__name__=~"posttrain_.*|vllm:.*|...|up|scrape_..."}[L]``,
  which returns every raw sample of the last ``L`` with the timestamp of the
  Prometheus scrape that took it. /federate returns one sample per series (a
  poll slower than the scrapes loses samples) and does not exist on Thanos
  Query or Mimir; ``/api/v1/query`` exists everywhere.
- **Overlapping ranges, exact de-duplication.** ``L`` is the time since the
  last good poll plus an overlap (scrape results become visible only when the
  scrape ends), so no sample is missed; a target's samples are ingested per
  Prometheus scrape time and only when newer than the last one ingested, so a
  sample seen twice is stored once and ``rate()`` never sees a zero interval.
- **Backfill for free.** The first poll asks for the whole window, so the
  dashboard opens with the last five minutes instead of an empty chart.
- **Targets are (job, instance) pairs**, named by the ``ptmon_name`` target
  label when present (``ptmon demo --headless`` writes one), else the
  instance, else ``job/instance`` when one instance is in two jobs; those
  three labels are removed before storing, as a direct scrape never has them.
  Prometheus's own ``up``, ``scrape_duration_seconds`` and
  ``scrape_samples_scraped`` give each target's health and are not stored.
  A job is listed only when it has at least one ptmon/engine/GPU series, so a
  company-wide Prometheus does not list every node exporter it scrapes.
- **Failures stay on the screen, not in a traceback**: Prometheus down, a 500,
  an API error, a body that is not JSON or too big all mark every known target
  down with that reason (their last numbers are not current any more); with no
  target known yet, one row for the server itself says what is wrong.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import httpx

from ptmon.exporters import schema
from ptmon.monitor import promql
from ptmon.monitor.dashboard import Point, TargetHealth
from ptmon.monitor.evaluated import PER_TARGET, Evaluated
from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.roles import run_info_names
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.sources._http import BearerTokenFile, FetchError, connect_message, make_client, read_capped, short
from ptmon.monitor.sources.scrape import backoff_delay, check_polling, effective_timeout
from ptmon.monitor.store import Store

__all__ = [
    "PrometheusSource",
    "series_selector",
    "parse_matrix",
    "parse_vector",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_OVERLAP_S",
    "TARGET_LABELS",
]

DEFAULT_MAX_BODY_BYTES = 64 * 2**20  # one answer covers a whole fleet (and, once, its whole window)
DEFAULT_OVERLAP_S = 10.0  # Prometheus's default scrape_timeout: a scrape's samples are visible when it ends
_BACKFILL_MIN_TIMEOUT_S = 10.0  # the window's history is a bigger query than one interval's
_GONE_MIN_S = 30.0  # no `up` for max(this, 3 scrape spacings) behind the others: no longer scraped
_THREAD_DECODE_BYTES = 256 * 1024
_CHART_POINTS = 120  # as build_dashboard's chart
_ERROR_BODY_BYTES = 64 * 1024  # an error answer's body is read this far, for the API's reason

_UP = "up"
_SCRAPE_DURATION = "scrape_duration_seconds"
_SCRAPE_SAMPLES = "scrape_samples_scraped"
_META = frozenset({_UP, _SCRAPE_DURATION, _SCRAPE_SAMPLES})
# Labels Prometheus attaches to every series of a target (ptmon_name: the demo's target label).
TARGET_LABELS = ("job", "instance", "ptmon_name")
_OWN_PREFIX = os.path.commonprefix([schema.RUN_INFO.name, schema.ROLLOUTS.name, schema.GPUS.name])  # posttrain_
PREFIXES = (_OWN_PREFIX, *schema.ENGINE_PREFIXES, schema.DCGM_PREFIX)

_Key = tuple[str, str]  # (job, instance)
# Series nothing on the Dashboard reads: not fetched (each rollout worker's rollout-time buckets, per env,
# are about 30% of what it exposes).
UNREAD = (schema.ROLLOUT_SECONDS.bucket,)


def series_selector(prefixes: tuple[str, ...] = PREFIXES, *, exclude: tuple[str, ...] = UNREAD) -> str:
    """The PromQL selector for what ptmon reads: its metrics, engines, DCGM, and scrape health."""
    for p in (*prefixes, *exclude):
        if not all(c.isalnum() or c in "_:" for c in p):  # no regex or quoting needed for these
            raise ValueError(f"metric name or prefix {p!r}: only letters, digits, '_' and ':'")
    alternatives = [f"{p}.*" for p in prefixes] + sorted(_META)
    selector = '{__name__=~"' + "|".join(alternatives) + '"'
    if exclude:
        selector += ', __name__!~"' + "|".join(exclude) + '"'
    return selector + "}"


def _result(body: bytes, kind: str) -> list[dict[str, Any]]:
    """The ``result`` of a query answer of ``kind`` (matrix or vector); a clear error for anything else."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        start = body[:40].decode("utf-8", "replace")
        raise FetchError(f"not a Prometheus API answer ({type(exc).__name__}; body starts {start!r})") from None
    if not isinstance(doc, dict):
        raise FetchError("not a Prometheus API answer (JSON but not an object)")
    if doc.get("status") != "success":
        error_type, error = doc.get("errorType"), doc.get("error")
        if error_type or error:
            raise FetchError(f"query failed: {error_type or 'error'}: {error or ''}".rstrip(": "))
        raise FetchError("not a Prometheus API answer (no status)")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
        got = data.get("resultType") if isinstance(data, dict) else type(data).__name__
        raise FetchError(f"expected a {kind} from the query, got {got!r}")
    result: list[dict[str, Any]] = data["result"]
    return result


def parse_matrix(body: bytes) -> list[dict[str, Any]]:
    """The ``result`` of a query that returned a matrix (a range selector, or a range query)."""
    return _result(body, "matrix")


def parse_vector(body: bytes) -> list[dict[str, Any]]:
    """The ``result`` of an instant query that returned a vector."""
    return _result(body, "vector")


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
    ingested_ts: float = -math.inf  # newest Prometheus scrape time stored
    first_ts: float = math.inf  # oldest Prometheus scrape time stored
    error: str | None = None


class PrometheusSource:
    """A ``Source`` that polls a Prometheus-compatible query API into ``store``.

    One poll at a time (a poll never overlaps the previous one), start to start
    every ``interval_s``, backing off like the scraper while the server fails.
    ``transport`` replaces the HTTP transport (tests); ``clock`` stamps the
    server row's last attempt; ``sleep`` is the injected scheduler.
    """

    def __init__(
        self,
        server: Target,
        *,
        store: Store,
        interval_s: float = 1.0,
        timeout_s: float | None = None,
        window_s: float = 300.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        overlap_s: float = DEFAULT_OVERLAP_S,
        backfill: bool = True,
        evaluate: bool = True,
        run: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        check_polling(interval_s=interval_s, timeout_s=timeout_s, max_body_bytes=max_body_bytes)
        if server.bearer_token_file and server.basic_auth:
            raise ValueError("prometheus: bearer_token_file and basic_auth are exclusive")
        self._server = server
        self._base = server.url.rstrip("/")
        self._store = store
        self._interval = float(interval_s)
        self._timeout = timeout_s
        self._window = float(window_s)
        self._max_body = max_body_bytes
        self._overlap = float(overlap_s)
        self._backfill = backfill
        self._evaluate = evaluate
        self._run_name = run
        self._run_keys: set[_Key] = set()  # with ``run``: the targets whose run info has said that run
        self._evaluated: Evaluated | None = None
        self._in_flight_since: float | None = None  # time.monotonic() the running poll began
        # Why the last server-side evaluation failed (the poll itself was good); None when it worked.
        self.evaluation_error: str | None = None
        self._clock = clock
        self._sleep = sleep
        self._selector = series_selector()
        self._auth: httpx.Auth | None = None
        if server.bearer_token_file:
            self._auth = BearerTokenFile(server.bearer_token_file)
        elif server.basic_auth:
            self._auth = httpx.BasicAuth(*server.basic_auth)
        # A bad CA file: the client is its reason, and every poll says so.
        self._client: httpx.AsyncClient | str = make_client(verify_tls=server.verify_tls, ca_file=server.ca_file,
                                                            transport=transport)
        self._remotes: dict[_Key, _Remote] = {}
        self._names: set[str] = set()
        self._jobs: set[str] = set()  # jobs with at least one series ptmon reads
        self._ptmon_names: dict[_Key, str] = {}
        # The answer's label items of a series -> (target, name, Labels); see _ingest.
        self._series: dict[tuple[tuple[str, Any], ...], tuple[_Key, str, Labels | None]] = {}
        self._last_poll: float | None = None  # loop time the last good poll started
        self._failures = 0
        self._server_up: bool | None = None
        self._server_error: str | None = None
        self._server_last: float | None = None
        self._server_seconds: float | None = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings, *, store: Store, transport: httpx.AsyncBaseTransport | None = None,
                      clock: Callable[[], float] = time.time) -> PrometheusSource:
        """A source for ``settings.prometheus`` with the settings' interval, timeout, window and body cap."""
        if settings.prometheus is None:
            raise ValueError("settings.prometheus is not set")
        return cls(settings.prometheus, store=store, interval_s=settings.interval_s, timeout_s=settings.timeout_s,
                   window_s=settings.window_s, max_body_bytes=settings.max_body_bytes, run=settings.run,
                   transport=transport, clock=clock)

    # -- Source ----------------------------------------------------------------

    async def start(self) -> None:
        if self._closed:
            raise RuntimeError("PrometheusSource is closed")
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="ptmon-prometheus")

    async def scrape_once(self) -> None:
        if self._closed:
            raise RuntimeError("PrometheusSource is closed")
        await self._poll()

    def health(self) -> tuple[TargetHealth, ...]:
        if not self._remotes:
            # Nothing to list yet: one row for the server says whether it answers and what it holds.
            return (TargetHealth(
                name=self._server.name, url=self._server.url, role=None,
                up=False if self._server_up is False else None, last_scrape=self._server_last,
                scrape_seconds=self._server_seconds,
                error=self._server_error or (self._nothing_yet() if self._server_up else self._waiting())),)
        out = []
        # Grouped by job (one per role, as usually configured), then by name: stable whatever the answer's order.
        for r in sorted(self._remotes.values(), key=lambda r: (r.key[0], r.name)):
            up, error = r.up, r.error
            if self._server_up is False:  # what Prometheus last said is no longer current
                up, error = False, self._server_error
            out.append(TargetHealth(
                name=r.name, url=r.key[1], role=None, up=up, last_scrape=r.last_up_ts,
                last_success=r.last_success, scrape_seconds=r.scrape_seconds, samples=r.samples,
                series=self._store.series_count(r.name), dropped_series=r.dropped_series, error=error))
        return tuple(out)

    def _nothing_yet(self) -> str:
        if self._run_name is not None:
            return (f"no target of run {self._run_name!r} in Prometheus yet "
                    f"(none exposes {schema.RUN_INFO.name} with it)")
        return "no posttrain_, engine or DCGM series in Prometheus yet"

    def _waiting(self) -> str | None:
        """While the first query (the window's history, allowed 10 s) is late, say so rather than nothing."""
        began = self._in_flight_since
        if began is None or self._server_up is not None:
            return None
        waited, timeout = time.monotonic() - began, effective_timeout(self._interval, self._timeout)
        if waited <= timeout:
            return None
        return (f"no answer from Prometheus {self._server.name} after {waited:.0f} s (the first query fetches "
                f"the last {self._window:g} s; it gives up at {max(timeout, _BACKFILL_MIN_TIMEOUT_S):g} s)")

    def set_interval(self, interval_s: float) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, got {interval_s!r}")
        self._interval = float(interval_s)

    def set_window(self, window_s: float) -> None:
        """The window the server evaluates rates and quantiles over, from the next poll."""
        if not window_s > 0:
            raise ValueError(f"window_s must be positive, got {window_s!r}")
        self._window = float(window_s)

    def evaluated(self) -> Evaluated | None:
        """The last poll's server-side answers (rate, increase, histogram_quantile); None before one."""
        return self._evaluated

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if isinstance(self._client, httpx.AsyncClient):
            await self._client.aclose()

    async def __aenter__(self) -> PrometheusSource:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- polling ---------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            await self._poll()
            if self._failures:
                delay = backoff_delay(self._interval, self._failures)
            else:
                delay = max(0.0, began + self._interval - loop.time())
            await self._sleep(delay)

    async def _poll(self) -> None:
        async with self._lock:
            self._in_flight_since = time.monotonic()
            try:
                await self._poll_locked()
            except Exception as exc:  # a bug here must not end the polling loop
                self._fail(short(f"internal error: {type(exc).__name__}: {exc}"), None)
            finally:
                self._in_flight_since = None

    async def _poll_locked(self) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        backfilling = self._last_poll is None and self._backfill
        if self._last_poll is None:
            lookback = self._window if self._backfill else self._interval + self._overlap
        else:
            lookback = min(max(self._window, self._interval), began - self._last_poll + self._overlap)
        t0 = time.perf_counter()
        at, window = self._clock(), self._window
        try:
            series, answers = await _all(self._raw(lookback, backfilling), self._evaluation(at, window))
        except FetchError as exc:
            self._fail(short(f"Prometheus {self._server.name}: {exc}"), time.perf_counter() - t0)
            return
        self._ingest(series)
        if answers is not None:
            self._evaluated = self._read_evaluation(at, window, *answers)
        self._last_poll = began
        self._failures = 0
        self._server_up, self._server_error = True, None
        self._server_last = self._clock()
        self._server_seconds = time.perf_counter() - t0

    def _fail(self, error: str, seconds: float | None) -> None:
        self._failures += 1
        self._server_up, self._server_error = False, error
        self._server_last = self._clock()
        self._server_seconds = seconds

    async def _raw(self, lookback_s: float, backfilling: bool) -> list[dict[str, Any]]:
        """Every raw sample of the last ``lookback_s``; a backfill too big for the cap is given up, not fatal."""
        try:
            return await self._query(lookback_s, backfill=backfilling)
        except FetchError as exc:
            if not backfilling or not str(exc).startswith("body exceeds"):
                raise
            # The window's history is too big for the cap: go on without it rather than not at all.
            self._backfill = False
            return await self._query(self._interval + self._overlap, backfill=False)

    async def _query(self, lookback_s: float, *, backfill: bool) -> list[dict[str, Any]]:
        timeout = effective_timeout(self._interval, self._timeout)
        if backfill:
            timeout = max(timeout, _BACKFILL_MIN_TIMEOUT_S)
        # Whole milliseconds, rounded up: the overlap must not come up short.
        params = {"query": f"{self._selector}[{promql.duration(math.ceil(lookback_s * 1000) / 1000)}]"}
        body = await self._get("/api/v1/query", params, timeout=timeout)
        if len(body) > _THREAD_DECODE_BYTES:  # a big answer must not freeze the TUI's loop
            return await asyncio.to_thread(parse_matrix, body)
        return parse_matrix(body)

    async def _evaluation(self, at: float, window: float
                          ) -> tuple[float, list[dict[str, Any]], list[dict[str, Any]]] | None:
        """``_evaluate_at``, best effort: a refused or slow evaluation leaves the raw samples' poll good.

        The targets are fine and their samples arrived, so nothing is marked
        down; the Dashboard shows the numbers computed from the stored samples
        (the same definitions) until an evaluation succeeds again.
        """
        try:
            answers = await self._evaluate_at(at, window)
        except FetchError as exc:
            self.evaluation_error = short(f"Prometheus {self._server.name}: evaluation: {exc}")
            return None
        if answers is not None:
            self.evaluation_error = None
        return answers

    async def _evaluate_at(self, at: float, window: float
                           ) -> tuple[float, list[dict[str, Any]], list[dict[str, Any]]] | None:
        """The server's answers at ``at``: one instant query for every windowed number, one range query
        for the rollout-rate chart. None when evaluation is off."""
        firsts = [r.first_ts for r in self._remotes.values() if r.first_ts < math.inf]
        if not self._evaluate or not firsts:
            return None  # off, or nothing stored yet to say how far back the data goes: from the next poll
        timeout = effective_timeout(self._interval, self._timeout)
        spacing = max((r.up_spacing for r in self._remotes.values()), default=0.0)
        scrape = max(spacing, self._interval)
        range_s = window
        oldest = min(firsts)
        if at - oldest < window:
            # PromQL divides an increase by the whole range: over a window longer than the data held (a run
            # younger than the window) rate() reads low by that ratio, and a target whose first sample is
            # over 1.1 scrapes after the range's start is extrapolated back only half a scrape. Prometheus
            # scrapes each target at its own offset in the interval, so the range starts half a scrape
            # before the newest first sample of the targets there from the start (within 1.5 scrapes of
            # the oldest); a target that joins later does not shorten everyone's range.
            start = max(t for t in firsts if t <= oldest + 1.5 * scrape) - scrape / 2
            range_s = min(window, max(at - start, 2 * scrape))
        step = max(2 * self._interval, range_s / _CHART_POINTS)
        # Each chart point is a rate over two steps, or over enough scrapes for rate() to have two samples.
        chart_range = max(2 * step, 2.5 * spacing)
        run = self._run_name
        instant = {"query": promql.combine(promql.instant_queries(range_s, run=run)), "time": f"{at:.3f}"}
        ranged = {"query": promql.rollout_rate_chart(chart_range, run=run), "start": f"{at - range_s:.3f}",
                  "end": f"{at:.3f}", "step": f"{step:.3f}"}
        vector_body, matrix_body = await _all(
            self._get("/api/v1/query", instant, timeout=timeout),
            self._get("/api/v1/query_range", ranged, timeout=timeout))
        return range_s, parse_vector(vector_body), parse_matrix(matrix_body)

    def _read_evaluation(self, at: float, window: float, range_s: float, vector: list[dict[str, Any]],
                         matrix: list[dict[str, Any]]) -> Evaluated:
        """The answers keyed for the Dashboard: per-target ones by the target's name; non-finite ones dropped."""
        fleet: dict[str, float] = {}
        by_target: dict[str, dict[str, float]] = defaultdict(dict)
        gpus: list[tuple[str, str, float]] = []
        for item in vector:
            try:
                metric, (_, text) = item["metric"], item["value"]
                key, value = metric.get(promql.Q_LABEL), float(text)
            except (TypeError, KeyError, ValueError, AttributeError):
                continue  # not ours, or malformed: the stored data's number stands
            if not isinstance(key, str) or not math.isfinite(value):
                continue
            if key in PER_TARGET or key == "gpus":
                remote = self._remotes.get((metric.get("job", ""), metric.get("instance", "")))
                if remote is None:
                    continue
                if key == "gpus":
                    gpus.append((remote.name, str(metric.get("role") or ""), value))
                else:
                    by_target[key][remote.name] = value
            else:
                fleet[key] = value
        chart: list[Point] = []
        for item in matrix[:1]:  # sum(...) answers one series (none while nothing rolls out)
            if isinstance(item, dict):
                chart = [p for p in _points(item.get("values") or []) if math.isfinite(p[1])]
        return Evaluated(at=at, window_s=window, range_s=range_s, fleet=MappingProxyType(fleet),
                         by_target=MappingProxyType({k: MappingProxyType(v) for k, v in by_target.items()}),
                         gpus=tuple(gpus), rollout_rate_series=tuple(chart))

    async def _get(self, path: str, params: Mapping[str, str], *, timeout: float) -> bytes:
        """One GET of the query API under one deadline; every failure is a ``FetchError`` saying why.

        GET, not POST, even for the long combined query: a GET is safely sent
        again when a kept-alive connection turns out closed."""
        client = self._client
        if isinstance(client, str):
            raise FetchError(client)
        try:
            async with asyncio.timeout(timeout):
                request = client.build_request("GET", self._base + path, params=params,
                                               headers={"Accept-Encoding": "gzip"}, timeout=timeout)
                response = await client.send(request, auth=self._auth, stream=True)
                try:
                    if response.status_code != 200:
                        status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
                        if response.is_redirect:  # a login page or a wrong prefix: say where it points
                            location = response.headers.get("location", "")
                            raise FetchError(f"{status} (redirect to {location[:80]}: is the URL the API's base?)")
                        detail = _api_error(await read_capped(response, _ERROR_BODY_BYTES))
                        raise FetchError(f"{status} ({detail})" if detail else status)
                    body = await read_capped(response, self._max_body)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            raise FetchError(f"timed out after {timeout:g} s") from None
        except httpx.ConnectError as exc:
            raise FetchError(connect_message(exc)) from None
        except httpx.HTTPError as exc:
            raise FetchError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
        return body

    # -- into the store ----------------------------------------------------------

    def _ingest(self, result: list[dict[str, Any]]) -> None:
        """Split the answer by target, store each Prometheus scrape once, and update health."""
        data: dict[_Key, dict[float, list[Sample]]] = {}  # target -> Prometheus scrape time -> samples
        meta: dict[_Key, list[tuple[float, str, float]]] = defaultdict(list)  # up, scrape_* per target
        cache = self._series
        if len(cache) > 2 * len(result) + 10_000:
            cache.clear()  # label churn: start afresh (bounded by the answer, itself bounded by the body cap)
        if self._run_name is not None:
            result = self._of_run(result)
        for item in result:
            try:
                metric, values = item["metric"], item["values"]
                # Prometheus lists a series' labels in the same order every time: its items are the key.
                ident = tuple(metric.items())
                series = cache.get(ident)
            except (TypeError, KeyError, AttributeError):
                continue  # a native histogram ("histograms") or something new: not ours to read
            if series is None:
                series = cache[ident] = self._classify(metric)
            key, name, labels = series
            if labels is None:  # the scrape-health series, or unusable labels
                if name:
                    meta[key].extend((ts, name, v) for ts, v in _points(values))
                continue
            by_ts = data.get(key)
            if by_ts is None:
                by_ts = data[key] = {}
            floor = self._remotes[key].ingested_ts  # older points came in an earlier, overlapping poll
            try:
                points = [(t, float(v)) for ts, v in values if (t := float(ts)) > floor]
            except (TypeError, ValueError):  # a malformed pair: keep the good ones
                points = [(t, v) for t, v in _points(values) if t > floor]
            for ts, v in points:
                group = by_ts.get(ts)
                if group is None:
                    group = by_ts[ts] = []
                group.append(Sample(name, labels, v, ts))
        for key in meta:
            if key[0] in self._jobs:
                self._remote(key, self._ptmon_names.get(key))
        newest_up = max((ts for rows in meta.values() for ts, n, _ in rows if n == _UP), default=None)
        for key, remote in self._remotes.items():
            self._store_scrapes(remote, data.get(key, {}))
            self._update_health(remote, sorted(meta.get(key, ())), newest_up)

    def _of_run(self, result: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Only the series of targets whose run info says ``run`` (remembered: a target that goes down
        keeps its place, with Prometheus's `up` saying so)."""
        for item in result:
            metric = item.get("metric") if isinstance(item, dict) else None
            if isinstance(metric, dict) and metric.get("__name__") in run_info_names() \
                    and metric.get(promql.RUN_LABEL) == self._run_name:
                self._run_keys.add((metric.get("job", ""), metric.get("instance", "")))
        keys = self._run_keys
        return [item for item in result if isinstance(item, dict) and isinstance(m := item.get("metric"), dict)
                and (m.get("job", ""), m.get("instance", "")) in keys]

    def _classify(self, metric: Mapping[str, Any]) -> tuple[_Key, str, Labels | None]:
        """(target, name, labels to store) of a series seen for the first time; labels None: not stored."""
        labels = {k: v for k, v in metric.items() if isinstance(k, str) and isinstance(v, str)}
        name = labels.pop("__name__", "")
        key = (labels.pop("job", ""), labels.pop("instance", ""))
        ptmon_name = labels.pop("ptmon_name", None)
        if ptmon_name:
            self._ptmon_names[key] = ptmon_name
        if name in _META or not name:
            return key, name, None
        self._jobs.add(key[0])
        self._remote(key, self._ptmon_names.get(key))
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
        dropped = None
        for ts in sorted(by_ts):
            if ts <= remote.ingested_ts:
                continue  # seen in an earlier, overlapping poll
            result = self._store.ingest(remote.name, ts, by_ts[ts])
            remote.first_ts = min(remote.first_ts, ts)
            remote.ingested_ts = ts
            dropped = result.dropped_series
        if dropped is not None:
            remote.dropped_series = dropped

    def _update_health(self, remote: _Remote, rows: list[tuple[float, str, float]], newest_up: float | None) -> None:
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
            elif name == _SCRAPE_DURATION and math.isfinite(value):
                remote.scrape_seconds = value
            elif name == _SCRAPE_SAMPLES and math.isfinite(value):
                remote.samples = int(value)
        if remote.up is None and remote.ingested_ts > -math.inf:
            # Data but no `up` (recording rules, remote-written series): it answers, as far as we can tell.
            remote.up, remote.last_success = True, remote.ingested_ts
        if newest_up is not None and remote.last_up_ts is not None:
            behind = newest_up - remote.last_up_ts
            if behind > max(_GONE_MIN_S, 3 * remote.up_spacing):
                remote.up = False
                remote.error = short(f"not scraped by Prometheus for {behind:.0f} s ({where})")
        if remote.up and remote.dropped_series:
            # As the scraper does (and Prometheus over sample_limit): down, so the alert fires; what fit is kept.
            remote.up = False
            remote.error = (f"series limit {self._store.max_series:,} reached: "
                            f"{remote.dropped_series:,} new series dropped")


async def _all(*aws: Awaitable[Any]) -> list[Any]:
    """Every result, or the first failure (in argument order) with the others cancelled.

    Not ``gather`` (it leaves the others running to their own timeouts) and
    not a TaskGroup (on Python 3.11 a cancel that arrives while it cancels its
    children is swallowed, and ``aclose`` would wait on a poll that goes on).
    """
    tasks = [asyncio.ensure_future(a) for a in aws]
    for t in tasks:  # a child that fails after we stopped listening must not log "never retrieved"
        t.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # cancelled: the children go too, and the cancel goes on up
        for t in tasks:
            t.cancel()
        raise
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending)  # each ends at its next await
    for t in tasks:
        if not t.cancelled() and (exc := t.exception()) is not None:
            raise exc
    return [t.result() for t in tasks]


def _api_error(body: bytes) -> str | None:
    """The API's own reason (``errorType: error``) from an error answer's JSON; None for other bodies."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not (doc.get("errorType") or doc.get("error")):
        return None
    return f"query failed: {doc.get('errorType') or 'error'}: {doc.get('error') or ''}".rstrip(": ")


def _points(values: list[Any]) -> list[tuple[float, float]]:
    """``[[ts, "value"], ...]`` as floats; a malformed pair is skipped, not fatal."""
    out = []
    for pair in values:
        try:
            ts, v = pair
            out.append((float(ts), float(v)))
        except (TypeError, ValueError):
            continue
    return out
