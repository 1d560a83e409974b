"""Shared set-up for the deploy tests: the shipped assets copied where Prometheus tools can read them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ptmon.monitor.deploy import ASSETS_DIR

__all__ = ["HERE", "copy_assets", "run"]

HERE = Path(__file__).resolve().parent


def copy_assets(tmp_path: Path) -> Path:
    """The committed assets in ``tmp_path/assets`` with an empty ``targets/`` (file_sd's directory)."""
    dest = tmp_path / "assets"
    shutil.copytree(ASSETS_DIR, dest)
    (dest / "targets").mkdir(exist_ok=True)
    return dest


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, cwd=cwd)
