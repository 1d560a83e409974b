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
- **Targets are (job, instance) pairs**, with Prometheus's own ``up`` and
  ``scrape_*`` series as their health (``prometheus_targets``).
- **Failures stay on the screen, not in a traceback**: Prometheus down, a 500,
  an API error, a body that is not JSON or too big all mark every known target
  down with that reason (their last numbers are not current any more); with no
  target known yet, one row for the server itself says what is wrong.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ptmon.exporters import schema
from ptmon.monitor import promql
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.evaluated import Evaluated
from ptmon.monitor.settings import PROMETHEUS_MAX_BODY_BYTES, Settings, Target
from ptmon.monitor.sources.auth import auth_for
from ptmon.monitor.sources.body import read_capped, refuse_web_page
from ptmon.monitor.sources.errors import BadStatus, BodyTooLarge, FetchError, fetching, short
from ptmon.monitor.sources.poller import Poller, PollState
from ptmon.monitor.sources.prometheus_api import api_error, parse_matrix, parse_vector
from ptmon.monitor.sources.prometheus_eval import plan_evaluation, read_evaluation
from ptmon.monitor.sources.prometheus_targets import TARGET_LABELS, RemoteTargets
from ptmon.monitor.sources.transport import make_client
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

DEFAULT_MAX_BODY_BYTES = PROMETHEUS_MAX_BODY_BYTES
DEFAULT_OVERLAP_S = 10.0  # Prometheus's default scrape_timeout: a scrape's samples are visible when it ends
_BACKFILL_MIN_TIMEOUT_S = 10.0  # the window's history is a bigger query than one interval's
_THREAD_DECODE_BYTES = 256 * 1024
_ERROR_BODY_BYTES = 64 * 1024  # an error answer's body is read this far, for the API's reason
_TLS_KEY = (True, None)  # one server, one client

PREFIXES = schema.READ_PREFIXES
# Series nothing on the Dashboard reads: not fetched (each rollout worker's rollout-time buckets, per env,
# are about 30% of what it exposes).
UNREAD = (schema.ROLLOUT_SECONDS.bucket,)
_Answers = tuple[float, list[dict[str, Any]], list[dict[str, Any]]]  # (range, vector, matrix)


def series_selector(prefixes: tuple[str, ...] = PREFIXES, *, exclude: tuple[str, ...] = UNREAD) -> str:
    """The PromQL selector for what ptmon reads: its metrics, engines, DCGM, and scrape health."""
    for p in (*prefixes, *exclude):
        if not all(c.isalnum() or c in "_:" for c in p):  # no regex or quoting needed for these
            raise ValueError(f"metric name or prefix {p!r}: only letters, digits, '_' and ':'")
    alternatives = [f"{p}.*" for p in prefixes] + sorted(
        (*schema.PROMETHEUS_SCRAPE_SERIES, schema.PUSHGATEWAY_PUSH_TIME, schema.PUSHGATEWAY_BUILD_INFO))
    selector = '{__name__=~"' + "|".join(alternatives) + '"'
    if exclude:
        selector += ', __name__!~"' + "|".join(exclude) + '"'
    return selector + "}"


@dataclass(slots=True, kw_only=True)
class _ServerState(PollState):
    in_flight_since: float | None = None  # time.monotonic() the running poll began
    last_good: float | None = None  # loop time the last good poll started


class PrometheusSource(Poller[_ServerState]):
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
        super().__init__(interval_s=interval_s, timeout_s=timeout_s, max_body_bytes=max_body_bytes,
                         clock=clock, sleep=sleep)
        self._auth = auth_for(server, where="prometheus")
        self._server = server
        self._base = server.url.rstrip("/")
        self._store = store
        self._window = float(window_s)
        self._overlap = float(overlap_s)
        self._backfill = backfill
        self._evaluate = evaluate
        self._run_name = run
        self._evaluated: Evaluated | None = None
        # Why the last server-side evaluation failed (the poll itself was good); None when it worked.
        self.evaluation_error: str | None = None
        self._selector = series_selector()
        # A bad CA file: the client is its reason, and every poll says so.
        self._clients[_TLS_KEY] = make_client(verify_tls=server.verify_tls, ca_file=server.ca_file,
                                              transport=transport)
        self._targets = RemoteTargets(store, run=run)
        self._state = _ServerState()

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

    def health(self) -> tuple[TargetHealth, ...]:
        state = self._state
        if self._targets:
            return self._targets.health(server_error=state.error if state.up is False else None)
        # Nothing to list yet: one row for the server says whether it answers and what it holds.
        return (TargetHealth(
            name=self._server.name, url=self._server.url, role=None,
            up=False if state.up is False else None, last_scrape=state.last_attempt,
            scrape_seconds=state.seconds,
            error=state.error or (self._nothing_yet() if state.up else self._waiting())),)

    def set_window(self, window_s: float) -> None:
        """The window the server evaluates rates and quantiles over, from the next poll."""
        if not window_s > 0:
            raise ValueError(f"window_s must be positive, got {window_s!r}")
        self._window = float(window_s)

    @property
    def history_kept(self) -> bool:
        """False once the first query's history (the window's) was too big for the answer cap and given up."""
        return self._backfill

    def evaluated(self) -> Evaluated | None:
        """The last poll's server-side answers (rate, increase, histogram_quantile); None before one."""
        return self._evaluated

    def _nothing_yet(self) -> str:
        if self._run_name is not None:
            return (f"no target of run {self._run_name!r} in Prometheus yet "
                    f"(none exposes {schema.RUN_INFO.name} with it)")
        return f"Prometheus {self._server.name} answered, but holds no posttrain_, engine or DCGM series"

    def _waiting(self) -> str | None:
        """While the first query (the window's history, allowed 10 s) is late, say so rather than nothing."""
        began = self._state.in_flight_since
        if began is None or self._state.up is not None:
            return None
        waited, timeout = time.monotonic() - began, self._deadline()
        if waited <= timeout:
            return None
        return (f"no answer from Prometheus {self._server.name} after {waited:.0f} s (the first query fetches "
                f"the last {self._window:g} s; it gives up at {max(timeout, _BACKFILL_MIN_TIMEOUT_S):g} s)")

    # -- polling ---------------------------------------------------------------

    def _units(self) -> Sequence[tuple[str, _ServerState]]:
        return [("ptmon-prometheus", self._state)]

    async def _poll_locked(self, state: _ServerState) -> None:
        state.in_flight_since = time.monotonic()
        try:
            await self._poll_server(state)
        finally:
            state.in_flight_since = None

    async def _poll_server(self, state: _ServerState) -> None:
        began = asyncio.get_running_loop().time()
        backfilling = state.last_good is None and self._backfill
        if state.last_good is None:
            lookback = self._window if self._backfill else self._interval + self._overlap
        else:
            lookback = min(max(self._window, self._interval), began - state.last_good + self._overlap)
        t0 = time.perf_counter()
        at, window = self._clock(), self._window
        try:
            series, answers = await _all(self._raw(lookback, backfilling), self._evaluation(at, window))
        except FetchError as exc:
            state.failed(short(f"Prometheus {self._server.name}: {exc}"), at=self._clock(),
                         seconds=time.perf_counter() - t0)
            return
        self._targets.ingest(series)
        if answers is not None:
            range_s, vector, matrix = answers
            self._evaluated = read_evaluation(at=at, window=window, range_s=range_s, vector=vector, matrix=matrix,
                                              name_of=self._targets.name_of)
        state.last_good = began
        state.answered(at=self._clock(), seconds=time.perf_counter() - t0)

    async def _raw(self, lookback_s: float, backfilling: bool) -> list[dict[str, Any]]:
        """Every raw sample of the last ``lookback_s``; a backfill too big for the cap is given up, not fatal."""
        try:
            return await self._query(lookback_s, backfill=backfilling)
        except BodyTooLarge:
            if not backfilling:
                raise
            # The window's history is too big for the cap: go on without it rather than not at all.
            self._backfill = False
            return await self._query(self._interval + self._overlap, backfill=False)

    async def _query(self, lookback_s: float, *, backfill: bool) -> list[dict[str, Any]]:
        timeout = self._deadline()
        if backfill:
            timeout = max(timeout, _BACKFILL_MIN_TIMEOUT_S)
        # Whole milliseconds, rounded up: the overlap must not come up short.
        params = {"query": f"{self._selector}[{promql.duration(math.ceil(lookback_s * 1000) / 1000)}]"}
        body = await self._get("/api/v1/query", params, timeout=timeout)
        if len(body) > _THREAD_DECODE_BYTES:  # a big answer must not freeze the TUI's loop
            return await asyncio.to_thread(parse_matrix, body)
        return parse_matrix(body)

    async def _evaluation(self, at: float, window: float) -> _Answers | None:
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

    async def _evaluate_at(self, at: float, window: float) -> _Answers | None:
        """The server's answers at ``at``: one instant query for every windowed number, one range query
        for the rollout-rate chart. None when evaluation is off."""
        firsts = self._targets.first_times()
        if not self._evaluate or not firsts:
            return None  # off, or nothing stored yet to say how far back the data goes: from the next poll
        plan = plan_evaluation(at=at, window=window, firsts=firsts, spacing=self._targets.scrape_spacing(),
                               interval=self._interval, run=self._run_name)
        timeout = self._deadline()
        vector_body, matrix_body = await _all(
            self._get("/api/v1/query", plan.instant, timeout=timeout),
            self._get("/api/v1/query_range", plan.ranged, timeout=timeout))
        return plan.range_s, parse_vector(vector_body), parse_matrix(matrix_body)

    async def _get(self, path: str, params: Mapping[str, str], *, timeout: float) -> bytes:
        """One GET of the query API under one deadline; every failure is a ``FetchError`` saying why.

        GET, not POST, even for the long combined query: a GET is safely sent
        again when a kept-alive connection turns out closed."""
        client = self._client(_TLS_KEY)
        async with fetching(timeout):
            # nocache=1: VictoriaMetrics otherwise answers a query within -search.latencyOffset (30 s) of now
            # as of 30 s ago, mixing old server numbers with current raw samples on one screen; Prometheus
            # ignores the parameter (issue 14).
            params = {**params, "nocache": "1"}
            request = client.build_request("GET", self._base + path, params=params,
                                           headers={"Accept-Encoding": "gzip"}, timeout=timeout)
            response = await client.send(request, auth=self._auth, stream=True)
            try:
                if response.status_code != 200:
                    raise await _status_error(response)
                refuse_web_page(response, expected="a Prometheus API answer")
                return await read_capped(response, self._max_body)
            finally:
                await response.aclose()


async def _status_error(response: httpx.Response) -> BadStatus:
    """What a non-200 answer says: where a redirect points (a login page or a wrong prefix), else the API's
    own reason when its body carries one."""
    status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    if response.is_redirect:
        location = response.headers.get("location", "")
        return BadStatus(f"{status} (redirect to {location[:80]}: is the URL the API's base?)",
                         status=response.status_code)
    detail = api_error(await read_capped(response, _ERROR_BODY_BYTES))
    return BadStatus(f"{status} ({detail})" if detail else status, status=response.status_code)


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
