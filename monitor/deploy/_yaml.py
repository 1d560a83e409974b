"""A small YAML writer for the shipped Prometheus files, so ptmon needs no YAML library.

Every string is quoted, so no plain-scalar rule can bite (a PromQL ``{`` or
``:``, a Go template's ``{{``, a ``yes`` that YAML 1.1 reads as true): a
single-line printable string is single-quoted (only ``'`` is escaped, as
``''``, so PromQL's ``"`` stay readable), anything else is JSON's
double-quoted form, which is valid YAML with the same escapes. Mappings and lists are
written in block style so a human can read and edit the result; the tests
check it with promtool, which parses it with Prometheus's own loader.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["dump", "comment_block"]

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Plain words YAML 1.1 (Go's yaml.v2, which Prometheus uses) reads as booleans or null, not strings.
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"no YAML for a non-finite number here: {value!r}")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    raise TypeError(f"cannot write {type(value).__name__} as YAML")


def _string(text: str) -> str:
    if text.isprintable() and text == text.strip():
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text, ensure_ascii=False)


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"YAML mapping keys must be strings here, got {key!r}")
    return key if _PLAIN_KEY.match(key) and key.lower() not in _RESERVED else _string(key)


def _is_block(value: object) -> bool:
    return isinstance(value, Mapping | list | tuple) and len(value) > 0


def _lines(value: object, indent: int) -> Iterable[str]:
    pad = " " * indent
    if isinstance(value, Mapping):
        for k, v in value.items():
            if _is_block(v):
                yield f"{pad}{_key(k)}:"
                # Lists sit at the key's indentation (Prometheus's own docs do the same).
                yield from _lines(v, indent if isinstance(v, list | tuple) else indent + 2)
            else:
                yield f"{pad}{_key(k)}: {_empty_or_scalar(v)}"
    elif isinstance(value, list | tuple):
        for item in value:
            if _is_block(item):
                inner = list(_lines(item, indent + 2))
                yield f"{pad}- {inner[0].lstrip()}"
                yield from inner[1:]
            else:
                yield f"{pad}- {_empty_or_scalar(item)}"
    else:
        yield pad + _scalar(value)


def _empty_or_scalar(value: object) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list | tuple):
        return "[]"
    return _scalar(value)


def comment_block(text: str) -> str:
    """``text`` as YAML comment lines (``# ...``), one per line, ending with a newline."""
    return "".join(f"# {line}".rstrip() + "\n" for line in text.strip("\n").splitlines())


def dump(value: Mapping[str, object] | Sequence[object], *, header: str = "") -> str:
    """``value`` as block-style YAML, after ``header`` written as comments."""
    body = "\n".join(_lines(value, 0)) + "\n"
    return (comment_block(header) + "\n" if header else "") + body
