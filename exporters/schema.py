"""The metric contract: every metric ptmon exports or reads, in one place.

Nothing else in the project spells a ``posttrain_`` metric name; the
exporters build their collectors from these specs and the monitor looks
series up through them, so a rename here is a rename everywhere.

Names are the names *as exposed* (counters end in ``_total``); prometheus_client
strips and re-adds the suffix itself. Units are in the names, per the
Prometheus naming conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "MetricSpec",
    "Kind",
    "ROLES",
    "ROLE_TRAINER",
    "ROLE_ROLLOUT",
    "ROLE_EVAL",
    "ROLE_ENGINE",
    "ROLE_GPU",
    "ROLLOUT_OUTCOMES",
    "OUTCOME_ERROR",
    "LABEL_RUN",
    "LABEL_MODEL",
    "LABEL_ALGORITHM",
    "LABEL_ROLE",
    "LABEL_ENV",
    "LABEL_OUTCOME",
    "LABEL_BENCHMARK",
    "LABEL_CALL",
    "LABEL_LE",
    "LABEL_JOB",
    "LABEL_INSTANCE",
    "LABEL_HOSTNAME",
    "LABEL_UUID",
    "LABEL_GPU",
    "DROP_REASONS",
    "STALENESS_STATS",
    "DEFAULT_GPU_HOUR_PRICE",
    "MAX_LABEL_VALUE_BYTES",
    "MAX_SERIES_BYTES",
    "MAX_GPUS",
    "MAX_GPU_HOUR_PRICE",
    "STEP_SECONDS_BUCKETS",
    "WEIGHT_SYNC_SECONDS_BUCKETS",
    "ROLLOUT_SECONDS_BUCKETS",
    "DEFAULT_REWARD_BUCKETS",
    "RUN_INFO",
    "TRAINER_STEPS",
    "TRAINER_STEP_SECONDS",
    "TRAINER_TOKENS",
    "TRAINER_LAST_STEP_TIMESTAMP",
    "POLICY_VERSION",
    "WEIGHT_SYNC_SECONDS",
    "WEIGHT_SYNC_BYTES",
    "WEIGHT_SYNC_FAILURES",
    "WEIGHT_SYNC_FAILURE_SECONDS",
    "TRAINER_DROPPED",
    "SAMPLE_STALENESS",
    "IDLE_SECONDS",
    "IDLE_REASONS",
    "IDLE_ROLES",
    "IDLE_WAIT_FOR_BATCH",
    "IDLE_WAIT_FOR_POLICY",
    "LABEL_STAT",
    "LABEL_SOURCE",
    "LABEL_REASON",
    "LOSS",
    "KL",
    "ENTROPY",
    "GRAD_NORM",
    "LEARNING_RATE",
    "TRAINER_SCALARS",
    "ROLLOUTS",
    "ROLLOUT_TOKENS",
    "ROLLOUT_SECONDS",
    "ROLLOUT_REWARD",
    "ROLLOUT_REWARD_POSITIVE",
    "ROLLOUT_REWARD_NEGATIVE",
    "ROLLOUT_POLICY_VERSION",
    "EVAL_SCORE",
    "EVAL_POLICY_VERSION",
    "EVAL_SAMPLES",
    "GPUS",
    "GPU_SECONDS",
    "GPU_HOUR_PRICE",
    "EXPORTER_ERRORS",
    "CONTRACT",
    "VLLM_GENERATION_TOKENS",
    "VLLM_PROMPT_TOKENS",
    "VLLM_REQUESTS_RUNNING",
    "VLLM_REQUESTS_WAITING",
    "VLLM_KV_CACHE_USAGE",
    "VLLM_GPU_CACHE_USAGE",
    "SGLANG_GENERATION_TOKENS",
    "SGLANG_PROMPT_TOKENS",
    "SGLANG_RUNNING_REQS",
    "SGLANG_QUEUE_REQS",
    "SGLANG_TOKEN_USAGE",
    "SGLANG_GEN_THROUGHPUT",
    "DCGM_GPU_UTIL",
    "DCGM_POWER_USAGE",
    "DCGM_TOTAL_ENERGY",
    "ENGINE_PREFIXES",
    "DCGM_PREFIX",
    "PRIME_RL_TRAINER_STEP",
    "PRIME_RL_TRAINER_LOSS",
    "PRIME_RL_TRAINER_THROUGHPUT",
    "PRIME_RL_TRAINER_LAST_STEP_TIMESTAMP",
    "PRIME_RL_TRAINER_GRAD_NORM",
    "PRIME_RL_TRAINER_PEAK_MEMORY",
    "PRIME_RL_TRAINER_LEARNING_RATE",
    "PRIME_RL_TRAINER_MFU",
    "PRIME_RL_TRAINER_ENTROPY",
    "PRIME_RL_TRAINER_MISMATCH_KL",
    "PRIME_RL_TRAINER_KL_ENT_RATIO",
    "PRIME_RL_TRAINER",
    "LABEL_PHASE",
    "SKYRL_TRAINING_PHASE",
    "SKYRL_GEN_BUFFER_QSIZE",
    "SKYRL_GEN_BUFFER_MAXSIZE",
    "SKYRL_PREFIX",
    "RL_INSIGHT_PREFIX",
    "VERL_GLOBAL_STEP",
    "VERL_STEP_SECONDS",
    "VERL_UPDATE_WEIGHTS_SECONDS",
    "VERL_LOSS",
    "VERL_KL",
    "VERL_ENTROPY",
    "VERL_GRAD_NORM",
    "VERL_LEARNING_RATE",
    "LOOP_SCALARS",
    "LOOP_TRAINER_NAMES",
    "LOOP_PREFIXES",
    "counter_aliases",
]

Kind = Literal["counter", "gauge", "histogram", "info"]

ROLE_TRAINER: Final = "trainer"
ROLE_ROLLOUT: Final = "rollout"
ROLE_EVAL: Final = "eval"
ROLE_ENGINE: Final = "engine"
ROLE_GPU: Final = "gpu"
ROLES: Final = (ROLE_TRAINER, ROLE_ROLLOUT, ROLE_EVAL, ROLE_ENGINE, ROLE_GPU)

OUTCOME_ERROR: Final = "error"
ROLLOUT_OUTCOMES: Final = ("ok", OUTCOME_ERROR, "truncated", "dropped_stale")

# Label names: the contract's own, then the ones the monitor reads off other series.
LABEL_RUN: Final = "run"  # posttrain_run_info: run identity
LABEL_MODEL: Final = "model"
LABEL_ALGORITHM: Final = "algorithm"
LABEL_ROLE: Final = "role"  # run info, GPUs, GPU-seconds and price: which part of the loop
LABEL_ENV: Final = "env"
LABEL_OUTCOME: Final = "outcome"  # one of ROLLOUT_OUTCOMES
LABEL_BENCHMARK: Final = "benchmark"
LABEL_CALL: Final = "call"  # posttrain_exporter_errors_total: the recording call that dropped a value
LABEL_LE: Final = "le"  # a histogram bucket's upper bound
LABEL_JOB: Final = "job"  # with instance, how Prometheus names a scrape target
LABEL_INSTANCE: Final = "instance"
# dcgm-exporter's GPU identity (matched case-insensitively: older versions say Hostname, UUID).
LABEL_HOSTNAME: Final = "hostname"
LABEL_UUID: Final = "uuid"
LABEL_GPU: Final = "gpu"
LABEL_STAT: Final = "stat"  # posttrain_sample_staleness: mean or max
LABEL_SOURCE: Final = "source"  # posttrain_sample_staleness: who measured it (the trainer, a framework)
LABEL_REASON: Final = "reason"  # dropped samples, idle time: why
# Why a trainer discarded samples it was given (a closed set: each reason is one series).
DROP_REASONS: Final = ("stale", "filtered", "error", "other")
# What posttrain_sample_staleness reports over the samples of the last step.
STALENESS_STATS: Final = ("mean", "max")

# Label sizes, one contract for both sides: the monitor refuses a scrape holding a label value (as
# written, escapes included, UTF-8) over MAX_LABEL_VALUE_BYTES or a series (name and label set as
# written) over MAX_SERIES_BYTES, and the exporters drop and count any value that would make them.
# Generous for real engines: vLLM's lora_requests_info lists every running and waiting adapter in one
# label each, a few hundred adapter names (~40 KiB) at most.
MAX_LABEL_VALUE_BYTES: Final = 64 * 1024
MAX_SERIES_BYTES: Final = 128 * 1024

# Sane bounds for what a process reports it costs: beyond them a number is a bug (a unit error, a
# uint64 wrap, a price in cents or per GPU-second), refused by the exporters and to be ignored by the
# monitor with a target warning rather than shown as spend.
MAX_GPUS: Final = 1_000_000
MAX_GPU_HOUR_PRICE: Final = 1_000.0

# $/GPU-hour defaults (H100 on-demand at a neocloud, 2026); always configurable.
DEFAULT_GPU_HOUR_PRICE: Final = 3.00

# Step times run from sub-second (small SFT) to minutes (large RL steps).
STEP_SECONDS_BUCKETS: Final = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
# Weight sync: CUDA-IPC and colocated syncs in ms, 1T params over RDMA ~1.3 s, 70B over gloo minutes. A 2x
# ladder from 1 ms to 1048.576 s (past 10 min): every bucket is 2x the one below, so linear interpolation
# is off by less than 2x anywhere in range, in 21 buckets (a 1-2-5 ladder has 2.5x steps and more
# buckets for the same span). 0.001 x 2**k is exact scaling of 0.001, so each bound prints cleanly.
WEIGHT_SYNC_SECONDS_BUCKETS: Final = tuple(0.001 * 2.0**k for k in range(21))
# A rollout is one episode: a short completion to a long agentic trajectory.
ROLLOUT_SECONDS_BUCKETS: Final = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
# Rewards are usually in [-1, 1]; exporters take other buckets by keyword.
DEFAULT_REWARD_BUCKETS: Final = (-1.0, -0.5, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric of the contract, as exposed on /metrics."""

    name: str
    kind: Kind
    help: str
    unit: str = ""
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()

    @property
    def bucket(self) -> str:
        return self.name + "_bucket"

    @property
    def sum(self) -> str:
        return self.name + "_sum"

    @property
    def count(self) -> str:
        return self.name + "_count"

    @property
    def created(self) -> str:
        """The ``_created`` sample of a counter or histogram: the unix time its process created it.

        prometheus_client exposes one per counter (``x_total`` → ``x_created``) and histogram
        (``x`` → ``x_created``), per label set; gauges and infos have none. The monitor reads the
        run's start from the trainer's.
        """
        base = self.name[: -len("_total")] if self.kind == "counter" and self.name.endswith("_total") else self.name
        return base + "_created"


def counter_aliases(name: str) -> tuple[str, ...]:
    """Both spellings of a counter's sample name: with and without ``_total``.

    prometheus_client exposes ``x_total``; hand-written and older exporters
    expose plain ``x``. The monitor accepts either.
    """
    base = name[: -len("_total")] if name.endswith("_total") else name
    return (base + "_total", base)


RUN_INFO = MetricSpec("posttrain_run_info", "info", "Run identity: run, model, algorithm and role of this process.",
                      labels=(LABEL_RUN, LABEL_MODEL, LABEL_ALGORITHM, LABEL_ROLE))

TRAINER_STEPS = MetricSpec("posttrain_trainer_steps_total", "counter", "Optimizer steps completed.")
TRAINER_STEP_SECONDS = MetricSpec("posttrain_trainer_step_seconds", "histogram",
                                  "Wall time of one training step.", unit="seconds",
                                  buckets=STEP_SECONDS_BUCKETS)
TRAINER_TOKENS = MetricSpec("posttrain_trainer_tokens_total", "counter", "Tokens trained on.")
TRAINER_LAST_STEP_TIMESTAMP = MetricSpec("posttrain_trainer_last_step_timestamp_seconds", "gauge",
                                         "Unix time the last training step ended (stall detection).",
                                         unit="seconds")
POLICY_VERSION = MetricSpec("posttrain_policy_version", "gauge",
                            "Policy version the trainer last published to the rollout side.")
WEIGHT_SYNC_SECONDS = MetricSpec("posttrain_weight_sync_seconds", "histogram",
                                 "End-to-end trainer-to-inference weight sync time, one observation per successful"
                                 " sync.",
                                 unit="seconds", buckets=WEIGHT_SYNC_SECONDS_BUCKETS)
WEIGHT_SYNC_BYTES = MetricSpec("posttrain_weight_sync_bytes_total", "counter",
                               "Bytes of weights sent by successful weight syncs.", unit="bytes")
WEIGHT_SYNC_FAILURES = MetricSpec("posttrain_weight_sync_failures_total", "counter", "Weight syncs that raised.")
# Failed syncs are timed apart from the latency histogram: a sync that fails at once would pull the
# success quantiles down, one that times out after minutes up; the time lost still shows here.
WEIGHT_SYNC_FAILURE_SECONDS = MetricSpec("posttrain_weight_sync_failure_seconds_total", "counter",
                                         "Wall time spent in weight syncs that raised.", unit="seconds")
TRAINER_DROPPED = MetricSpec("posttrain_trainer_dropped_samples_total", "counter",
                             "Samples the trainer discarded instead of training on, by reason.", labels=(LABEL_REASON,))
# Staleness as measured where samples are consumed (the trainer or a framework), next to the monitor's own
# version difference: ``source`` names who measured it, so definitions that differ stay apart.
SAMPLE_STALENESS = MetricSpec("posttrain_sample_staleness", "gauge",
                              "Staleness of the samples the last step trained on, in policy versions, "
                              "as measured by the named source.", labels=(LABEL_STAT, LABEL_SOURCE))
# Time the loop waited instead of working, as a framework times it: the trainer for a batch (its GPUs idle)
# or inference for a new policy (the rollout GPUs idle). Each reason bills the GPUs of IDLE_ROLES[reason].
IDLE_WAIT_FOR_BATCH: Final = "wait_for_batch"
IDLE_WAIT_FOR_POLICY: Final = "wait_for_policy"
IDLE_REASONS: Final = (IDLE_WAIT_FOR_BATCH, IDLE_WAIT_FOR_POLICY)
IDLE_ROLES: Final = {IDLE_WAIT_FOR_BATCH: ROLE_TRAINER, IDLE_WAIT_FOR_POLICY: ROLE_ROLLOUT}
IDLE_SECONDS = MetricSpec("posttrain_idle_seconds_total", "counter",
                          "Wall time the loop waited instead of working, by what it waited for.", unit="seconds",
                          labels=(LABEL_REASON,))

LOSS = MetricSpec("posttrain_loss", "gauge", "Training loss of the last step.")
KL = MetricSpec("posttrain_kl", "gauge", "KL divergence to the reference policy at the last step.")
ENTROPY = MetricSpec("posttrain_entropy", "gauge", "Policy entropy at the last step.")
GRAD_NORM = MetricSpec("posttrain_grad_norm", "gauge", "Gradient norm at the last step.")
LEARNING_RATE = MetricSpec("posttrain_learning_rate", "gauge", "Learning rate at the last step.")
TRAINER_SCALARS: Final = {"loss": LOSS, "kl": KL, "entropy": ENTROPY, "grad_norm": GRAD_NORM,
                          "learning_rate": LEARNING_RATE}

ROLLOUTS = MetricSpec("posttrain_rollouts_total", "counter", "Rollouts finished, by environment and outcome.",
                      labels=(LABEL_ENV, LABEL_OUTCOME))
ROLLOUT_TOKENS = MetricSpec("posttrain_rollout_tokens_total", "counter", "Tokens generated in rollouts.",
                            labels=(LABEL_ENV,))
ROLLOUT_SECONDS = MetricSpec("posttrain_rollout_seconds", "histogram", "Wall time of one rollout.",
                             unit="seconds", labels=(LABEL_ENV,), buckets=ROLLOUT_SECONDS_BUCKETS)
ROLLOUT_REWARD = MetricSpec("posttrain_rollout_reward", "histogram", "Reward of one rollout.",
                            labels=(LABEL_ENV,), buckets=DEFAULT_REWARD_BUCKETS)
# The reward histogram's default buckets start below zero, so prometheus_client (following OpenMetrics:
# a sum that can fall is not a counter) exposes no ``_sum`` for it. These two monotonic counters carry the
# sum instead, split by sign as the Prometheus docs advise for negative observations: mean reward over a
# window = (increase(positive) - increase(negative)) / increase(posttrain_rollout_reward_count), and
# rate()/increase() and counter-reset handling work on each.
ROLLOUT_REWARD_POSITIVE = MetricSpec("posttrain_rollout_reward_positive_total", "counter",
                                     "Sum of the positive rewards of rollouts.", labels=(LABEL_ENV,))
ROLLOUT_REWARD_NEGATIVE = MetricSpec("posttrain_rollout_reward_negative_total", "counter",
                                     "Sum of the magnitudes of the negative rewards.", labels=(LABEL_ENV,))
ROLLOUT_POLICY_VERSION = MetricSpec("posttrain_rollout_policy_version", "gauge",
                                    "Policy version this rollout worker samples with.")

EVAL_SCORE = MetricSpec("posttrain_eval_score", "gauge", "Latest eval score (in [0, 1] or points).",
                        labels=(LABEL_BENCHMARK,))
EVAL_POLICY_VERSION = MetricSpec("posttrain_eval_policy_version", "gauge",
                                 "Policy version the latest eval score was measured on.", labels=(LABEL_BENCHMARK,))
EVAL_SAMPLES = MetricSpec("posttrain_eval_samples", "gauge", "Samples behind the latest eval score (for error bars).",
                          labels=(LABEL_BENCHMARK,))

GPUS = MetricSpec("posttrain_gpus", "gauge", "GPUs held by this process, by role.", labels=(LABEL_ROLE,))
GPU_SECONDS = MetricSpec("posttrain_gpu_seconds_total", "counter",
                         "GPU-seconds accumulated (GPUs x wall seconds), exact at scrape time.",
                         unit="seconds", labels=(LABEL_ROLE,))
GPU_HOUR_PRICE = MetricSpec("posttrain_gpu_hour_price_dollars", "gauge", "Configured price of one GPU-hour.",
                            unit="dollars", labels=(LABEL_ROLE,))

EXPORTER_ERRORS = MetricSpec("posttrain_exporter_errors_total", "counter",
                             "Recording calls whose values were dropped (bad value or internal error).",
                             labels=(LABEL_CALL,))

CONTRACT: Final[tuple[MetricSpec, ...]] = (
    RUN_INFO, TRAINER_STEPS, TRAINER_STEP_SECONDS, TRAINER_TOKENS, TRAINER_LAST_STEP_TIMESTAMP,
    POLICY_VERSION, WEIGHT_SYNC_SECONDS, WEIGHT_SYNC_BYTES, WEIGHT_SYNC_FAILURES, WEIGHT_SYNC_FAILURE_SECONDS,
    TRAINER_DROPPED, SAMPLE_STALENESS, IDLE_SECONDS, LOSS, KL, ENTROPY, GRAD_NORM, LEARNING_RATE,
    ROLLOUTS, ROLLOUT_TOKENS, ROLLOUT_SECONDS, ROLLOUT_REWARD, ROLLOUT_REWARD_POSITIVE,
    ROLLOUT_REWARD_NEGATIVE, ROLLOUT_POLICY_VERSION,
    EVAL_SCORE, EVAL_POLICY_VERSION, EVAL_SAMPLES,
    GPUS, GPU_SECONDS, GPU_HOUR_PRICE, EXPORTER_ERRORS,
)

# Third-party metrics the monitor understands with no instrumentation at all.
# vLLM (vllm/v1/metrics/loggers.py): counters exposed with _total; labels model_name, engine.
VLLM_GENERATION_TOKENS = MetricSpec("vllm:generation_tokens_total", "counter", "vLLM generated tokens.")
VLLM_PROMPT_TOKENS = MetricSpec("vllm:prompt_tokens_total", "counter", "vLLM prefill tokens.")
VLLM_REQUESTS_RUNNING = MetricSpec("vllm:num_requests_running", "gauge", "vLLM requests running.")
VLLM_REQUESTS_WAITING = MetricSpec("vllm:num_requests_waiting", "gauge", "vLLM requests waiting (queue depth).")
VLLM_KV_CACHE_USAGE = MetricSpec("vllm:kv_cache_usage_perc", "gauge", "vLLM KV-cache usage, 0..1.")
VLLM_GPU_CACHE_USAGE = MetricSpec("vllm:gpu_cache_usage_perc", "gauge", "vLLM KV-cache usage (older name).")
# SGLang (python/sglang/srt/metrics/collector.py), with --enable-metrics.
SGLANG_GENERATION_TOKENS = MetricSpec("sglang:generation_tokens_total", "counter", "SGLang generated tokens.")
SGLANG_PROMPT_TOKENS = MetricSpec("sglang:prompt_tokens_total", "counter", "SGLang prefill tokens.")
SGLANG_RUNNING_REQS = MetricSpec("sglang:num_running_reqs", "gauge", "SGLang requests running.")
SGLANG_QUEUE_REQS = MetricSpec("sglang:num_queue_reqs", "gauge", "SGLang requests queued.")
SGLANG_TOKEN_USAGE = MetricSpec("sglang:token_usage", "gauge", "SGLang KV token usage, 0..1.")
SGLANG_GEN_THROUGHPUT = MetricSpec("sglang:gen_throughput", "gauge", "SGLang generation throughput, tokens/s.")
# NVIDIA dcgm-exporter (port 9400): per-GPU gauges and an energy counter without _total.
DCGM_GPU_UTIL = MetricSpec("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilisation, percent.")
DCGM_POWER_USAGE = MetricSpec("DCGM_FI_DEV_POWER_USAGE", "gauge", "GPU power draw, watts.")
DCGM_TOTAL_ENERGY = MetricSpec("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                               "GPU energy since boot, millijoules.")

# Training loops that serve their own state, read with no instrumentation at all.
# prime-rl's trainer /metrics (PrimeIntellect-ai/prime-rl, src/prime_rl/utils/metrics_server.py:88-105,
# updated once per step, :151-176): plain gauges in one isolated registry.
PRIME_RL_TRAINER_STEP = MetricSpec("trainer_step", "gauge", "prime-rl: current training step.")
PRIME_RL_TRAINER_LOSS = MetricSpec("trainer_loss", "gauge", "prime-rl: training loss of the last step.")
PRIME_RL_TRAINER_THROUGHPUT = MetricSpec("trainer_throughput_tokens_per_sec", "gauge",
                                         "prime-rl: tokens per second of forward-backward time (not wall time).")
PRIME_RL_TRAINER_LAST_STEP_TIMESTAMP = MetricSpec("trainer_last_step_timestamp_seconds", "gauge",
                                                  "prime-rl: unix time of the last step.", unit="seconds")
PRIME_RL_TRAINER_GRAD_NORM = MetricSpec("trainer_grad_norm", "gauge", "prime-rl: gradient norm.")
PRIME_RL_TRAINER_PEAK_MEMORY = MetricSpec("trainer_peak_memory_gib", "gauge", "prime-rl: peak GPU memory, GiB.")
PRIME_RL_TRAINER_LEARNING_RATE = MetricSpec("trainer_learning_rate", "gauge", "prime-rl: learning rate.")
PRIME_RL_TRAINER_MFU = MetricSpec("trainer_mfu_percent", "gauge", "prime-rl: model FLOPS utilisation, percent.")
PRIME_RL_TRAINER_ENTROPY = MetricSpec("trainer_entropy", "gauge", "prime-rl: mean entropy.")
PRIME_RL_TRAINER_MISMATCH_KL = MetricSpec("trainer_mismatch_kl", "gauge",
                                          "prime-rl: KL between the trainer's and the inference model's policy.")
PRIME_RL_TRAINER_KL_ENT_RATIO = MetricSpec("trainer_kl_ent_ratio", "gauge", "prime-rl: mismatch KL / entropy.")
PRIME_RL_TRAINER: Final = (
    PRIME_RL_TRAINER_STEP, PRIME_RL_TRAINER_LOSS, PRIME_RL_TRAINER_THROUGHPUT, PRIME_RL_TRAINER_LAST_STEP_TIMESTAMP,
    PRIME_RL_TRAINER_GRAD_NORM, PRIME_RL_TRAINER_PEAK_MEMORY, PRIME_RL_TRAINER_LEARNING_RATE, PRIME_RL_TRAINER_MFU,
    PRIME_RL_TRAINER_ENTROPY, PRIME_RL_TRAINER_MISMATCH_KL, PRIME_RL_TRAINER_KL_ENT_RATIO)
# SkyRL's fully async trainer through Ray's metrics agent (``ray_`` prefix; NovaSky-AI/SkyRL,
# skyrl/train/utils/metrics.py: TrainingPhaseGauge, ScalarGauges; set in skyrl/train/fully_async_trainer.py:
# maxsize :350, qsize at each step's start :531, phases around each block, e.g. sync_weights :597).
LABEL_PHASE: Final = "phase"
SKYRL_TRAINING_PHASE = MetricSpec("ray_skyrl_training_phase", "gauge",
                                  "SkyRL: 1 while the trainer is in this macro-phase, else 0.", labels=(LABEL_PHASE,))
SKYRL_GEN_BUFFER_QSIZE = MetricSpec("ray_skyrl_gen_buffer_qsize", "gauge",
                                    "SkyRL: completed generation groups buffered at the step's start.")
SKYRL_GEN_BUFFER_MAXSIZE = MetricSpec("ray_skyrl_gen_buffer_maxsize", "gauge",
                                      "SkyRL: staleness-bounded generation-buffer capacity.")
SKYRL_PREFIX: Final = "ray_skyrl_"
# verl's RL-Insight logger (volcengine/verl, verl/utils/tracking.py: RLInsightLogger.log) sets one gauge per
# per-step key with "/" replaced by "_", under RL-Insight's namespace (verl-project/rl-insight,
# rl_insight/utils/constants.py: MonitorDefaults.NAMESPACE): timing_s/step -> rl_insight_monitor_timing_s_step.
RL_INSIGHT_PREFIX: Final = "rl_insight_monitor_"
VERL_GLOBAL_STEP = MetricSpec(RL_INSIGHT_PREFIX + "training_global_step", "gauge", "verl: training/global_step.")
VERL_STEP_SECONDS = MetricSpec(RL_INSIGHT_PREFIX + "timing_s_step", "gauge", "verl: timing_s/step, seconds.")
VERL_UPDATE_WEIGHTS_SECONDS = MetricSpec(RL_INSIGHT_PREFIX + "timing_s_update_weights", "gauge",
                                         "verl: timing_s/update_weights, seconds of the last weight sync.")
VERL_LOSS = MetricSpec(RL_INSIGHT_PREFIX + "actor_pg_loss", "gauge", "verl: actor/pg_loss.")
VERL_KL = MetricSpec(RL_INSIGHT_PREFIX + "actor_kl_loss", "gauge", "verl: actor/kl_loss.")
VERL_ENTROPY = MetricSpec(RL_INSIGHT_PREFIX + "actor_entropy", "gauge", "verl: actor/entropy.")
VERL_GRAD_NORM = MetricSpec(RL_INSIGHT_PREFIX + "actor_grad_norm", "gauge", "verl: actor/grad_norm.")
VERL_LEARNING_RATE = MetricSpec(RL_INSIGHT_PREFIX + "actor_lr", "gauge", "verl: actor/lr.")
# The trainer scalars each loop serves, by ptmon's name for them (prime-rl's mismatch KL is to the inference
# policy, not the reference: not ptmon's kl).
LOOP_SCALARS: Final = {
    "loss": (PRIME_RL_TRAINER_LOSS, VERL_LOSS), "kl": (VERL_KL,),
    "entropy": (PRIME_RL_TRAINER_ENTROPY, VERL_ENTROPY), "grad_norm": (PRIME_RL_TRAINER_GRAD_NORM, VERL_GRAD_NORM),
    "learning_rate": (PRIME_RL_TRAINER_LEARNING_RATE, VERL_LEARNING_RATE)}
# Names that make a target a trainer (its own step counter or timestamp); SkyRL's phase gauge is weaker: a Ray
# agent serving it may also serve vLLM, whose engine role wins.
LOOP_TRAINER_NAMES: Final = (PRIME_RL_TRAINER_STEP.name, PRIME_RL_TRAINER_LAST_STEP_TIMESTAMP.name,
                             VERL_GLOBAL_STEP.name)
LOOP_PREFIXES: Final = (*(s.name for s in PRIME_RL_TRAINER), SKYRL_PREFIX, RL_INSIGHT_PREFIX)

# Behind Ray's metrics agent vLLM's names become ray_vllm_... with ':' turned into '_'.
ENGINE_PREFIXES: Final = ("vllm:", "sglang:", "ray_vllm_", "vllm_", "sglang_")
DCGM_PREFIX: Final = "DCGM_FI_"

# -- Prometheus's own names, as the monitor reads them --------------------------------------------------
# Series Prometheus itself writes for every target it scrapes: its health, not the target's metrics.
PROMETHEUS_UP: Final = "up"
PROMETHEUS_SCRAPE_DURATION: Final = "scrape_duration_seconds"
PROMETHEUS_SCRAPE_SAMPLES: Final = "scrape_samples_scraped"
PROMETHEUS_SCRAPE_SERIES: Final = (PROMETHEUS_UP, PROMETHEUS_SCRAPE_DURATION, PROMETHEUS_SCRAPE_SAMPLES)
# Series a Pushgateway writes: each group's last successful push (unix time), labelled with the group's grouping
# key (and job, instance) like every series pushed in it; and its own build info, which tells the gateway target
# (scraped with honor_labels) from the groups it carries.
PUSHGATEWAY_PUSH_TIME: Final = "push_time_seconds"
PUSHGATEWAY_BUILD_INFO: Final = "pushgateway_build_info"
# A target label naming a target in `ptmon watch --prometheus` (the demo's file_sd and the shipped config set it).
TARGET_NAME_LABEL: Final = "ptmon_name"
# The demo's jobs, one per role: posttrain-trainer, posttrain-rollout, posttrain-eval.
DEMO_JOB_PREFIX: Final = "posttrain-"
# What the monitor reads: its own metrics, inference engines', DCGM's. A target exposing none of these
# answers but shows nothing ("nothing recognised").
OWN_PREFIX: Final = "posttrain_"
READ_PREFIXES: Final = (OWN_PREFIX, *ENGINE_PREFIXES, DCGM_PREFIX, *LOOP_PREFIXES)

__all__ += [
    "PROMETHEUS_UP",
    "PROMETHEUS_SCRAPE_DURATION",
    "PROMETHEUS_SCRAPE_SAMPLES",
    "PROMETHEUS_SCRAPE_SERIES",
    "PUSHGATEWAY_PUSH_TIME",
    "PUSHGATEWAY_BUILD_INFO",
    "TARGET_NAME_LABEL",
    "DEMO_JOB_PREFIX",
    "OWN_PREFIX",
    "READ_PREFIXES",
]
