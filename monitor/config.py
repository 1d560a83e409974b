"""ptmon.toml and command-line flags into one ``Settings``.

A monitor that silently ignores a typo shows wrong numbers with confidence,
so every key is checked: unknown keys, wrong types, bad roles, bad URLs and
impossible timings are errors that name the file, the key (``targets[2].url``)
and what was expected. Command-line flags override the file.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ptmon.exporters.bridges import FRAMEWORKS
from ptmon.exporters.schema import ROLES
from ptmon.monitor.file_target import is_path_argument, target_from_path
from ptmon.monitor.settings import (
    MIN_INTERVAL_S,
    PROMETHEUS_MAX_BODY_BYTES,
    Settings,
    Target,
    Thresholds,
    buffer_warning,
    secret_problem,
    timeout_fits,
    window_fits,
)
from ptmon.monitor.store import DEFAULT_CAPACITY
from ptmon.monitor.text import mask_secrets

__all__ = ["ConfigError", "load_settings", "target_from_url", "target_from_arg", "prometheus_from_url",
           "parse_duration", "distinct_names", "find_config", "CONFIG_NAME", "PROMETHEUS_MAX_BODY_BYTES",
           "config_warnings"]

_CLI = "command line"
CONFIG_NAME = "ptmon.toml"
_TOP_KEYS = frozenset({"interval", "window", "timeout", "max_series", "max_label_bytes", "max_body_bytes",
                       "concurrency", "prices", "eval", "alerts", "targets", "prometheus", "run"})
_EVAL_KEYS = frozenset({"primary_benchmark", "baseline_score", "baseline_spend", "marginal_k", "point",
                        "target_score"})
_TARGET_KEYS = frozenset({"name", "url", "role", "bearer_token_file", "basic_auth", "ca_file", "verify_tls"})
_PROMETHEUS_KEYS = _TARGET_KEYS - {"role"}
_FILE_TARGET_KEYS = frozenset({"name", "path", "framework", "role", "gpus"})  # a metrics file, tailed
_BASIC_KEYS = frozenset({"username", "password", "password_file"})
_THRESHOLD_KEYS = tuple(f.name for f in fields(Thresholds))
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


class ConfigError(ValueError):
    """A configuration mistake; the message names the file, the key and what was expected."""

    def __init__(self, source: str, key: str, expected: str, got: object = None, *, show_got: bool = True) -> None:
        message = f"{source}: {key}: expected {expected}"
        if show_got:
            message += f", got {_show(got)}"
        super().__init__(message)
        self.source = source
        self.key = key


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def find_config(*, cwd: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The ptmon.toml to read when none is given: ``./ptmon.toml``, else ``$PTMON_CONFIG``, else
    ``$XDG_CONFIG_HOME/ptmon/ptmon.toml`` (``~/.config/ptmon/ptmon.toml``); None when there is none.

    The project's file first, as git, ruff and cargo find theirs: the run in this directory is the one
    meant. ``$PTMON_CONFIG`` naming a file that is not there is an error, not a quiet fallback: someone
    set it to be read.
    """
    env = os.environ if environ is None else environ
    here = CONFIG_NAME if cwd is None else os.path.join(cwd, CONFIG_NAME)
    if os.path.isfile(here):
        return here
    named = env.get("PTMON_CONFIG", "")
    if named:
        if not os.path.isfile(named):
            raise ConfigError(named, "(file)", "an existing ptmon.toml (named by $PTMON_CONFIG; not found)",
                              show_got=False)
        return named
    base = env.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):  # unset, or relative (the XDG spec says to ignore it then)
        base = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    user = os.path.join(base, "ptmon", CONFIG_NAME)
    return user if os.path.isfile(user) else None


def parse_duration(value: object) -> float:
    """Seconds from a number or a Prometheus-style duration ("500ms", "30s", "5m", "1h30m")."""
    if isinstance(value, bool):
        raise ValueError("a duration")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        pos, seconds, parts = 0, 0.0, 0
        for m in _DURATION_RE.finditer(text):
            if m.start() != pos:
                break
            seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
            pos, parts = m.end(), parts + 1
        if not parts or pos != len(text):
            try:
                seconds = float(text)
            except ValueError:
                raise ValueError("a duration") from None
    else:
        raise ValueError("a duration")
    if not math.isfinite(seconds):
        raise ValueError("a duration")
    return seconds


def target_from_url(url: str) -> Target:
    """A target from a URL as typed on a command line.

    ``host:port`` means ``http://host:port/metrics`` named ``host:port``; a URL
    with no path (or just ``/``) gets ``/metrics``. Credentials in the URL
    become basic auth and are removed from the URL, so they never reach the
    screen. Raises ``ValueError`` saying what was expected.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("a URL like http://host:9100/metrics or host:9100")
    text = url.strip()
    if any(c.isspace() for c in text):
        raise ValueError("a URL without spaces")
    if "://" not in text:
        if text.lstrip(":").isdigit():
            # '9100' would resolve as a host named 9100 (the IPv4 address 0.0.35.140), ':9100' has no host.
            bare = text.lstrip(":")
            raise ValueError(f"a host and a port, like localhost:{bare} (a bare port is not a host)")
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"a URL with a valid host and port ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("an http:// or https:// URL")
    host = parts.hostname
    if not host:
        raise ValueError("a URL with a host, like http://host:9100/metrics")
    if parts.fragment:
        raise ValueError("a URL without a #fragment")
    shown_host = f"[{host}]" if ":" in host else host
    netloc = shown_host if port is None else f"{shown_host}:{port}"
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    basic = None
    if parts.username is not None:
        basic = (unquote(parts.username), unquote(parts.password or ""))
    clean = urlunsplit((parts.scheme, netloc, path, parts.query, ""))
    return Target(name=netloc, url=clean, basic_auth=basic)


_ARG_NAME_RE = re.compile(r"[\w.-]+")


def target_from_arg(text: str) -> tuple[Target, bool]:
    """A target from one command-line argument, and whether it was named: ``URL`` or ``NAME=URL``.

    ``trainer=localhost:9100`` names the target ``trainer``. The part before the first ``=`` is a name only
    when it could not be part of a URL (letters, digits, ``_.-``: no ``:/?@``), so a query such as
    ``host:9115/probe?target=x`` stays a URL. The one place command-line target arguments are read.
    """
    name, sep, rest = text.partition("=")
    if not sep or not _ARG_NAME_RE.fullmatch(name):
        return _target_from(text), False
    if not rest.strip():
        raise ValueError(f"a URL after {name}= (NAME=URL, like {name}=localhost:9100)")
    return replace(_target_from(rest), name=name), True


def _target_from(text: str) -> Target:
    """A metrics file to tail where the argument names one, else an endpoint to scrape."""
    return target_from_path(text) if is_path_argument(text) else target_from_url(text)


def distinct_names(targets: Sequence[Target], *, keep: Sequence[bool] = ()) -> list[Target]:
    """``targets`` with default names told apart: several on one host:port with different URLs are named
    host:port plus the path, plus the query where the path alone does not tell them apart.

    A blackbox exporter's ``/probe``, a reverse proxy or an API-server proxy
    serves several targets on one port. A name given explicitly (``keep[i]``)
    stays; one URL given twice keeps its name, for the caller to refuse.
    """
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(targets):
        if not (i < len(keep) and keep[i]):
            groups.setdefault(t.name, []).append(i)
    out = list(targets)
    for name, members in groups.items():
        if len({targets[i].url for i in members}) < 2:
            continue
        parts = {i: urlsplit(targets[i].url) for i in members}
        paths = Counter(p.path for p in parts.values())
        for i, p in parts.items():
            suffix = p.path if paths[p.path] == 1 or not p.query else mask_secrets(f"{p.path}?{p.query}")
            out[i] = replace(targets[i], name=name + suffix)
    return out


def prometheus_from_url(url: str) -> Target:
    """The Prometheus server to read, from its base URL (``host:9090`` is enough).

    Same rules as a target's URL (http/https, credentials become basic auth),
    except that the path is kept as given, not turned into /metrics: it is the
    API's prefix (``http://host/prometheus`` behind a proxy, Mimir's ``/prometheus``).
    """
    target = target_from_url(url)
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(target.url)
    if parts.query:
        raise ValueError("a base URL without a ?query, like http://host:9090")
    path = urlsplit(text).path.rstrip("/")
    return replace(target, url=urlunsplit((parts.scheme, parts.netloc, path, "", "")))


class _Reader:
    """Typed accessors that raise ConfigError with the file and key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, key: str, expected: str, got: object = None, *, show_got: bool = True) -> ConfigError:
        return ConfigError(self.source, key, expected, got, show_got=show_got)

    def table(self, value: object, key: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.error(key, "a table", value)
        return value

    def no_unknown(self, table: Mapping[str, Any], allowed: frozenset[str] | tuple[str, ...], prefix: str) -> None:
        for k in table:
            if k not in allowed:
                where = f"{prefix}.{k}" if prefix else k
                raise self.error(where, "one of " + ", ".join(sorted(allowed)) + " (unknown key)", show_got=False)

    def number(self, value: object, key: str, *, positive: bool = False, nonneg: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(key, "a number", value)
        if positive and not value > 0:
            raise self.error(key, "a positive number", value)
        if nonneg and value < 0:
            raise self.error(key, "a number >= 0", value)
        return float(value)

    def integer(self, value: object, key: str, *, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(key, f"an integer >= {minimum}", value)
        return value

    def string(self, value: object, key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, "a non-empty string", value)
        return value

    def boolean(self, value: object, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(key, "true or false", value)
        return value

    def duration(self, value: object, key: str) -> float:
        try:
            seconds = parse_duration(value)
        except ValueError:
            raise self.error(key, 'seconds as a number or a duration like "30s", "5m", "1h"', value) from None
        if not seconds > 0:
            raise self.error(key, "a positive duration", value)
        return seconds

    def role(self, value: object, key: str) -> str:
        if value not in ROLES:
            raise self.error(key, "one of " + ", ".join(ROLES), value)
        return value


def _path(value: str, base: str) -> str:
    """Relative paths in a config file are relative to that file, as in prometheus.yml."""
    value = os.path.expanduser(value)
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(base, value))


def _read_secret(r: _Reader, path: str, key: str, *, what: str) -> str:
    """A secret file's content, ends stripped; one that cannot go into a header is an error naming the
    file and why, never quoting it."""
    try:
        with open(path, encoding="utf-8") as f:
            secret = f.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise r.error(key, f"a readable file ({path}: {reason})", show_got=False) from None
    problem = secret_problem(secret)
    if problem is not None:
        raise r.error(key, f"a file holding the {what} on one line ({path} has {problem}; "
                      "its content is not shown)", show_got=False)
    return secret


def _bearer_file(r: _Reader, value: object, key: str, base: str) -> str:
    """The token file's path. It is read at scrape time (and re-read when it changes: token files rotate),
    so one missing now may appear later; one that is there is checked now."""
    path = _path(r.string(value, key), base)
    if os.path.isfile(path):
        _read_secret(r, path, key, what="token")
    return path


def _basic_auth(r: _Reader, raw: object, key: str, base: str) -> tuple[str, str]:
    b = r.table(raw, key)
    r.no_unknown(b, _BASIC_KEYS, key)
    if "username" not in b:
        raise r.error(f"{key}.username", "a username (required)", show_got=False)
    user = r.string(b["username"], f"{key}.username")
    if "password" in b and "password_file" in b:
        raise r.error(key, "password or password_file, not both", show_got=False)
    if "password_file" in b:
        pkey = f"{key}.password_file"
        return user, _read_secret(r, _path(r.string(b["password_file"], pkey), base), pkey, what="password")
    if "password" in b:
        if not isinstance(b["password"], str):
            raise r.error(f"{key}.password", "a string", show_got=False)  # never echo a secret
        return user, b["password"]
    raise r.error(key, "password or password_file", show_got=False)


def _target(r: _Reader, raw: object, key: str, base: str, *, allowed: frozenset[str] = _TARGET_KEYS,
            from_url: Callable[[str], Target] = target_from_url) -> Target:
    t = r.table(raw, key)
    if "path" in t and allowed is _TARGET_KEYS:
        return _file_target(r, t, key, base)
    r.no_unknown(t, allowed, key)
    if "url" not in t:
        raise r.error(f"{key}.url", "a URL (required)", show_got=False)
    url = r.string(t["url"], f"{key}.url")
    try:
        parsed = from_url(url)
    except ValueError as exc:
        raise r.error(f"{key}.url", str(exc), _without_credentials(url)) from None
    name = r.string(t["name"], f"{key}.name") if "name" in t else parsed.name
    role = r.role(t["role"], f"{key}.role") if "role" in t else None
    bearer = None
    if "bearer_token_file" in t:
        bearer = _bearer_file(r, t["bearer_token_file"], f"{key}.bearer_token_file", base)
    basic = parsed.basic_auth
    if "basic_auth" in t:
        basic = _basic_auth(r, t["basic_auth"], f"{key}.basic_auth", base)
    if bearer is not None and basic is not None:
        raise r.error(key, "bearer_token_file or basic_auth, not both", show_got=False)
    ca_file = None
    if "ca_file" in t:
        ca_key = f"{key}.ca_file"
        ca_file = _path(r.string(t["ca_file"], ca_key), base)
        if not os.path.isfile(ca_file):
            raise r.error(ca_key, f"an existing PEM file ({ca_file} not found)", show_got=False)
    verify = r.boolean(t["verify_tls"], f"{key}.verify_tls") if "verify_tls" in t else True
    return Target(name=name, url=parsed.url, role=role, bearer_token_file=bearer, basic_auth=basic,
                  ca_file=ca_file, verify_tls=verify)


def _file_target(r: _Reader, t: Mapping[str, Any], key: str, base: str) -> Target:
    """``[[targets]]`` with ``path``: a JSONL metrics file (relative to the config file), ``framework`` optional."""
    r.no_unknown(t, _FILE_TARGET_KEYS, key)
    path = r.string(t["path"], f"{key}.path")
    framework = r.string(t["framework"], f"{key}.framework") if "framework" in t else None
    try:
        target = target_from_path(path, framework=framework, base=base)
    except ValueError as exc:
        raise r.error(f"{key}.framework", str(exc), show_got=False) from None
    name = r.string(t["name"], f"{key}.name") if "name" in t else target.name
    role = r.role(t["role"], f"{key}.role") if "role" in t else None
    gpus = r.number(t["gpus"], f"{key}.gpus", nonneg=True) if "gpus" in t else None
    return replace(target, name=name, role=role, gpus=gpus)


def _without_credentials(url: str) -> str:
    """``url`` as it may be shown in an error: a user:password@ in it replaced by ``***@``, a secret query
    value (``?token=``) by ``***``."""
    url = mask_secrets(url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, tail = rest.partition("/")
    if "@" not in authority:
        return url
    shown = "***@" + authority.rsplit("@", 1)[1] + slash + tail
    return f"{scheme}://{shown}" if sep else shown


# What each threshold may be; a value outside can never fire, or always does (a typo, not a choice).
_THRESHOLD_RULES = {
    "weight_sync_p99_warn_s": "positive", "weight_sync_p99_critical_s": "positive",
    "weight_sync_failure_share_critical": "fraction", "weight_sync_failures_in_a_row_critical": "positive",
    "policy_stuck_s": "positive",
    "staleness_warn": "nonneg", "staleness_critical": "nonneg",
    "stall_min_s": "nonneg", "stall_factor": "positive",
    "rollout_drop_ratio": "fraction", "eval_regression_points": "nonneg", "eval_push_max_age_s": "positive",
}
_WARN_CRITICAL = (("weight_sync_p99_warn_s", "weight_sync_p99_critical_s"), ("staleness_warn", "staleness_critical"))


def _thresholds(r: _Reader, raw: object) -> Thresholds:
    al = r.table(raw, "alerts")
    r.no_unknown(al, _THRESHOLD_KEYS, "alerts")
    values: dict[str, float] = {}
    for k, v in al.items():
        rule = _THRESHOLD_RULES.get(k)
        values[k] = r.number(v, f"alerts.{k}", positive=rule == "positive", nonneg=rule in ("nonneg", "fraction"))
        if rule == "fraction" and values[k] > 1:
            raise r.error(f"alerts.{k}", "a fraction between 0 and 1", v)
    thresholds = Thresholds(**values)
    for warn, critical in _WARN_CRITICAL:
        if getattr(thresholds, warn) > getattr(thresholds, critical):
            # Name the warn level when the file set it, else the critical level the file lowered under it.
            key, other, bound = (warn, critical, "at most") if warn in al else (critical, warn, "at least")
            other_from = f"from alerts.{other}" if other in al else "the default"
            raise r.error(f"alerts.{key}", f"{bound} {other} ({getattr(thresholds, other):g}, {other_from})",
                          al[key])
    return thresholds


def _eval(r: _Reader, raw: object) -> dict[str, Any]:
    """The ``[eval]`` table as Settings fields."""
    ev = r.table(raw, "eval")
    r.no_unknown(ev, _EVAL_KEYS, "eval")
    out: dict[str, Any] = {}
    if "primary_benchmark" in ev:
        out["primary_benchmark"] = r.string(ev["primary_benchmark"], "eval.primary_benchmark")
    if "baseline_score" in ev:
        out["baseline_score"] = r.number(ev["baseline_score"], "eval.baseline_score")
    if "baseline_spend" in ev:
        out["baseline_spend_dollars"] = r.number(ev["baseline_spend"], "eval.baseline_spend", nonneg=True)
    if "marginal_k" in ev:
        out["marginal_k"] = r.integer(ev["marginal_k"], "eval.marginal_k", minimum=2)
    if "point" in ev:
        out["eval_point"] = r.number(ev["point"], "eval.point", positive=True)
    if "target_score" in ev:
        out["target_score"] = r.number(ev["target_score"], "eval.target_score")
    return out


def _load_file(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Settings keyword arguments, raw timing values) from one ptmon.toml."""
    r = _Reader(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError(path, "(file)", f"a readable TOML file ({exc.strerror or exc})", show_got=False) from None
    body = data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark (Windows editors write one) is no content
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        raise ConfigError(path, "(syntax)", f"UTF-8 text (line {line}: byte 0x{body[exc.start]:02x} is not UTF-8)",
                          show_got=False) from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, "(syntax)", f"valid TOML ({exc})", show_got=False) from None
    r.no_unknown(doc, _TOP_KEYS, "")
    base = os.path.dirname(os.path.abspath(path))
    out: dict[str, Any] = {}
    for key, field_name in (("interval", "interval_s"), ("window", "window_s"), ("timeout", "timeout_s")):
        if key in doc:
            out[field_name] = r.duration(doc[key], key)
    for key, least in (("max_series", 1), ("max_label_bytes", 2**20), ("max_body_bytes", 1024), ("concurrency", 1)):
        if key in doc:
            out[key] = r.integer(doc[key], key, minimum=least)
    if "prices" in doc:
        prices = r.table(doc["prices"], "prices")
        checked: dict[str, float] = {}
        for role, price in prices.items():
            r.role(role, f"prices.{role}")
            checked[role] = r.number(price, f"prices.{role}", nonneg=True)
        out["prices"] = MappingProxyType(checked)
    if "eval" in doc:
        out.update(_eval(r, doc["eval"]))
    if "alerts" in doc:
        out["thresholds"] = _thresholds(r, doc["alerts"])
    if "targets" in doc:
        raw = doc["targets"]
        if not isinstance(raw, list):
            raise r.error("targets", "an array of tables ([[targets]])", raw)
        named = [isinstance(t, dict) and "name" in t for t in raw]
        targets = tuple(distinct_names([_target(r, t, f"targets[{i}]", base) for i, t in enumerate(raw)],
                                       keep=named))
        seen: dict[str, int] = {}
        for i, t in enumerate(targets):
            if t.name in seen:
                raise r.error(f"targets[{i}].name", f"a unique name ({t.name!r} is also targets[{seen[t.name]}])",
                              show_got=False)
            seen[t.name] = i
        out["targets"] = targets
    if "run" in doc:
        out["run"] = r.string(doc["run"], "run")
    if "prometheus" in doc:
        raw = doc["prometheus"]
        if "targets" in doc:
            raise r.error("prometheus", "either prometheus or [[targets]], not both (ptmon reads the targets "
                          "through Prometheus, or scrapes them itself)", show_got=False)
        if isinstance(raw, str):
            raw = {"url": raw}
        elif not isinstance(raw, dict):
            raise r.error("prometheus", 'a URL ("http://host:9090") or a table with url', raw)
        out["prometheus"] = _target(r, raw, "prometheus", base, allowed=_PROMETHEUS_KEYS,
                                    from_url=prometheus_from_url)
    return out, doc


def load_settings(
    *,
    config_path: str | None = None,
    urls: Sequence[str] = (),
    interval_s: float | None = None,
    window_s: float | None = None,
    timeout_s: float | None = None,
    prometheus_url: str | None = None,
    run: str | None = None,
    framework: str | None = None,
) -> Settings:
    """Settings from ``config_path`` (optional) with command-line values on top.

    URLs given on the command line replace the file's ``[[targets]]`` (prices,
    thresholds and the rest still come from the file); so does ``prometheus_url``
    (``--prometheus``), which replaces the file's source, whichever kind it is.
    A source is targets or a Prometheus server, never both. The timeout must come
    out shorter than the interval, and the window at least two intervals long,
    wherever each was set.
    """
    kwargs: dict[str, Any] = {}
    origin: dict[str, tuple[str, str]] = {}  # field -> (source, key) that set it
    if config_path is not None:
        kwargs, _ = _load_file(config_path)
        kwargs["config_file"] = config_path
        origin = {f: (config_path, k) for f, k in (("interval_s", "interval"), ("window_s", "window"),
                                                   ("timeout_s", "timeout")) if f in kwargs}
    cli = _Reader(_CLI)
    for name, flag, value in (("interval_s", "--interval", interval_s), ("window_s", "--window", window_s),
                              ("timeout_s", "--timeout", timeout_s)):
        if value is not None:
            kwargs[name] = cli.number(value, flag, positive=True)
            origin[name] = (_CLI, flag)
    _cli_source(cli, kwargs, urls=urls, prometheus_url=prometheus_url)
    if framework is not None:
        kwargs["targets"] = _with_framework(cli, kwargs.get("targets", ()), framework)
    if run is not None:
        if not run:
            raise cli.error("--run", "a run name (the run label of the targets' run info)", run)
        kwargs["run"] = run
        origin["run"] = (_CLI, "--run")
    elif "run" in kwargs:
        origin["run"] = (config_path or "", "run")
    if kwargs.get("run") is not None and kwargs.get("prometheus") is None:
        src, key = origin["run"]
        raise ConfigError(src, key, "a Prometheus source with it (--prometheus URL or prometheus = ...): scraped "
                          "directly, the targets given are the run", kwargs["run"])
    if kwargs.get("prometheus") is not None and "max_body_bytes" not in kwargs:
        kwargs["max_body_bytes"] = PROMETHEUS_MAX_BODY_BYTES
    settings = Settings(**kwargs)
    _check_timing(settings, origin)
    return settings


def config_warnings(settings: Settings, *, capacity: int = DEFAULT_CAPACITY) -> tuple[str, ...]:
    """What the settings allow but will not do as asked (a window longer than the buffer holds), in words."""
    warning = buffer_warning(settings.interval_s, settings.window_s, capacity=capacity)
    return (warning,) if warning else ()


def _cli_source(cli: _Reader, kwargs: dict[str, Any], *, urls: Sequence[str], prometheus_url: str | None) -> None:
    """``--prometheus`` or the URLs, in place of the file's source."""
    if urls and prometheus_url is not None:
        raise cli.error("--prometheus", "either /metrics URLs or --prometheus, not both (ptmon reads the targets "
                        "through Prometheus, or scrapes them itself)", show_got=False)
    if prometheus_url is not None:
        try:
            kwargs["prometheus"] = prometheus_from_url(prometheus_url)
        except ValueError as exc:
            raise cli.error("--prometheus", str(exc), _without_credentials(prometheus_url)) from None
        kwargs.pop("targets", None)
    if urls:
        kwargs.pop("prometheus", None)
        targets, named = [], []
        for i, url in enumerate(urls):
            try:
                target, was_named = target_from_arg(url)
            except ValueError as exc:
                raise cli.error(f"URL {i + 1}", str(exc), _without_credentials(url)) from None
            targets.append(target)
            named.append(was_named)
        seen: set[str] = set()
        for i, t in enumerate(targets := distinct_names(targets, keep=named)):
            if t.name in seen:
                raise cli.error(f"URL {i + 1}", f"each target once ({t.name} is given twice)", show_got=False)
            seen.add(t.name)
        kwargs["targets"] = tuple(targets)


def _with_framework(cli: _Reader, targets: Sequence[Target], framework: str) -> tuple[Target, ...]:
    """``--framework`` on every metrics file target that names none; refused when there is no file target."""
    if framework not in FRAMEWORKS:
        raise cli.error("--framework", "one of " + ", ".join(FRAMEWORKS), framework)
    if not any(t.path is not None for t in targets):
        raise cli.error("--framework", "a metrics file among the targets to read with it (a path such as "
                        "outputs/run/metrics.jsonl)", framework)
    chosen = None if framework == "auto" else framework
    return tuple(replace(t, framework=chosen) if t.path is not None and t.framework is None else t for t in targets)


def _check_timing(settings: Settings, origin: Mapping[str, tuple[str, str]]) -> None:
    """The timeout shorter than the interval and the window two intervals long, naming whichever key set them."""
    isrc, ikey = origin.get("interval_s", ("", ""))
    from_where = f"{ikey} in {isrc}" if isrc else "the default"
    if settings.interval_s < MIN_INTERVAL_S:
        # Faster polls only load the targets (1e-7 s hammered one at ~1,100 requests/s); nothing moves at 10 Hz.
        raise ConfigError(isrc, ikey, f"an interval of at least {MIN_INTERVAL_S:g} s", settings.interval_s)
    if not timeout_fits(settings.interval_s, settings.timeout_s):
        src, key = origin["timeout_s"]
        raise ConfigError(src, key, f"a timeout shorter than the interval ({settings.interval_s:g} s, "
                          f"from {from_where})", settings.timeout_s)
    if not window_fits(settings.interval_s, settings.window_s):
        if "window_s" in origin:
            src, key = origin["window_s"]
            raise ConfigError(src, key, f"at least two scrape intervals ({2 * settings.interval_s:g} s, "
                              f"from {from_where})", settings.window_s)
        src, key = origin["interval_s"]  # the window is the default, so the interval was set
        raise ConfigError(src, key, f"at most half the window ({settings.window_s:g} s, from the default)",
                          settings.interval_s)
