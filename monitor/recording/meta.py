"""What a recording remembers of the settings it was made with, and how replay gets them back.

Replay shows numbers as the live screen computed them, so it needs what the
live monitor was told: interval, window, prices, thresholds, the eval
benchmark and baseline, and each target's name, URL and role. Credentials
never go into the file: no passwords, no token paths, no user info in URLs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ptmon.monitor.settings import Settings, Target, Thresholds
from ptmon.monitor.text import mask_secrets

__all__ = ["settings_to_json", "settings_from_json"]

_KEPT = ("interval_s", "window_s", "timeout_s", "primary_benchmark", "baseline_score", "baseline_spend_dollars",
         "marginal_k", "eval_point", "target_score", "max_series", "max_label_bytes", "run")


def _public_url(url: str) -> str:
    url = mask_secrets(url)  # ?token=*** : a query-string credential stays out of the file too
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def settings_to_json(settings: Settings) -> str:
    out: dict[str, Any] = {key: getattr(settings, key) for key in _KEPT}
    out["prices"] = dict(settings.prices)
    out["thresholds"] = asdict(settings.thresholds)
    out["targets"] = [{"name": t.name, "url": _public_url(t.url), "role": t.role} for t in settings.targets]
    out["prometheus"] = None if settings.prometheus is None else _public_url(settings.prometheus.url)
    return json.dumps(out, sort_keys=True)


def settings_from_json(text: str | dict[str, Any], *, base: Settings | None = None) -> Settings:
    """The recorded settings over ``base`` (defaults); unknown or missing keys keep ``base``'s value."""
    raw = json.loads(text) if isinstance(text, str) else text
    s = base or Settings()
    kept = {k: raw[k] for k in _KEPT if raw.get(k) is not None}
    known = {f.name for f in fields(Thresholds)}
    th = {k: float(v) for k, v in (raw.get("thresholds") or {}).items() if k in known}
    targets = tuple(Target(name=str(t["name"]), url=str(t.get("url") or ""), role=t.get("role"))
                    for t in raw.get("targets") or () if isinstance(t, dict) and "name" in t)
    return replace(s, **kept, prices=MappingProxyType({str(k): float(v) for k, v in (raw.get("prices") or {}).items()}),
                   thresholds=replace(s.thresholds, **th), targets=targets or s.targets)
