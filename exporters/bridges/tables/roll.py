"""ROLL (alibaba/ROLL): the RLVR pipeline's metrics per global step (roll/pipeline/rlvr/rlvr_pipeline.py;
the tracker strips reduction tags, "actor/pg_loss@sum" -> "actor/pg_loss", roll/utils/tracking.py:15-29)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

PIPELINE = "roll/pipeline/rlvr/rlvr_pipeline.py"
METRICS = "roll/utils/metrics/metrics_manager.py"
ACTOR = "roll/pipeline/rlvr/actor_worker.py"

TABLE = Table(
    framework="roll",
    repository="alibaba/ROLL",
    keys=(
        # A step is counted on its global step; its time is the previous step's total (pre_step_total_time,
        # rlvr_pipeline.py:842), 0 at the first step, so the time lags the count by one step.
        Key("system/global_step", "step", "steps", METRICS),  # add_system_metrics
        Key("time/step_total", "step_seconds", "s", PIPELINE, skip_zero=True),  # rlvr_pipeline.py:496
        Key("time/step_model_update", "weight_sync_seconds", "s", PIPELINE),  # rlvr_pipeline.py:521
        Key("actor/pg_loss", "loss", "1", ACTOR),  # actor_worker.py:149
        Key("actor/kl_loss", "kl", "nats", ACTOR),  # actor_worker.py:151
        Key("actor/lr", "learning_rate", "1", "roll/pipeline/base_worker.py"),  # base_worker.py:110
        Key("system/batch_size", "rollouts", "rollouts", METRICS),  # add_system_metrics
        Key("critic/score/mean", "reward_mean", "reward", METRICS),  # add_values_metrics(prefix="critic")
        Key("critic/entropy/mean", "entropy", "nats", METRICS),  # add_values_metrics: the batch's agg_entropy
        Key("token/response_length/mean", "rollout_tokens_mean", "tokens", METRICS),  # add_token_metrics
        # mean of (current step - sampling start step) over the batch (generate_scheduler.py:705-711).
        Key("scheduler/off_policy_ratio", "staleness_mean", "steps",
            "roll/distributed/scheduler/generate_scheduler.py"),  # generate_scheduler.py:726
        Key(r"val_correct/(.+)/mean", "eval_score", "score", PIPELINE, pattern=True),  # rlvr_pipeline.py:877-888
    ),
    step_keys=("system/global_step",),
    markers=("time/step_", "system/", "scheduler/", "val_correct/"),
    strip_at_tag=True,
    staleness="mean trainer steps between a sample's sampling start and its use (scheduler/off_policy_ratio, "
              "a mean despite its name)",
)
