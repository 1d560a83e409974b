"""Per-step dicts with exactly the keys each framework's source emits (mapped and unmapped alike), in the
order it logs them, and what ptmon must make of them.

The repository path of each key is in the comments; the tables in ptmon.exporters.bridges.tables cite
the same lines. Every framework logs the same run: 4 steps, one per 10 s of the test clock, a logged
step time of 9.5 s, weight syncs of 1.25 s, 4096 trained tokens a step, 32 rollouts of 100 tokens with
mean reward 0.375, evals at steps 2 and 4 scoring 0.4 and 0.6.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Sample", "SAMPLES", "STEP_S", "STEPS"]

STEP_S = 10.0
STEPS = 4
STEP_TIME = 9.5
SYNC = 1.25
TOKENS = 4096
ROLLOUTS = 32
ROLLOUT_TOKENS = 100
REWARD = 0.375
SCALARS = dict(loss=0.25, kl=0.01, entropy=1.5, grad_norm=0.75, learning_rate=1e-6)
Dicts = Sequence[tuple[Mapping[str, object], int | None]]


def score(step: int) -> float:
    return 0.2 + step / 10


@dataclass(frozen=True)
class Sample:
    framework: str
    dicts: Callable[[int], Dicts]  # step -> [(metrics, step passed to log or None)]
    scalars: tuple[str, ...]  # which of SCALARS the framework logs
    benchmarks: tuple[str, ...]  # eval benchmark names as ptmon labels them
    rollouts_per_step: int | None = None  # the bridge option, for frameworks that log no count
    step_seconds: float | None = STEP_TIME
    sync: bool = True
    trainer_tokens: bool = True
    rollout_tokens: bool = True
    staleness: Mapping[str, float] = field(default_factory=dict)  # the framework's own, by stat
    dropped_stale: float | None = None  # total after STEPS steps
    rollouts: bool = True  # whether the framework logs what a rollout count and mean reward need


# --- prime-rl: orchestrator.py:714-745 and train.py:650-687 (PrimeIntellect-ai/prime-rl) ----------------

def prime_rl(step: int) -> Dicts:
    orchestrator = {  # src/prime_rl/orchestrator/orchestrator.py:713-745, metrics.py to_wandb
        "train/agg/all/default/reward/mean": REWARD, "train/agg/all/default/reward/max": 1.0,
        "train/agg/all/num_output_tokens/mean": 100.0, "train/agg/effective/default/reward/mean": 0.4,
        "progress/tokens": 4800, "progress/input_tokens": 1600, "progress/output_tokens": ROLLOUTS * ROLLOUT_TOKENS,
        "progress/rollouts": ROLLOUTS, "progress/tasks": 8, "progress/total_tokens": 4800 * step,
        "progress/total_rollouts": ROLLOUTS * step, "progress/total_tasks": 8 * step,
        "time/step": 3.0,  # the orchestrator's own step: not a training step
        "time/pack": 0.1, "time/save_ckpt": 0.0, "time/wait_for_policy": 0.2, "step": step,
        "off_policy/mean": 0.5, "off_policy/max": 2.0, "off_policy/in_flight/mean": 0.25,
        "off_policy/in_flight/max": 1.0, "off_policy/in_queue/mean": 0.25, "off_policy/in_queue/max": 1.0,
        "off_policy/dropped": 3.0, "batch/gsm8k": 1.0,
    }
    out: list[tuple[Mapping[str, object], int | None]] = [(orchestrator, None)]
    out += [  # src/prime_rl/trainer/rl/train.py:650-687: four dicts per step, each with "step"
        ({"perf/throughput": TOKENS / 2.0, "perf/throughput_per_gpu": TOKENS / 16.0, "perf/mfu": 31.0,
          "perf/peak_memory": 41.5, "step": step}, None),
        ({"optim/lr": SCALARS["learning_rate"], "optim/grad_norm": SCALARS["grad_norm"], "step": step}, None),
        ({"loss/mean": SCALARS["loss"], "entropy/all/mean": SCALARS["entropy"], "mismatch_kl/all/mean": 0.001,
          "kl_ent_ratio/mean": 0.0007, "step": step}, None),
        ({"time/step": STEP_TIME, "time/wait_for_batch": 0.5, "time/load_data": 0.1,
          "time/broadcast_weights": SYNC, "time/save_ckpt": 0.0, "time/forward_backward": 2.0, "step": step}, None),
    ]
    if step % 2 == 0:  # orchestrator.py:935-936
        out.append(({"eval/gsm8k/all/default/avg@4": score(step), "eval/gsm8k/policy_version": float(step),
                     "step": step}, None))
    return out


# --- verl: ray_trainer.py:1680-1695 one dict per step (volcengine/verl) ---------------------------------

def verl(step: int) -> Dicts:
    metrics: dict[str, object] = {
        "training/global_step": step, "training/epoch": 0,  # ray_trainer.py:1683
        # metric_utils.py compute_timing_metrics: "timing_s/<marked_timer name>"
        "timing_s/gen": 5.0, "timing_s/reward": 0.2, "timing_s/old_log_prob": 0.8, "timing_s/adv": 0.1,
        "timing_s/update_actor": 2.0, "timing_s/update_weights": SYNC, "timing_s/step": STEP_TIME,
        "timing_per_token_ms/gen": 0.01,
        # metric_utils.py:296-302 compute_throughout_metrics
        "perf/total_num_tokens": TOKENS, "perf/time_per_step": STEP_TIME, "perf/throughput": TOKENS / STEP_TIME / 8,
        # workers/actor/dp_actor.py, workers/fsdp_workers.py:920
        "actor/pg_loss": SCALARS["loss"], "actor/kl_loss": SCALARS["kl"], "actor/entropy": SCALARS["entropy"],
        "actor/grad_norm": SCALARS["grad_norm"], "actor/lr": SCALARS["learning_rate"], "actor/pg_clipfrac": 0.1,
        "actor/ppo_kl": 0.002,
        # metric_utils.py:160-195 compute_data_metrics
        "critic/score/mean": REWARD, "critic/score/max": 1.0, "critic/score/min": 0.0,
        "critic/rewards/mean": REWARD, "critic/advantages/mean": 0.0, "critic/returns/mean": REWARD,
        "response_length/mean": float(ROLLOUT_TOKENS), "response_length/max": 180.0,
        "response_length/clip_ratio": 0.0, "prompt_length/mean": 50.0,
    }
    if step % 2 == 0:  # ray_trainer.py:693-697 (+ val-aux)
        metrics["val-core/openai/gsm8k/reward/mean@1"] = score(step)
        metrics["val-aux/openai/gsm8k/reward/std@1"] = 0.3
        metrics["timing_s/testing"] = 4.0
    return [(metrics, None)]


def verl_fully_async(step: int) -> Dicts:
    """The fully async trainer: param sync instead of update_weights, the rollouter's running drop count."""
    return [({
        "training/global_step": step,
        "timing_s/step": STEP_TIME, "timing_s/param_sync": SYNC, "timing_s/wait_last_valid": 0.1,  # :543-545
        "fully_async/count/stale_samples_processed": 10 * step,  # fully_async_trainer.py:516
        "fully_async/count/current_param_version": step,
        "fully_async/count/dropped_stale_samples": 3 * step,  # rollouter :784 via detach_utils.py:129
        "fully_async/count/staleness_samples": 4,
        "perf/total_num_tokens": TOKENS, "critic/score/mean": REWARD, "response_length/mean": 100.0,
        "actor/pg_loss": SCALARS["loss"],
    }, None)]


# --- NeMo RL: grpo.py async_grpo_train logging, 5380-5395 (NVIDIA-NeMo/RL) ------------------------------

def nemo_rl(step: int) -> Dicts:
    out: list[tuple[Mapping[str, object], int | None]] = []
    if step % 2 == 0:  # grpo.py:5040 logger.log_metrics(val_metrics, step + 1, prefix="validation")
        out.append(({"validation/accuracy": score(step), "validation/avg_length": 120.0}, step))
    out += [
        ({  # print_performance_metrics (algorithms/utils.py:897-912), prefix "performance"
            "performance/samples_per_sec": ROLLOUTS / STEP_TIME, "performance/tokens_per_sec": 900.0,
            "performance/samples_per_sec_per_gpu": ROLLOUTS / STEP_TIME / 8,
            "performance/generation_tokens_per_sec": 700.0, "performance/tokens_per_sec_per_gpu": 110.0,
        }, step),
        ({  # grpo.py:5070-5130 and 5291-5293, prefix "train"
            "train/loss": SCALARS["loss"], "train/grad_norm": SCALARS["grad_norm"],
            "train/lr": SCALARS["learning_rate"], "train/reward": REWARD, "train/mean_prompt_length": 50.0,
            "train/total_num_tokens": TOKENS, "train/global_valid_toks": 3900.0, "train/gen_kl_error": 0.001,
            "train/buffer_size": 64, "train/avg_trajectory_age": 0.5,
        }, step),
        ({"init/total": 0.0, "idle/refit_bubble": 0.3, "idle/buffer_starvation": 0.1}, step),  # efficiency
        ({  # timer.get_timing_metrics, prefix "timing/train" (grpo.py:5389-5394)
            "timing/train/total_step_time": STEP_TIME, "timing/train/weight_sync": SYNC,
            "timing/train/policy_training": 3.0, "timing/train/idle/refit_bubble": 0.3,
            "timing/train/valid_tokens_per_sec_per_gpu": 50.0,
        }, step),
    ]
    return out


# --- OpenRLHF: train_step + fit (ppo_trainer.py:255-262, 538-545), W&B's "train/" (OpenRLHF/OpenRLHF) ---

def openrlhf(step: int) -> Dicts:
    status = {
        "policy_loss": SCALARS["loss"], "actor_lr": SCALARS["learning_rate"], "actor_grad_norm": SCALARS["grad_norm"],
        "kl": SCALARS["kl"], "reward": 0.3, "return": 0.3, "response_length": 100.0, "total_length": 150.0,
        "timing/make_experience": 5.0, "timing/ppo_train": 3.0, "timing/broadcast": SYNC,
        "rollout/reward_mean": REWARD, "rollout/reward_std": 0.48, "rollout/response_length_mean": 100.0,
        "rollout/truncated_rate": 0.0, "rollout/num_samples": float(ROLLOUTS),
        "timing/generation": 0.25, "timing/step_total": STEP_TIME,
    }
    # logging_utils.py:98: {"train/%s" % k: v for k, v in {**metrics, "global_step": global_step}.items()}
    out: list[tuple[Mapping[str, object], int | None]] = [
        ({f"train/{k}": v for k, v in {**status, "global_step": step}.items()}, None)]
    if step % 2 == 0:  # ppo_trainer.py:128-143 evaluate, logging_utils.py:105 "eval/%s"
        logs = {"eval_gsm8k_pass4": 0.8, "eval_gsm8k_pass1": score(step), "eval_gsm8k_response_length_mean": 90.0,
                "eval_response_length_mean": 90.0, "eval_num_samples": 100.0}
        out.append(({f"eval/{k}": v for k, v in {**logs, "global_step": step}.items()}, None))
    return out


# --- TRL: GRPOTrainer.log -> Trainer.log -> on_log's logs (huggingface/trl, transformers) --------------

def trl(step: int) -> Dicts:
    logs = {
        "loss": SCALARS["loss"], "grad_norm": SCALARS["grad_norm"], "learning_rate": SCALARS["learning_rate"],
        "num_tokens": float(TOKENS * step),  # grpo_trainer.py:2293, running total
        "completions/mean_length": 100.0, "completions/min_length": 20.0, "completions/max_length": 180.0,
        "completions/clipped_ratio": 0.0, "completions/mean_terminated_length": 100.0,
        "rewards/accuracy/mean": REWARD, "rewards/accuracy/std": 0.48, "reward": REWARD, "reward_std": 0.48,
        "frac_reward_zero_std": 0.25, "kl": SCALARS["kl"], "entropy": SCALARS["entropy"],
        "clip_ratio/low_mean": 0.0, "clip_ratio/high_mean": 0.0, "clip_ratio/region_mean": 0.0,
        "step_time": STEP_TIME, "epoch": step / 100,
    }
    out: list[tuple[Mapping[str, object], int | None]] = [(logs, step)]
    if step % 2 == 0:  # grpo_trainer.py:3316-3317: "eval_" + key
        out.append(({"eval_loss": 0.1, "eval_reward": score(step), "eval_reward_std": 0.4,
                     "eval_runtime": 3.0, "epoch": step / 100}, step))
    return out


def trl_async(step: int) -> Dicts:
    """AsyncGRPOTrainer's own timing and freshness keys (trl/experimental/async_grpo/async_grpo_trainer.py)."""
    return [({"loss": SCALARS["loss"], "step_time": STEP_TIME, "perf/weight_sync_s": SYNC,  # :1745
              "perf/weight_sync_pause_s": 0.1, "perf/weight_sync_transfer_s": 1.0,
              "sample/staleness_mean": 0.5, "sample/staleness_max": 2.0,  # :386-387
              "sample/rollout_queue_size": 4.0, "sample/time_in_queue_s": 2.0}, step)]


# --- SkyRL: fully async trainer, all_metrics then the timing payload (NovaSky-AI/SkyRL) ------------------

def skyrl(step: int) -> Dicts:
    metrics: dict[str, object] = {
        # worker.py:1113-1124 status, prefixed "policy/" (trainer.py:1578)
        "policy/final_loss": SCALARS["loss"], "policy/policy_loss": 0.2,
        "policy/policy_entropy": SCALARS["entropy"], "policy/response_length": 100.0,
        "policy/policy_lr": SCALARS["learning_rate"], "policy/policy_kl": SCALARS["kl"],
        "reward/avg_pass_at_4": 0.6, "reward/avg_raw_reward": REWARD, "reward/mean_positive_reward": 1.0,  # :1110-1113
        "generate/min_num_tokens": 20, "generate/max_num_tokens": 180, "generate/avg_num_tokens": 100.0,
        "generate/std_num_tokens": 30.0,  # generators/utils.py get_rollout_metrics
        "async/staleness_mean": 0.5, "async/staleness_max": 2, "async/staleness_min": 0,  # fully_async :1117-1121
        "async/staleness_ratio": 0.25, "async/staleness_violation_count": 0,
        "trainer/epoch": 0, "trainer/global_step": step,  # fully_async_trainer.py:608
    }
    if step % 2 == 0:  # trainer_utils.py:260-262, evaluate.py:134-139
        metrics.update({"eval/gsm8k/avg_score": score(step), "eval/gsm8k/pass_at_4": 0.7,
                        "eval/all/avg_score": score(step), "eval/all/pass_at_4": 0.7})
    timing = {"timing/generate": 5.0, "timing/convert_to_training_input": 0.2, "timing/run_training": 3.0,
              "timing/sync_weights": SYNC, "timing/step": STEP_TIME}  # fully_async_trainer.py:636
    return [(metrics, step), (timing, step)]


# --- slime: rollout, train (per optimizer step), perf and eval dicts (THUDM/slime) ----------------------

def slime(step: int) -> Dicts:
    out: list[tuple[Mapping[str, object], int | None]] = [
        ({"rollout/raw_reward": REWARD, "rollout/rewards": 0.0, "rollout/response_lengths": 100.0,  # rollout.py:659-663
          "rollout/total_lengths": 150.0, "rollout/log_probs": -0.4, "rollout/step": step}, None),
        ({"train/loss": SCALARS["loss"], "train/pg_loss": 0.2, "train/entropy_loss": SCALARS["entropy"],  # loss.py:1142
          "train/pg_clipfrac": 0.1, "train/ppo_kl": 0.0, "train/kl_loss": SCALARS["kl"],
          "train/grad_norm": SCALARS["grad_norm"], "train/lr-pg_0": SCALARS["learning_rate"],  # model.py:880-897
          "train/global_batch_size": 32, "train/step": step}, None),
        ({"perf/update_weights_time": SYNC, "perf/actor_train_time": 3.0, "perf/train_wait_time": STEP_TIME - 3.0,
          # train_metric_utils.py:376-405
          "perf/train_time": 3.0, "perf/step_time": STEP_TIME, "perf/wait_time_ratio": 0.68,
          "perf/actor_train_tflops": 100.0, "rollout/step": step}, None),
    ]
    if step % 2 == 0:  # rollout_metrics.py:228-251
        out.append(({"eval/gsm8k": score(step), "eval/gsm8k-truncated_ratio": 0.05, "eval/step": step}, None))
    return out


# --- AReaL: stats_tracker export per global step, step passed to the logger (inclusionAI/AReaL) ---------

def areal(step: int) -> Dicts:
    stats: dict[str, object] = {
        "timeperf/rollout": 5.0, "timeperf/rollout__count": 1, "timeperf/compute_advantage": 0.1,
        "timeperf/compute_advantage__count": 1, "timeperf/train_step": 3.0, "timeperf/train_step__count": 1,
        "timeperf/update_weights": SYNC, "timeperf/update_weights__count": 1,  # rl_trainer.py:678, 723
        "ppo_actor/update/update_successful": 1.0, "ppo_actor/update/grad_norm": SCALARS["grad_norm"],
        "ppo_actor/update/lr": SCALARS["learning_rate"],  # fsdp_engine.py:709-713
        "ppo_actor/task_reward/avg": REWARD, "ppo_actor/task_reward/min": 0.0, "ppo_actor/task_reward/max": 1.0,
        "ppo_actor/n_seqs": ROLLOUTS, "ppo_actor/seq_len/avg": 150.0,  # actor.py:279-306
        "ppo_actor/update/version_stats/sample_staleness_theta_avg": 0.5,  # actor.py:1078-1105
        "ppo_actor/update/version_stats/sample_staleness_theta_max": 2.0,
        "ppo_actor/update/version_stats/sample_staleness_proximal_avg": 0.0,
        "rollout/reward": REWARD, "rollout/reward__count": ROLLOUTS,  # workflow/rlvr.py:135
    }
    if step % 2 == 0:
        stats.update({"eval-rollout/reward": score(step), "eval-rollout/reward__count": 100})
    return [(stats, step)]


# --- ROLL: the RLVR pipeline's metrics, before the tracker strips "@" tags (alibaba/ROLL) ---------------

def roll(step: int) -> Dicts:
    metrics: dict[str, object] = {
        "system/global_step": step, "system/batch_size": ROLLOUTS, "system/samples": (step + 1) * ROLLOUTS,
        "system/tps": 400.0,  # metrics_manager.py add_system_metrics
        "time/step_total": STEP_TIME if step > 1 else 0.0,  # rlvr_pipeline.py:496, the previous step's
        "time/step_stop_server": 0.1, "time/step_model_update": SYNC, "time/step_generate": 5.0,
        "time/step_train": 3.0,  # rlvr_pipeline.py:514-803
        "actor/pg_loss@sum": SCALARS["loss"], "actor/kl_loss@sum": SCALARS["kl"], "actor/approxkl@sum": 0.0,
        "actor/total_samples@sum": 32.0, "actor/lr": SCALARS["learning_rate"],  # actor_worker.py:148-160
        "critic/entropy/mean": SCALARS["entropy"], "critic/score/mean": REWARD, "critic/score/max": 1.0,
        "critic/rewards/mean": REWARD, "token/response_length/mean": 100.0, "token/prompt_length/mean": 50.0,
        "scheduler/collect_query_count": 8, "scheduler/query_use_count": 8,
        "scheduler/off_policy_ratio": 0.5,  # generate_scheduler.py:726
    }
    if step % 2 == 0:  # rlvr_pipeline.py:877-888 (val metrics merged into the step's)
        metrics.update({"val_correct/all/mean": score(step), "val_correct/gsm8k/mean": score(step),
                        "time/val_step": 2.0})
    return [(metrics, None)]


SAMPLES: dict[str, Sample] = {
    "prime-rl": Sample("prime-rl", prime_rl, ("loss", "entropy", "grad_norm", "learning_rate"), ("gsm8k",),
                       staleness=dict(mean=0.5, max=2.0), dropped_stale=3.0 * STEPS),
    "verl": Sample("verl", verl, tuple(SCALARS), ("openai/gsm8k/reward/mean@1",), rollouts_per_step=ROLLOUTS),
    "verl-fully-async": Sample("verl", verl_fully_async, ("loss",), (), rollouts_per_step=ROLLOUTS,
                               dropped_stale=3.0 * STEPS),
    "nemo-rl": Sample("nemo-rl", nemo_rl, ("loss", "grad_norm", "learning_rate"), ("accuracy",),
                      rollout_tokens=False, staleness=dict(mean=0.5)),
    "openrlhf": Sample("openrlhf", openrlhf, ("loss", "kl", "grad_norm", "learning_rate"), ("gsm8k",),
                       trainer_tokens=False),
    "trl": Sample("trl", trl, tuple(SCALARS), ("reward",), rollouts_per_step=ROLLOUTS, sync=False),
    "trl-async-grpo": Sample("trl", trl_async, ("loss",), (), trainer_tokens=False, rollouts=False,
                             staleness=dict(mean=0.5, max=2.0)),
    "skyrl": Sample("skyrl", skyrl, ("loss", "kl", "entropy", "learning_rate"), ("gsm8k", "all"),
                    rollouts_per_step=ROLLOUTS, trainer_tokens=False, staleness=dict(mean=0.5, max=2.0)),
    "slime": Sample("slime", slime, tuple(SCALARS), ("gsm8k",), rollouts_per_step=ROLLOUTS, trainer_tokens=False),
    "areal": Sample("areal", areal, ("grad_norm", "learning_rate"), ("eval-rollout",), step_seconds=3.0,
                    trainer_tokens=False, rollout_tokens=False, staleness=dict(mean=0.5, max=2.0)),
    "roll": Sample("roll", roll, ("loss", "kl", "entropy", "learning_rate"), ("all", "gsm8k"),
                   trainer_tokens=False, staleness=dict(mean=0.5)),
}
