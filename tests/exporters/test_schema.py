"""exporters.schema: derived sample names match what prometheus_client really exposes."""

from __future__ import annotations

from ptmon.exporters import EvalExporter, RolloutExporter, TrainerExporter, schema
from tests.exporters.helpers import exporter


def exposed_names() -> set[str]:
    """Every sample name the three real exporters expose once each has recorded something."""
    trainer = exporter(TrainerExporter)
    with trainer.step():
        pass
    with trainer.weight_sync(version=1, nbytes=1):
        pass
    trainer.record_dropped(1, reason="stale")
    rollout = exporter(RolloutExporter)
    rollout.record_rollout(env="math", tokens=1, reward=1.0, seconds=1.0)
    evals = exporter(EvalExporter)
    evals.record_eval(benchmark="b", score=0.5)
    return {s.name for e in (trainer, rollout, evals) for family in e.registry.collect() for s in family.samples}


def test_created_names_every_counter_and_histogram_as_exposed() -> None:
    names = exposed_names()
    stamped = [spec for spec in schema.CONTRACT if spec.kind in ("counter", "histogram")]
    # GPU-seconds come from a custom collector (exact at scrape time), which exposes no _created.
    expected = {spec.created for spec in stamped} - {schema.GPU_SECONDS.created}
    assert len(expected) == len(stamped) - 1
    assert {n for n in names if n.endswith("_created")} == expected  # every one, and no other
    assert schema.TRAINER_STEPS.created == "posttrain_trainer_steps_created"  # _total dropped
    assert schema.WEIGHT_SYNC_SECONDS.created == "posttrain_weight_sync_seconds_created"
