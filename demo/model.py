"""Pure, seeded models of an asynchronous RL post-training run.

Everything here is a function of its arguments and a ``random.Random``: no
clock, no I/O, so each number can be checked in a test and the same seed
replays the same run. Times are simulated seconds; ``--speed`` only changes
how fast the processes sleep through them.

The orders of magnitude are those of real async-RL runs (README, "The demo"): an 8B model in
bf16 (16 GB of weights) synced over an effective 10 GB/s link takes about
2 s; H100s at $3/GPU-hour; a GRPO step of ~20 s on 8 trainer GPUs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ptmon.demo.scenarios import Scenario

__all__ = [
    "RunSpec",
    "Env",
    "ENVS",
    "Rollout",
    "TrainerScalars",
    "seeded_rng",
    "step_seconds",
    "step_tokens",
    "trainer_scalars",
    "sync_slowdown",
    "sync_seconds",
    "sync_fails",
    "choose_env",
    "reward_mean",
    "worker_speed",
    "pickup_delay",
    "sample_rollout",
    "score_mean",
    "eval_score",
]


@dataclass(frozen=True, slots=True)
class Env:
    """One rollout environment: how long its episodes are and how its reward behaves."""

    name: str
    weight: float  # share of rollouts
    median_tokens: float
    tokens_sigma: float  # lognormal spread of episode length
    max_tokens: int  # longer episodes are cut: outcome "truncated"
    overhead_s: float  # tool calls, sandboxes, graders: time that is not decoding
    reward_start: float
    reward_gain: float
    binary: bool  # pass/fail (math) or a graded fraction (tests passed, task progress)


ENVS: tuple[Env, ...] = (
    Env("math", 0.5, 550.0, 0.55, 4096, 0.3, 0.45, 0.30, True),
    Env("code", 0.3, 1100.0, 0.6, 8192, 4.0, 0.25, 0.35, False),
    Env("agent", 0.2, 2200.0, 0.7, 8192, 10.0, 0.15, 0.35, False),
)


@dataclass(frozen=True, slots=True)
class RunSpec:
    """The simulated run: fleet, prices, model size and cadences (all simulated time)."""

    run: str = "demo"
    model: str = "demo-8b"
    algorithm: str = "async-grpo"
    workers: int = 4
    params: float = 8e9
    bytes_per_param: float = 2.0  # bf16
    trainer_gpus: int = 8
    rollout_gpus: int = 2  # per worker
    eval_gpus: int = 1
    gpu_hour_price: float = 3.0  # H100 on demand at a neocloud
    step_seconds: float = 20.0
    step_jitter: float = 0.08  # lognormal sigma
    sync_every: int = 2  # steps between weight syncs
    sync_bandwidth: float = 10e9  # effective bytes/s trainer -> inference
    sync_overhead_s: float = 0.3
    sync_jitter: float = 0.15
    slow_sync_p: float = 0.05  # an occasional slow sync (a busy link, a GC pause)
    slow_sync_factor: tuple[float, float] = (3.0, 8.0)
    concurrency: int = 32  # rollouts in flight per worker
    decode_tokens_per_s: float = 60.0  # per sequence, under batching
    max_staleness: int = 2  # rollouts older than this many versions are dropped
    pickup_s: tuple[float, float] = (5.0, 35.0)  # drain the in-flight batch and load the new weights
    eval_every: int = 10  # steps between evals
    eval_seconds: float = 60.0
    benchmark: str = "math"
    eval_samples: int = 5000
    score_start: float = 0.35
    score_gain: float = 0.50
    score_scale_dollars: float = 100.0
    envs: tuple[Env, ...] = field(default=ENVS)

    @property
    def model_bytes(self) -> float:
        return self.params * self.bytes_per_param

    @property
    def fleet_gpus(self) -> int:
        return self.trainer_gpus + self.workers * self.rollout_gpus + self.eval_gpus

    @property
    def dollars_per_second(self) -> float:
        return self.fleet_gpus * self.gpu_hour_price / 3600.0

    @property
    def nominal_sync_seconds(self) -> float:
        return self.model_bytes / self.sync_bandwidth + self.sync_overhead_s

    @property
    def nominal_dollars_per_step(self) -> float:
        """What one step costs the fleet when nothing goes wrong (sync time amortised)."""
        return (self.step_seconds + self.nominal_sync_seconds / self.sync_every) * self.dollars_per_second

    def useful_spend(self, steps: float) -> float:
        """Dollars the training progress of ``steps`` steps is worth: the eval curve's x axis.

        Anything that wastes wall time (slow syncs, stragglers) costs real
        money without moving this, which is what intelligence per dollar shows.
        """
        return max(0.0, steps) * self.nominal_dollars_per_step


@dataclass(frozen=True, slots=True)
class Rollout:
    env: str
    tokens: int
    seconds: float
    reward: float | None
    outcome: str  # ok, error, truncated (dropped_stale is decided when it finishes)


@dataclass(frozen=True, slots=True)
class TrainerScalars:
    loss: float
    kl: float
    entropy: float
    grad_norm: float
    learning_rate: float

    def as_kwargs(self) -> Mapping[str, float]:
        return MappingProxyType({"loss": self.loss, "kl": self.kl, "entropy": self.entropy,
                                 "grad_norm": self.grad_norm, "learning_rate": self.learning_rate})


def seeded_rng(seed: int, *parts: object) -> random.Random:
    """An RNG per (seed, role, index, ...): string seeds hash stably across processes and runs."""
    return random.Random(":".join([str(seed), *map(str, parts)]))


def _lognormal(rng: random.Random, median: float, sigma: float) -> float:
    return median * math.exp(rng.gauss(0.0, sigma))


# --- trainer -------------------------------------------------------------------------------------------------

def step_seconds(rng: random.Random, spec: RunSpec) -> float:
    return _lognormal(rng, spec.step_seconds, spec.step_jitter)


def step_tokens(rng: random.Random, spec: RunSpec) -> int:
    """Tokens in one step's batch: what the workers generate in a step's time at ~90% utilisation."""
    per_step = spec.workers * spec.concurrency * spec.decode_tokens_per_s * spec.step_seconds * 0.9
    return max(1, int(_lognormal(rng, per_step, 0.05)))


def trainer_scalars(rng: random.Random, step: int, spec: RunSpec, scenario: Scenario) -> TrainerScalars:
    """Loss, KL, entropy, grad norm and LR drifting the way a GRPO run's do.

    In ``plateau`` the entropy collapses, the usual reason an RL run stops
    generalising while its training reward keeps rising.
    """
    collapse = scenario.plateau_spend is not None
    warmup = min(1.0, (step + 1) / 10.0)
    if collapse:
        entropy = 0.05 + 0.75 * math.exp(-step / 25.0)
        kl = 0.08 * (1.0 - math.exp(-step / 20.0))
    else:
        entropy = 0.25 + 0.55 * math.exp(-step / 200.0)
        kl = 0.02 * (1.0 - math.exp(-step / 60.0))
    grad_norm = _lognormal(rng, 0.25, 0.3) * (rng.uniform(3.0, 6.0) if rng.random() < 0.02 else 1.0)
    return TrainerScalars(
        loss=0.01 + rng.gauss(0.0, 0.02),
        kl=max(0.0, kl * (1.0 + rng.gauss(0.0, 0.1))),
        entropy=max(0.01, entropy * (1.0 + rng.gauss(0.0, 0.03))),
        grad_norm=grad_norm,
        learning_rate=1e-6 * warmup,
    )


def sync_slowdown(scenario: Scenario, t: float) -> float:
    """Multiplier on sync latency at simulated time ``t`` (1 unless the link degrades)."""
    if scenario.sync_doubling_s is None:
        return 1.0
    doublings = min(max(0.0, t) / scenario.sync_doubling_s, 64.0)  # 2**64 is past any cap; no overflow
    factor: float = 2.0 ** doublings  # float ** float is typed Any (a negative base could give a complex)
    return min(scenario.sync_slowdown_max, factor)


def sync_seconds(rng: random.Random, spec: RunSpec, scenario: Scenario, t: float) -> float:
    """One sync, end to end: bytes over bandwidth, jitter, an occasional slow one, scenario drift."""
    seconds = _lognormal(rng, spec.nominal_sync_seconds, spec.sync_jitter)
    if rng.random() < spec.slow_sync_p:
        seconds *= rng.uniform(*spec.slow_sync_factor)
    return seconds * sync_slowdown(scenario, t)


def sync_fails(rng: random.Random, scenario: Scenario) -> bool:
    return rng.random() < scenario.sync_failure_p


# --- rollout workers -----------------------------------------------------------------------------------------

def choose_env(rng: random.Random, spec: RunSpec) -> Env:
    return rng.choices(spec.envs, weights=[e.weight for e in spec.envs])[0]


def reward_mean(env: Env, version: float) -> float:
    """Mean training reward of ``env`` under policy ``version``: rises and saturates.

    It keeps rising in ``plateau`` too: training reward going up while the
    eval stalls is the overfitting signature the monitor should expose.
    """
    return env.reward_start + env.reward_gain * (1.0 - math.exp(-max(0.0, version) / 30.0))


def worker_speed(scenario: Scenario, index: int, t: float) -> float:
    """Fraction of its normal decode speed worker ``index`` runs at, at its simulated time ``t``."""
    if scenario.straggler_index == index and t >= scenario.straggler_after_s:
        return scenario.straggler_factor
    return 1.0


def pickup_delay(rng: random.Random, spec: RunSpec, speed: float) -> float:
    """Simulated seconds before a worker samples with a newly synced policy (slow workers drain slowly)."""
    return rng.uniform(*spec.pickup_s) / max(speed, 1e-3)


def sample_rollout(rng: random.Random, env: Env, spec: RunSpec, *, version: float, speed: float = 1.0) -> Rollout:
    """One episode: length, wall time, reward and outcome."""
    tokens = int(_lognormal(rng, env.median_tokens, env.tokens_sigma)) + 16
    truncated = tokens >= env.max_tokens
    tokens = min(tokens, env.max_tokens)
    seconds = tokens / (spec.decode_tokens_per_s * max(speed, 1e-3)) + env.overhead_s * rng.uniform(0.5, 1.5)
    if rng.random() < 0.005:
        return Rollout(env.name, tokens, seconds, None, "error")
    if truncated:
        return Rollout(env.name, tokens, seconds, 0.0, "truncated")
    mean = reward_mean(env, version)
    if rng.random() < 0.02:  # malformed answer: format penalty
        reward = -0.5
    elif env.binary:
        reward = 1.0 if rng.random() < mean else 0.0
    else:
        reward = min(1.0, max(0.0, rng.gauss(mean, 0.2)))
    return Rollout(env.name, tokens, seconds, reward, "ok")


# --- eval ----------------------------------------------------------------------------------------------------

def score_mean(spec: RunSpec, scenario: Scenario, useful_spend: float) -> float:
    """Expected eval score after ``useful_spend`` dollars of training progress: a saturating curve.

    In ``plateau`` the curve stops at ``plateau_spend`` and slides gently
    after it, so the last few evals' slope against spend is at or below zero.
    """
    def curve(x: float) -> float:
        return spec.score_start + spec.score_gain * (1.0 - math.exp(-max(0.0, x) / spec.score_scale_dollars))

    knee = scenario.plateau_spend
    if knee is not None and useful_spend > knee:
        slid = curve(knee) - scenario.plateau_slide_per_dollar * (useful_spend - knee)
        return max(min(scenario.plateau_floor, curve(knee)), slid)
    return curve(useful_spend)


def eval_score(seed: int, index: int, spec: RunSpec, scenario: Scenario, useful_spend: float) -> float:
    """The score eval number ``index`` reports: fraction correct out of ``spec.eval_samples``.

    Binomial noise (normal approximation) shrinks as 1/sqrt(samples); the
    draw depends only on (seed, index), so a replay reports the same scores.
    """
    p = min(1.0, max(0.0, score_mean(spec, scenario, useful_spend)))
    n = spec.eval_samples
    rng = seeded_rng(seed, "eval-noise", index)
    noisy = p + rng.gauss(0.0, math.sqrt(max(p * (1.0 - p), 1e-6) / n))
    return round(min(1.0, max(0.0, noisy)) * n) / n
