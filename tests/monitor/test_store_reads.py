"""Storing only what is read (``Store(keep=reads.is_read)``) changes nothing anything shows.

The same scrapes go into a store that keeps every series' history and one
that keeps history only of ``reads.READ_NAMES``; every Dashboard and every
target's detail built over them must be the same. A section that starts to
read a name outside the contract's spellings fails here, on the demo's own
exporters and on the real engine captures alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from ptmon.exporters import schema
from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor.build import build_dashboard
from ptmon.monitor.detail import build_detail
from ptmon.monitor.parse import ExpositionParser, Sample
from ptmon.monitor.reads import READ_NAMES, is_read, spellings
from ptmon.monitor.settings import Settings
from ptmon.monitor.store import Store
from tests.support.clock import FakeClock

T0 = 1_000_000.0
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exposition"
# The third-party corpus beside the checkout (../shared/corpus), where there is one.
CORPUS = next((d for p in Path(__file__).resolve().parents[2:]
               if (d := p / "shared" / "corpus" / "third-party").is_dir()), FIXTURES / "none")

Page = Callable[[int], str]


def _loop_pages(clock: FakeClock) -> dict[str, Page]:
    """A trainer, two rollout workers and an eval job on real exporters, moving with ``clock``."""
    trainer = TrainerExporter(run="r", model="m", algorithm="grpo", gpus=8, gpu_hour_price=3.0, clock=clock,
                              wall_clock=clock)
    workers = [RolloutExporter(run="r", model="m", algorithm="grpo", gpus=1, gpu_hour_price=3.0, clock=clock)
               for _ in range(2)]
    evals = EvalExporter(run="r", model="m", algorithm="grpo", gpus=1, clock=clock)
    # What a real process serves beside the contract: nothing reads these.
    extra = CollectorRegistry()
    other = Counter("app_requests", "Unread.", ["path"], registry=extra)
    temp = Gauge("app_temperature", "Unread.", registry=extra)

    def trainer_page(k: int) -> str:
        trainer.record_step(seconds=2.0 + k % 3, tokens=1000.0 * (k + 1))
        if k % 4 == 3:
            trainer.record_weight_sync(seconds=0.5 + 0.1 * k, nbytes=1e9, version=k // 4 + 1)
        return generate_latest(trainer.registry).decode()

    def worker_page(w: RolloutExporter, i: int) -> Page:
        def page(k: int) -> str:
            w.set_policy_version(k // 4)
            for env in ("math", "code"):
                w.record_rollout(env=env, tokens=100 * (k + i + 1), reward=0.1 * (k % 7) - 0.2,
                                 seconds=1.0 + 0.5 * i)
            if k % 5 == 2:
                w.record_rollout(env="math", tokens=10, outcome=schema.OUTCOME_ERROR)
            other.labels(path=f"/p{k % 3}").inc()
            temp.set(40 + k % 5)
            return generate_latest(w.registry).decode() + generate_latest(extra).decode()
        return page

    def eval_page(k: int) -> str:
        if k % 6 == 0:
            evals.record_eval(benchmark="gsm8k", score=0.3 + 0.01 * k, policy_version=k // 4)
        return generate_latest(evals.registry).decode()

    pages: dict[str, Page] = {"trainer": trainer_page, "eval": eval_page}
    pages.update({f"w{i}": worker_page(w, i) for i, w in enumerate(workers)})
    return pages


def _static_page(path: Path) -> Page:
    """A capture, its values moving from scrape to scrape (counters grow, gauges wander)."""
    samples = ExpositionParser().parse(path.read_text(encoding="utf-8", errors="replace"))

    def page(k: int) -> str:
        lines = []
        for s in samples:
            labels = ",".join(f'{key}="{_escape(v)}"' for key, v in s.labels.items())
            value = s.value * (1 + 0.01 * k) + k if math.isfinite(s.value) else s.value
            lines.append(f"{s.name}{{{labels}}} {value!r}")
        return "\n".join(lines) + "\n"
    return page


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _captures() -> Iterator[Path]:
    yield from sorted(FIXTURES.glob("*.prom"))
    if CORPUS.is_dir():
        yield from sorted(CORPUS.glob("*.prom"))


def _fill(pages: dict[str, Page], clock: FakeClock, *, scrapes: int) -> tuple[Store, Store, int]:
    """Both stores fed the same parsed scrapes; also how many samples were of unread names."""
    full, kept = Store(capacity=64), Store(capacity=64, keep=is_read)
    parsers = {name: ExpositionParser() for name in pages}
    unread = 0
    for k in range(scrapes):
        clock.t = T0 + 10.0 * k
        for name, page in pages.items():
            samples: list[Sample] = parsers[name].parse(page(k))
            unread += sum(1 for s in samples if not is_read(s.name))
            full.ingest(name, clock.t, samples)
            kept.ingest(name, clock.t, samples)
    return full, kept, unread


def _assert_same_views(full: Store, kept: Store, now: float) -> None:
    settings = Settings()
    for window in (60.0, 300.0, 3600.0):
        assert repr(build_dashboard(kept, (), settings, now=now, window_s=window)) == \
            repr(build_dashboard(full, (), settings, now=now, window_s=window))
        for target in full.targets():
            assert repr(build_detail(kept, (), settings, name=target, now=now, window_s=window)) == \
                repr(build_detail(full, (), settings, name=target, now=now, window_s=window))
        assert [kept.series_count(t) for t in full.targets()] == [full.series_count(t) for t in full.targets()]
        assert [sorted(kept.names(t)) for t in full.targets()] == [sorted(full.names(t)) for t in full.targets()]


def test_the_loop_shows_the_same_with_only_what_is_read_stored() -> None:
    clock = FakeClock(T0)
    full, kept, unread = _fill(_loop_pages(clock), clock, scrapes=40)
    assert unread > 0  # the unread series are really there, and really not kept
    assert _points(kept) < _points(full)
    _assert_same_views(full, kept, clock.t)


@pytest.mark.parametrize("path", list(_captures()), ids=lambda p: p.name)
def test_each_capture_shows_the_same_with_only_what_is_read_stored(path: Path) -> None:
    clock = FakeClock(T0)
    full, kept, _ = _fill({"t": _static_page(path)}, clock, scrapes=12)
    _assert_same_views(full, kept, clock.t)


def _points(store: Store) -> int:
    return sum(len(s) for t in store.targets() for n in store.names(t) for s in store.series(t, n))


def test_an_unread_series_keeps_its_latest_point_only() -> None:
    store = Store(keep=is_read)
    for k in range(5):
        store.ingest("t", T0 + k, [Sample("app_requests_total", {}, float(k)),
                                   Sample(schema.TRAINER_STEPS.name, {}, float(k))])
    (unread,) = store.series("t", "app_requests_total")
    (read,) = store.series("t", schema.TRAINER_STEPS.name)
    assert (len(unread), unread.last(), unread.points()) == (1, (T0 + 4, 4.0), [(T0 + 4, 4.0)])
    assert len(read) == 5
    assert store.series_count("t") == 2
    assert not unread.append(T0 + 4, 9.0)  # the same time refused, as a full series refuses it


def test_every_spelling_of_every_contract_metric_is_read() -> None:
    for spec in (schema.ROLLOUTS, schema.WEIGHT_SYNC_SECONDS, schema.VLLM_GENERATION_TOKENS, schema.DCGM_GPU_UTIL):
        assert set(spellings(spec)) <= READ_NAMES
    assert {"posttrain_rollouts_total", "posttrain_rollouts", "posttrain_weight_sync_seconds_bucket",
            "ray_vllm_generation_tokens_total", "vllm_generation_tokens", "posttrain_run_info_info",
            "posttrain_trainer_steps_created"} <= READ_NAMES
    assert not is_read("python_gc_objects_collected_total")
    assert not is_read("vllm:time_to_first_token_seconds_bucket")
