"""One table per framework, in the order ``auto`` breaks ties."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Table
from ptmon.exporters.bridges.tables import areal, nemo_rl, openrlhf, prime_rl, roll, skyrl, slime, trl, verl

__all__ = ["TABLES"]

TABLES: dict[str, Table] = {t.framework: t for t in (
    prime_rl.TABLE, verl.TABLE, nemo_rl.TABLE, openrlhf.TABLE, trl.TABLE, skyrl.TABLE, slime.TABLE, areal.TABLE,
    roll.TABLE)}
