"""Framework bridges: a framework's own per-step metrics, mapped onto ptmon's exporters.

``MetricsBridge(framework, *, trainer=None, rollouts=None, evals=None)`` with
``.log(metrics, step=None)``; ``framework`` is one of ``FRAMEWORKS``
(prime-rl, verl, nemo-rl, openrlhf, trl, skyrl, slime, areal, roll, or
auto). Each framework's map is data, one table per framework in
``ptmon.exporters.bridges.tables``, every key citing the file of the
framework's repository that emits it. TRL also has a callback:
``from ptmon.exporters.bridges.trl import PtmonCallback``.
"""

from ptmon.exporters.bridges._bridge import AUTO, FRAMEWORKS, MetricsBridge
from ptmon.exporters.bridges._detect import detect
from ptmon.exporters.bridges._table import Key, Table
from ptmon.exporters.bridges.tables import TABLES

__all__ = ["MetricsBridge", "FRAMEWORKS", "AUTO", "TABLES", "Table", "Key", "detect"]
