"""Inference engines (vLLM, SGLang) and GPUs (DCGM): what runs, what waits, how busy the hardware is."""

from __future__ import annotations

from typing import TypedDict

from ptmon.exporters import schema
from ptmon.monitor import exposed
from ptmon.monitor.derive import mean
from ptmon.monitor.roles import label_ci
from ptmon.monitor.sections.context import Context

__all__ = ["EngineFields", "engines"]

_GpuKey = tuple[str, str]  # (host, GPU UUID or index)


class EngineFields(TypedDict):
    engine_tokens_per_s: float | None
    engine_requests_running: float | None
    engine_queue_depth: float | None
    engine_kv_cache_usage: float | None
    gpu_util_percent: float | None
    gpu_power_watts: float | None


def engines(ctx: Context) -> EngineFields:
    running = ctx.live_lasts(exposed.ENGINE_RUNNING)
    waiting = ctx.live_lasts(exposed.ENGINE_WAITING)
    kv = ctx.live_lasts(exposed.ENGINE_KV)
    util, power = _per_gpu(ctx)
    return EngineFields(
        engine_tokens_per_s=ctx.fleet_engine_tokens_per_s,
        engine_requests_running=sum(running) if running else None,
        engine_queue_depth=sum(waiting) if waiting else None,
        engine_kv_cache_usage=max(kv) if kv else None,
        gpu_util_percent=mean(util.values()),
        gpu_power_watts=sum(power.values()) if power else None,
    )


def _per_gpu(ctx: Context) -> tuple[dict[_GpuKey, float], dict[_GpuKey, float]]:
    """(utilisation, power) per GPU, keyed by host and UUID (or index): one value per GPU, however many
    exporters report it."""
    util: dict[_GpuKey, float] = {}
    power: dict[_GpuKey, float] = {}
    for t in ctx.live:
        for spec, into in ((schema.DCGM_GPU_UTIL, util), (schema.DCGM_POWER_USAGE, power)):
            for s in ctx.store.series(t.name, spec.name):
                v = ctx.w.last(s)
                if v is not None:
                    key = (label_ci(s.labels, schema.LABEL_HOSTNAME) or t.name,
                           label_ci(s.labels, schema.LABEL_UUID) or label_ci(s.labels, schema.LABEL_GPU) or "")
                    into[key] = v
    return util, power
