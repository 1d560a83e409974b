"""No function in ptmon.monitor is longer than 80 lines: a long one is several jobs that want names."""

from __future__ import annotations

import ast
from pathlib import Path

MONITOR = Path(__file__).resolve().parents[2] / "monitor"
LIMIT = 80


def _long_functions(root: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_function_in_the_monitor_is_longer_than_80_lines() -> None:
    assert _long_functions(MONITOR, LIMIT) == []


def test_the_check_would_see_a_long_function(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n" + "    x = 1\n" * LIMIT)
    assert _long_functions(tmp_path, LIMIT) == [f"{tmp_path.name}/m.py:1 f: {LIMIT + 1} lines"]
