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
import errno
import os
import socket
import ssl
import time
import zlib
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, field
import httpx

from monitor import parse as _parse
from monitor.dashboard import TargetHealth
from monitor.parse import ExpositionParser, Sample
from monitor.settings import Settings, Target
from monitor.store import Store
from monitor.text import safe

__all__ = ["Scraper", "backoff_delay", "effective_timeout", "MAX_BACKOFF_S", "DEFAULT_MAX_BODY_BYTES"]

MAX_BACKOFF_S = 30.0
DEFAULT_MAX_BODY_BYTES = 16 * 2**20
_MIN_TIMEOUT_S = 0.25
# Bodies above this are decoded and parsed in a worker thread: a multi-MiB
# exposition must not freeze the event loop the TUI draws from.
_THREAD_PARSE_BYTES = 256 * 1024
_ERROR_MAX_CHARS = 200
_USER_AGENT = "ptmon"
_MAX_REDIRECTS = 5
_LINES_PER_SERIES_CAP = 10  # default line limit per scrape: this many times the store's series cap


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


class _ScrapeError(Exception):
    """A target-level failure whose message is already short and human."""


def _format_size(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def _short(text: str) -> str:
    """One line, no control characters, bounded length: fit for a table cell."""
    text = safe(text)
    if len(text) > _ERROR_MAX_CHARS:
        text = text[: _ERROR_MAX_CHARS - 1] + "…"
    return text


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _connect_message(exc: Exception) -> str:
    """Why a connection failed, in a few words, from the root cause httpx wraps."""
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            detail = f": {cause.verify_message}" if cause.verify_message else ""
            return f"TLS certificate verify failed{detail}"
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or cause}"
        if isinstance(cause, socket.gaierror):
            return "cannot resolve host"
        if isinstance(cause, OSError) and cause.errno in _ERRNO_MESSAGES:
            return _ERRNO_MESSAGES[cause.errno]
    text = str(exc)
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "name or service not known" in low or "name resolution" in low:
        return "cannot resolve host"
    return f"cannot connect: {text}" if text else "cannot connect"


_ERRNO_MESSAGES = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
    errno.ETIMEDOUT: "connect timed out",
}


class _BearerTokenFile(httpx.Auth):
    """``Authorization: Bearer`` from a file, re-read when the file changes.

    Token files are rotated in place (Kubernetes projected tokens); checking
    the file's stat on each scrape picks up a new token without a restart at
    the cost of one ``stat`` call.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._stamp: tuple[int, int, int] | None = None
        self._token = ""

    def token(self) -> str:
        try:
            st = os.stat(self._path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if stamp != self._stamp:
                with open(self._path, encoding="utf-8") as f:
                    token = f.read().strip()
                self._token, self._stamp = token, stamp
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise _ScrapeError(f"bearer token file {self._path}: {reason}") from None
        if not self._token:
            raise _ScrapeError(f"bearer token file {self._path} is empty")
        return self._token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        yield request


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
        raise _ScrapeError(f"line {line}: invalid UTF-8 (byte 0x{body[exc.start]:02x})") from None
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
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, got {interval_s!r}")
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be positive, got {max_body_bytes!r}")
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
                auth = _BearerTokenFile(t.bearer_token_file)
            elif t.basic_auth:
                auth = httpx.BasicAuth(*t.basic_auth)
            parser = ExpositionParser(max_label_value_length=max_label_value_length, max_lines=max_lines)
            key = (True, None) if transport is not None else (t.verify_tls, t.ca_file)
            self._states.append(_TargetState(target=t, parser=parser, auth=auth, tls_key=key))
        self._clients: dict[tuple[bool, str | None], httpx.AsyncClient | str] = {}
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=max(20, len(targets)))
        for key in dict.fromkeys(s.tls_key for s in self._states):
            verify_tls, ca_file = key
            try:
                verify: ssl.SSLContext | bool = False
                if verify_tls:
                    verify = ssl.create_default_context(cafile=ca_file) if ca_file else True
            except (OSError, ssl.SSLError) as exc:
                # A bad CA file fails only the targets that use it, on every scrape.
                self._clients[key] = _short(f"ca_file {ca_file}: {getattr(exc, 'strerror', None) or exc}")
                continue
            # trust_env=False: no proxy variables or .netrc credentials sneak into
            # scrapes; what is scraped and how is exactly what the config says.
            self._clients[key] = httpx.AsyncClient(
                transport=transport, verify=verify, trust_env=False, follow_redirects=False,
                limits=limits, headers={"User-Agent": _USER_AGENT},
            )
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
                self._record_failure(st, _short(f"internal error: {type(exc).__name__}: {exc}"), None)

    async def _scrape_locked(self, st: _TargetState) -> None:
        async with self._sem:
            stamp = self._clock()
            t0 = time.perf_counter()
            try:
                body, content_type = await self._fetch(st)
            except _ScrapeError as exc:
                self._record_failure(st, _short(str(exc)), time.perf_counter() - t0)
                return
        openmetrics = _parse.is_openmetrics(content_type)
        try:
            if len(body) > _THREAD_PARSE_BYTES:
                samples = await asyncio.to_thread(_decode_and_parse, st.parser, body, openmetrics)
            else:
                samples = _decode_and_parse(st.parser, body, openmetrics)
        except (_ScrapeError, _parse.ParseError) as exc:
            self._record_failure(st, _short(str(exc)), time.perf_counter() - t0)
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
            raise _ScrapeError(client)
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
                                raise _ScrapeError(f"HTTP {response.status_code} {response.reason_phrase}".strip())
                            body = await self._read_capped(response)
                            return body, response.headers.get("content-type")
                    finally:
                        await response.aclose()
                    request = redirect
                raise _ScrapeError("too many redirects")
        except (TimeoutError, httpx.TimeoutException):
            raise _ScrapeError(f"timed out after {timeout:g} s") from None
        except httpx.ConnectError as exc:
            raise _ScrapeError(_connect_message(exc)) from None
        except httpx.HTTPError as exc:
            raise _ScrapeError(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from None

    async def _read_capped(self, response: httpx.Response) -> bytes:
        """The body, decompressed, refusing to hold more than ``max_body_bytes``.

        We decompress gzip ourselves with ``max_length`` so a gzip bomb costs at
        most the cap: httpx's decoder would inflate a whole network chunk (up to
        ~1000x its size) before we could count it.
        """
        limit = self._max_body
        too_big = f"body exceeds {_format_size(limit)}"
        if response.is_stream_consumed:
            # A transport that hands over a body it already read (and decoded),
            # as httpx.MockTransport does with bytes: only the cap is left to check.
            if len(response.content) > limit:
                raise _ScrapeError(too_big)
            return response.content
        encoding = response.headers.get("content-encoding", "").strip().lower()
        inflater = None
        if encoding in ("gzip", "x-gzip"):
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        elif encoding not in ("", "identity"):
            raise _ScrapeError(f"unsupported Content-Encoding {encoding!r}")
        length = response.headers.get("content-length", "")
        if inflater is None and length.isdigit() and int(length) > limit:
            raise _ScrapeError(too_big)
        buf = bytearray()
        async for chunk in response.aiter_raw():
            if inflater is not None:
                try:
                    chunk = inflater.decompress(chunk, limit + 1 - len(buf))
                except zlib.error as exc:
                    raise _ScrapeError(f"invalid gzip body: {exc}") from None
            buf += chunk
            if len(buf) > limit:
                raise _ScrapeError(too_big)
        if inflater is not None:
            if not inflater.eof:
                raise _ScrapeError("truncated gzip body")
        return bytes(buf)
