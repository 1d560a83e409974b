"""Where samples come from: a Source fills the Store and reports target health.

``Scraper`` scrapes /metrics endpoints directly; other sources (a Prometheus
server, a replay) offer the same ``Source`` interface.
"""

from ptmon.monitor.sources.base import Source
from ptmon.monitor.sources.prometheus import PrometheusSource
from ptmon.monitor.sources.scrape import MAX_BACKOFF_S, Scraper, backoff_delay, effective_timeout

__all__ = ["Source", "Scraper", "PrometheusSource", "backoff_delay", "effective_timeout", "MAX_BACKOFF_S"]
