"""slime (THUDM/slime): the perf, rollout, train and eval dicts (``logging_utils.log(args, log_dict,
step_key=...)``, slime/observability/)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

PERF = "slime/observability/train_metric_utils.py"
ROLLOUT = "slime/observability/rollout_metrics.py"
MODEL = "slime/backends/megatron_utils/model.py"
LOSS = "slime/backends/megatron_utils/loss.py"

TABLE = Table(
    framework="slime",
    repository="THUDM/slime",
    keys=(
        # train_wait + train of one rollout's training (train_metric_utils.py:395-398).
        Key("perf/step_time", "step_seconds", "s", PERF),
        # @timer update_weights (backends/megatron_utils/actor.py:595) -> "perf/<name>_time" (:376).
        Key("perf/update_weights_time", "weight_sync_seconds", "s", PERF),
        Key("train/loss", "loss", "1", LOSS),  # loss.py:1143, "train/<key>" in model.py:882
        Key("train/kl_loss", "kl", "nats", LOSS),  # loss.py:1154 (use_kl_loss)
        Key("train/entropy_loss", "entropy", "nats", LOSS),  # loss.py:1145
        Key("train/grad_norm", "grad_norm", "1", MODEL),  # model.py:886
        Key("train/lr-pg_0", "learning_rate", "1", MODEL),  # model.py:893, "lr-pg_<param group>"
        # Rollout fields averaged and prefixed "rollout/" (train_metric_utils.py:142-220, gather_log_data),
        # from slime/ray/rollout.py:659-663.
        Key("rollout/raw_reward", "reward_mean", "reward", PERF),
        Key("rollout/response_lengths", "rollout_tokens_mean", "tokens", PERF),
        # "eval/<dataset>" = mean reward (rollout_metrics.py:232); not eval/step nor "-truncated_ratio"/"-pass@k".
        Key(r"eval/(?!step$)(?![^/]*-(?:truncated_ratio|pass@))([^/]+)", "eval_score", "score", ROLLOUT,
            pattern=True),
    ),
    step_keys=("rollout/step", "eval/step"),
    markers=("perf/update_weights_time", "perf/step_time", "rollout/step", "rollout/raw_reward", "train/step"),
    notes=("a step is one rollout's training (perf/step_time); slime logs no rollout count: give the bridge "
           "rollouts_per_step= (rollout_batch_size x n_samples_per_prompt)",),
)
