"""Serve a registry on /metrics, and build the registry a multiprocess pool serves.

``serve`` is a thin layer over prometheus_client's ``start_http_server``
(a daemon thread, so scrapes never touch the training loop's thread) that
adds what it leaves out: the chosen port when you ask for port 0, a clear
error naming the port when it is taken, a URL, and a ``close()``.

What the transport supports, and what it doesn't:

- TLS: yes (``certfile`` + ``keyfile``, prometheus_client's own support).
- Basic auth on the served endpoint: no; prometheus_client's server has no
  auth hook. Bind to 127.0.0.1 (the default) and let a local Prometheus or
  agent scrape, or put a reverse proxy in front. Basic auth *is* supported for
  pushing to a Pushgateway (``EvalExporter.push(username=..., password=...)``).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

from ptmon.exporters._identity import process_metrics
from ptmon.exporters.cost import Clock
from ptmon.exporters.schema import ROLE_ROLLOUT

__all__ = ["MetricsServer", "serve", "multiprocess_registry"]


@dataclass(eq=False)
class MetricsServer:
    """A running /metrics endpoint. ``close()`` (or ``with``) stops it and frees the port."""

    host: str
    port: int
    scheme: str
    _httpd: WSGIServer = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _pid: int = field(default_factory=os.getpid, repr=False)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}/metrics"

    def close(self) -> None:
        if os.getpid() != self._pid:
            # A forked child's copy: the serving thread was not copied, and shutdown() would wait for it
            # forever. Closing the child's copy of the socket is all there is to do; the parent serves on.
            self._httpd.server_close()
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def serve(registry: CollectorRegistry, *, port: int = 0, host: str = "127.0.0.1", certfile: str | None = None,
          keyfile: str | None = None) -> MetricsServer:
    """Serve ``registry`` at ``http(s)://host:port/metrics`` from a daemon thread.

    ``port=0`` picks a free port (read it back from ``.port``). A port in use,
    a bad host or an unreadable certificate raise at once with a message
    naming them: this is start-up configuration, not a recording call.
    """
    if (certfile is None) != (keyfile is None):
        # prometheus_client would silently serve plain HTTP with only one of them.
        raise ValueError("TLS needs both certfile and keyfile (got only "
                         f"{'certfile' if certfile else 'keyfile'})")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
    for path in (certfile, keyfile):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(errno.ENOENT, f"TLS file not found: {path}", path)
    try:
        httpd, thread = start_http_server(port, addr=host, registry=registry, certfile=certfile, keyfile=keyfile)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(exc.errno, f"cannot serve metrics on {host}:{port}: port {port} is already in use "
                                     "(choose another port, or port=0 for a free one)") from exc
        if exc.errno == errno.EACCES:
            raise OSError(exc.errno, f"cannot serve metrics on {host}:{port}: permission denied "
                                     "(ports below 1024 need privileges)") from exc
        raise OSError(exc.errno, f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from exc
    return MetricsServer(host=host, port=httpd.server_port, scheme="https" if certfile else "http",
                         _httpd=httpd, _thread=thread)


def multiprocess_registry(*, run: str, model: str, algorithm: str, gpus: float, gpu_hour_price: float,
                          role: str = ROLE_ROLLOUT, path: str | None = None,
                          clock: Clock = time.monotonic) -> CollectorRegistry:
    """The registry the parent of a multiprocess pool serves.

    It aggregates the children's counters, histograms and gauges from the
    ``PROMETHEUS_MULTIPROC_DIR`` files (``path`` overrides the variable) and
    adds what cannot travel through those files: ``posttrain_run_info`` and
    the collect-time GPU cost, here for the whole pool (``gpus`` = the pool's
    GPUs). The children build ordinary exporters (their own run info and
    cost are simply never served; give them ``gpus=0``).
    """
    directory = path if path is not None else os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory or not os.path.isdir(directory):
        raise ValueError("multiprocess mode needs PROMETHEUS_MULTIPROC_DIR (or path=) to name an existing "
                         f"directory, got {directory!r}")
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]  # unannotated upstream
    process_metrics(registry).add_role(run=run, model=model, algorithm=algorithm, role=role, gpus=gpus,
                                       gpu_hour_price=gpu_hour_price, clock=clock)
    return registry
