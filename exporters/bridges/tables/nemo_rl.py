"""NeMo RL (NVIDIA-NeMo/RL): GRPO's dicts, logged with prefixes "train", "timing/train", "performance",
"validation" (``logger.log_metrics(metrics, step + 1, prefix=...)``, nemo_rl/utils/logger.py)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

GRPO = "nemo_rl/algorithms/grpo.py"
UTILS = "nemo_rl/algorithms/utils.py"

TABLE = Table(
    framework="nemo-rl",
    repository="NVIDIA-NeMo/RL",
    keys=(
        Key("timing/train/total_step_time", "step_seconds", "s", GRPO),  # grpo.py:2832, 4523
        Key("timing/train/weight_sync", "weight_sync_seconds", "s", GRPO),  # async GRPO, grpo.py:4959
        # Sync GRPO times the refit inside prepare_for_generation (grpo.py:2347).
        Key("timing/train/prepare_for_generation/transfer_and_update_weights", "weight_sync_seconds", "s", GRPO,
            unless="timing/train/weight_sync"),
        Key("train/loss", "loss", "1", GRPO),  # grpo.py:5075
        Key("train/grad_norm", "grad_norm", "1", GRPO),  # grpo.py:5078
        Key("train/lr", "learning_rate", "1", GRPO),  # grpo.py:5118 (mean over microbatches)
        Key("train/reward", "reward_mean", "reward", GRPO),  # grpo.py:5076, averaged at 5118-5125
        Key("train/total_num_tokens", "trainer_tokens", "tokens", GRPO),  # grpo.py:5080, summed at 5126
        Key("train/avg_trajectory_age", "staleness_mean", "steps", GRPO),  # grpo.py:5293 (async)
        # samples_per_sec = num_prompts_per_step x num_generations_per_prompt / total_step_time (utils.py:783-900).
        Key("performance/samples_per_sec", "rollouts", "rollouts/s", UTILS, kind="rate",
            over="timing/train/total_step_time"),
        Key(r"validation/(accuracy)", "eval_score", "score", GRPO, pattern=True),  # grpo.py:3978
    ),
    markers=("timing/train/", "performance/", "train/avg_trajectory_age", "validation/"),
    staleness="mean age, in trainer steps, of the trajectory groups sampled from the replay buffer "
              "(train/avg_trajectory_age)",
)
