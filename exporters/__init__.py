"""ptmon's exporters: instrument a post-training loop with a few lines.

Needs prometheus-client only. Every recording call is cheap (microseconds)
and never raises into the training loop for a metrics problem; bad values
are dropped and counted in ``posttrain_exporter_errors_total{call}``. The
metric contract (names, types, labels, buckets) is ``ptmon.exporters.schema``.
"""

from ptmon.exporters.colocated import Colocated
from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import MetricsServer, multiprocess_registry, serve
from ptmon.exporters.trainer import TrainerExporter

__all__ = [
    "TrainerExporter",
    "RolloutExporter",
    "EvalExporter",
    "Colocated",
    "serve",
    "MetricsServer",
    "multiprocess_registry",
]
