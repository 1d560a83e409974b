"""verl (volcengine/verl): the PPO trainer's one dict per step (``logger.log(data=metrics, step=...)``)."""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

TRAINER = "verl/trainer/ppo/ray_trainer.py"
METRICS = "verl/trainer/ppo/metric_utils.py"
ACTOR = "verl/workers/actor/dp_actor.py"
ASYNC = "verl/experimental/fully_async_policy"

TABLE = Table(
    framework="verl",
    repository="volcengine/verl",
    keys=(
        # marked_timer("step") (ray_trainer.py:1388) -> "timing_s/<name>" (metric_utils.py:262).
        Key("timing_s/step", "step_seconds", "s", TRAINER),
        Key("timing_s/update_weights", "weight_sync_seconds", "s", TRAINER),  # ray_trainer.py:1610
        Key("timing_s/param_sync", "weight_sync_seconds", "s", ASYNC + "/fully_async_trainer.py",
            unless="timing_s/update_weights"),  # fully_async_trainer.py:545
        Key("perf/total_num_tokens", "trainer_tokens", "tokens", METRICS),  # metric_utils.py:300
        Key("actor/pg_loss", "loss", "1", ACTOR),  # dp_actor.py:662
        Key("actor/kl_loss", "kl", "nats", ACTOR),  # dp_actor.py:649 (use_kl_loss)
        Key("actor/entropy", "entropy", "nats", ACTOR),  # dp_actor.py:636
        Key("actor/grad_norm", "grad_norm", "1", ACTOR),  # dp_actor.py:666
        Key("actor/lr", "learning_rate", "1", "verl/workers/fsdp_workers.py"),  # fsdp_workers.py:920
        Key("critic/score/mean", "reward_mean", "reward", METRICS),  # metric_utils.py:162
        Key("response_length/mean", "rollout_tokens_mean", "tokens", METRICS),  # metric_utils.py:190
        # The rollouter's "count/dropped_stale_samples" (fully_async_rollouter.py:784), prefixed
        # "fully_async/" (detach_utils.py:129): a running total.
        Key("fully_async/count/dropped_stale_samples", "dropped_stale", "samples",
            ASYNC + "/fully_async_rollouter.py", kind="cumulative"),
        # "val-core/<data_source>/<var>/<metric>@<n>" (ray_trainer.py:693-697): the benchmark is all of it.
        Key(r"val-core/(.+)", "eval_score", "score", TRAINER, pattern=True),
    ),
    step_keys=("training/global_step",),
    markers=("timing_s/", "val-core/", "perf/total_num_tokens", "fully_async/", "critic/score/"),
    notes=("verl logs no rollout count: give the bridge rollouts_per_step= (train_batch_size x rollout.n) "
           "for rollouts and mean reward",),
)
