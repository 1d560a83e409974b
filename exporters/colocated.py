"""One process that trains, generates and evaluates: three roles, one registry, GPUs counted once.

Colocated setups (TRL's GRPOTrainer, verl's hybrid engine, a bridge fed by a
single driver) run the trainer, the rollouts and the evals on the same GPUs.
Three exporters each holding ``gpus=8`` would bill them three times, so here
the trainer role holds every GPU and the rollout and eval roles hold none:
spend is right, and ``spend_by_role`` puts it all on the trainer (the GPUs
cannot be split by role when the roles share them). ``set_gpus`` moves the
one count.

The target this registry is served on reads as the trainer (``posttrain_run_info``
has one series per role, trainer first); its rollouts still get a worker row.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry

from ptmon.exporters import _defaults
from ptmon.exporters.cost import Clock
from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.schema import ROLE_TRAINER
from ptmon.exporters.trainer import TrainerExporter

__all__ = ["Colocated"]


class Colocated:
    """``.trainer``, ``.rollouts`` and ``.evals`` on one ``.registry``; identity and cost as for any exporter."""

    def __init__(self, *, run: str | None = None, model: str | None = None, algorithm: str | None = None,
                 gpus: float | None = None, gpu_hour_price: float | None = None,
                 registry: CollectorRegistry | None = None, clock: Clock = time.monotonic,
                 wall_clock: Clock = time.time) -> None:
        self.registry = CollectorRegistry() if registry is None else registry
        # Resolved once, so the three roles share one run name and one price.
        run = _defaults.resolve_run(run)
        price = _defaults.resolve_price(gpu_hour_price)
        held = _defaults.resolve_gpus(gpus, role=ROLE_TRAINER)
        self.trainer = TrainerExporter(run=run, model=model, algorithm=algorithm, gpus=held, gpu_hour_price=price,
                                       registry=self.registry, clock=clock, wall_clock=wall_clock)
        self.rollouts = RolloutExporter(run=run, model=model, algorithm=algorithm, gpus=0, gpu_hour_price=price,
                                        registry=self.registry, clock=clock)
        self.evals = EvalExporter(run=run, model=model, algorithm=algorithm, gpus=0, gpu_hour_price=price,
                                  registry=self.registry, clock=clock)

    @property
    def gpus(self) -> float:
        return self.trainer.gpus

    def set_gpus(self, n: float) -> None:
        """Change the process's GPU count (banked as for any exporter); never raises."""
        self.trainer.set_gpus(n)
