"""A metrics file as a target: which command-line arguments are paths, and the target one makes.

``ptmon watch outputs/run/metrics.jsonl 10.0.0.2:8000``: the first is a file,
the second an endpoint. An argument is a file when it says so (``file:``), or
has no ``://`` and either exists as a file, is written as a path (``/``,
``./``, ``../``, ``~``) or ends in ``.jsonl``/``.ndjson`` (a file the trainer
has not written yet is still a file: its target waits for it, down with the
reason). Everything else is a URL, as before.
"""

from __future__ import annotations

import os

from ptmon.exporters.bridges import FRAMEWORKS
from ptmon.monitor.settings import Target

__all__ = ["is_path_argument", "target_from_path", "FILE_SCHEME", "FILE_SUFFIXES"]

FILE_SCHEME = "file:"
FILE_SUFFIXES = (".jsonl", ".ndjson")
_PATH_STARTS = ("/", "./", "../", "~")


def is_path_argument(text: str) -> bool:
    """Whether a command-line target names a metrics file rather than an endpoint."""
    text = text.strip()
    if text.startswith(FILE_SCHEME):
        return True
    if "://" in text or not text:
        return False
    return (text.startswith(_PATH_STARTS) or text.lower().endswith(FILE_SUFFIXES)
            or os.path.isfile(os.path.expanduser(text)))


def target_from_path(text: str, *, framework: str | None = None, base: str | None = None) -> Target:
    """The file target for ``text`` (relative to ``base``, else the working directory), named as written.

    ``framework``: one of the bridge's frameworks, or None / ``auto`` to detect it from the keys.
    Raises ``ValueError`` saying what was expected.
    """
    raw = text.strip()
    if raw.startswith(FILE_SCHEME):
        raw = raw[len(FILE_SCHEME):]
        if raw.startswith("//"):
            raw = raw[2:]
    if not raw:
        raise ValueError("a path to a JSONL metrics file")
    if framework is not None and framework not in FRAMEWORKS:
        raise ValueError(f"a framework among {', '.join(FRAMEWORKS)}, got {framework!r}")
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        path = os.path.join(base or os.getcwd(), path)
    path = os.path.normpath(path)
    return Target(name=os.path.normpath(raw), url=path, path=path,
                  framework=None if framework in (None, "auto") else framework)
