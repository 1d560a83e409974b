"""A deterministic Feed and clock for the TUI tests: realistic Dashboards, no sockets.

Everything a FakeFeed shows is a pure function of its FakeClock and the few
things a test changes (a target killed, hostile strings switched on), so two
runs draw the same screen and snapshot tests can compare pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ptmon.monitor.alerts import evaluate
from ptmon.monitor.dashboard import Alert, Dashboard, EvalPoint, TargetHealth, WorkerRow
from ptmon.monitor.settings import Thresholds
from tests.support.clock import FakeClock

__all__ = ["FakeClock", "FakeFeed", "HOSTILE", "T0"]

T0 = 1_780_000_000.0  # a fixed "now" so screenshots don't depend on the wall clock
BURN_PER_S = 98.2 / 3600  # $/s: 8 H100s at about $12.3/GPU-hour
EVAL_EVERY_S = 600.0
SYNC_EVERY_S = 60.0
STEP_S = 4.8

# Strings a hostile or broken exporter might send: Rich markup and terminal control sequences.
HOSTILE = {
    "run": "[bold red]pwned[/]",
    "model": "\x1b]0;owned-title\x07model[/link]",
    "benchmark": "[blink]gsm8k[/blink]",
    "target": "[red]evil[/red]\x1b[2J",
    "url": "http://127.0.0.1:1/[bold]x[/bold]",
    "error": "\x1b[31mboom\x1b[0m [bold red]x[/]",
}




@dataclass
class FakeFeed:
    """Implements monitor.feed.Feed; records what the app asked of it."""

    clock: FakeClock = field(default_factory=lambda: FakeClock(T0))
    workers: int = 6
    run_age_s: float = 3 * 3600 + 12 * 60  # the run started this long before T0
    hostile: bool = False
    down: dict[str, float] = field(default_factory=dict)  # target name -> when it went down
    frozen: dict[str, float] = field(default_factory=dict)  # target name -> its last scrape (up, not scraped since)
    started: bool = False
    closed: bool = False
    intervals: list[float] = field(default_factory=list)
    windows: list[float] = field(default_factory=list)
    baseline_calls: int = 0
    baseline_at: float | None = None
    alerts: tuple[Alert, ...] = ()  # the last evaluation, so a firing alert keeps its "since"

    # the Feed protocol ---------------------------------------------------------------

    async def start(self) -> None:
        self.started = True

    async def dashboard(self, *, window_s: float) -> Dashboard:
        """Like LiveFeed: build the numbers, then the real alert rules over them."""
        self.windows.append(window_s)
        d = self.build(window_s=window_s)
        self.alerts = evaluate(d, Thresholds(), previous=self.alerts)
        return replace(d, alerts=self.alerts)

    def set_interval(self, interval_s: float) -> None:
        self.intervals.append(interval_s)

    def set_baseline_now(self) -> None:
        self.baseline_calls += 1
        self.baseline_at = self.clock()

    async def aclose(self) -> None:
        self.closed = True

    # what a test changes -----------------------------------------------------------------

    def kill(self, name: str) -> None:
        self.down.setdefault(name, self.clock())

    def revive(self, name: str) -> None:
        self.down.pop(name, None)
        self.frozen.pop(name, None)

    def freeze(self, name: str) -> None:
        """The target stays up but is not scraped again: its numbers grow old (a stuck scrape loop)."""
        self.frozen.setdefault(name, self.clock() - 0.4)

    # the numbers -------------------------------------------------------------------------

    @property
    def started_at(self) -> float:
        return T0 - self.run_age_s

    def target_names(self) -> list[str]:
        names = ["trainer"] + [f"rollout-{i}" for i in range(self.workers)] + ["eval"]
        if self.hostile:
            names[1] = HOSTILE["target"]
        return names

    def build(self, *, window_s: float) -> Dashboard:
        now = self.clock()
        age = now - self.started_at
        spend = age * BURN_PER_S
        version = math.floor(age / SYNC_EVERY_S)

        targets, workers = [], []
        for i, name in enumerate(self.target_names()):
            role = "trainer" if i == 0 else "eval" if name == "eval" else "rollout"
            url = f"http://127.0.0.1:{9100 + i}/metrics"
            if self.hostile and i == 1:
                url = HOSTILE["url"]
            dead_since = self.down.get(name)
            seen = self.frozen.get(name, now - 0.4)  # the last scrape, good while up
            error = None
            if dead_since is not None:
                error = HOSTILE["error"] if self.hostile else "ConnectError: [Errno 111] Connection refused"
            targets.append(
                TargetHealth(
                    name=name,
                    url=url,
                    role=role,
                    up=dead_since is None,
                    last_scrape=seen,
                    last_success=seen if dead_since is None else dead_since,
                    age_s=now - (seen if dead_since is None else dead_since),
                    scrape_seconds=0.0031 + 0.0007 * i if dead_since is None else None,
                    samples=212 + 17 * i if dead_since is None else 0,
                    series=212 + 17 * i,
                    error=error,
                )
            )
            if role == "rollout":
                k = i - 1
                lag = 3 if k == 3 else (1 if k % 2 else 0)
                alive = dead_since is None
                rate = (2.0 + 0.25 * k) * (1 + 0.05 * math.sin(now / 90 + k)) if alive else None
                workers.append(
                    WorkerRow(
                        name=name,
                        role="rollout",
                        up=alive,
                        rollouts_per_s=rate,
                        tokens_per_s=None if rate is None else rate * 540,
                        policy_version=float(version - lag) if alive else None,
                        staleness=float(lag) if alive else None,
                        mean_reward=0.41 + 0.03 * k if alive else None,
                        status="down" if not alive else "stale" if lag > 2 else "ok",
                    )
                )

        live_rates = [w.rollouts_per_s for w in workers if w.rollouts_per_s is not None]
        rate = sum(live_rates) if live_rates else None
        start = now - window_s
        step = max(window_s / 120, 1.0)
        n_live = len(live_rates)
        series = tuple(
            (t, (2.0 * n_live + 0.25 * n_live * (n_live - 1) / 2) * (1 + 0.08 * math.sin(t / 45)))
            for t in (start + step * j for j in range(int(window_s / step) + 1))
            if n_live
        )
        syncs = [math.floor(start / SYNC_EVERY_S) * SYNC_EVERY_S + SYNC_EVERY_S * j
                 for j in range(int(window_s // SYNC_EVERY_S) + 2)]
        syncs = [t for t in syncs if start <= t <= now]
        sync_series = tuple((t, 2.1 + 0.9 * math.sin(t / 170) ** 2 + (3.5 if int(t / SYNC_EVERY_S) % 7 == 0 else 0))
                            for t in syncs)
        latencies = sorted(v for _, v in sync_series)

        evals = []
        for k in range(int(age // EVAL_EVERY_S) + 1):
            t = self.started_at + k * EVAL_EVERY_S
            evals.append(EvalPoint(timestamp=t, spend_dollars=(t - self.started_at) * BURN_PER_S,
                                   score=0.552 + 0.21 * (1 - math.exp(-k / 9)), policy_version=float(k * 10)))
        base = evals[0]
        if self.baseline_at is not None:
            base = max((e for e in evals if e.timestamp <= self.baseline_at), key=lambda e: e.timestamp)
        last = evals[-1]
        ipd = (None if last.spend_dollars <= base.spend_dollars
               else (last.score - base.score) / (last.spend_dollars - base.spend_dollars) * 1000)
        recent = evals[-5:]
        marginal = None
        if len(recent) >= 2:
            marginal = ((recent[-1].score - recent[0].score)
                        / (recent[-1].spend_dollars - recent[0].spend_dollars) * 1000)

        last_step = now - (age % STEP_S)
        interval = self.intervals[-1] if self.intervals else 1.0
        stalenesses = [w.staleness for w in workers if w.staleness is not None]
        return Dashboard(
            now=now,
            window_s=window_s,
            interval_s=interval,
            stale_after_s=2 * interval + max(0.25, 0.8 * interval),  # like the build: 2 intervals + the timeout
            run=HOSTILE["run"] if self.hostile else "grpo-math-7b-r3",
            model=HOSTILE["model"] if self.hostile else "Qwen2.5-7B-Instruct",
            algorithm="grpo",
            started_at=self.started_at,
            targets=tuple(targets),
            workers=tuple(workers),
            rollout_rate_per_s=rate,
            rollout_tokens_per_s=None if rate is None else rate * 540,
            rollout_rate_median_10m=None if rate is None else rate / 1.12,
            rollout_error_rate_per_s=0.02 if rate else None,
            weight_sync_p50_s=latencies[len(latencies) // 2] if latencies else None,
            weight_sync_p99_s=latencies[-1] if latencies else None,
            weight_sync_last_s=sync_series[-1][1] if sync_series else None,
            weight_sync_max_s=latencies[-1] if latencies else None,
            weight_sync_count=float(len(sync_series)),
            weight_sync_bytes_per_s=15.2e9 / 2.4,
            weight_sync_failures=0.0,
            policy_version=float(version),
            staleness_max=max(stalenesses) if stalenesses else None,
            staleness_mean=sum(stalenesses) / len(stalenesses) if stalenesses else None,
            steps_per_s=1 / STEP_S,
            step_seconds=STEP_S,
            step_seconds_median=STEP_S,
            seconds_since_last_step=now - last_step,
            trainer_tokens_per_s=5400.0,
            loss=0.2113,
            spend_dollars=spend,
            spend_by_role=(("trainer", spend * 0.5), ("rollout", spend * 0.5)),
            burn_dollars_per_hour=BURN_PER_S * 3600,
            dollars_per_million_rollout_tokens=None if not rate else BURN_PER_S / (rate * 540) * 1e6,
            benchmark=HOSTILE["benchmark"] if self.hostile else "gsm8k",
            score=last.score,
            baseline_score=base.score,
            baseline_spend_dollars=base.spend_dollars,
            eval_samples=1319.0,
            ipd_points_per_kilodollar=ipd,
            marginal_ipd_points_per_kilodollar=marginal,
            dollars_per_next_point=None if not marginal or marginal <= 0 else 0.01 * 1000 / marginal,
            eval_curve=tuple(evals),
            rollout_rate_series=series,
            weight_sync_series=sync_series,
            sync_events=tuple(syncs),
        )
