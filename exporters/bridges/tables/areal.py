"""AReaL (inclusionAI/AReaL): the stats tracker's export per global step (areal/utils/stats_tracker.py;
committed by areal/trainer/rl_trainer.py:1183)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

TRAINER = "areal/trainer/rl_trainer.py"
ACTOR = "areal/trainer/ppo/actor.py"
ENGINE = "areal/engine/fsdp_engine.py"

TABLE = Table(
    framework="areal",
    repository="inclusionAI/AReaL",
    keys=(
        # record_timing(key) -> "timeperf/<key>" (stats_tracker.py:92). AReaL times the PPO update, not the
        # whole step: steps/s are exact, the step time is the update's.
        Key("timeperf/train_step", "step_seconds", "s", TRAINER),  # rl_trainer.py:678
        Key("timeperf/update_weights", "weight_sync_seconds", "s", TRAINER),  # rl_trainer.py:723
        # The engine's train_batch stats, scalars under scope "ppo_actor"/"update" (actor.py:252, 341).
        Key("ppo_actor/update/grad_norm", "grad_norm", "1", ENGINE),  # fsdp_engine.py:711
        Key("ppo_actor/update/lr", "learning_rate", "1", ENGINE),  # fsdp_engine.py:712
        # The workflow's per-rollout reward scalar (areal/workflow/rlvr.py:135): mean, and "__count"
        # (stats_tracker.py:214-215).
        Key("rollout/reward", "reward_mean", "reward", "areal/workflow/rlvr.py"),
        Key("rollout/reward__count", "rollouts", "rollouts", "areal/utils/stats_tracker.py"),
        # scope "version_stats" (actor.py:1078) under whatever scope the loss runs in.
        Key(r"(?:.*/)?version_stats/sample_staleness_theta_avg", "staleness_mean", "versions", ACTOR,
            pattern=True),
        Key(r"(?:.*/)?version_stats/sample_staleness_theta_max", "staleness_max", "versions", ACTOR,
            pattern=True),
        Key(r"(eval-rollout)/reward", "eval_score", "score", "areal/infra/workflow_context.py",
            pattern=True),  # workflow_context.py:59
    ),
    markers=("timeperf/", "ppo_actor/", "rollout/reward__count"),
    staleness="current policy version minus each token's behaviour version (version_stats/"
              "sample_staleness_theta_*)",
)
