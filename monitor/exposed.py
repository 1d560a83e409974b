"""Every sample name a metric may be exposed under: the build and the PromQL look for the same spellings.

Counters come as ``x_total`` (prometheus_client, OpenMetrics) or bare ``x``
(hand-written exporters); the monitor accepts both. vLLM and SGLang name
their metrics with ``:`` on their own servers, flattened to ``_`` when Ray
Serve re-exports them, behind its ``ray_`` prefix: an engine is read under
any of the three.
"""

from __future__ import annotations

from ptmon.exporters import schema
from ptmon.exporters.schema import MetricSpec

__all__ = [
    "exposed_names",
    "engine_spellings",
    "engine_names",
    "ROLLOUTS",
    "ROLLOUT_TOKENS",
    "TRAINER_STEPS",
    "TRAINER_TOKENS",
    "SYNC_BYTES",
    "SYNC_FAILURES",
    "GPU_SECONDS",
    "IDLE_SECONDS",
    "ENGINE_TOKENS",
    "ENGINE_RUNNING",
    "ENGINE_WAITING",
    "ENGINE_KV",
]


def exposed_names(spec: MetricSpec) -> tuple[str, ...]:
    """Every sample name ``spec`` may be exposed under: a counter with and without ``_total``."""
    return schema.counter_aliases(spec.name) if spec.kind == "counter" else (spec.name,)


def engine_spellings(spec: MetricSpec) -> tuple[str, ...]:
    """An engine metric's name as its server writes it, with ``:`` flattened, and behind Ray's ``ray_``."""
    flat = spec.name.replace(":", "_")
    return tuple(dict.fromkeys((spec.name, flat, "ray_" + flat)))


def engine_names(*specs: MetricSpec) -> tuple[str, ...]:
    """Every sample name of the engine metrics ``specs``: each spelling, counters with and without ``_total``."""
    out: list[str] = []
    for spec in specs:
        for name in engine_spellings(spec):
            out.extend(schema.counter_aliases(name) if spec.kind == "counter" else (name,))
    return tuple(dict.fromkeys(out))


ROLLOUTS = exposed_names(schema.ROLLOUTS)
ROLLOUT_TOKENS = exposed_names(schema.ROLLOUT_TOKENS)
TRAINER_STEPS = exposed_names(schema.TRAINER_STEPS)
TRAINER_TOKENS = exposed_names(schema.TRAINER_TOKENS)
SYNC_BYTES = exposed_names(schema.WEIGHT_SYNC_BYTES)
SYNC_FAILURES = exposed_names(schema.WEIGHT_SYNC_FAILURES)
GPU_SECONDS = exposed_names(schema.GPU_SECONDS)
IDLE_SECONDS = exposed_names(schema.IDLE_SECONDS)
ENGINE_TOKENS = engine_names(schema.VLLM_GENERATION_TOKENS, schema.SGLANG_GENERATION_TOKENS)
ENGINE_RUNNING = engine_names(schema.VLLM_REQUESTS_RUNNING, schema.SGLANG_RUNNING_REQS)
ENGINE_WAITING = engine_names(schema.VLLM_REQUESTS_WAITING, schema.SGLANG_QUEUE_REQS)
ENGINE_KV = engine_names(schema.VLLM_KV_CACHE_USAGE, schema.VLLM_GPU_CACHE_USAGE, schema.SGLANG_TOKEN_USAGE)
