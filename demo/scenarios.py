"""The demo's scenarios: what goes wrong, when, and what to look for on screen.

A scenario is plain data read by the pure models in ``ptmon.demo.model``; the
processes never branch on a scenario's name. Times are *simulated* seconds
(``--speed`` compresses them), so a scenario unfolds the same way whatever
the speed, only faster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Scenario", "SCENARIOS", "SCENARIO_NAMES", "DEFAULT_SCENARIO", "get_scenario"]


@dataclass(frozen=True, slots=True)
class Scenario:
    """Knobs of one scenario; ``None`` means the fault is absent."""

    name: str
    summary: str  # one line: what happens
    look_for: str  # one line: where it shows on screen
    # slow-sync: sync latency doubles every this many simulated seconds (capped by sync_slowdown_max).
    sync_doubling_s: float | None = None
    sync_slowdown_max: float = 1.0
    sync_failure_p: float = 0.01  # chance a sync fails (counted, retried at the next sync point)
    # straggler: this worker slows to straggler_factor of its speed from straggler_after_s on.
    straggler_index: int | None = None
    straggler_after_s: float = 0.0
    straggler_factor: float = 1.0
    # plateau: the eval curve stops at plateau_spend (dollars of useful training) and then slides.
    plateau_spend: float | None = None
    plateau_slide_per_dollar: float = 0.0
    plateau_floor: float = 0.0  # the slide stops here (a long demo stays on screen)
    # crash: this worker dies every crash_every_s of its life and stays down crash_down_s.
    crash_index: int | None = None
    crash_every_s: float = 0.0
    crash_down_s: float = 0.0


HEALTHY = Scenario(
    name="healthy",
    summary="an async GRPO run that is working: rollouts flow, syncs take ~2 s, the eval climbs",
    look_for="rollouts/s and tokens/s steady, staleness flickering between 0 and 1, "
    "intelligence per dollar positive and slowly falling as the curve saturates",
)
SLOW_SYNC = Scenario(
    name="slow-sync",
    summary="weight-sync latency doubles every 5 simulated minutes (a congested or misrouted link)",
    look_for="weight-sync p50/p99 climbing past the warn (30 s) then critical (120 s) thresholds, "
    "steps/s falling as the trainer waits on syncs, intelligence per dollar dropping",
    sync_doubling_s=300.0,
    sync_slowdown_max=120.0,
    sync_failure_p=0.03,
)
STRAGGLER = Scenario(
    name="straggler",
    summary="rollout-1 slows to 3% of its speed after 4 simulated minutes (a throttled GPU)",
    look_for="one worker row with a tiny rollouts/s, its staleness growing, "
    "and its late rollouts counted as dropped_stale",
    straggler_index=1,
    straggler_after_s=240.0,
    straggler_factor=0.03,
)
PLATEAU = Scenario(
    name="plateau",
    summary="the eval score stops improving early and then slides (entropy collapse)",
    look_for="the eval curve flattening, marginal intelligence per dollar at or below zero "
    "and its alert firing while spend keeps growing",
    plateau_spend=3.0,
    plateau_slide_per_dollar=0.004,
    plateau_floor=0.20,
)
CRASH = Scenario(
    name="crash",
    summary="rollout-1 crashes 10 simulated minutes into each life and comes back 3 minutes later on the same port",
    look_for="the target going down (red) then up again, its counters restarting from zero "
    "without a negative rate, the rollout rate dipping while it is gone",
    crash_index=1,
    crash_every_s=600.0,
    crash_down_s=180.0,
)

SCENARIOS: Mapping[str, Scenario] = MappingProxyType(
    {s.name: s for s in (HEALTHY, SLOW_SYNC, STRAGGLER, PLATEAU, CRASH)}
)
SCENARIO_NAMES: tuple[str, ...] = tuple(SCENARIOS)
DEFAULT_SCENARIO = HEALTHY.name


def get_scenario(name: str) -> Scenario:
    """The scenario called ``name``; a clear error listing the known ones otherwise."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIO_NAMES)}") from None
