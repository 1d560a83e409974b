"""Zero code, from endpoints: training loops that serve their own state, read as a trainer (issue 15).

The stand-ins are real prometheus_client registries served over loopback HTTP and scraped by a real
LiveFeed, with exactly the names the frameworks' sources register (spelled here as the sources spell
them, so a drift in ptmon's schema fails these tests):

- prime-rl's trainer ``/metrics``: PrimeIntellect-ai/prime-rl, src/prime_rl/utils/metrics_server.py:88-105
  (the eleven gauges), updated once per step by ``MetricsServer.update`` (:151-176);
- SkyRL's loop gauges behind Ray's metrics agent (``ray_`` prefix): NovaSky-AI/SkyRL,
  skyrl/train/utils/metrics.py (``skyrl_training_phase{phase}``, PHASES), skyrl/train/fully_async_trainer.py
  (``skyrl_gen_buffer_maxsize`` :350, ``skyrl_gen_buffer_qsize`` :531, ``sync_weights`` phase :597);
- verl's RL-Insight gauges: volcengine/verl, verl/utils/tracking.py (RLInsightLogger.log: each per-step key
  with "/" replaced by "_") under RL-Insight's namespace ``rl_insight_monitor`` (verl-project/rl-insight,
  rl_insight/utils/constants.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry, Gauge

from ptmon.exporters.serve import serve
from ptmon.monitor.dashboard import Dashboard
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.roles import detect_role
from ptmon.monitor.settings import Settings, Target, Thresholds
from ptmon.monitor.widgets.cards import card_rows
from tests.monitor.helpers import T0, Clock

STEP_S = 10.0

PRIME_RL_GAUGES = (
    "trainer_step", "trainer_loss", "trainer_throughput_tokens_per_sec", "trainer_last_step_timestamp_seconds",
    "trainer_grad_norm", "trainer_peak_memory_gib", "trainer_learning_rate", "trainer_mfu_percent",
    "trainer_entropy", "trainer_mismatch_kl", "trainer_kl_ent_ratio",
)
SKYRL_PHASES = ("wait_for_generation_buffer", "convert_to_training_input", "run_training", "sync_weights", "eval",
                "save_checkpoints", "save_hf_model")


async def scrape_stand_in(registry: CollectorRegistry, tick: Callable[[int, float], None], *, steps: int,
                          after_s: float = 0.0) -> Dashboard:
    """Scrape at T0, then ``steps`` times ``STEP_S`` apart call ``tick(i, now)`` and scrape; then ``after_s``
    later scrape once more (no step) and build the Dashboard over the whole run."""
    clock = Clock(T0)
    server = serve(registry)
    feed = LiveFeed(Settings(targets=(Target(name="loop", url=server.url),), interval_s=STEP_S, timeout_s=2.0),
                    clock=clock)
    try:
        await feed.collect_once()
        for i in range(1, steps + 1):
            clock.t = T0 + STEP_S * i
            tick(i, clock.t)
            await feed.collect_once()
        if after_s:
            clock.t += after_s
            await feed.collect_once()
        return await feed.dashboard(window_s=STEP_S * (steps + 1))
    finally:
        await feed.aclose()
        server.close()


def prime_rl_trainer() -> tuple[CollectorRegistry, Callable[[int, float], None]]:
    """prime-rl's MetricsServer registry, updated as ``MetricsServer.update`` does after each step."""
    registry = CollectorRegistry()
    g = {name: Gauge(name, name, registry=registry) for name in PRIME_RL_GAUGES}

    def tick(step: int, now: float) -> None:
        g["trainer_step"].set(step)
        g["trainer_loss"].set(0.5 / step)
        g["trainer_throughput_tokens_per_sec"].set(1000.0)
        g["trainer_grad_norm"].set(1.5)
        g["trainer_peak_memory_gib"].set(10.0)
        g["trainer_learning_rate"].set(1e-4)
        g["trainer_mfu_percent"].set(10.0)
        g["trainer_entropy"].set(0.25)
        g["trainer_mismatch_kl"].set(0.05)
        g["trainer_kl_ent_ratio"].set(0.2)
        g["trainer_last_step_timestamp_seconds"].set(now)
    return registry, tick


async def test_prime_rl_trainer_endpoint_reads_as_a_trainer_with_steps_and_last_step_age() -> None:
    registry, tick = prime_rl_trainer()
    d = await scrape_stand_in(registry, tick, steps=6, after_s=4.0)
    (target,) = d.targets
    assert target.role == "trainer"
    assert target.recognised is True
    assert d.steps_per_s == pytest.approx(6 / (6 * STEP_S + 4.0))  # six steps over the 64 s scraped
    assert d.seconds_since_last_step == pytest.approx(4.0)
    assert d.loss == pytest.approx(0.5 / 6)
    assert (d.grad_norm, d.learning_rate, d.entropy) == pytest.approx((1.5, 1e-4, 0.25))
    assert d.kl is None  # prime-rl's mismatch KL is to the inference policy, not the reference: not ptmon's kl
    rows = dict((str(k), str(v)) for k, v in card_rows("trainer", d, Thresholds()))
    assert rows["steps"] == "0.09/s"
    assert rows["last step"] == "4s ago"
    assert rows["loss"] == "0.08"


async def test_a_restarted_prime_rl_trainer_counts_steps_from_its_checkpoint_not_from_zero() -> None:
    registry, tick = prime_rl_trainer()

    def resumed(i: int, now: float) -> None:
        tick(i if i <= 3 else i - 2, now)  # steps 1, 2, 3, then back to 2 (resumed from a checkpoint), 3, 4, 5

    d = await scrape_stand_in(registry, resumed, steps=7)
    assert d.steps_per_s == pytest.approx(1 / STEP_S)  # the slope since the restart; never a negative rate


def skyrl_ray_agent() -> tuple[CollectorRegistry, Gauge, Gauge]:
    """What Ray's agent serves of SkyRL's loop gauges: its own tags beside the phase, every phase seeded at 0."""
    registry = CollectorRegistry()
    tags = ("Component", "SessionName", "phase")
    phase = Gauge("ray_skyrl_training_phase", "1.0 while the trainer is in this macro-phase, 0.0 otherwise.", tags,
                  registry=registry)
    for name in SKYRL_PHASES:
        phase.labels(Component="core_worker", SessionName="session_1", phase=name).set(0.0)
    qsize = Gauge("ray_skyrl_gen_buffer_qsize", "Completed generation groups buffered at step start.",
                  tags[:2], registry=registry)
    maxsize = Gauge("ray_skyrl_gen_buffer_maxsize", "Staleness-bounded generation-buffer capacity.", tags[:2],
                    registry=registry)
    maxsize.labels(Component="core_worker", SessionName="session_1").set(8)
    return registry, phase, qsize


async def test_skyrl_ray_gauges_read_as_a_loop_in_its_sync_weights_phase_with_its_buffer() -> None:
    registry, phase, qsize = skyrl_ray_agent()
    order = ("wait_for_generation_buffer", "run_training", "sync_weights")

    def tick(i: int, now: float) -> None:
        qsize.labels(Component="core_worker", SessionName="session_1").set(i)
        for name in order:  # as TrainingPhaseGauge.phase does around each block
            phase.labels(Component="core_worker", SessionName="session_1", phase=name).set(
                1.0 if name == order[i - 1] else 0.0)

    d = await scrape_stand_in(registry, tick, steps=3)
    (target,) = d.targets
    assert target.role == "trainer"
    assert target.recognised is True
    assert d.trainer_phase == "sync_weights"
    assert (d.generation_buffer, d.generation_buffer_max) == (3.0, 8.0)
    rows = dict((str(k), str(v)) for k, v in card_rows("trainer", d, Thresholds()))
    assert rows["phase"] == "in sync_weights"
    assert rows["buffer"] == "3/8"


async def test_between_skyrl_phases_no_phase_is_shown() -> None:
    registry, _, _ = skyrl_ray_agent()
    d = await scrape_stand_in(registry, lambda i, now: None, steps=1)
    assert d.trainer_phase is None
    assert dict((str(k), str(v)) for k, v in card_rows("trainer", d, Thresholds()))["loss"] == "—"


async def test_verl_rl_insight_gauges_read_as_a_trainer_with_steps_step_time_and_sync() -> None:
    registry = CollectorRegistry()
    keys = ("training/global_step", "timing_s/step", "timing_s/update_weights", "actor/pg_loss", "actor/lr")
    g = {k: Gauge("rl_insight_monitor_" + k.replace("/", "_"), k, registry=registry) for k in keys}

    def tick(i: int, now: float) -> None:
        for k, v in {"training/global_step": i, "timing_s/step": 9.5, "timing_s/update_weights": 1.25,
                     "actor/pg_loss": 0.1 * i, "actor/lr": 1e-6}.items():
            g[k].set(v)

    d = await scrape_stand_in(registry, tick, steps=5, after_s=3.0)
    (target,) = d.targets
    assert target.role == "trainer"
    assert d.steps_per_s == pytest.approx(5 / (5 * STEP_S + 3.0))
    assert d.step_seconds == pytest.approx(9.5)
    assert d.weight_sync_last_s == pytest.approx(1.25)
    assert d.seconds_since_last_step == pytest.approx(3.0)  # the scrape that first saw step 5
    assert (d.loss, d.learning_rate) == pytest.approx((0.5, 1e-6))


def test_an_engine_behind_the_same_ray_agent_stays_an_engine() -> None:
    names = ("ray_skyrl_training_phase", "ray_vllm_num_requests_running")
    assert detect_role(configured=None, run_info_roles=(), names=names) == "engine"
    assert detect_role(configured=None, run_info_roles=(), names=names[:1]) == "trainer"
    assert detect_role(configured=None, run_info_roles=(), names=("trainer_step", "vllm:num_requests_running")) \
        == "trainer"


async def test_the_tui_shows_a_skyrl_loop_in_sync_weights_with_its_buffer() -> None:
    """On screen: the real app on a real LiveFeed scraping the stand-in over loopback."""
    from ptmon.monitor.app import PtmonApp
    from ptmon.monitor.config import load_settings
    from ptmon.monitor.widgets import Card
    from tests.monitor.screen import screen_text

    skyrl, phase, qsize = skyrl_ray_agent()
    for name in SKYRL_PHASES:
        phase.labels(Component="core_worker", SessionName="session_1", phase=name).set(
            1.0 if name == "sync_weights" else 0.0)
    qsize.labels(Component="core_worker", SessionName="session_1").set(5)
    with serve(skyrl) as sky_srv:
        app = PtmonApp(LiveFeed(load_settings(urls=[sky_srv.url], interval_s=0.2)), interval_s=0.2, window_s=60.0)
        async with app.run_test(size=(160, 48)) as pilot:
            card = app.query_one("#card-trainer", Card)
            for _ in range(600):  # up to 30 s: a loaded machine scrapes and paints late
                if any(str(k) == "phase" for k, _ in card.rows) and "in sync_weights" in screen_text(app):
                    break
                await pilot.pause(0.05)
            rows = {str(k): str(v) for k, v in card.rows}
            assert rows["phase"] == "in sync_weights"
            assert rows["buffer"] == "5/8"
            text = screen_text(app)
            assert "in sync_weights" in text and "5/8" in text
