"""prime-rl (PrimeIntellect-ai/prime-rl): the trainer's and the orchestrator's per-step dicts.

Both processes log with ``step``; the trainer logs several dicts per step
(perf, optim, tensor stats, time), which the bridge joins by step. The
orchestrator's own ``time/step`` (its dict carries ``progress/rollouts``) is
not a training step and is left out.
"""

from __future__ import annotations

from ptmon.exporters.bridges._table import Key, Table

__all__ = ["TABLE"]

TRAIN = "src/prime_rl/trainer/rl/train.py"
ORCH = "src/prime_rl/orchestrator/orchestrator.py"
ORCH_METRICS = "src/prime_rl/orchestrator/metrics.py"

TABLE = Table(
    framework="prime-rl",
    repository="PrimeIntellect-ai/prime-rl",
    keys=(
        Key("time/step", "step_seconds", "s", TRAIN, unless="progress/rollouts"),  # train.py:680
        # throughput = num_tokens / forward_backward_time (train.py:631), so the product is the step's tokens.
        Key("perf/throughput", "trainer_tokens", "tokens/s", TRAIN, kind="rate",
            over="time/forward_backward"),  # train.py:652, 685
        Key("loss/mean", "loss", "1", TRAIN),  # tensor stats, train.py:699
        Key("entropy/all/mean", "entropy", "nats", TRAIN),  # train.py:484 (tensor stats)
        Key("optim/grad_norm", "grad_norm", "1", TRAIN),  # train.py:666
        Key("optim/lr", "learning_rate", "1", TRAIN),  # train.py:662
        # 0 when the step broadcast nothing (no broadcast configured, or the last step): train.py:579-600.
        Key("time/broadcast_weights", "weight_sync_seconds", "s", TRAIN, skip_zero=True),  # train.py:683
        Key("time/wait_for_batch", "wait_for_batch", "s", TRAIN),  # train.py:681
        # Accumulated over the orchestrator's step, reset after logging (orchestrator.py:680, 748).
        Key("time/wait_for_policy", "wait_for_policy", "s", ORCH),  # orchestrator.py:725
        Key("off_policy/mean", "staleness_mean", "versions", ORCH),  # orchestrator.py:735
        Key("off_policy/max", "staleness_max", "versions", ORCH),  # orchestrator.py:736
        Key("off_policy/dropped", "dropped_stale", "samples", ORCH),  # orchestrator.py:742
        Key("progress/rollouts", "rollouts", "rollouts", ORCH),  # orchestrator.py:717
        Key("progress/output_tokens", "rollout_tokens", "tokens", ORCH),  # orchestrator.py:716
        # TraceMetrics.to_dict: "train/agg/<subset>/<agent>/reward/mean" (metrics.py:244-249, 324-335).
        Key(r"train/agg/all/[^/]+/reward/mean", "reward_mean", "reward", ORCH_METRICS, pattern=True),
        # EvalMetrics.to_wandb: "eval/<env>/<subset>/<agent>/avg@<k>" (metrics.py:381-386, orchestrator.py:935).
        Key(r"eval/([^/]+)/all/[^/]+/avg@\d+", "eval_score", "score", ORCH_METRICS, pattern=True),
    ),
    step_keys=("step",),
    markers=("time/broadcast_weights", "off_policy/", "progress/", "optim/", "perf/throughput_per_gpu"),
    staleness="trainer step minus the policy version of each shipped sample (off_policy/mean|max)",
)
