"""Replacing a file so that a reader never sees half of it.

Prometheus re-reads file_sd target files and rule files when they change; a
reader that caught a half-written file would drop targets or fail to load.
Write a temporary file beside the target and rename it over (atomic on one
filesystem); on any failure the temporary file goes and the old one stays.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8, "\\n" newlines, mode 0644) in one rename."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
