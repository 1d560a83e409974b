"""The sample names the monitor reads history of: one definition, derived from the contract.

Every number on screen, in a detail, a snapshot or the event log is read
through a ``MetricSpec`` of ``exporters/schema.py`` (the contract spells
every name there, tests/test_contract.py checks), under the spellings
``monitor/exposed.py`` and ``monitor/roles.py`` accept: a counter with and
without ``_total``, an engine's ``:`` flattened and behind Ray's ``ray_``, a
histogram's ``_bucket``/``_sum``/``_count``, a ``_created``, run info's two
names, and the series Prometheus and a Pushgateway write themselves. A name
outside that set is never read beyond its latest value (the detail's raw
series list), so the store keeps no history of it (``Store(keep=is_read)``)
and a parser may skip its lines (``ExpositionParser(keep=...)``) when nothing
else wants them. A section that starts reading a new name reads it through a
spec, and so is covered here with no second list to keep;
tests/monitor/test_reads.py builds every Dashboard and detail over a store
fed everything and one fed only this, and fails on any difference.
"""

from __future__ import annotations

from collections.abc import Iterator

from ptmon.exporters import schema
from ptmon.exporters.schema import MetricSpec
from ptmon.monitor.exposed import engine_spellings
from ptmon.monitor.roles import run_info_names

__all__ = ["READ_NAMES", "is_read", "spellings"]

_HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")


def _specs() -> Iterator[MetricSpec]:
    """Every spec of the contract module: ours, the engines', DCGM's and the loops' alike."""
    for value in vars(schema).values():
        if isinstance(value, MetricSpec):
            yield value


def spellings(spec: MetricSpec) -> tuple[str, ...]:
    """Every sample name ``spec``'s series may come under, as any part of the monitor looks it up."""
    out: list[str] = []
    for name in engine_spellings(spec):  # the name itself first; the flattened and Ray names for engines
        if spec.kind == "counter":
            out.extend(schema.counter_aliases(name))
        elif spec.kind == "histogram":
            out.extend((name, *(name + part for part in _HISTOGRAM_PARTS)))
        else:
            out.append(name)
        if spec.kind in ("counter", "histogram"):
            base = name[: -len("_total")] if name.endswith("_total") else name
            out.append(base + "_created")
    return tuple(dict.fromkeys(out))


def _read_names() -> frozenset[str]:
    names = {n for spec in _specs() for n in spellings(spec)}
    names.update(run_info_names())
    names.update(schema.PROMETHEUS_SCRAPE_SERIES)
    names.update((schema.PUSHGATEWAY_PUSH_TIME, schema.PUSHGATEWAY_BUILD_INFO))
    return frozenset(names)


READ_NAMES: frozenset[str] = _read_names()


def is_read(name: str) -> bool:
    """Whether anything downstream of the store reads more than the latest value of ``name``."""
    return name in READ_NAMES
