"""ptmon's own code as it was at an earlier commit, importable beside today's, for same-process baselines.

A benchmark's "before" must be the code that really ran before, whole: a
copy kept in the tree drifts (it imports live modules) and ages into a
second implementation nobody maintains. ``at_revision(REV)`` extracts
``exporters/``, ``monitor/`` and ``demo/`` of that commit with ``git
archive`` into a temporary directory, as one package named after the commit
(``ptmon_at_<sha>``), rewriting the imports of that tree (``monitor.x``
before 0.2.0, ``ptmon.monitor.x`` after) to point into it. Nothing of the
old tree imports today's code, so a benchmark can run both in one process and
print ratios that the machine's noise cannot skew.
"""

from __future__ import annotations

import atexit
import importlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

__all__ = ["Revision", "at_revision"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("exporters", "monitor", "demo")
_IMPORT = re.compile(r"^(\s*)(from|import)\s+(?:ptmon\.)?(" + "|".join(PACKAGES) + r")\b", re.M)
# The lazy-export maps in the packages' __init__ name modules in strings.
_LAZY = re.compile(r"([\"'])(?:ptmon\.)?(" + "|".join(PACKAGES) + r")\.")


@dataclass(frozen=True)
class Revision:
    """One commit's packages, imported under ``alias`` (``module("monitor.build")``)."""

    rev: str
    sha: str
    alias: str

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.alias}.{name}")


def _rewrite(text: str, alias: str, *, lazy: bool) -> str:
    text = _IMPORT.sub(lambda m: f"{m.group(1)}{m.group(2)} {alias}.{m.group(3)}", text)
    if lazy:
        text = _LAZY.sub(lambda m: f"{m.group(1)}{alias}.{m.group(2)}.", text)
    return text


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True).stdout


def at_revision(rev: str) -> Revision:
    """Extract and import-enable ``rev`` (any git revision: ``HEAD``, ``HEAD~3``, a sha)."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}").decode().strip()
    alias = f"ptmon_at_{sha[:12]}"
    if alias in sys.modules:
        return Revision(rev, sha, alias)
    base = Path(tempfile.mkdtemp(prefix="ptmon-history-"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    present = [p for p in PACKAGES if _git("ls-tree", "--name-only", sha, p).strip()]
    with tarfile.open(fileobj=io.BytesIO(_git("archive", "--format=tar", sha, *present))) as tar:
        tar.extractall(base / alias, filter="data")
    (base / alias / "__init__.py").write_text(f'"""ptmon at {sha} ({rev}), for benchmarks."""\n')
    for path in (base / alias).rglob("*.py"):
        path.write_text(_rewrite(path.read_text(), alias, lazy=path.name == "__init__.py"))
    sys.path.insert(0, str(base))
    importlib.invalidate_caches()
    return Revision(rev, sha, alias)
