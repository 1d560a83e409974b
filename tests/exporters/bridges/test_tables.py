"""The framework tables are well-formed data: each row cites its source, patterns name what they need,
rates say what they are per, and no key is mapped twice."""

from __future__ import annotations

import re

import pytest

from ptmon.exporters.bridges import TABLES
from ptmon.exporters.bridges._table import QUANTITIES, Table


@pytest.mark.parametrize("table", TABLES.values(), ids=list(TABLES))
def test_rows_are_well_formed(table: Table) -> None:
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", table.repository)
    assert table.markers, "auto needs at least one marker"
    exact = [row.key for row in table.keys if not row.pattern]
    assert len(exact) == len(set(exact))
    for row in table.keys:
        assert row.quantity in QUANTITIES
        assert row.source and ("/" in row.source or row.source.endswith(".py")), row
        if row.pattern:
            groups = re.compile(row.key).groups
            assert groups == (1 if row.quantity == "eval_score" else 0) or row.quantity != "eval_score", row
        if row.kind == "rate":
            assert row.over and not row.pattern, row
        else:
            assert row.over is None, row
        if row.unless is not None:
            assert row.unless in table.exact, row


def test_every_framework_has_a_table() -> None:
    assert list(TABLES) == ["prime-rl", "verl", "nemo-rl", "openrlhf", "trl", "skyrl", "slime", "areal", "roll"]


def test_the_readme_lists_every_key_with_its_source() -> None:
    """The README's framework-key tables are the tables: a key added to one is documented with its source."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for table in TABLES.values():
        assert f"https://github.com/{table.repository}" in readme
        for row in table.keys:
            key = row.key.replace("|", "\\|")
            assert f"| `{key}` |" in readme and f"`{row.source}` |" in readme, (table.framework, row.key)
