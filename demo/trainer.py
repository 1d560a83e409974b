"""The demo trainer: GRPO-like steps, scalars, and a weight sync every few steps.

Instrumented only through ``ptmon.exporters.TrainerExporter``, exactly as a real
trainer would be; the timings come from ``ptmon.demo.model`` and are slept
through in real time divided by ``--speed``.
"""

from __future__ import annotations

from ptmon.demo import model
from ptmon.demo.proc import ChildOptions, Runtime, TrainerState, serve_and_announce, write_state

__all__ = ["run_trainer", "SyncFailed"]


class SyncFailed(RuntimeError):
    """A simulated weight sync that timed out; the exporter counts it as a failure."""


def run_trainer(opts: ChildOptions, rt: Runtime) -> int:
    from ptmon.exporters import TrainerExporter

    spec, scenario = opts.spec, opts.scenario
    exporter = TrainerExporter(run=spec.run, model=spec.model, algorithm=spec.algorithm, gpus=spec.trainer_gpus,
                               gpu_hour_price=spec.gpu_hour_price, clock=rt.clock)
    server = serve_and_announce(exporter.registry, opts, "trainer")
    rng = model.seeded_rng(opts.seed, "trainer")
    step = version = 0
    exporter.publish_policy(version)
    write_state(opts.run_dir, TrainerState(step, version))
    try:
        while not rt.stopping:
            with exporter.step():
                if not rt.sleep(model.step_seconds(rng, spec)):
                    break
            step += 1
            exporter.record(tokens=model.step_tokens(rng, spec),
                            **model.trainer_scalars(rng, step, spec, scenario).as_kwargs())
            write_state(opts.run_dir, TrainerState(step, version))
            if step % spec.sync_every:
                continue
            seconds = model.sync_seconds(rng, spec, scenario, rt.clock.elapsed())
            fails = model.sync_fails(rng, scenario)
            try:
                with exporter.weight_sync(version=version + 1, nbytes=int(spec.model_bytes)):
                    if not rt.sleep(seconds):
                        break
                    if fails:
                        raise SyncFailed(f"weight sync to version {version + 1} timed out")
            except SyncFailed:
                continue  # the next sync point retries; the workers keep sampling the old policy
            version += 1
            write_state(opts.run_dir, TrainerState(step, version))
    finally:
        server.close()
    return 0
