"""The demo eval job: scores the latest policy every few trainer steps.

The score follows ``ptmon.demo.model.score_mean``, a saturating curve against the
dollars the training progress is worth, with binomial noise for the sample
count, so intelligence per dollar in the monitor is a real computation over
real spend.
"""

from __future__ import annotations

from ptmon.demo import model
from ptmon.demo.proc import ChildOptions, Runtime, read_state, serve_and_announce

__all__ = ["run_eval"]

_POLL_SIM_S = 2.0


def run_eval(opts: ChildOptions, rt: Runtime) -> int:
    from ptmon.exporters import EvalExporter

    spec, scenario = opts.spec, opts.scenario
    exporter = EvalExporter(run=spec.run, model=spec.model, algorithm=spec.algorithm, gpus=spec.eval_gpus,
                            gpu_hour_price=spec.gpu_hour_price, clock=rt.clock)
    server = serve_and_announce(exporter.registry, opts, "eval")
    index = 0
    next_step = 0  # the first eval scores the starting policy: the intelligence-per-dollar baseline
    try:
        while not rt.stopping:
            state = read_state(opts.run_dir)
            if state is None or state.step < next_step:
                rt.sleep(_POLL_SIM_S)
                continue
            if not rt.sleep(spec.eval_seconds):
                break
            score = model.eval_score(opts.seed, index, spec, scenario, spec.useful_spend(state.step))
            exporter.record_eval(benchmark=spec.benchmark, score=score, policy_version=state.version,
                                 samples=spec.eval_samples)
            index += 1
            next_step = state.step + spec.eval_every
    finally:
        server.close()
    return 0
