"""SkyRL (NovaSky-AI/SkyRL): ``all_metrics`` and the ``timing/`` payload per global step
(skyrl/train/trainer.py, skyrl/train/fully_async_trainer.py)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

TRAINER = "skyrl/train/trainer.py"
ASYNC = "skyrl/train/fully_async_trainer.py"
WORKER = "skyrl/backends/skyrl_train/workers/worker.py"

TABLE = Table(
    framework="skyrl",
    repository="NovaSky-AI/SkyRL",
    keys=(
        # Timer("step", all_timings) (trainer.py:342, fully_async_trainer.py:529) -> "timing/<name>" (:527, :636).
        Key("timing/step", "step_seconds", "s", TRAINER),
        Key("timing/sync_weights", "weight_sync_seconds", "s", TRAINER),  # trainer.py:493, async :597
        # Worker status keys, prefixed "policy/" (trainer.py:1578).
        Key("policy/final_loss", "loss", "1", WORKER),  # worker.py:1114
        Key("policy/policy_entropy", "entropy", "nats", WORKER),  # worker.py:1116
        Key("policy/policy_lr", "learning_rate", "1", WORKER),  # worker.py:1118
        Key("policy/policy_kl", "kl", "nats", WORKER),  # worker.py:1124 (use_kl_loss)
        Key("reward/avg_raw_reward", "reward_mean", "reward", TRAINER),  # trainer.py:1112
        Key("generate/avg_num_tokens", "rollout_tokens_mean", "tokens",
            "skyrl/train/generators/utils.py"),  # get_rollout_metrics
        Key("async/staleness_mean", "staleness_mean", "versions", ASYNC),  # fully_async_trainer.py:1117
        Key("async/staleness_max", "staleness_max", "versions", ASYNC),  # fully_async_trainer.py:1118
        # "eval/<data_source>/avg_score" (skyrl/train/utils/trainer_utils.py:260) and "eval/all/avg_score"
        # (skyrl/train/evaluate.py:136).
        Key(r"eval/([^/]+)/avg_score", "eval_score", "score", "skyrl/train/evaluate.py", pattern=True),
    ),
    step_keys=("trainer/global_step",),
    markers=("timing/sync_weights", "trainer/global_step", "async/staleness_", "generate/", "reward/avg_raw"),
    staleness="trainer step minus the policy version each consumed group was generated with "
              "(async/staleness_mean|max, fully async only)",
    notes=("SkyRL logs no rollout count: give the bridge rollouts_per_step= for rollouts and mean reward",),
)
