"""``auto``: which framework logged a dict, from its keys alone.

Each table scores a dict by how many of its exact keys it holds (patterns,
such as eval keys, are too generic to tell frameworks apart), and twice that
for keys carrying one of its ``markers`` (prefixes only that framework
logs, e.g. verl's ``timing_s/``, AReaL's ``timeperf/``). Only a table with a
marker in the dict is a candidate (``loss`` or ``reward`` alone could be
anyone's); the best candidate wins; a dict with none, or a tie at the top,
decides nothing (the bridge waits for the next one).
"""

from __future__ import annotations

from collections.abc import Iterable

from ptmon.exporters.bridges._table import Table
from ptmon.exporters.bridges.tables import TABLES

__all__ = ["detect", "scores"]


def scores(keys: Iterable[str], tables: Iterable[Table] | None = None) -> dict[str, int]:
    """framework -> score of ``keys`` (0 when none of its markers is there)."""
    names = [k for k in keys if isinstance(k, str)]
    out: dict[str, int] = {}
    for table in (TABLES.values() if tables is None else tables):
        known = marked = 0
        for key in names:
            normal = table.normalise(key)
            known += normal in table.exact
            marked += table.marked(normal)
        out[table.framework] = known + 2 * marked if marked else 0
    return out


def detect(keys: Iterable[str]) -> str | None:
    """The framework whose table fits ``keys`` best, or None (nothing fits, or a tie at the top)."""
    ranked = sorted(scores(keys).items(), key=lambda item: item[1], reverse=True)
    if not ranked or ranked[0][1] == 0 or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]
