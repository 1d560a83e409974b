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
import operator
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import httpx

from ptmon.exporters import schema
from ptmon.monitor import parse as _parse
from ptmon.monitor.dashboard import TargetHealth
from ptmon.monitor.parse import ExpositionParser, Sample
from ptmon.monitor.settings import DEFAULT_MAX_BODY_BYTES, Settings, Target, effective_timeout
from ptmon.monitor.sources._lean import lean_over
from ptmon.monitor.sources.auth import auth_for
from ptmon.monitor.sources.body import read_capped, refuse_web_page
from ptmon.monitor.sources.errors import (
    BadBody,
    BadStatus,
    FetchError,
    ProtocolFailed,
    fetching,
    series_limit_error,
    short,
)
from ptmon.monitor.sources.poller import (
    MAX_BACKOFF_S,
    Poller,
    PollState,
    TLSKey,
    backoff_delay,
    check_polling,
)
from ptmon.monitor.sources.transport import (
    authorize,
    client_over,
    make_transport,
    origin,
    redirect_request,
)
from ptmon.monitor.store import Store

__all__ = ["Scraper", "backoff_delay", "effective_timeout", "check_polling", "MAX_BACKOFF_S",
           "DEFAULT_MAX_BODY_BYTES"]

# Bodies above this are decoded and parsed in a worker thread: a multi-MiB
# exposition must not freeze the event loop the TUI draws from.
_THREAD_PARSE_BYTES = 256 * 1024
_MAX_REDIRECTS = 5
_LINES_PER_SERIES_CAP = 10  # default line limit per scrape: this many times the store's series cap


@dataclass(slots=True, kw_only=True)
class _TargetState(PollState):
    target: Target
    parser: ExpositionParser
    auth: httpx.Auth | None
    tls_key: TLSKey
    last_success: float | None = None
    samples: int = 0
    dropped_series: int = 0
    recognised: bool | None = None
    # The last good page, when the parser skips unread series (``Store.wanted``): their lines are counted
    # (``skipped``) and their latest values read from ``page`` only when a detail asks (``Scraper.unread``).
    skipped: int = 0  # series (not lines: a series written twice is one)
    page: tuple[float, str, bool] | None = None  # (scrape time, text, OpenMetrics)
    unread: tuple[str, tuple[Sample, ...]] | None = None  # the page's unread samples, once parsed from it
    request: httpx.Request | None = None  # the GET, built once (per deadline): see Scraper._request
    request_timeout: float = 0.0
    origin: tuple[str, str, int | None] = ("", "", None)
    health: TargetHealth | None = None  # as last reported; None once anything in it may have changed

    def failed(self, error: str, *, at: float, seconds: float | None) -> None:
        PollState.failed(self, error, at=at, seconds=seconds)
        self.samples = 0
        self.dropped_series = 0
        self.recognised = None
        self.health = None

    def answered(self, *, at: float, seconds: float) -> None:
        PollState.answered(self, at=at, seconds=seconds)
        self.health = None


_NAME = operator.attrgetter("name")
_READ = operator.methodcaller("startswith", schema.READ_PREFIXES)


_READ_LINES = tuple("\n" + prefix for prefix in schema.READ_PREFIXES)


def _recognised(samples: list[Sample]) -> bool:
    """Whether a page carries anything ptmon reads (its own metrics, an engine's, DCGM's).

    A page it does not read (a node exporter) is scanned whole every scrape, and
    ``startswith`` over the 20-odd prefixes costs ~0.2 µs a name: each distinct
    name is tested once (a set built in C, ~35 ns a sample; a 1,000-sample page
    in 40 µs, not 180)."""
    return any(map(_READ, set(map(_NAME, samples))))


def _names_recognised(text: str) -> bool:
    """Whether any line of ``text`` starts with a prefix ptmon reads: for the series a parser skipped (a
    page of only unread names is not recognised; an unread name of ours still is). Searched in C, only
    when the samples kept do not already say so."""
    return text.startswith(schema.READ_PREFIXES) or any(map(text.__contains__, _READ_LINES))


def _decode(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise BadBody(f"line {line}: invalid UTF-8 (byte 0x{body[exc.start]:02x})") from None


def _decode_and_parse(parser: ExpositionParser, body: bytes, openmetrics: bool) -> tuple[str, list[Sample]]:
    text = _decode(body)
    return text, parser.parse(text, openmetrics=openmetrics)


class Scraper(Poller[_TargetState]):
    """Scrapes every target concurrently, each on its own schedule, into ``store``.

    One transport serves all targets (connection reuse, one pool); TLS settings
    are fixed per transport, so targets with a different CA file or with
    verification off get one more per distinct TLS setting. Each target's GET is
    built once (by an ``httpx.AsyncClient`` over that transport) and handed to the
    transport directly on every scrape. An injected ``transport`` (tests:
    ``httpx.MockTransport``) replaces them all.
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
        max_label_value_length: int | None = schema.MAX_LABEL_VALUE_BYTES,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_lines: int | None = None,
    ) -> None:
        super().__init__(interval_s=interval_s, timeout_s=timeout_s, max_body_bytes=max_body_bytes,
                         clock=clock, sleep=sleep)
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency!r}")
        names = [t.name for t in targets]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"target names must be unique; repeated: {', '.join(dupes)}")
        self._store = store
        self._sem = asyncio.Semaphore(concurrency)
        self._states: list[_TargetState] = []
        # Like Prometheus's sample_limit: up to 10x the series cap a flood is cut at the cap (the target
        # flagged, its first series kept); beyond, the scrape is refused before it is parsed, so a
        # cardinality explosion costs neither seconds of CPU nor parser caches as big as the body allows.
        if max_lines is None:
            max_lines = _LINES_PER_SERIES_CAP * store.max_series
        # The store's wanted names, parsed; the other lines are skipped at a dict lookup each (a worker
        # page: 808 of 1,021), counted in the health, and read from the kept page when a detail lists them.
        self._keep = store.wanted
        for t in targets:
            auth = auth_for(t, where=f"target {t.name}")
            parser = ExpositionParser(max_label_value_length=max_label_value_length, max_lines=max_lines,
                                      keep=self._keep)
            key = (True, None) if transport is not None else (t.verify_tls, t.ca_file)
            self._states.append(_TargetState(target=t, parser=parser, auth=auth, tls_key=key))
        self._transports: dict[TLSKey, httpx.AsyncBaseTransport] = {}
        for key in dict.fromkeys(s.tls_key for s in self._states):
            # A bad CA file fails only the targets that use it, on every scrape (the client is its reason).
            made = transport if transport is not None else make_transport(verify_tls=key[0], ca_file=key[1])
            if transport is None and not isinstance(made, str):
                made = lean_over(made)  # plain http:// by hand; https and the rest through StreamTransport
            if isinstance(made, str):
                self._clients[key] = made
            else:
                self._transports[key] = made
                self._clients[key] = client_over(made)  # builds requests; closes the transport with it

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

    def health(self) -> tuple[TargetHealth, ...]:
        """Each target's health; a target not scraped since the last call gives the same (identical) object,
        so a reader can tell at a glance which rows changed."""
        return tuple(self._health_of(st) for st in self._states)

    def _health_of(self, st: _TargetState) -> TargetHealth:
        series = self._store.series_count(st.target.name) + st.skipped
        cached = st.health
        if cached is not None and cached.series == series:
            return cached
        st.health = TargetHealth(
            name=st.target.name,
            url=st.target.url,
            role=st.target.role,
            up=st.up,
            last_scrape=st.last_attempt,
            last_success=st.last_success,
            scrape_seconds=st.seconds,
            samples=st.samples,
            series=series,
            dropped_series=st.dropped_series,
            error=st.error,
            recognised=st.recognised,
        )
        return st.health

    # -- one target's scrape -------------------------------------------------------

    def _units(self) -> Sequence[tuple[str, _TargetState]]:
        return [(f"ptmon-scrape:{st.target.name}", st) for st in self._states]

    async def _poll_locked(self, st: _TargetState) -> None:
        async with self._sem:
            stamp = self._clock()
            t0 = time.perf_counter()
            try:
                body, content_type = await self._fetch(st)
            except FetchError as exc:
                st.failed(short(str(exc)), at=self._clock(), seconds=time.perf_counter() - t0)
                return
        openmetrics = _parse.is_openmetrics(content_type)
        try:
            if len(body) > _THREAD_PARSE_BYTES:
                text, samples = await asyncio.to_thread(_decode_and_parse, st.parser, body, openmetrics)
            else:
                text, samples = _decode_and_parse(st.parser, body, openmetrics)
        except (FetchError, _parse.ParseError) as exc:
            st.failed(short(str(exc)), at=self._clock(), seconds=time.perf_counter() - t0)
            return
        del body
        result = self._store.ingest(st.target.name, stamp, samples)
        st.answered(at=self._clock(), seconds=time.perf_counter() - t0)
        # Over the series cap the target counts as down (as Prometheus fails a scrape
        # over sample_limit) so the target-down alert fires, but nothing is lost:
        # the series that fit were stored and keep flowing; the error says what is missing.
        st.up = not result.dropped_series
        st.last_success = st.last_attempt
        skipped = st.parser.skipped
        st.skipped = st.parser.skipped_series(openmetrics=openmetrics)
        st.samples = len(samples) + skipped
        st.dropped_series = result.dropped_series
        st.recognised = _recognised(samples) or (skipped > 0 and _names_recognised(text))
        if self._keep is not None:
            st.page, st.unread = (stamp, text, openmetrics), None
        if result.dropped_series:
            st.error = series_limit_error(self._store.max_series, result.dropped_series,
                                          over_label_bytes=result.over_label_bytes,
                                          max_label_bytes=self._store.max_label_bytes)

    def unread(self, name: str) -> tuple[Sample, ...]:
        """Target ``name``'s samples of its last good page that the store was not handed (its unread names),
        each stamped with that scrape's time unless it has its own; parsed from the page on the first ask."""
        st = next((s for s in self._states if s.target.name == name), None)
        if st is None or st.page is None or self._keep is None:
            return ()
        stamp, text, openmetrics = st.page
        if st.unread is None or st.unread[0] is not text:
            keep = self._keep
            parser = ExpositionParser(max_label_value_length=None, max_series_bytes=None,
                                      max_page_series_bytes=None, keep=lambda n: not keep(n))
            try:
                samples = parser.parse(text, openmetrics=openmetrics)
            except _parse.ParseError:
                samples = []  # a skipped line's value went bad: the warm parse never read it, nor can this
            first: dict[tuple[str, Mapping[str, str]], Sample] = {}
            for s in samples:  # a series written twice is one, as the store keeps it: its first value
                first.setdefault((s.name, s.labels), s if s.timestamp is not None else s._replace(timestamp=stamp))
            st.unread = (text, tuple(first.values()))
        return st.unread[1]

    async def _fetch(self, st: _TargetState) -> tuple[bytes, str | None]:
        transport = self._transport(st.tls_key)
        timeout = self._deadline()
        request = self._request(st, timeout)
        async with fetching(timeout):
            # Redirects are followed here, not by httpx: httpx reads (and inflates) the whole body of
            # every 3xx before following it, past any cap. Credentials go to the configured origin
            # only (and, as httpx does, Authorization is stripped from a cross-origin redirect request).
            # The transport is called directly (no AsyncClient.send): its per-request bookkeeping (the
            # URL parsed and headers merged again, cookies extracted) cost as much as the HTTP itself.
            for _hop in range(_MAX_REDIRECTS + 1):
                authorize(request, st.auth if origin(request.url) == st.origin else None)
                response = await transport.handle_async_request(request)
                try:
                    if not response.has_redirect_location:
                        if response.status_code != 200:
                            raise BadStatus(f"HTTP {response.status_code} {response.reason_phrase}".strip(),
                                            status=response.status_code)
                        refuse_web_page(response, expected="Prometheus metrics")
                        body = await read_capped(response, self._max_body)
                        return body, response.headers.get("content-type")
                    redirect = redirect_request(request, response)
                finally:
                    await response.aclose()
                request = redirect
            raise ProtocolFailed("too many redirects")

    def _transport(self, key: TLSKey) -> httpx.AsyncBaseTransport:
        self._client(key)  # a TLS setting that has no client (a bad CA file) fails the fetch with why
        return self._transports[key]

    def _request(self, st: _TargetState, timeout: float) -> httpx.Request:
        """The target's GET, built (URL parsed, headers merged) once per deadline, not on every scrape."""
        if st.request is None or st.request_timeout != timeout:
            headers = {
                "Accept": _parse.ACCEPT_HEADER,
                "Accept-Encoding": "gzip",
                "X-Prometheus-Scrape-Timeout-Seconds": f"{timeout:g}",
            }
            st.request = self._client(st.tls_key).build_request("GET", st.target.url, headers=headers,
                                                                timeout=timeout)
            st.request_timeout = timeout
            st.origin = origin(st.request.url)
        return st.request
