"""Where samples come from: a Source fills the Store and reports target health.

``Scraper`` scrapes /metrics endpoints directly; ``PrometheusSource`` reads a
Prometheus server's query API; both are a ``Poller`` (one lifecycle, cadence
and backoff) fetching through one transport with one set of typed errors.
``FileSource`` tails JSONL metrics files through the framework bridges (a
Poller too); ``Sources`` runs a scraper and a file source as one.
"""

from ptmon.monitor.settings import effective_timeout
from ptmon.monitor.sources.base import Source
from ptmon.monitor.sources.combined import Sources
from ptmon.monitor.sources.files import FileSource
from ptmon.monitor.sources.poller import MAX_BACKOFF_S, backoff_delay
from ptmon.monitor.sources.prometheus import PrometheusSource
from ptmon.monitor.sources.scrape import Scraper

__all__ = ["Source", "Scraper", "PrometheusSource", "FileSource", "Sources", "backoff_delay", "effective_timeout",
           "MAX_BACKOFF_S"]
