"""Decoding the Prometheus HTTP API's JSON: an answer's result, the API's own reason, sample pairs.

Every shape the API can answer with (success, a query error, a proxy's HTML,
half a JSON document) becomes either the result asked for or a ``BadAnswer``
that says what came instead; nothing in a body raises anything else.
"""

from __future__ import annotations

import json
from typing import Any

from ptmon.monitor.sources.errors import BadAnswer

__all__ = ["parse_matrix", "parse_vector", "api_error", "points"]


def _result(body: bytes, kind: str) -> list[dict[str, Any]]:
    """The ``result`` of a query answer of ``kind`` (matrix or vector); a clear error for anything else."""
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        start = body[:40].decode("utf-8", "replace")
        raise BadAnswer(f"not a Prometheus API answer ({type(exc).__name__}; body starts {start!r})") from None
    if not isinstance(doc, dict):
        raise BadAnswer("not a Prometheus API answer (JSON but not an object)")
    if doc.get("status") != "success":
        raise BadAnswer(_reason(doc) or "not a Prometheus API answer (no status)")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
        got = data.get("resultType") if isinstance(data, dict) else type(data).__name__
        raise BadAnswer(f"expected a {kind} from the query, got {got!r}")
    result: list[dict[str, Any]] = data["result"]
    return result


def parse_matrix(body: bytes) -> list[dict[str, Any]]:
    """The ``result`` of a query that returned a matrix (a range selector, or a range query)."""
    return _result(body, "matrix")


def parse_vector(body: bytes) -> list[dict[str, Any]]:
    """The ``result`` of an instant query that returned a vector."""
    return _result(body, "vector")


def api_error(body: bytes) -> str | None:
    """The API's own reason (``errorType: error``) from an error answer's JSON; None for other bodies."""
    try:
        return _reason(json.loads(body))
    except ValueError:
        return None


def _reason(doc: object) -> str | None:
    if not isinstance(doc, dict) or not (doc.get("errorType") or doc.get("error")):
        return None
    return f"query failed: {doc.get('errorType') or 'error'}: {doc.get('error') or ''}".rstrip(": ")


def points(values: list[Any]) -> list[tuple[float, float]]:
    """``[[ts, "value"], ...]`` as floats; a malformed pair is skipped, not fatal."""
    out = []
    for pair in values:
        try:
            ts, v = pair
            out.append((float(ts), float(v)))
        except (TypeError, ValueError):
            continue
    return out
