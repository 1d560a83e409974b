"""What each target is: trainer, rollout worker, eval job, inference engine, GPUs.

The role decides where a target's numbers go (a worker row, the engine
panel, the spend split), so it comes from the most deliberate source
available: the user's config, then what the process says about itself in
``posttrain_run_info``, then what it exposes. The last step is what makes an
uninstrumented vLLM/SGLang server, a dcgm-exporter, or a training loop that
serves its own state (prime-rl's trainer, verl's RL-Insight gauges, SkyRL's
Ray gauges) useful with no setup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ptmon.exporters import schema
from ptmon.monitor.exposed import exposed_names

__all__ = ["detect_role", "run_info_names", "label_ci"]

# prometheus_client's Info("posttrain_run") exposes posttrain_run_info; a collector
# registered under the full name exposes posttrain_run_info_info. Accept both.
_RUN_INFO_NAMES = (schema.RUN_INFO.name, schema.RUN_INFO.name + "_info")

_TRAINER_NAMES = frozenset(
    n for spec in (schema.TRAINER_STEPS, schema.POLICY_VERSION, schema.TRAINER_LAST_STEP_TIMESTAMP)
    for n in exposed_names(spec)
) | {schema.WEIGHT_SYNC_SECONDS.count} | set(schema.LOOP_TRAINER_NAMES)
_ROLLOUT_NAMES = frozenset(
    n for spec in (schema.ROLLOUTS, schema.ROLLOUT_TOKENS, schema.ROLLOUT_POLICY_VERSION) for n in exposed_names(spec)
)
_EVAL_NAMES = frozenset((schema.EVAL_SCORE.name,))
_LOOP = "\0loop"  # a trainer known only from SkyRL's loop gauges: below an engine on the same Ray agent


def run_info_names() -> tuple[str, ...]:
    """Sample names under which ``posttrain_run_info`` may be exposed."""
    return _RUN_INFO_NAMES


def label_ci(labels: Mapping[str, str], key: str) -> str | None:
    """A label value by case-insensitive name: dcgm-exporter renamed ``Hostname`` to ``hostname``."""
    value = labels.get(key)
    if value is not None:
        return value
    lowered = key.lower()
    for k, v in labels.items():
        if k.lower() == lowered:
            return v
    return None


def detect_role(*, configured: str | None, run_info_roles: Iterable[str], names: Iterable[str]) -> str | None:
    """The target's role: config, else ``posttrain_run_info``'s role, else what it exposes.

    A process running several exporters on one registry (a colocated trainer
    that also generates rollouts) has one run-info series per role; the
    first in ``schema.ROLES`` order (trainer first) names the target.

    From exposed names, ptmon's own metrics win over third-party ones (a
    rollout worker that embeds vLLM is a rollout worker), as do a loop's own
    trainer step and timestamp (prime-rl's trainer, verl's RL-Insight); then
    vLLM/SGLang (also behind Ray, ``ray_vllm_``) mean an inference engine,
    SkyRL's loop gauges (behind the same Ray agent) a trainer, and DCGM GPUs.
    None while nothing identifies it.
    """
    if configured:
        return configured
    declared = set(run_info_roles)
    for role in schema.ROLES:
        if role in declared:
            return role
    found: set[str] = set()
    for name in names:
        if name in _TRAINER_NAMES:
            return schema.ROLE_TRAINER  # the trainer is unambiguous; stop looking
        if name in _ROLLOUT_NAMES:
            found.add(schema.ROLE_ROLLOUT)
        elif name in _EVAL_NAMES:
            found.add(schema.ROLE_EVAL)
        elif name.startswith(schema.ENGINE_PREFIXES):
            found.add(schema.ROLE_ENGINE)
        elif name.startswith(schema.DCGM_PREFIX):
            found.add(schema.ROLE_GPU)
        elif name.startswith((schema.SKYRL_PREFIX, schema.RL_INSIGHT_PREFIX)):
            found.add(_LOOP)
    for role in (schema.ROLE_ROLLOUT, schema.ROLE_EVAL, schema.ROLE_ENGINE, _LOOP, schema.ROLE_GPU):
        if role in found:
            return schema.ROLE_TRAINER if role == _LOOP else role
    return None
