"""Each scenario, run headless at high speed, keeps its promise over real HTTP.

A real Fleet (trainer, two workers, eval as OS processes on loopback ports)
is scraped every 0.2 s and every page parsed with monitor.parse; each test
polls until what its scenario promises is seen (or a generous deadline
passes), so a fast machine finishes in a few seconds and a loaded one
still passes.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from demo.launcher import DemoOptions, Fleet
from exporters import schema
from monitor.parse import Sample, parse

SPEED = 300.0
DEADLINE_S = 25.0


@dataclass
class Scrape:
    t: float
    pages: dict[str, list[Sample] | None]  # endpoint name -> samples, None when it did not answer

    def value(self, name: str, metric: str, **labels: str) -> float | None:
        """Sum of ``metric`` samples with ``labels`` on endpoint ``name`` (None: down or absent)."""
        samples = self.pages.get(name)
        if samples is None:
            return None
        found = [s.value for s in samples if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())]
        return sum(found) if found else None


@dataclass
class Probe:
    fleet: Fleet
    scrapes: list[Scrape] = field(default_factory=list)

    async def run_until(self, done: Callable[[list[Scrape]], bool], *, timeout_s: float = DEADLINE_S) -> bool:
        deadline = time.monotonic() + timeout_s
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                endpoints = self.fleet.endpoints
                pages = await asyncio.gather(*(self._get(client, e.url) for e in endpoints))
                self.scrapes.append(Scrape(time.time(), {e.name: p for e, p in zip(endpoints, pages)}))
                if done(self.scrapes):
                    return True
                await asyncio.sleep(0.2)
        return False

    @staticmethod
    async def _get(client: httpx.AsyncClient, url: str) -> list[Sample] | None:
        try:
            response = await client.get(url)
            response.raise_for_status()
        except httpx.HTTPError:
            return None
        return parse(response.text)


@pytest.fixture
def run(request: pytest.FixtureRequest) -> Iterator[Probe]:
    fleet = Fleet(DemoOptions(scenario=request.param, speed=SPEED, workers=2, headless=True))
    try:
        fleet.start()
        yield Probe(fleet)
    finally:
        fleet.stop()
        assert fleet.live_pids() == []


def _series(scrapes: list[Scrape], name: str, metric: str, **labels: str) -> list[float]:
    return [v for s in scrapes if (v := s.value(name, metric, **labels)) is not None]


def _staleness(scrape: Scrape, worker: str) -> float | None:
    trainer = scrape.value("trainer", schema.POLICY_VERSION.name)
    mine = scrape.value(worker, schema.ROLLOUT_POLICY_VERSION.name)
    return None if trainer is None or mine is None else trainer - mine


@pytest.mark.parametrize("run", ["healthy"], indirect=True)
async def test_healthy_everything_moves_and_staleness_rises_and_falls(run: Probe) -> None:
    def done(scrapes: list[Scrape]) -> bool:
        stale = [x for s in scrapes for w in ("rollout-0", "rollout-1") if (x := _staleness(s, w)) is not None]
        rises = any(b > a for a, b in zip(stale, stale[1:]))
        falls = any(b < a for a, b in zip(stale, stale[1:]))
        return rises and falls and len(_series(scrapes, "eval", schema.EVAL_SCORE.name)) > 0 \
            and len(scrapes) >= 10

    assert await run.run_until(done), "staleness never both rose and fell, or no eval landed"
    first, last = run.scrapes[0], run.scrapes[-1]
    for worker in ("rollout-0", "rollout-1"):
        assert last.value(worker, schema.ROLLOUTS.name) > first.value(worker, schema.ROLLOUTS.name)
    assert last.value("trainer", schema.TRAINER_STEPS.name) > first.value("trainer", schema.TRAINER_STEPS.name)
    assert last.value("trainer", schema.WEIGHT_SYNC_SECONDS.count) > 0
    # The compressed clock: GPU-seconds grow at gpus x speed per real second, so spend is simulated time.
    dt = last.t - first.t
    grown = last.value("trainer", schema.GPU_SECONDS.name) - first.value("trainer", schema.GPU_SECONDS.name)
    assert grown / (8 * dt) == pytest.approx(SPEED, rel=0.3)
    # Durations are simulated too: a sync takes ~2 simulated seconds whatever the speed.
    syncs = last.value("trainer", schema.WEIGHT_SYNC_SECONDS.count)
    mean_sync = last.value("trainer", schema.WEIGHT_SYNC_SECONDS.sum) / syncs
    assert 1.0 < mean_sync < 10.0


@pytest.mark.parametrize("run", ["slow-sync"], indirect=True)
async def test_slow_sync_latency_climbs(run: Probe) -> None:
    def recent_mean(scrapes: list[Scrape], back: int) -> float | None:
        count = _series(scrapes, "trainer", schema.WEIGHT_SYNC_SECONDS.count)
        total = _series(scrapes, "trainer", schema.WEIGHT_SYNC_SECONDS.sum)
        if len(count) <= back or count[-1] == count[-1 - back]:
            return None
        return (total[-1] - total[-1 - back]) / (count[-1] - count[-1 - back])

    def done(scrapes: list[Scrape]) -> bool:
        latest = recent_mean(scrapes, 5)
        return latest is not None and latest > 30.0  # past the monitor's warn threshold

    assert await run.run_until(done), "sync latency never passed 30 s"
    counts = _series(run.scrapes, "trainer", schema.WEIGHT_SYNC_SECONDS.count)
    sums = _series(run.scrapes, "trainer", schema.WEIGHT_SYNC_SECONDS.sum)
    first = next(s / c for s, c in zip(sums, counts) if c > 0)
    assert first < 10.0  # it started healthy


@pytest.mark.parametrize("run", ["straggler"], indirect=True)
async def test_straggler_crawls_goes_stale_and_drops_rollouts(run: Probe) -> None:
    def done(scrapes: list[Scrape]) -> bool:
        dropped = scrapes[-1].value("rollout-1", schema.ROLLOUTS.name, outcome="dropped_stale") or 0
        stale = [x for s in scrapes if (x := _staleness(s, "rollout-1")) is not None]
        return dropped > 0 and max(stale, default=0) >= 3 and len(scrapes) >= 15

    assert await run.run_until(done), "the straggler never went 3 versions stale with dropped rollouts"
    late = run.scrapes[-10:]
    def gained(worker: str) -> float:
        return late[-1].value(worker, schema.ROLLOUTS.name) - late[0].value(worker, schema.ROLLOUTS.name)
    assert gained("rollout-1") < 0.2 * gained("rollout-0")
    assert max(_staleness(s, "rollout-0") for s in late) <= 2


@pytest.mark.parametrize("run", ["plateau"], indirect=True)
async def test_plateau_eval_stops_improving(run: Probe) -> None:
    def evals(scrapes: list[Scrape]) -> list[tuple[float, float]]:
        seen: dict[float, float] = {}
        for s in scrapes:
            version = s.value("eval", schema.EVAL_POLICY_VERSION.name)
            score = s.value("eval", schema.EVAL_SCORE.name)
            if version is not None and score is not None:
                seen.setdefault(version, score)
        return sorted(seen.items())

    def slope(points: list[tuple[float, float]]) -> float:
        xs, ys = zip(*points)
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)

    def done(scrapes: list[Scrape]) -> bool:
        points = evals(scrapes)
        return len(points) >= 6 and slope(points[-5:]) <= 0  # what the marginal-IPD alert reads

    assert await run.run_until(done), f"the last 5 evals kept improving: {evals(run.scrapes)}"
    scores = [score for _, score in evals(run.scrapes)]
    assert scores[-1] < max(scores)


@pytest.mark.parametrize("run", ["crash"], indirect=True)
async def test_crash_worker_goes_down_and_returns_on_the_same_port_with_reset_counters(run: Probe) -> None:
    port = {e.name: e.port for e in run.fleet.endpoints}["rollout-1"]

    def done(scrapes: list[Scrape]) -> bool:
        states = [s.pages["rollout-1"] is not None for s in scrapes]
        return any(not up for up in states) and states[-1] and states.index(False) < len(states) - 3

    assert await run.run_until(done), "rollout-1 never went down and came back"
    assert {e.name: e.port for e in run.fleet.endpoints}["rollout-1"] == port
    assert len(run.fleet.pids()) == len(run.fleet.endpoints) + 1  # one restart, a new process
    down = next(i for i, s in enumerate(run.scrapes) if s.pages["rollout-1"] is None)
    before = run.scrapes[down - 1].value("rollout-1", schema.ROLLOUTS.name)
    after = run.scrapes[-1].value("rollout-1", schema.ROLLOUTS.name)
    assert after < before  # a new process: the counter restarted from zero
    assert run.scrapes[-1].value("rollout-0", schema.ROLLOUTS.name) > run.scrapes[down].value(
        "rollout-0", schema.ROLLOUTS.name)  # the others kept going
