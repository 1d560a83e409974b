"""OpenRLHF (OpenRLHF/OpenRLHF): the PPO trainer's status dict, as logged ("train/" for W&B/TensorBoard,
openrlhf/utils/logging_utils.py:98, 130; evals under "eval/", :105)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

TRAINER = "openrlhf/trainer/ppo_trainer.py"
ACTOR = "openrlhf/trainer/ray/ppo_actor.py"

TABLE = Table(
    framework="openrlhf",
    repository="OpenRLHF/OpenRLHF",
    keys=(
        Key("timing/step_total", "step_seconds", "s", TRAINER),  # ppo_trainer.py:541, ppo_trainer_async.py:237
        # 0 without vLLM engines (nothing broadcast): ppo_trainer.py:243-247.
        Key("timing/broadcast", "weight_sync_seconds", "s", TRAINER, skip_zero=True),  # ppo_trainer.py:258
        Key("policy_loss", "loss", "1", ACTOR),  # ppo_actor.py:369
        Key("kl", "kl", "nats", "openrlhf/trainer/ppo_utils/experience_maker.py"),  # experience_maker.py:226
        Key("actor_grad_norm", "grad_norm", "1", ACTOR),  # ppo_actor.py:380
        Key("actor_lr", "learning_rate", "1", ACTOR),  # ppo_actor.py:376
        Key("rollout/num_samples", "rollouts", "rollouts", TRAINER),  # ppo_trainer.py:423
        Key("rollout/reward_mean", "reward_mean", "reward", TRAINER),  # ppo_trainer.py:419
        Key("rollout/response_length_mean", "rollout_tokens_mean", "tokens", TRAINER),  # ppo_trainer.py:421
        Key(r"(?:eval/)?eval_(.+)_pass1", "eval_score", "score", TRAINER, pattern=True),  # ppo_trainer.py:131
    ),
    step_keys=("global_step", "eval/global_step"),
    markers=("timing/step_total", "timing/broadcast", "rollout/num_samples", "policy_loss", "actor_lr"),
    strip_prefixes=("train/",),
)
