"""Shared test fixtures.

Tests that need Debian's prometheus/promtool use the ``prometheus_bin`` and
``promtool_bin`` fixtures: they skip with a reason when the binaries are absent,
and fail instead when PTMON_REQUIRE_PROMETHEUS=1 (as .ci/run sets), so CI can
never go green by skipping them.
"""

from __future__ import annotations

import os
import shutil

import pytest


def _require_binary(name: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} not found on PATH (Debian: apt-get install prometheus)"
    if os.environ.get("PTMON_REQUIRE_PROMETHEUS") == "1":
        pytest.fail(message + "; PTMON_REQUIRE_PROMETHEUS=1 forbids skipping", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def prometheus_bin() -> str:
    return _require_binary("prometheus")


@pytest.fixture(scope="session")
def promtool_bin() -> str:
    return _require_binary("promtool")
