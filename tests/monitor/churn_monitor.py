"""A fat-label churn target against a real scraper: ``python -m tests.monitor.churn_monitor SECONDS``.

The target (a loopback HTTP server in a thread) answers every scrape with
``KEEP`` series it always sends plus ``NEW`` series never seen before, each
of ``LABELS`` label values of ``WIDTH`` bytes: every value under
``MAX_LABEL_VALUE_BYTES`` and every series under ``MAX_SERIES_BYTES``, as a
target whose label values churn (request ids, timestamps in labels) behaves.
A ``Scraper`` with the default ``Store`` scrapes it every ``INTERVAL_S`` for
SECONDS; the process prints one JSON line: its RSS after the first scrape, the
highest RSS seen after, how much label text the target sent, and the target's
health. Run in its own process so the RSS is the monitor's alone.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ptmon.exporters.schema import MAX_SERIES_BYTES
from ptmon.monitor.settings import Target
from ptmon.monitor.sources import Scraper
from ptmon.monitor.store import Store

__all__ = ["main", "LABELS", "WIDTH", "NEW", "KEEP"]

LABELS, WIDTH = 30, 4000  # 120 KB a series, just under MAX_SERIES_BYTES (128 KiB)
NEW, KEEP = 24, 4  # series per page: 3.4 MB of page, 2.9 MB of it new every scrape
INTERVAL_S = 0.25
assert LABELS * (WIDTH + 6) < MAX_SERIES_BYTES


def _series(i: int) -> bytes:
    value = str(i).rjust(WIDTH, "x")
    return ("churn{" + ",".join(f'l{j}="{value}"' for j in range(LABELS)) + "} 1\n").encode()


class _Churn(BaseHTTPRequestHandler):
    counter = 0
    lock = threading.Lock()
    sent = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        with _Churn.lock:
            first = _Churn.counter
            _Churn.counter += NEW
        body = b"".join(_series(-k) for k in range(1, KEEP + 1)) + b"".join(
            _series(i) for i in range(first, first + NEW))
        _Churn.sent += len(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


async def _run(seconds: float, url: str) -> dict[str, object]:
    store = Store()
    scraper = Scraper([Target(name="churn", url=url)], store=store, interval_s=INTERVAL_S, timeout_s=None)
    async with scraper:
        await scraper.scrape_once()
        start = peak = _rss()
        scrapes = 1
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(INTERVAL_S)
            await scraper.scrape_once()
            scrapes += 1
            peak = max(peak, _rss())
    (health,) = scraper.health()
    return {"rss_start": start, "rss_peak": peak, "scrapes": scrapes, "sent_bytes": _Churn.sent,
            "series": health.series, "dropped": health.dropped_series, "error": health.error,
            # getattr: the same script measures a store without the budget (the figure before it)
            "label_bytes": getattr(store, "label_bytes", lambda _: None)("churn"),
            "max_label_bytes": getattr(store, "max_label_bytes", None)}


def main(argv: list[str]) -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Churn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = asyncio.run(_run(float(argv[0]), f"http://127.0.0.1:{server.server_address[1]}/metrics"))
    finally:
        server.shutdown()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
