"""Defaults for the identity and cost arguments, so ``TrainerExporter()`` works inside a callback.

A callback or a bridge is often written before anyone knows the run's name
or its GPU count, and the process that runs it is launched by a framework's
own launcher. So every identity and cost argument may be left out:

- ``run``: ``PTMON_RUN``, else one name generated per process (logged once),
  shared by every exporter of the process so its roles stay one run;
- ``model`` and ``algorithm``: ``"unknown"``;
- ``gpus``: ``PTMON_GPUS``, else unknown (None), with one log line saying spend is unknown: such a
  role exposes NaN GPUs and no GPU-seconds, so the monitor says its spend is unknown, never $0.
  The variable describes the whole process, so it is counted once: the
  process's first exporter left without ``gpus=`` takes it and later ones (a
  colocated rollout or eval role, on the same registry or another) get 0;
- ``gpu_hour_price``: ``PTMON_GPU_HOUR_PRICE``, else the monitor's default.

A variable that is set but unreadable (``PTMON_GPUS=eight``) is a
configuration error and raises at construction, naming the variable.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import sys
import threading
import time
from collections.abc import Mapping

from ptmon.exporters import _build
from ptmon.exporters.schema import DEFAULT_GPU_HOUR_PRICE

__all__ = ["ENV_RUN", "ENV_GPUS", "ENV_PRICE", "UNKNOWN", "resolve_run", "resolve_label", "resolve_gpus",
           "resolve_price"]

log = logging.getLogger("ptmon.exporters")

ENV_RUN = "PTMON_RUN"
ENV_GPUS = "PTMON_GPUS"
ENV_PRICE = "PTMON_GPU_HOUR_PRICE"
UNKNOWN = "unknown"

_lock = threading.Lock()
_build.fork_safe(sys.modules[__name__], "_lock")
_generated_run: str | None = None
_logged: set[str] = set()
# Whether an exporter of this process already holds the process-wide GPU count (PTMON_GPUS).
_gpus_claimed = False


def _once(key: str, message: str, *args: object) -> None:
    with _lock:
        if key in _logged:
            return
        _logged.add(key)
    log.warning(message, *args)


def resolve_run(run: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``run``, else ``PTMON_RUN``, else this process's generated name (the same for every exporter)."""
    global _generated_run
    if run is not None:
        return run
    env = os.environ if environ is None else environ
    named = env.get(ENV_RUN, "").strip()
    if named:
        return named
    with _lock:
        if _generated_run is None:
            _generated_run = time.strftime("run-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(2)
        generated = _generated_run
    _once("run", "ptmon exporter: no run name given (run= or %s); this process reports run=%s", ENV_RUN, generated)
    return generated


def resolve_label(value: str | None) -> str:
    """``model``/``algorithm``: as given, else ``"unknown"``."""
    return UNKNOWN if value is None else value


def _env_number(env: Mapping[str, str], name: str) -> float | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not 0 <= number < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {text!r}")
    return number


def resolve_gpus(gpus: float | None, *, role: str, environ: Mapping[str, str] | None = None) -> float | None:
    """``gpus``, else ``PTMON_GPUS`` for the process's first exporter (0 for the rest), else None: unknown
    (logged once)."""
    global _gpus_claimed
    if gpus is not None:
        return gpus
    env = os.environ if environ is None else environ
    from_env = _env_number(env, ENV_GPUS)
    if from_env is None:
        _once("gpus", "ptmon exporter (%s): no GPU count given (gpus= or %s): GPUs unknown, so this "
              "run's spend is unknown to ptmon", role, ENV_GPUS)
        return None
    with _lock:
        if _gpus_claimed:
            return 0.0  # the process's GPUs are already counted by another of its exporters
        _gpus_claimed = True
    return from_env


def resolve_price(price: float | None, environ: Mapping[str, str] | None = None) -> float:
    """``gpu_hour_price``, else ``PTMON_GPU_HOUR_PRICE``, else the monitor's default ($3.00)."""
    if price is not None:
        return price
    from_env = _env_number(os.environ if environ is None else environ, ENV_PRICE)
    return DEFAULT_GPU_HOUR_PRICE if from_env is None else from_env
