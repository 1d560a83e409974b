"""The scraper: failure paths (MockTransport), schedules, auth, and real HTTP on loopback."""

from __future__ import annotations

import asyncio
import base64
import gzip
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from ptmon.exporters import schema
from ptmon.monitor.settings import Settings, Target
from ptmon.monitor.sources import MAX_BACKOFF_S, Scraper, Source, _lean, backoff_delay, effective_timeout
from ptmon.monitor.store import Store
from tests.monitor.sources.peers import http_server, raw_peer, send
from tests.support.clock import FakeClock

GOOD_BODY = b"# TYPE up_total counter\nup_total 7\nqueue_depth{q=\"a\"} 3\nqueue_depth{q=\"b\"} 4\n"
NOW = 1_700_000_000.0


@pytest.fixture(autouse=True, params=["lean", "h11"])
def http_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test over both of the scraper's HTTP paths for http:// targets: the hand-written LeanTransport
    (the default) and StreamTransport (h11) alone, so real peers are met alike by either."""
    monkeypatch.setattr(_lean, "ENABLED", request.param == "lean")
    return request.param


def target(name: str, **kw: object) -> Target:
    return Target(name=name, url=f"http://{name}:9100/metrics", **kw)  # type: ignore[arg-type]




def by_host(routes: dict[str, Callable[[httpx.Request], object]]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> object:
        return routes[request.url.host](request)

    return httpx.MockTransport(handler)  # type: ignore[arg-type]


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=GOOD_BODY, headers={"content-type": "text/plain; version=0.0.4"})


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("[Errno 111] Connection refused", request=request)


async def hangs(request: httpx.Request) -> httpx.Response:
    await asyncio.sleep(60)
    raise AssertionError("the scraper should have given up")


def status_500(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500, content=b"boom")


class Endless:
    """An endless body that counts how much of it was pulled."""

    def __init__(self, chunk: bytes = b"# " + b"x" * (64 * 1024 - 3) + b"\n") -> None:
        self.chunk = chunk
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.pulled += len(self.chunk)
            yield self.chunk


ENDLESS = Endless()


async def streamed(body: bytes, chunk: int = 4096) -> AsyncIterator[bytes]:
    """The body as a real transport delivers it: a stream, read (and inflated) by the scraper."""
    for i in range(0, len(body), chunk):
        yield body[i : i + chunk]


def oversized(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=ENDLESS)


def gzip_bomb(request: httpx.Request) -> httpx.Response:
    body = gzip.compress(b"#" * (17 * 2**20), compresslevel=9)
    assert len(body) < 100_000
    return httpx.Response(200, content=streamed(body), headers={"content-encoding": "gzip"})


def bad_utf8(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b'a 1\nb 2\nc{l="\xff\xfe"} 3\n')


def garbage(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b"<html><body>Not Found</body></html>\n")


def long_label(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b'm{l="' + b"x" * 100_000 + b'"} 1\n')


def many_series(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=b"".join(b'm{i="%d"} 1\n' % i for i in range(100_000)))


def assert_good(scraper: Scraper, store: Store, name: str = "good") -> None:
    health = {h.name: h for h in scraper.health()}[name]
    assert health.up is True and health.error is None
    assert health.samples == 3 and health.series == 3 and health.last_success == NOW
    assert [s.points() for s in store.series(name, "up_total")] == [[(NOW, 7.0)]]
    assert sorted(s.last()[1] for s in store.series(name, "queue_depth")) == [3.0, 4.0]  # type: ignore[index]


FAILURES = [
    ("refused", refused, "connection refused"),
    ("hangs", hangs, "timed out after 0.05 s"),
    ("status500", status_500, "HTTP 500 Internal Server Error"),
    ("oversized", oversized, "body exceeds 16 MiB"),
    ("gzipbomb", gzip_bomb, "body exceeds 16 MiB"),
    ("badutf8", bad_utf8, "line 3: invalid UTF-8 (byte 0xff)"),
    ("garbage", garbage, "line 1: "),
    ("longlabel", long_label,
     f"line 1: label value of 100000 bytes exceeds the limit of {schema.MAX_LABEL_VALUE_BYTES}"),
]


@pytest.mark.parametrize(("name", "handler", "error"), FAILURES, ids=[f[0] for f in FAILURES])
async def test_a_failing_target_is_down_with_a_clear_error_and_the_other_keeps_its_numbers(
    name: str, handler: Callable[[httpx.Request], object], error: str
) -> None:
    store = Store()
    scraper = Scraper([target("good"), target(name)], store=store, timeout_s=0.05, clock=FakeClock(NOW),
                      transport=by_host({"good": ok, name: handler}))
    async with scraper:
        await scraper.scrape_once()
        good, bad = scraper.health()
    assert_good(scraper, store)
    assert bad.up is False
    assert bad.error is not None and bad.error.startswith(error), bad.error
    assert len(bad.error) <= 200 and "\n" not in bad.error
    assert bad.samples == 0 and bad.series == 0 and bad.last_success is None and bad.last_scrape == NOW
    assert store.series_count(name) == 0


async def test_oversized_body_is_refused_while_streaming_not_read_whole() -> None:
    endless = Endless()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=endless))
    scraper = Scraper([target("big")], store=Store(), max_body_bytes=2**20, transport=transport)
    async with scraper:
        await scraper.scrape_once()
    assert scraper.health()[0].error == "body exceeds 1 MiB"
    assert 2**20 < endless.pulled <= 2**20 + 2 * len(endless.chunk)


async def test_declared_content_length_over_the_cap_is_refused_before_reading() -> None:
    endless = Endless()
    transport = httpx.MockTransport(
        lambda request: httpx.Response(200, content=endless, headers={"content-length": str(2**30)}))
    scraper = Scraper([target("big")], store=Store(), transport=transport)
    async with scraper:
        await scraper.scrape_once()
    assert scraper.health()[0].error == "body exceeds 16 MiB"
    assert endless.pulled == 0


async def test_one_round_with_every_failure_at_once_leaves_the_good_target_intact() -> None:
    routes: dict[str, Callable[[httpx.Request], object]] = {name: handler for name, handler, _ in FAILURES}
    routes["good"] = ok
    routes["manyseries"] = many_series
    store = Store()
    names = ["good", *(f[0] for f in FAILURES), "manyseries"]
    scraper = Scraper([target(n) for n in names], store=store, timeout_s=0.2, clock=FakeClock(NOW),
                      transport=by_host(routes))
    async with scraper:
        await scraper.scrape_once()
    health = {h.name: h for h in scraper.health()}
    assert [h.name for h in scraper.health()] == names  # config order
    assert_good(scraper, store)
    assert all(health[n].up is False for n, _, _ in FAILURES)
    assert {n: health[n].error.split(":")[0] for n, _, _ in FAILURES} == {  # type: ignore[union-attr]
        "refused": "connection refused", "hangs": "timed out after 0.2 s",
        "status500": "HTTP 500 Internal Server Error", "oversized": "body exceeds 16 MiB",
        "gzipbomb": "body exceeds 16 MiB", "badutf8": "line 3", "garbage": "line 1", "longlabel": "line 1"}
    assert health["manyseries"].up is False


async def test_100k_series_keeps_the_first_20k_marks_the_target_down_and_spares_the_others() -> None:
    store = Store()
    scraper = Scraper([target("good"), target("flood")], store=store, clock=FakeClock(NOW),
                      transport=by_host({"good": ok, "flood": many_series}))
    async with scraper:
        await scraper.scrape_once()
        await scraper.scrape_once()  # steady state: still capped, still flagged, nothing grows
    good, flood = scraper.health()
    assert good.up is True and good.series == 3
    assert flood.up is False  # down with a clear error, yet the first 20k series were stored
    assert flood.samples == 100_000 and flood.series == 20_000 and flood.dropped_series == 80_000
    assert flood.error == "series limit 20,000 reached: 80,000 new series dropped"
    assert store.series_count("flood") == 20_000


async def test_control_characters_from_the_peer_never_reach_the_error_raw() -> None:
    def evil(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, extensions={"reason_phrase": b"\x1b]0;pwned\x07\x1b[31mdown"})

    scraper = Scraper([target("evil")], store=Store(), transport=httpx.MockTransport(evil))
    async with scraper:
        await scraper.scrape_once()
    error = scraper.health()[0].error
    assert error == "HTTP 503 \\x1b]0;pwned\\x07\\x1b[31mdown"
    assert "\x1b" not in error and "\x07" not in error


async def test_gzip_body_is_accepted_and_requested() -> None:
    seen: list[httpx.Request] = []

    def gz(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=streamed(gzip.compress(GOOD_BODY), 7),
                              headers={"content-encoding": "gzip"})

    store = Store()
    scraper = Scraper([target("good")], store=store, clock=FakeClock(NOW), transport=httpx.MockTransport(gz))
    async with scraper:
        await scraper.scrape_once()
    assert_good(scraper, store)
    assert seen[0].headers["accept-encoding"] == "gzip"
    assert seen[0].headers["accept"].startswith("application/openmetrics-text")


async def test_truncated_gzip_is_an_error() -> None:
    body = gzip.compress(GOOD_BODY)[:-12]
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, content=streamed(body), headers={"content-encoding": "gzip"}))
    scraper = Scraper([target("t")], store=Store(), transport=transport)
    async with scraper:
        await scraper.scrape_once()
    assert scraper.health()[0].error == "truncated gzip body"


async def test_openmetrics_content_type_selects_the_openmetrics_parser() -> None:
    body = b"# TYPE a counter\na_total 1.5 1700000000.5\n# EOF\n"
    transport = httpx.MockTransport(lambda r: httpx.Response(
        200, content=body, headers={"content-type": "application/openmetrics-text; version=1.0.0"}))
    store = Store()
    scraper = Scraper([target("om")], store=store, transport=transport, clock=FakeClock(NOW))
    async with scraper:
        await scraper.scrape_once()
    assert scraper.health()[0].up is True
    # OpenMetrics timestamps are seconds; the sample's own timestamp wins over the scrape time.
    assert store.series("om", "a_total")[0].points() == [(1700000000.5, 1.5)]


async def test_samples_are_stored_at_the_clock_time_of_the_scrape() -> None:
    clock = FakeClock(NOW)
    store = Store()
    scraper = Scraper([target("good")], store=store, clock=clock, transport=httpx.MockTransport(ok))
    async with scraper:
        await scraper.scrape_once()
        clock.t += 1.0
        await scraper.scrape_once()
    assert store.scrape_times("good") == [NOW, NOW + 1.0]
    assert store.series("good", "up_total")[0].points() == [(NOW, 7.0), (NOW + 1.0, 7.0)]


async def test_health_before_any_scrape_is_unknown_and_carries_the_configured_role() -> None:
    scraper = Scraper([target("a", role="trainer"), target("b")], store=Store(), transport=httpx.MockTransport(ok))
    async with scraper:
        a, b = scraper.health()
    assert (a.name, a.url, a.role, a.up, a.error) == ("a", "http://a:9100/metrics", "trainer", None, None)
    assert b.role is None and b.up is None
    assert isinstance(scraper, Source)


async def test_health_of_a_target_not_scraped_since_is_the_same_object() -> None:
    # The TUI reads health every poll; rows that did not change are not built again, and a reader can
    # tell which did by identity.
    scraper = Scraper([target("a"), target("b")], store=Store(), transport=httpx.MockTransport(ok))
    async with scraper:
        await scraper.scrape_once()
        first = scraper.health()
        assert scraper.health()[0] is first[0] and scraper.health()[1] is first[1]
        await scraper._poll(scraper._states[1])  # noqa: SLF001 - one target's turn, as its loop takes it
        a, b = scraper.health()
    assert a is first[0]
    assert b is not first[1] and b.last_scrape is not None and b.samples == first[1].samples == 3


async def test_concurrency_cap_is_respected_in_a_round() -> None:
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return ok(request)

    scraper = Scraper([target(f"t{i}") for i in range(10)], store=Store(), concurrency=3,
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
    assert peak == 3
    assert all(h.up for h in scraper.health())


async def test_a_hung_target_delays_nobody_and_is_never_scraped_twice_at_once() -> None:
    release = asyncio.Event()
    calls = {"fast": 0, "slow": 0}
    in_flight = {"fast": 0, "slow": 0}
    peak = {"fast": 0, "slow": 0}
    fast_enough = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        calls[host] += 1
        in_flight[host] += 1
        peak[host] = max(peak[host], in_flight[host])
        try:
            if host == "slow":
                await release.wait()
            else:
                await asyncio.sleep(0)
        finally:
            in_flight[host] -= 1
        if calls["fast"] >= 5:
            fast_enough.set()
        return ok(request)

    scraper = Scraper([target("slow"), target("fast")], store=Store(), interval_s=0.01, timeout_s=30,
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.start()
        await scraper.start()  # idempotent: still one task per target
        await asyncio.wait_for(fast_enough.wait(), timeout=20)
        assert calls["slow"] == 1 and in_flight["slow"] == 1  # still hanging, never re-entered
        slow, fast = scraper.health()
        assert slow.up is None and fast.up is True
        # scrape_once waits for the in-flight scrape of a target instead of overlapping it.
        round_done = asyncio.ensure_future(scraper.scrape_once())
        await asyncio.sleep(0.05)
        assert calls["slow"] == 1
        release.set()
        await asyncio.wait_for(round_done, timeout=20)
    assert peak == {"fast": 1, "slow": 1}
    assert calls["slow"] >= 2


async def test_backoff_grows_while_down_and_resets_on_success() -> None:
    failing = True
    delays: list[float] = []
    done = asyncio.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        if failing:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return ok(request)

    async def fake_sleep(delay: float) -> None:
        nonlocal failing
        delays.append(delay)
        if len(delays) == 7:
            failing = False
        if len(delays) == 9:
            done.set()
            await asyncio.Event().wait()
        await asyncio.sleep(0)

    scraper = Scraper([target("t")], store=Store(), interval_s=2.0, sleep=fake_sleep,
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.start()
        await asyncio.wait_for(done.wait(), timeout=20)
        assert scraper.health()[0].up is True
    assert delays[:7] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    # Back to the interval's grid, from the first poll that answered: no time passes in this fake sleep, so
    # each later slot is one interval further off than the last.
    assert 0.0 < delays[7] <= 2.0 and delays[8] - delays[7] == pytest.approx(2.0, abs=0.1)


def test_backoff_and_timeout_rules() -> None:
    assert [backoff_delay(1.0, n) for n in range(7)] == [1.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    assert backoff_delay(1.0, 10_000) == MAX_BACKOFF_S
    assert backoff_delay(60.0, 5) == 60.0  # an interval longer than the cap is never shortened
    assert effective_timeout(1.0, None) == pytest.approx(0.8)
    assert effective_timeout(0.1, None) == 0.25
    assert effective_timeout(1.0, 0.3) == 0.3


async def test_set_interval_applies_to_the_next_wait_and_to_the_default_timeout() -> None:
    delays: list[float] = []
    done = asyncio.Event()

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        if len(delays) == 2:
            done.set()
            await asyncio.Event().wait()

    scraper = Scraper([target("t")], store=Store(), interval_s=1.0, sleep=fake_sleep,
                      transport=httpx.MockTransport(hangs))
    scraper.set_interval(0.1)  # default timeout becomes max(0.25, 0.08)
    with pytest.raises(ValueError):
        scraper.set_interval(0)
    async with scraper:
        await scraper.start()
        await asyncio.wait_for(done.wait(), timeout=20)
    assert scraper.health()[0].error == "timed out after 0.25 s"
    assert delays == [0.1, 0.2]  # down: the backoff starts from the new interval


async def test_bearer_token_is_read_from_its_file_and_re_read_when_it_changes(tmp_path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first-token\n")
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return ok(request)

    scraper = Scraper([target("a", bearer_token_file=str(token_file))], store=Store(),
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
        token_file.write_text("second-token-rotated\n")
        await scraper.scrape_once()
        token_file.unlink()
        await scraper.scrape_once()
    assert seen == ["Bearer first-token", "Bearer second-token-rotated"]
    health = scraper.health()[0]
    assert health.up is False
    assert health.error == f"bearer token file {token_file}: No such file or directory"


async def test_basic_auth_header_is_sent() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return ok(request)

    scraper = Scraper([target("a", basic_auth=("user", "pa:ss")), target("b")], store=Store(),
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
    assert sorted(seen, key=str) == ["Basic " + base64.b64encode(b"user:pa:ss").decode(), None]


async def test_a_targets_request_is_built_once_per_deadline_and_keeps_no_cookies() -> None:
    # Building the GET (URL parsed, headers merged) and httpx's cookie upkeep on every scrape cost as much
    # CPU as the HTTP itself; like Prometheus, a scraper sends the same request and keeps no cookies.
    seen: list[httpx.Request] = []
    cookies: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        cookies.append(request.headers.get("cookie"))
        response = ok(request)
        response.headers["set-cookie"] = "session=abc; Path=/"
        return response

    scraper = Scraper([target("a")], store=Store(), interval_s=1.0, transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
        await scraper.scrape_once()
        scraper.set_interval(2.0)
        await scraper.scrape_once()
    assert seen[0] is seen[1] and seen[2] is not seen[1]
    assert [r.headers["x-prometheus-scrape-timeout-seconds"] for r in seen] == ["0.8", "0.8", "1.6"]
    assert seen[0].headers["accept-encoding"] == "gzip" and seen[0].headers["user-agent"] == "ptmon"
    assert cookies == [None, None, None]
    assert scraper.health()[0].up is True


async def test_credentials_in_the_url_are_sent_as_basic_auth_as_httpx_sends_them() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return ok(request)

    scraper = Scraper([Target("a", "http://user:p%40ss@a:9100/metrics")], store=Store(),
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
    assert seen == ["Basic " + base64.b64encode(b"user:p@ss").decode()]


def test_bad_construction_is_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        Scraper([target("a"), target("a")], store=Store())
    with pytest.raises(ValueError, match="exclusive"):
        Scraper([target("a", bearer_token_file="/t", basic_auth=("u", "p"))], store=Store())
    with pytest.raises(ValueError, match="interval_s"):
        Scraper([], store=Store(), interval_s=0)


async def test_aclose_is_idempotent_and_stops_the_tasks() -> None:
    scraper = Scraper([target("a")], store=Store(), interval_s=0.01, transport=httpx.MockTransport(ok))
    await scraper.start()
    await asyncio.sleep(0.05)
    await scraper.aclose()
    await scraper.aclose()
    before = scraper.health()[0].last_scrape
    await asyncio.sleep(0.05)
    assert scraper.health()[0].last_scrape == before
    with pytest.raises(RuntimeError):
        await scraper.start()
    with pytest.raises(RuntimeError):
        await scraper.scrape_once()


async def test_from_settings_takes_the_interval_timeout_and_limits() -> None:
    settings = Settings(targets=(target("a"),), interval_s=5.0, timeout_s=0.05, max_body_bytes=2048)
    transport = httpx.MockTransport(lambda r: httpx.Response(200, content=b"# " + b"x" * 4096 + b"\n"))
    scraper = Scraper.from_settings(settings, store=Store(), transport=transport)
    async with scraper:
        await scraper.scrape_once()
    assert scraper.health()[0].error == "body exceeds 2 KiB"
    hung = Scraper.from_settings(settings, store=Store(), transport=httpx.MockTransport(hangs))
    async with hung:
        await hung.scrape_once()
    assert hung.health()[0].error == "timed out after 0.05 s"


# -- real HTTP on loopback ------------------------------------------------------


@pytest.fixture
def exporter():
    """A real prometheus_client exporter on a free loopback port."""
    registry = CollectorRegistry()
    rollouts = Counter("rollouts", "Rollouts.", ["env"], registry=registry)
    depth = Gauge("queue_depth", "Queue.", registry=registry)
    sync = Histogram("sync_seconds", "Sync.", buckets=(0.5, 1.0, 5.0), registry=registry)
    rollouts.labels(env="math").inc(41)
    rollouts.labels(env="code").inc(1)
    depth.set(3.5)
    for v in (0.2, 0.7, 3.0):
        sync.observe(v)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _value(store: Store, target_name: str, name: str, **labels: str) -> float:
    for s in store.series(target_name, name):
        if all(s.labels.get(k) == v for k, v in labels.items()):
            return s.last()[1]  # type: ignore[index]
    raise KeyError(name)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_real_http_round_trip_against_prometheus_client_on_loopback(exporter: str) -> None:
    from ptmon.monitor.config import target_from_url

    store = Store()
    live = target_from_url(exporter)
    dead = target_from_url(f"127.0.0.1:{_closed_port()}")
    scraper = Scraper([live, dead], store=store, clock=FakeClock(NOW))
    async with scraper:
        await scraper.scrape_once()
    up, down = scraper.health()
    assert up.up is True and up.error is None and up.samples > 10
    assert down.up is False and down.error == "connection refused"
    assert _value(store, live.name, "rollouts_total", env="math") == 41.0
    assert _value(store, live.name, "rollouts_total", env="code") == 1.0
    assert _value(store, live.name, "queue_depth") == 3.5
    assert _value(store, live.name, "sync_seconds_bucket", le="0.5") == 1.0
    assert _value(store, live.name, "sync_seconds_bucket", le="1.0") == 2.0
    assert _value(store, live.name, "sync_seconds_bucket", le="+Inf") == 3.0
    assert _value(store, live.name, "sync_seconds_sum") == pytest.approx(3.9)


async def test_real_peer_that_accepts_but_never_answers_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        port = listener.getsockname()[1]
        scraper = Scraper([Target("mute", f"http://127.0.0.1:{port}/metrics")], store=Store(), timeout_s=0.3)
        async with scraper:
            await scraper.scrape_once()
    assert scraper.health()[0].error == "timed out after 0.3 s"


# A throwaway self-signed certificate for 127.0.0.1, valid 2000-2100, made once with
# `openssl ca -selfsign` (EC P-256, SAN IP:127.0.0.1, SKI/AKI so strict X.509 checks pass).
# Test-only: it protects nothing. Embedded so the TLS path runs wherever the tests run.
TEST_CERT = """\
-----BEGIN CERTIFICATE-----
MIIBpDCCAUqgAwIBAgIBATAKBggqhkjOPQQDAjAUMRIwEAYDVQQDDAkxMjcuMC4w
LjEwIBcNMDAwMTAxMDAwMDAwWhgPMjEwMDAxMDEwMDAwMDBaMBQxEjAQBgNVBAMM
CTEyNy4wLjAuMTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABFNVDyx3goDksZU4
CoekxMBtsicE/aov++oWBzvips8BdMeSGOIfrli541bvDWHm8nAMCgQ4xBYCVwhD
smjF6v2jgYowgYcwDwYDVR0RBAgwBocEfwAAATAPBgNVHRMBAf8EBTADAQH/MA4G
A1UdDwEB/wQEAwIChDATBgNVHSUEDDAKBggrBgEFBQcDATAdBgNVHQ4EFgQUI+vP
H/ciIdICbrtfovibQRrEVCswHwYDVR0jBBgwFoAUI+vPH/ciIdICbrtfovibQRrE
VCswCgYIKoZIzj0EAwIDSAAwRQIgIZAOm0tEBURnRiMospcPP6mIOa9G4wnPmFKP
G+HxD6MCIQCJbLiNhPym2WMcdd4q9Ixe4Cp9ZkI6zEUtPlmDrL+u7g==
-----END CERTIFICATE-----
"""
TEST_KEY = """\
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgC6DQba5rzna/Awi+
bWXznfnm9WQjTWpXgOsdqnd1B0yhRANCAARTVQ8sd4KA5LGVOAqHpMTAbbInBP2q
L/vqFgc74qbPAXTHkhjiH65YueNW7w1h5vJwDAoEOMQWAlcIQ7Joxer9
-----END PRIVATE KEY-----
"""


@pytest.fixture
def tls_cert(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text(TEST_CERT)
    key.write_text(TEST_KEY)
    return str(cert), str(key)


async def test_tls_is_verified_by_default_and_a_ca_file_makes_it_pass(tls_cert, tmp_path) -> None:
    cert, key = tls_cert
    registry = CollectorRegistry()
    Gauge("answer", "The answer.", registry=registry).set(42)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry, certfile=cert, keyfile=key)
    try:
        url = f"https://127.0.0.1:{server.server_port}/metrics"
        store = Store()
        scraper = Scraper([Target("default", url), Target("with_ca", url, ca_file=cert),
                           Target("unverified", url, verify_tls=False),
                           Target("missing_ca", url, ca_file=str(tmp_path / "nope.pem"))], store=store)
        async with scraper:
            await scraper.scrape_once()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    health = {h.name: h for h in scraper.health()}
    assert health["default"].up is False
    assert health["default"].error == "TLS certificate verify failed: self-signed certificate"
    assert health["with_ca"].up is True and _value(store, "with_ca", "answer") == 42.0
    assert health["unverified"].up is True
    assert health["missing_ca"].up is False
    assert health["missing_ca"].error == f"ca_file {tmp_path / 'nope.pem'}: No such file or directory"


async def test_the_projects_trainer_exporter_over_real_tls_gives_the_recorded_numbers(tls_cert) -> None:
    """exporters.TrainerExporter served by exporters.serve over HTTPS, scraped with a CA file."""
    from ptmon.exporters import schema
    from ptmon.exporters.serve import serve
    from ptmon.exporters.trainer import TrainerExporter

    cert, key = tls_cert
    ticks = iter(float(t) for t in range(1000))
    trainer = TrainerExporter(run="r1", model="m", algorithm="grpo", gpus=8, gpu_hour_price=3.0,
                              clock=lambda: next(ticks), wall_clock=lambda: NOW)
    for _ in range(3):
        with trainer.step():
            pass
    with trainer.weight_sync(version=7, nbytes=2e9):
        pass
    store = Store()
    with serve(trainer.registry, certfile=cert, keyfile=key) as server:
        scraper = Scraper([Target("trainer", server.url, role="trainer", ca_file=cert)], store=store,
                          clock=FakeClock(NOW))
        async with scraper:
            await scraper.scrape_once()
    (health,) = scraper.health()
    assert health.up is True and health.error is None and health.url.startswith("https://127.0.0.1:")
    assert _value(store, "trainer", schema.TRAINER_STEPS.name) == 3.0
    assert _value(store, "trainer", schema.TRAINER_STEP_SECONDS.count) == 3.0
    assert _value(store, "trainer", schema.POLICY_VERSION.name) == 7.0
    assert _value(store, "trainer", schema.WEIGHT_SYNC_BYTES.name) == 2e9
    assert _value(store, "trainer", schema.WEIGHT_SYNC_SECONDS.count) == 1.0
    assert _value(store, "trainer", schema.TRAINER_LAST_STEP_TIMESTAMP.name) == NOW
    (info,) = store.series("trainer", schema.RUN_INFO.name)
    assert dict(info.labels) == {"run": "r1", "model": "m", "algorithm": "grpo", "role": "trainer"}


# ---------------------------------------------------------------------------
# Redirects. Real ones happen: a Starlette/FastAPI app that mounts prometheus_client's ASGI app at
# /metrics (vLLM does) answers GET /metrics with "307 -> /metrics/". They are followed, but the body of a
# 3xx is never read (httpx's own redirect handling reads and inflates it whole, uncapped), and
# credentials only go to the configured origin.


class Counted:
    """A finite body of ``size`` bytes that counts how much of it was pulled."""

    def __init__(self, size: int, chunk: int = 64 * 1024) -> None:
        self.size, self.chunk, self.pulled = size, chunk, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.pulled < self.size:
            self.pulled += self.chunk
            yield b"x" * self.chunk


async def test_a_redirect_is_followed_without_reading_its_body() -> None:
    junk = Counted(48 * 2**20)  # 3x the body cap, behind a redirect
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        if request.url.path == "/metrics":
            return httpx.Response(307, headers={"location": "/metrics/"}, content=junk)
        return ok(request)

    store = Store()
    scraper = Scraper([target("good")], store=store, clock=FakeClock(NOW), transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
    assert seen == ["/metrics", "/metrics/"]
    assert_good(scraper, store)
    assert junk.pulled == 0


async def test_redirect_loops_are_an_error_and_credentials_stay_with_the_configured_origin() -> None:
    seen: list[tuple[str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), request.headers.get("authorization")))
        if request.url.host == "a":
            return httpx.Response(302, headers={"location": "http://elsewhere:9100/metrics"})
        if request.url.host == "elsewhere":
            return httpx.Response(302, headers={"location": f"http://loop:9100/{len(seen)}"})
        return httpx.Response(302, headers={"location": f"/{len(seen)}"})

    scraper = Scraper([target("a", basic_auth=("user", "secret"))], store=Store(),
                      transport=httpx.MockTransport(handler))
    async with scraper:
        await scraper.scrape_once()
    assert scraper.health()[0].error == "too many redirects"
    assert seen[0][1] is not None and seen[0][1].startswith("Basic ")
    assert all(auth is None for _, auth in seen[1:])  # never sent to another host
    assert len(seen) == 6  # the request and 5 redirects


async def test_real_starlette_style_mount_redirect_on_loopback() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        if h.path == "/metrics":
            send(h, b"", status=307, headers={"Location": f"http://{h.headers['Host']}/metrics/"})
            return
        send(h, GOOD_BODY, "text/plain; version=0.0.4")

    with http_server(respond) as port:
        store = Store()
        scraper = Scraper([Target("good", f"http://127.0.0.1:{port}/metrics")], store=store, clock=FakeClock(NOW))
        async with scraper:
            await scraper.scrape_once()
        assert_good(scraper, store)


async def test_a_flood_beyond_ten_times_the_series_cap_is_refused_unparsed() -> None:
    # Up to 10 x the series cap a flood is cut at the cap (the target flagged, the first series kept);
    # beyond it the scrape is refused before parsing, as Prometheus's sample_limit does: a 16 MiB body of
    # one-line series is ~1.1M series, which cost ~800 MB of parser caches and 10 s of CPU to read.
    def flood(n: int) -> Callable[[httpx.Request], httpx.Response]:
        body = b"".join(b'm{i="%d"} 1\n' % i for i in range(n))
        return lambda request: httpx.Response(200, content=body)

    store = Store(max_series=100)
    scraper = Scraper([target("good"), target("wide"), target("flood")], store=store, clock=FakeClock(NOW),
                      transport=by_host({"good": ok, "wide": flood(1_000), "flood": flood(1_001)}))
    async with scraper:
        await scraper.scrape_once()
    good, wide, flooded = scraper.health()
    assert good.up is True and good.series == 3
    assert wide.series == 100 and wide.dropped_series == 900 and wide.error is not None
    assert wide.error.startswith("series limit 100 reached")
    assert flooded.up is False and flooded.series == 0 and flooded.samples == 0
    assert flooded.error == "line 1001: 1,001 lines exceed the limit of 1,000 per scrape"


# -- interval changes -------------------------------------------------------------


@pytest.fixture
def counting() -> Iterator[tuple[int, dict[str, list[float]]]]:
    """A real HTTP server on loopback that notes when each path was fetched: (port, path -> times)."""
    hits: dict[str, list[float]] = {}

    def respond(h: BaseHTTPRequestHandler) -> None:
        hits.setdefault(h.path, []).append(time.monotonic())
        send(h, GOOD_BODY, "text/plain; version=0.0.4")

    with http_server(respond) as port:
        yield port, hits


async def _until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_shorter_interval_wakes_every_target_at_once_not_after_the_old_wait(
        counting: tuple[int, dict[str, list[float]]]) -> None:
    # `+` up to 1m then `-` back: each target's loop was sleeping its minute; it must poll at the new pace now.
    port, hits = counting
    base = f"http://127.0.0.1:{port}"
    paths = ("/a", "/b", "/c")
    scraper = Scraper([Target(p, base + p) for p in paths], store=Store(), interval_s=0.5)
    async with scraper:
        await scraper.start()
        await _until(lambda: all(len(hits.get(p, ())) >= 2 for p in paths))
        scraper.set_interval(60.0)
        await asyncio.sleep(0.3)  # a poll that had already begun ends
        # Each loop's next poll was due within 0.5 s; measured again against 60 s, it is not.
        settled = {p: len(hits[p]) for p in paths}
        await asyncio.sleep(1.2)
        assert {p: len(hits[p]) for p in paths} == settled
        changed = time.monotonic()
        scraper.set_interval(0.5)
        await _until(lambda: all(len(hits[p]) > settled[p] for p in paths), timeout=5.0)
        assert all(hits[p][settled[p]] - changed < 1.0 for p in paths)
        # ... and then keeps the new pace.
        await _until(lambda: all(len(hits[p]) >= settled[p] + 3 for p in paths), timeout=5.0)


async def test_a_longer_interval_is_measured_from_the_last_poll_not_started_again() -> None:
    delays: list[float] = []
    changed = asyncio.Event()

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)
        changed.set()
        await asyncio.Event().wait()  # the wait is only ever ended by an interval change

    scraper = Scraper([target("t")], store=Store(), interval_s=10.0, sleep=fake_sleep,
                      transport=httpx.MockTransport(ok))
    async with scraper:
        await scraper.start()
        await asyncio.wait_for(changed.wait(), timeout=10)
        scraper.set_interval(10.0)  # no change: no new wait
        scraper.set_interval(30.0)
        await _until(lambda: len(delays) == 2)
    assert 9.0 < delays[0] <= 10.0 and 29.0 < delays[1] <= 30.0 and delays[1] - delays[0] == pytest.approx(20, abs=0.5)


async def test_two_paths_on_one_host_port_are_scraped_as_two_targets() -> None:
    from ptmon.monitor.config import load_settings

    def respond(h: BaseHTTPRequestHandler) -> None:
        body = b"probe_success 1\n" if h.path.startswith("/probe") else b"node_load1 0.5\n"
        send(h, b"probe_success 0\n" if h.path.endswith("target=b") else body)

    with http_server(respond) as port:
        base = f"127.0.0.1:{port}"
        settings = load_settings(urls=[base, f"http://{base}/probe?target=a", f"http://{base}/probe?target=b"])
        store = Store()
        scraper = Scraper.from_settings(settings, store=store)
        async with scraper:
            await scraper.scrape_once()
    names = [f"{base}/metrics", f"{base}/probe?target=a", f"{base}/probe?target=b"]
    assert [(h.name, h.up) for h in scraper.health()] == [(n, True) for n in names]
    assert _value(store, names[0], "node_load1") == 0.5
    assert (_value(store, names[1], "probe_success"), _value(store, names[2], "probe_success")) == (1.0, 0.0)


# -- errors that say what is wrong, from real peers on loopback ---------------------------------------


def _login(h: BaseHTTPRequestHandler) -> None:
    if h.path == "/metrics":  # Grafana and most SSO proxies: a redirect to their login page
        send(h, b"", status=302, headers={"Location": "/login"})
        return
    send(h, b"<!DOCTYPE html>\n<html><head><title>Grafana</title></head><body>log in</body></html>\n",
         "text/html; charset=UTF-8")


NODE_EXPORTER = (b"# TYPE node_load1 gauge\nnode_load1 0.31\n# TYPE node_boot_time_seconds gauge\n"
                 b"node_boot_time_seconds 1.7e9\ngo_goroutines 9\n")


async def _scrape_errors(targets: list[Target]) -> dict[str, str | None]:
    scraper = Scraper(targets, store=Store(), timeout_s=2.0)
    async with scraper:
        await scraper.scrape_once()
    return {h.name: h.error for h in scraper.health()}


async def test_peers_that_are_not_what_was_asked_for_are_named_so() -> None:
    with (raw_peer(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n", read_first=False) as ssh,
          raw_peer(bytes(range(256)) * 2, read_first=True) as junk,
          raw_peer(b"\x15\x03\x01\x00\x02\x02\x46", read_first=True) as tls,
          http_server(_login) as login,
          http_server(lambda h: send(h, GOOD_BODY, "text/plain; version=0.0.4")) as plain):
        errors = await _scrape_errors([
            Target("ssh", f"http://127.0.0.1:{ssh}/metrics"), Target("junk", f"http://127.0.0.1:{junk}/metrics"),
            Target("tls", f"http://127.0.0.1:{tls}/metrics"), Target("login", f"http://127.0.0.1:{login}/metrics"),
            Target("https", f"https://127.0.0.1:{plain}/metrics")])
    assert errors == {
        "ssh": "not an HTTP server (it sent 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13')",
        "junk": "not an HTTP response",
        "tls": "not an HTTP response (the server speaks TLS: use https://)",
        "login": "got text/html, not Prometheus metrics (a login page?)",
        "https": "the server speaks plain HTTP: use http://",
    }


async def test_a_target_that_answers_with_nothing_ptmon_reads_is_up_but_not_recognised() -> None:
    with (http_server(lambda h: send(h, NODE_EXPORTER, "text/plain; version=0.0.4")) as node,
          http_server(lambda h: send(h, b"posttrain_policy_version 3\n", "text/plain")) as ours,
          http_server(lambda h: send(h, b"vllm:num_requests_running 2\n", "text/plain")) as engine):
        scraper = Scraper([Target("node", f"http://127.0.0.1:{node}/metrics"),
                           Target("ours", f"http://127.0.0.1:{ours}/metrics"),
                           Target("engine", f"http://127.0.0.1:{engine}/metrics"),
                           Target("dead", f"http://127.0.0.1:{_closed_port()}/metrics")], store=Store())
        async with scraper:
            await scraper.scrape_once()
    health = {h.name: h for h in scraper.health()}
    assert (health["node"].up, health["node"].recognised, health["node"].samples) == (True, False, 3)
    assert health["node"].error is None  # it works; it is just not something ptmon shows
    assert (health["ours"].recognised, health["engine"].recognised, health["dead"].recognised) == (True, True, None)


def _gzipped(payload: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    return lambda h: send(h, payload, "text/plain; version=0.0.4", headers={"Content-Encoding": "gzip"})


async def test_a_multi_member_gzip_body_is_read_whole_and_trailing_garbage_is_an_error() -> None:
    # RFC 1952 allows concatenated members (pigz, a proxy appending a chunk, `cat a.gz b.gz`); Go's reader and
    # Python's gzip read them all. Whatever else follows a member would otherwise go unseen with its series.
    first = b"# TYPE up_total counter\nup_total 7\n"
    second = b'queue_depth{q="a"} 3\nqueue_depth{q="b"} 4\n'
    members = gzip.compress(first) + gzip.compress(second)
    with (http_server(_gzipped(members)) as whole, http_server(_gzipped(members + b"\0\0")) as padded,
          http_server(_gzipped(gzip.compress(GOOD_BODY) + b"<!-- tail -->")) as garbage,
          http_server(_gzipped(members[:-4])) as cut):
        store = Store()
        scraper = Scraper([Target(n, f"http://127.0.0.1:{p}/metrics") for n, p in
                           (("good", whole), ("padded", padded), ("garbage", garbage), ("cut", cut))],
                          store=store, clock=FakeClock(NOW))
        async with scraper:
            await scraper.scrape_once()
    assert_good(scraper, store)
    health = {h.name: h for h in scraper.health()}
    assert (health["padded"].up, health["padded"].samples) == (True, 3)
    assert (health["garbage"].up, health["garbage"].error) == (False, "invalid gzip body: data after the compressed "
                                                                      "stream")
    assert store.series_count("garbage") == 0
    assert (health["cut"].up, health["cut"].error) == (False, "truncated gzip body")


async def test_no_secret_reaches_an_error_text(tmp_path) -> None:
    # A token file rotated to one with an inner newline: h11 refused the header and its error quoted it,
    # putting the token in the targets table, the alert, the toast and the JSON.
    token_file = tmp_path / "token"
    token_file.write_text("good-token\n")
    seen: list[str | None] = []

    def respond(h: BaseHTTPRequestHandler) -> None:
        seen.append(h.headers.get("Authorization"))
        send(h, GOOD_BODY, "text/plain; version=0.0.4")

    class Smuggled(httpx.Auth):
        """Credentials that cannot be an HTTP header (a plugin's, a future auth kind)."""

        def auth_flow(self, request: httpx.Request):  # type: ignore[no-untyped-def]
            request.headers["X-Api-Key"] = "key-with\r\nsecret-part"
            yield request

    with http_server(respond) as port:
        url = f"http://127.0.0.1:{port}/metrics"
        scraper = Scraper([Target("bearer", url, bearer_token_file=str(token_file)), Target("smuggled", url)],
                          store=Store())
        scraper._states[1].auth = Smuggled()  # noqa: SLF001 - no config spells such a header
        async with scraper:
            await scraper.scrape_once()
            token_file.write_text("tok-with\ninner-newline\n")
            await scraper.scrape_once()
    bearer, smuggled = scraper.health()
    assert seen[0] == "Bearer good-token" and len(seen) == 1  # neither bad header was sent
    assert bearer.error == f"bearer token file {token_file}: a line break inside (its content is not shown)"
    assert smuggled.error == ("request header X-Api-Key is not valid HTTP (a line break, NUL or surrounding "
                              "space in it; its value is not shown)")
    for error in (bearer.error, smuggled.error):
        assert "tok-with" not in error and "newline" not in error and "secret-part" not in error
