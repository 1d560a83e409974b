"""``MetricsBridge``: a framework's per-step metrics dict in, ptmon's exporters out.

Frameworks already measure step time, weight-sync time, staleness and
rewards, each under its own names (``ptmon.exporters.bridges.tables``). The
bridge looks each key of a logged dict up in the framework's table and makes
the matching exporter call. Rules:

- unknown keys are ignored; a known key whose value is not a finite number
  (None, NaN, a string, a tensor of many values) is dropped and counted in
  ``posttrain_exporter_errors_total{call="bridge_log"}``, never raised;
- dicts with the same step number are one step: frameworks that log one
  step in several dicts (prime-rl, NeMo RL) are joined, so a rate and the
  seconds it is per can come from different dicts; without a step number
  (none given, none in the dict) each dict is its own step;
- a step is counted once per step number; several keys mapping to one
  quantity in a step are averaged;
- rollouts are recorded once per step, when their count (logged, or
  ``rollouts_per_step=``), mean reward and tokens are all in, or when the
  step ends (the next step number arrives, or ``flush()``) with what is in;
- a weight sync publishes the step number as the policy version, to the
  trainer and (the sync is what the inference side loads) to the rollout
  exporter, so ptmon's own version-difference staleness is 0 after each sync;
  the framework's staleness of consumed samples is exported beside it, its
  ``source`` naming the framework.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from ptmon.exporters import _build
from ptmon.exporters._identity import as_number, process_metrics
from ptmon.exporters.bridges._detect import detect
from ptmon.exporters.bridges._table import Key, Table
from ptmon.exporters.bridges.tables import TABLES
from ptmon.exporters.colocated import Colocated
from ptmon.exporters.evals import EvalExporter
from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.schema import IDLE_REASONS
from ptmon.exporters.trainer import TrainerExporter

__all__ = ["MetricsBridge", "FRAMEWORKS", "AUTO"]

log = logging.getLogger("ptmon.exporters")

AUTO = "auto"
FRAMEWORKS: tuple[str, ...] = (*TABLES, AUTO)
_CALL = "bridge_log"
_SCALARS = ("loss", "kl", "entropy", "grad_norm", "learning_rate")
_ROLLOUT_PARTS = ("reward_mean", "rollout_tokens_mean", "rollout_tokens")


@dataclass
class _Step:
    """What one step number has brought so far."""

    number: int | None
    seen: dict[str, float] = field(default_factory=dict)  # normalised key -> value, for rates' ``over``
    done: set[str] = field(default_factory=set)  # keys already turned into calls (a rate, the step itself)
    rollouts: dict[str, list[float]] = field(default_factory=dict)  # quantity -> values, until recorded
    rollouts_recorded: bool = False


class MetricsBridge:
    """``bridge.log(metrics, step=...)`` after each of the framework's own ``log`` calls.

    ``framework`` is one of ``FRAMEWORKS`` (``"auto"`` decides from the first
    dict whose keys are recognisably one framework's). With no exporters given
    the bridge makes a ``Colocated`` set (one registry, GPUs counted once):
    serve ``bridge.registry``. ``rollouts_per_step`` gives the rollout count
    for frameworks that log none; ``env`` labels the rollouts.
    """

    def __init__(self, framework: str, *, trainer: TrainerExporter | None = None,
                 rollouts: RolloutExporter | None = None, evals: EvalExporter | None = None,
                 rollouts_per_step: int | None = None, env: str | None = None) -> None:
        if framework not in FRAMEWORKS:
            raise ValueError(f"unknown framework {framework!r}: expected one of {', '.join(FRAMEWORKS)}")
        if rollouts_per_step is not None and (isinstance(rollouts_per_step, bool) or
                                              not isinstance(rollouts_per_step, int) or rollouts_per_step < 1):
            raise ValueError(f"rollouts_per_step must be a positive integer, got {rollouts_per_step!r}")
        if trainer is None and rollouts is None and evals is None:
            loop = Colocated()
            trainer, rollouts, evals = loop.trainer, loop.rollouts, loop.evals
        self.trainer, self.rollouts, self.evals = trainer, rollouts, evals
        first = next(e for e in (trainer, rollouts, evals) if e is not None)
        self.registry: CollectorRegistry = first.registry
        self._errors = process_metrics(self.registry).errors().labels(call=_CALL)
        self._requested = framework
        self._env = env
        self._per_step = rollouts_per_step
        self._step = _Step(None)
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")
        self._warned = False
        self._told_count = False
        self._table: Table | None = None
        if framework != AUTO:
            self._use(TABLES[framework])

    @property
    def framework(self) -> str | None:
        """The framework being read: as given, or as detected (None while ``auto`` has not decided)."""
        return None if self._table is None else self._table.framework

    def log(self, metrics: Mapping[str, object], step: int | None = None) -> None:
        """Map one logged dict. Never raises; what cannot be used is ignored or dropped and counted."""
        try:
            with self._lock:
                table = self._table or self._decide(metrics)
                if table is not None:
                    self._log(table, metrics, step)
        except Exception as exc:  # noqa: BLE001 - a metrics problem never reaches the training loop
            self._drop(exc)

    def flush(self) -> None:
        """End the current step: record its rollouts with what has arrived (call once training ends)."""
        try:
            with self._lock:
                self._finish_step()
        except Exception as exc:  # noqa: BLE001
            self._drop(exc)

    # --- internals ---------------------------------------------------------------------------------

    def _decide(self, metrics: Mapping[str, object]) -> Table | None:
        name = detect(metrics.keys())
        if name is not None:
            self._use(TABLES[name])
            log.info("ptmon bridge: metrics look like %s's", name)
        return self._table

    def _use(self, table: Table) -> None:
        """Read ``table``'s framework from now on; its rollout series exist (at 0) from here, so the first
        step's rollouts count in every rate instead of starting a series mid-window."""
        self._table = table
        counted = self._per_step is not None or any(k.quantity == "rollouts" for k in table.keys)
        if self.rollouts is not None and counted:
            self.rollouts.record_rollouts(env=self._env or table.framework, count=0)

    def _drop(self, why: object) -> None:
        try:
            self._errors.inc()
            if not self._warned:
                self._warned = True
                log.warning("ptmon bridge (%s): dropped a value it could not use: %s (counted; further ones "
                            "are counted, not logged)", self._requested, repr(why)[:200])
        except Exception:  # noqa: BLE001
            pass

    def _log(self, table: Table, metrics: Mapping[str, object], step: int | None) -> None:
        if step is not None:
            number = as_number(step)
            if number is None or number < 0 or number != int(number):
                self._drop({"step": step})
                step = None
            else:
                step = int(number)
        rows = self._rows(table, metrics)
        number = step if step is not None else self._step_number(table, metrics)
        if number is None or number != self._step.number:
            self._finish_step()
            self._step = _Step(number)
        state = self._step
        for raw in table.over_keys & metrics.keys():
            seconds = as_number(metrics[raw])
            if seconds is not None:
                state.seen[raw] = seconds
        present = {key for key, _, _, _ in rows}
        found: dict[str, list[float]] = {}  # quantities recorded once per dict: the step, staleness
        for key, row, benchmark, value in rows:
            state.seen[key] = value
            if row.kind == "rate" or (row.unless is not None and row.unless in present):
                continue  # a rate waits for its seconds, below; "unless": the other spelling is here
            self._apply(table, state, row, benchmark, value, found)
        for row in table.keys:  # rates whose value and seconds have now both arrived in this step
            if row.kind == "rate" and row.key not in state.done and row.key in state.seen and row.over in state.seen:
                state.done.add(row.key)
                self._apply(table, state, row, "", state.seen[row.key] * state.seen[row.over or ""], found)
        self._record_found(table, state, found)
        self._maybe_record_rollouts(table, state)
        if number is None:
            self._finish_step()

    def _rows(self, table: Table, metrics: Mapping[str, object]) -> list[tuple[str, Key, str, float]]:
        """(normalised key, row, benchmark, value) of every known key whose value is a finite number."""
        out: list[tuple[str, Key, str, float]] = []
        for raw, value in metrics.items():
            if type(raw) is not str:
                continue
            key = table.normalise(raw)
            found = table.lookup(key)
            if found is None:
                continue
            number = as_number(value)
            if number is None:
                self._drop({raw: value})
                continue
            out.append((key, found[0], found[1], number))
        return out

    @staticmethod
    def _step_number(table: Table, metrics: Mapping[str, object]) -> int | None:
        if not table.step_keys:
            return None
        for raw, value in metrics.items():
            if type(raw) is str and table.normalise(raw) in table.step_keys:
                number = as_number(value)
                if number is not None and number == int(number):
                    return int(number)
        return None

    def _apply(self, table: Table, state: _Step, row: Key, benchmark: str, value: float,
               found: dict[str, list[float]]) -> None:
        quantity = row.quantity
        if row.skip_zero and value == 0:
            return
        if quantity in ("step_seconds", "step", "staleness_mean", "staleness_max"):
            found.setdefault(quantity, []).append(value)  # recorded once per dict, after every key is read
        elif quantity == "trainer_tokens":
            if self.trainer is not None:
                if row.kind == "cumulative":
                    self.trainer.record(tokens_total=value)
                else:
                    self.trainer.record(tokens=round(value))
        elif quantity in _SCALARS:
            if self.trainer is not None:
                self.trainer.record(**{quantity: value})  # type: ignore[arg-type]
        elif quantity == "weight_sync_seconds":
            self._record_sync(state, value)
        elif quantity == "dropped_stale":
            if self.trainer is not None:
                if row.kind == "cumulative":
                    self.trainer.record_dropped(total=value, reason="stale")
                else:
                    self.trainer.record_dropped(value, reason="stale")
        elif quantity in IDLE_REASONS:
            if self.trainer is not None:
                self.trainer.record_idle(value, reason=quantity)
        elif quantity == "eval_score":
            if self.evals is not None:
                self.evals.record_eval(benchmark=benchmark or table.framework, score=value,
                                       policy_version=state.number)
        else:  # rollouts and their parts wait for each other
            state.rollouts.setdefault(quantity, []).append(value)

    def _record_found(self, table: Table, state: _Step, found: dict[str, list[float]]) -> None:
        """The step (timed when a time came, else counted on its marker; once per step number) and staleness."""
        if self.trainer is None:
            return
        if ("step_seconds" in found or "step" in found) and "\0step" not in state.done:
            state.done.add("\0step")
            self.trainer.record_step(seconds=_mean(found.get("step_seconds")))
        if "staleness_mean" in found or "staleness_max" in found:
            self.trainer.record_staleness(mean=_mean(found.get("staleness_mean")),
                                          max=_mean(found.get("staleness_max")), source=table.framework)

    def _record_sync(self, state: _Step, seconds: float) -> None:
        version = state.number
        if self.trainer is not None:
            self.trainer.record_weight_sync(seconds=seconds, version=version)
        if self.rollouts is not None and version is not None:
            self.rollouts.set_policy_version(version)

    def _maybe_record_rollouts(self, table: Table, state: _Step) -> None:
        """Record once every part the table can log has arrived (the rest wait for the step's end)."""
        if state.rollouts_recorded or not state.rollouts:
            return
        logged = {row.quantity for row in table.keys}
        wanted = {q for q in (*_ROLLOUT_PARTS, "rollouts") if q in logged}
        if wanted <= state.rollouts.keys():
            self._record_rollouts(table, state)

    def _finish_step(self) -> None:
        state = self._step
        if self._table is not None and state.rollouts and not state.rollouts_recorded:
            self._record_rollouts(self._table, state)

    def _record_rollouts(self, table: Table, state: _Step) -> None:
        state.rollouts_recorded = True
        parts = state.rollouts
        count = _mean(parts.get("rollouts"))
        if count is None:
            count = self._per_step
        if count is None or self.rollouts is None:
            if count is None and not self._told_count:
                self._told_count = True
                log.warning("ptmon bridge (%s): %s logs no rollout count, so rollouts and their mean reward are "
                            "not recorded: pass MetricsBridge(..., rollouts_per_step=N)", table.framework,
                            table.framework)
            return
        count = float(round(count))
        tokens = _mean(parts.get("rollout_tokens"))
        per_rollout = _mean(parts.get("rollout_tokens_mean"))
        if tokens is None and per_rollout is not None:
            tokens = float(round(per_rollout * count))
        self.rollouts.record_rollouts(env=self._env or table.framework, count=count, tokens=tokens,
                                      reward_mean=_mean(parts.get("reward_mean")))


def _mean(values: list[float] | None) -> float | None:
    if not values:
        return None
    total = math.fsum(values)
    return total / len(values)
