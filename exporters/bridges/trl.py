"""``PtmonCallback``: a TRL/transformers trainer's steps, rollouts, evals and weight syncs on one endpoint.

``GRPOTrainer(..., callbacks=[PtmonCallback()])`` is all it takes. The
callback imports nothing from transformers or TRL (it is duck-typed: the
trainer calls ``on_<event>`` methods, and the events it does not use are
no-ops), so this module imports anywhere; it only does something inside a
trainer.

What it exports, from what:

- steps and step time: ``on_step_begin``/``on_step_end`` on its own clock
  (generation, scoring and the optimizer step all happen in between);
- tokens (``num_tokens``, a running total), loss, grad_norm, learning_rate,
  kl, entropy: TRL's own logs (``on_log``; keys in ``tables.trl``);
- rollouts: their count from the trainer's arguments (completions per
  optimizer step: per-device batch x gradient accumulation x processes /
  ``num_iterations``), their mean reward and mean length from TRL's logs, at
  each log (so ``logging_steps`` > 1 records several steps' rollouts at once,
  at TRL's mean over them);
- evals: ``on_evaluate``'s ``eval_reward`` (``eval_metrics=`` adds others);
- weight syncs: in vLLM mode the trainer's ``vllm_generation.sync_weights``
  is timed (found from ``on_train_begin``'s caller, or given with
  ``attach(trainer)``); AsyncGRPO's own ``perf/weight_sync_s`` when logged.
  Each sync publishes the step as the policy version to both sides.

Only the main process (``state.is_world_process_zero``) serves; the others
record nothing. GPUs: ``gpus=``, else ``PTMON_GPUS``, else the job's
``world_size`` when it trains on CUDA, else 0 (logged: spend unknown).
"""

from __future__ import annotations

import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ptmon.exporters import _build, _defaults
from ptmon.exporters._identity import as_number, process_metrics
from ptmon.exporters.bridges.tables.trl import TABLE
from ptmon.exporters.colocated import Colocated
from ptmon.exporters.cost import Clock
from ptmon.exporters.serve import MetricsServer, serve

__all__ = ["PtmonCallback"]

log = logging.getLogger("ptmon.exporters")

_CALL = "trl_callback"
# TRL's attribute holding its vLLM client (GRPOTrainer.vllm_generation), not a metric name: spelled in two
# pieces because tests/test_contract.py reads any "vllm_..." string as one.
_GENERATION = "vllm" + "_generation"
_SCALARS = ("loss", "kl", "entropy", "grad_norm", "learning_rate")


def _noop(*args: object, **kwargs: object) -> None:
    return None


class PtmonCallback:
    """A ``transformers.TrainerCallback`` (duck-typed) serving ptmon's exporters for the trainer it is in."""

    def __init__(self, *, port: int = 9400, host: str = "127.0.0.1", gpus: float | None = None,
                 gpu_hour_price: float | None = None, run: str | None = None, model: str | None = None,
                 algorithm: str = "grpo", env: str = "train", eval_metrics: Sequence[str] = ("eval_reward",),
                 clock: Clock = time.monotonic, wall_clock: Clock = time.time) -> None:
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        self._port, self._host = port, host
        self._identity: dict[str, Any] = dict(gpus=gpus, gpu_hour_price=gpu_hour_price, run=run, model=model,
                                              algorithm=algorithm)
        self._env = env
        self._eval_metrics = tuple(eval_metrics)
        self._clock, self._wall_clock = clock, wall_clock
        self.loop: Colocated | None = None
        self.server: MetricsServer | None = None
        self.trainer: object | None = None  # the trainer, once found (for vLLM weight-sync timing)
        self._step_start: float | None = None
        self._last_logged_step = 0
        self._per_step = 0.0
        self._lock = threading.Lock()
        _build.fork_safe(self, "_lock")
        self._warned = False

    @property
    def url(self) -> str | None:
        """``http://host:port/metrics`` once serving (from the trainer's ``on_init_end``), else None."""
        return None if self.server is None else self.server.url

    @property
    def registry(self) -> Any:
        return None if self.loop is None else self.loop.registry

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):
            return _noop  # the trainer's other events
        raise AttributeError(name)

    def close(self) -> None:
        """Stop serving (the endpoint otherwise lives as long as the process, for a last scrape)."""
        if self.server is not None:
            self.server.close()
            self.server = None

    # --- events -----------------------------------------------------------------------------------

    def on_init_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guard(self._start, args, state, kwargs.get("model"))

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guard(self._start, args, state, kwargs.get("model"))
        if self.loop is not None and self.trainer is None:
            self._guard(self._find_trainer)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step_start = self._clock()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guard(self._step_end, state)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, object] | None = None,
               **kwargs: Any) -> None:
        self._guard(self._logged, state, logs or {})

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Mapping[str, object] | None = None,
                    **kwargs: Any) -> None:
        self._guard(self._evaluated, state, metrics or {})

    def attach(self, trainer: object) -> None:
        """Time the trainer's vLLM weight syncs (done for you when the trainer can be found at train start)."""
        self._guard(self._wrap_sync, trainer)

    # --- internals --------------------------------------------------------------------------------

    def _guard(self, fn: Callable[..., None], *args: object) -> None:
        """Run an event handler; a metrics problem is counted and logged once, never raised into training."""
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001
            try:
                if self.loop is not None:
                    process_metrics(self.loop.registry).errors().labels(call=_CALL).inc()
                if not self._warned:
                    self._warned = True
                    log.warning("ptmon TRL callback: %s failed: %r (counted; further ones are counted, not logged)",
                                getattr(fn, "__name__", "event"), exc)
            except Exception:  # noqa: BLE001
                pass

    def _start(self, args: Any, state: Any, model: Any) -> None:
        with self._lock:
            if self.loop is not None or not getattr(state, "is_world_process_zero", True):
                return
            ident = self._identity
            gpus = ident["gpus"]
            if gpus is None and not os.environ.get(_defaults.ENV_GPUS, "").strip():
                device = getattr(getattr(args, "device", None), "type", None)
                if device == "cuda":
                    gpus = float(getattr(args, "world_size", 1) or 1)
            config = getattr(model, "config", None)
            name = ident["model"] or getattr(config, "name_or_path", None) or getattr(config, "_name_or_path", None)
            self.loop = Colocated(run=ident["run"], model=name or None, algorithm=ident["algorithm"], gpus=gpus,
                                  gpu_hour_price=ident["gpu_hour_price"], clock=self._clock,
                                  wall_clock=self._wall_clock)
            self.loop.rollouts.record_rollouts(env=self._env, count=0)  # the series exist from the start
            self._per_step = _completions_per_step(args)
            self.server = serve(self.loop.registry, port=self._port, host=self._host)
            log.info("ptmon: serving this trainer's metrics at %s", self.server.url)

    def _find_trainer(self) -> None:
        """The Trainer whose callback handler holds this callback, from the frames calling ``on_train_begin``."""
        frame = inspect.currentframe()
        for _ in range(8):
            if frame is None:
                return
            candidate = frame.f_locals.get("self")
            handler = getattr(candidate, "callback_handler", None)
            if handler is not None and self in getattr(handler, "callbacks", ()):
                self._wrap_sync(candidate)
                return
            frame = frame.f_back

    def _wrap_sync(self, trainer: object) -> None:
        self.trainer = trainer
        generation = getattr(trainer, _GENERATION, None)
        original = getattr(generation, "sync_weights", None)
        if generation is None or not callable(original) or getattr(original, "_ptmon", False):
            return
        callback = self

        def sync_weights(*args: object, **kwargs: object) -> object:
            start = callback._clock()
            ok = False
            try:
                result = original(*args, **kwargs)
                ok = True
                return result
            finally:
                callback._guard(callback._synced, trainer, callback._clock() - start, ok)

        sync_weights._ptmon = True  # type: ignore[attr-defined]
        generation.sync_weights = sync_weights

    def _synced(self, trainer: object, seconds: float, ok: bool) -> None:
        if self.loop is None:
            return
        step = getattr(getattr(trainer, "state", None), "global_step", None)
        self.loop.trainer.record_weight_sync(seconds=max(0.0, seconds), version=step, ok=ok)
        if ok and step is not None:
            self.loop.rollouts.set_policy_version(step)

    def _step_end(self, state: Any) -> None:
        if self.loop is None:
            return
        start, self._step_start = self._step_start, None
        self.loop.trainer.record_step(seconds=None if start is None else max(0.0, self._clock() - start))
        if self.trainer is None or getattr(self.trainer, _GENERATION, None) is None:
            # Generation samples the live model (no vLLM): on-policy, both sides hold this step's version.
            step = int(getattr(state, "global_step", 0) or 0)
            self.loop.trainer.publish_policy(step)
            self.loop.rollouts.set_policy_version(step)

    def _logged(self, state: Any, logs: Mapping[str, object]) -> None:
        if self.loop is None or all(type(k) is str and k.startswith("eval_") for k in logs):
            return  # not serving, or an evaluation's log (on_evaluate has it)
        values: dict[str, float] = {}
        for raw, value in logs.items():
            found = TABLE.lookup(TABLE.normalise(raw)) if type(raw) is str else None
            if found is None or found[0].quantity in ("eval_score", "step_seconds"):
                continue  # unknown, an eval, or TRL's step time (averaged; this callback times each step)
            number = as_number(value)
            if number is None:
                if value is not None:
                    process_metrics(self.loop.registry).errors().labels(call=_CALL).inc()
                continue
            values[found[0].quantity] = number
        self._record_logged(int(getattr(state, "global_step", 0) or 0), values)

    def _record_logged(self, step: int, values: Mapping[str, float]) -> None:
        assert self.loop is not None
        trainer, rollouts = self.loop.trainer, self.loop.rollouts
        scalars = {q: values[q] for q in _SCALARS if q in values}
        if scalars or "trainer_tokens" in values:
            trainer.record(tokens_total=values.get("trainer_tokens"), **scalars)  # type: ignore[arg-type]
        if "weight_sync_seconds" in values:  # AsyncGRPO times its own syncs
            trainer.record_weight_sync(seconds=values["weight_sync_seconds"], version=step)
            rollouts.set_policy_version(step)
        if "staleness_mean" in values or "staleness_max" in values:
            trainer.record_staleness(mean=values.get("staleness_mean"), max=values.get("staleness_max"),
                                     source=TABLE.framework)
        steps = step - self._last_logged_step
        if "reward_mean" in values and steps > 0 and self._per_step > 0:
            self._last_logged_step = step
            count = round(steps * self._per_step)
            length = values.get("rollout_tokens_mean")
            rollouts.record_rollouts(env=self._env, count=count, reward_mean=values["reward_mean"],
                                     tokens=None if length is None else round(length * count))

    def _evaluated(self, state: Any, metrics: Mapping[str, object]) -> None:
        if self.loop is None:
            return
        step = getattr(state, "global_step", None)
        for key in self._eval_metrics:
            if key in metrics:
                benchmark = key[len("eval_"):] if key.startswith("eval_") else key
                self.loop.evals.record_eval(benchmark=benchmark, score=metrics[key],  # type: ignore[arg-type]
                                            policy_version=step)


def _completions_per_step(args: Any) -> float:
    """Completions TRL's GRPO generates per optimizer step (0 when the arguments don't say)."""
    try:
        per_device = float(args.per_device_train_batch_size)
        accumulation = float(getattr(args, "gradient_accumulation_steps", 1) or 1)
        processes = float(getattr(args, "world_size", 1) or 1)
        iterations = float(getattr(args, "num_iterations", 1) or 1)
    except (AttributeError, TypeError, ValueError):
        return 0.0
    return per_device * accumulation * processes / iterations
