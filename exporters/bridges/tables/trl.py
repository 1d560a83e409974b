"""TRL (huggingface/trl): what ``GRPOTrainer.log`` passes to ``Trainer.log`` (``on_log``'s ``logs``), also
as W&B shows it ("train/" prefix). ``PtmonCallback`` (ptmon.exporters.bridges.trl) reads the same keys."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

GRPO = "trl/trainer/grpo_trainer.py"
ASYNC = "trl/experimental/async_grpo/async_grpo_trainer.py"
HF = "transformers: src/transformers/trainer.py"

TABLE = Table(
    framework="trl",
    repository="huggingface/trl",
    keys=(
        Key("step_time", "step_seconds", "s", GRPO),  # grpo_trainer.py:1517
        Key("num_tokens", "trainer_tokens", "tokens", GRPO, kind="cumulative"),  # grpo_trainer.py:2293
        Key("loss", "loss", "1", HF),  # transformers trainer.py:2262
        Key("grad_norm", "grad_norm", "1", HF),  # trainer.py:2264
        Key("learning_rate", "learning_rate", "1", HF),  # trainer.py:2266
        Key("kl", "kl", "nats", GRPO),  # grpo_trainer.py:3268 (beta != 0)
        Key("entropy", "entropy", "nats", GRPO),  # grpo_trainer.py:3270
        Key("reward", "reward_mean", "reward", GRPO),  # grpo_trainer.py:2828
        Key("completions/mean_length", "rollout_tokens_mean", "tokens", GRPO),  # grpo_trainer.py:2296
        Key("sample/staleness_mean", "staleness_mean", "versions", ASYNC),  # async_grpo_trainer.py:386
        Key("sample/staleness_max", "staleness_max", "versions", ASYNC),  # async_grpo_trainer.py:387
        Key(r"eval_(reward)", "eval_score", "score", GRPO, pattern=True),  # grpo_trainer.py:3317 ("eval_" + key)
        Key("perf/weight_sync_s", "weight_sync_seconds", "s", ASYNC),  # async_grpo_trainer.py:1745
    ),
    step_keys=("global_step",),
    markers=("completions/", "num_tokens", "step_time", "frac_reward_zero_std", "reward_std"),
    strip_prefixes=("train/",),
    notes=("TRL logs no rollout count: PtmonCallback takes it from the trainer's arguments; a bridge needs "
           "rollouts_per_step=",),
)
