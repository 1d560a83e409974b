"""Direct scraping of /metrics endpoints into the Store.

Each target runs on its own asyncio task, so a slow or dead target delays
nobody, and its next scrape starts only after its last one ended, so scrapes
of one target never pile up. Everything a peer can get wrong (refusing,
hanging, a 500, a huge or gzip-bombed body, bytes that are not UTF-8, text
that is not an exposition, too many series) becomes a short error on that
target's health; nothing a peer sends can raise out of the scraper or grow
memory without bound.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import httpx

from ptmon.monitor import parse as _parse
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.parse import ExpositionParser, Sample
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.sources._http import BearerTokenFile, FetchError, connect_message, make_client, read_capped, short
from ptmon.monitor.store import Store

__all__ = ["Scraper", "backoff_delay", "effective_timeout", "check_polling", "MAX_BACKOFF_S",
           "DEFAULT_MAX_BODY_BYTES"]

MAX_BACKOFF_S = 30.0
DEFAULT_MAX_BODY_BYTES = 16 * 2**20
_MIN_TIMEOUT_S = 0.25
# Bodies above this are decoded and parsed in a worker thread: a multi-MiB
# exposition must not freeze the event loop the TUI draws from.
_THREAD_PARSE_BYTES = 256 * 1024
_MAX_REDIRECTS = 5
_LINES_PER_SERIES_CAP = 10  # default line limit per scrape: this many times the store's series cap


def check_polling(*, interval_s: float, timeout_s: float | None, max_body_bytes: int) -> None:
    """The options every source polls with, refused when they cannot work (a programming error: config
    errors are caught earlier, with the file and key)."""
    if not interval_s > 0:
        raise ValueError(f"interval_s must be positive, got {interval_s!r}")
    if timeout_s is not None and not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes!r}")


def effective_timeout(interval_s: float, timeout_s: float | None) -> float:
    """The per-scrape deadline: the configured one, else 0.8 x interval but at least 0.25 s.

    Shorter than the interval so a hung target has given up before its next
    turn would be due (the same rule as ``Settings.effective_timeout_s``).
    """
    if timeout_s is not None:
        return timeout_s
    return max(_MIN_TIMEOUT_S, 0.8 * interval_s)


def backoff_delay(interval_s: float, failures: int, *, max_backoff_s: float = MAX_BACKOFF_S) -> float:
    """Seconds to wait before the next scrape after ``failures`` consecutive failures.

    The first failure retries at the normal pace (a blip recovers at once),
    then the wait doubles: interval x 2^(n-1), capped at ``max_backoff_s``
    (or the interval itself when that is longer), so a dead target costs
    little and is still noticed coming back within the cap.
    """
    if failures <= 0:
        return interval_s
    return min(max(max_backoff_s, interval_s), interval_s * 2.0 ** min(failures - 1, 32))


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


@dataclass(slots=True)
class _TargetState:
    target: Target
    parser: ExpositionParser
    auth: httpx.Auth | None
    tls_key: tuple[bool, str | None]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    up: bool | None = None
    last_scrape: float | None = None
    last_success: float | None = None
    scrape_seconds: float | None = None
    samples: int = 0
    dropped_series: int = 0
    error: str | None = None
    failures: int = 0  # consecutive failed scrapes, for backoff


def _decode_and_parse(parser: ExpositionParser, body: bytes, openmetrics: bool) -> list[Sample]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise FetchError(f"line {line}: invalid UTF-8 (byte 0x{body[exc.start]:02x})") from None
    return parser.parse(text, openmetrics=openmetrics)


class Scraper:
    """Scrapes every target concurrently, each on its own schedule, into ``store``.

    One ``httpx.AsyncClient`` serves all targets (connection reuse, one pool);
    httpx fixes TLS settings per client, so targets with a different CA file or
    with verification off get one more client per distinct TLS setting. An
    injected ``transport`` (tests: ``httpx.MockTransport``) replaces them all.
    """

    def __init__(
        self,
        targets: Sequence[Target],
        *,
        store: Store,
        interval_s: float = 1.0,
        timeout_s: float | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        concurrency: int = 16,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
        max_label_value_length: int | None = 4096,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_lines: int | None = None,
    ) -> None:
        check_polling(interval_s=interval_s, timeout_s=timeout_s, max_body_bytes=max_body_bytes)
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
        names = [t.name for t in targets]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"target names must be unique; repeated: {', '.join(dupes)}")
        self._store = store
        self._interval = float(interval_s)
        self._timeout = timeout_s
        self._max_body = max_body_bytes
        self._clock = clock
        self._sleep = sleep
        self._sem = asyncio.Semaphore(concurrency)
        self._states: list[_TargetState] = []
        # Like Prometheus's sample_limit: up to 10x the series cap a flood is cut at the cap (the target
        # flagged, its first series kept); beyond, the scrape is refused before it is parsed, so a
        # cardinality explosion costs neither seconds of CPU nor parser caches as big as the body allows.
        if max_lines is None:
            max_lines = _LINES_PER_SERIES_CAP * store.max_series
        for t in targets:
            if t.bearer_token_file and t.basic_auth:
                raise ValueError(f"target {t.name}: bearer_token_file and basic_auth are exclusive")
            auth: httpx.Auth | None = None
            if t.bearer_token_file:
                auth = BearerTokenFile(t.bearer_token_file)
            elif t.basic_auth:
                auth = httpx.BasicAuth(*t.basic_auth)
            parser = ExpositionParser(max_label_value_length=max_label_value_length, max_lines=max_lines)
            key = (True, None) if transport is not None else (t.verify_tls, t.ca_file)
            self._states.append(_TargetState(target=t, parser=parser, auth=auth, tls_key=key))
        self._clients: dict[tuple[bool, str | None], httpx.AsyncClient | str] = {}
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=max(20, len(targets)))
        for key in dict.fromkeys(s.tls_key for s in self._states):
            # A bad CA file fails only the targets that use it, on every scrape (the client is its reason).
            self._clients[key] = make_client(verify_tls=key[0], ca_file=key[1], transport=transport, limits=limits)
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        store: Store,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> Scraper:
        """A scraper for ``settings``' targets with its interval, timeout and limits."""
        return cls(settings.targets, store=store, interval_s=settings.interval_s, timeout_s=settings.timeout_s,
                   max_body_bytes=settings.max_body_bytes, concurrency=settings.concurrency,
                   transport=transport, clock=clock)

    # -- public API ------------------------------------------------------------

    async def start(self) -> None:
        if self._closed:
            raise RuntimeError("Scraper is closed")
        if self._tasks:
            return
        self._tasks = [
            asyncio.create_task(self._run(st), name=f"ptmon-scrape:{st.target.name}") for st in self._states
        ]

    async def scrape_once(self) -> None:
        if self._closed:
            raise RuntimeError("Scraper is closed")
        await asyncio.gather(*(self._scrape(st) for st in self._states))

    def health(self) -> tuple[TargetHealth, ...]:
        return tuple(
            TargetHealth(
                name=st.target.name,
                url=st.target.url,
                role=st.target.role,
                up=st.up,
                last_scrape=st.last_scrape,
                last_success=st.last_success,
                scrape_seconds=st.scrape_seconds,
                samples=st.samples,
                series=self._store.series_count(st.target.name),
                dropped_series=st.dropped_series,
                error=st.error,
            )
            for st in self._states
        )

    def set_interval(self, interval_s: float) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, got {interval_s!r}")
        self._interval = float(interval_s)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for client in self._clients.values():
            if isinstance(client, httpx.AsyncClient):
                await client.aclose()

    async def __aenter__(self) -> Scraper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals -------------------------------------------------------------

    async def _run(self, st: _TargetState) -> None:
        """One target's loop: scrape, then wait its interval (or its backoff when down)."""
        loop = asyncio.get_running_loop()
        while True:
            began = loop.time()
            await self._scrape(st)
            if st.failures:
                delay = backoff_delay(self._interval, st.failures)
            else:
                # Keep the cadence from scrape start to scrape start; a scrape
                # longer than the interval is followed at once, never overlapped.
                delay = max(0.0, began + self._interval - loop.time())
            await self._sleep(delay)

    async def _scrape(self, st: _TargetState) -> None:
        async with st.lock:
            try:
                await self._scrape_locked(st)
            except Exception as exc:  # a bug here must not kill the target's loop
                self._record_failure(st, short(f"internal error: {type(exc).__name__}: {exc}"), None)

    async def _scrape_locked(self, st: _TargetState) -> None:
        async with self._sem:
            stamp = self._clock()
            t0 = time.perf_counter()
            try:
                body, content_type = await self._fetch(st)
            except FetchError as exc:
                self._record_failure(st, short(str(exc)), time.perf_counter() - t0)
                return
        openmetrics = _parse.is_openmetrics(content_type)
        try:
            if len(body) > _THREAD_PARSE_BYTES:
                samples = await asyncio.to_thread(_decode_and_parse, st.parser, body, openmetrics)
            else:
                samples = _decode_and_parse(st.parser, body, openmetrics)
        except (FetchError, _parse.ParseError) as exc:
            self._record_failure(st, short(str(exc)), time.perf_counter() - t0)
            return
        del body
        result = self._store.ingest(st.target.name, stamp, samples)
        # Over the series cap the target counts as down (as Prometheus fails a scrape
        # over sample_limit) so the target-down alert fires, but nothing is lost:
        # the series that fit were stored and keep flowing; the error says what is missing.
        st.up = not result.dropped_series
        st.failures = 0
        st.last_scrape = self._clock()
        st.last_success = st.last_scrape
        st.scrape_seconds = time.perf_counter() - t0
        st.samples = len(samples)
        st.dropped_series = result.dropped_series
        st.error = (
            f"series limit {self._store.max_series:,} reached: {result.dropped_series:,} new series dropped"
            if result.dropped_series
            else None
        )

    def _record_failure(self, st: _TargetState, error: str, seconds: float | None) -> None:
        st.up = False
        st.failures += 1
        st.error = error
        st.last_scrape = self._clock()
        st.scrape_seconds = seconds
        st.samples = 0
        st.dropped_series = 0

    async def _fetch(self, st: _TargetState) -> tuple[bytes, str | None]:
        client = self._clients[st.tls_key]
        if isinstance(client, str):
            raise FetchError(client)
        timeout = effective_timeout(self._interval, self._timeout)
        headers = {
            "Accept": _parse.ACCEPT_HEADER,
            "Accept-Encoding": "gzip",
            "X-Prometheus-Scrape-Timeout-Seconds": f"{timeout:g}",
        }
        try:
            async with asyncio.timeout(timeout):
                # Redirects are followed here, not by httpx: httpx reads (and inflates) the whole body of
                # every 3xx before following it, past any cap. Credentials go to the configured origin
                # only (httpx also strips Authorization from a cross-origin redirect request).
                request = client.build_request("GET", st.target.url, headers=headers, timeout=timeout)
                origin = _origin(request.url)
                for _hop in range(_MAX_REDIRECTS + 1):
                    auth = st.auth if _origin(request.url) == origin else None
                    response = await client.send(request, auth=auth, stream=True)
                    try:
                        redirect = response.next_request
                        if redirect is None:
                            if response.status_code != 200:
                                raise FetchError(f"HTTP {response.status_code} {response.reason_phrase}".strip())
                            body = await read_capped(response, self._max_body)
                            return body, response.headers.get("content-type")
                    finally:
                        await response.aclose()
                    request = redirect
                raise FetchError("too many redirects")
        except (TimeoutError, httpx.TimeoutException):
            raise FetchError(f"timed out after {timeout:g} s") from None
        except httpx.ConnectError as exc:
            raise FetchError(connect_message(exc)) from None
        except httpx.HTTPError as exc:
            raise FetchError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None
