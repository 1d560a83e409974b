"""PromQL for ptmon's windowed numbers: one place that says how each is asked of a Prometheus server.

The Prometheus source evaluates these server-side (rate, increase and
histogram_quantile run in Prometheus, next to the data, so a fleet of hundreds
of targets costs ptmon one small answer a poll); the shipped recording rules,
alerting rules and Grafana dashboard (``ptmon.monitor.deploy``) are generated from
the same functions. A Grafana panel, a recorded series and the TUI therefore
compute a number the same way, by README.md's "What the numbers mean".

Names come from ``ptmon.exporters.schema``; only the canonical exposition names are
used (``posttrain_rollouts_total``, which every prometheus_client version
writes), so the rules stay readable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from ptmon.exporters import schema
from ptmon.exporters.schema import MetricSpec
from ptmon.monitor.exposed import engine_spellings

__all__ = [
    "TARGET_BY",
    "RUN_LABEL",
    "QUANTILES",
    "Q_LABEL",
    "duration",
    "rate",
    "counter",
    "increase",
    "sync_quantile",
    "step_seconds_mean",
    "engine_tokens_rate",
    "gpus_by_role",
    "counter_slope",
    "counter_increase",
    "burn_dollars_per_hour",
    "spend_dollars",
    "staleness_max",
    "trainer_version",
    "rollout_rate_chart",
    "instant_queries",
    "string",
    "combine",
    "run_join",
    "with_run",
]

TARGET_BY = (schema.LABEL_JOB, schema.LABEL_INSTANCE)  # how Prometheus names a scrape target
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}
_ERRORS = f"{schema.LABEL_OUTCOME}={json.dumps(schema.OUTCOME_ERROR)}"  # the error rollouts' matcher
Q_LABEL = "ptmon_q"  # the label ``combine`` tags each answer with; no exporter or engine uses it
RUN_LABEL = schema.LABEL_RUN  # posttrain_run_info's run identity; one Prometheus often holds several runs at once


def duration(seconds: float) -> str:
    """A PromQL duration: whole seconds when exact (``300s``), else milliseconds (``2500ms``)."""
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"a PromQL duration must be positive and finite, got {seconds!r}")
    ms = max(1, round(seconds * 1000))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _window(window: float | str) -> str:
    return window if isinstance(window, str) else duration(window)


def _by(by: Sequence[str]) -> str:
    return f"sum by ({', '.join(by)}) " if by else "sum "


def _selector(name: str, matchers: str = "") -> str:
    return f"{name}{{{matchers}}}" if matchers else name


def _run_info(*, seen: float | str | None, runs: str) -> str:
    info = _selector(schema.RUN_INFO.name, runs)
    return info if seen is None else f"last_over_time({info}[{_window(seen)}])"


def run_join(*, seen: float | str | None = None, runs: str = "") -> str:
    """The right-hand side that puts each target's ``run`` on a per-target series: append it after ``*``.

    Only ``posttrain_run_info`` carries ``run``; every other series of a
    target is matched to it on (job, instance), and ``group_left (run)``
    copies ``run`` alone (run info's ``role`` would clash with the GPU
    metrics' own). ``topk by (job, instance) (1, ...)`` keeps one run-info
    series per target: a colocated registry exposes one per role, and two
    runs on one target (a misconfiguration) must not make every per-run rule
    fail with a many-to-many error. ``seen`` reads run info over that window
    (``last_over_time``), so a target that went down keeps its run; ``runs``
    are matchers on run info (a Grafana ``run=~"$run"`` filter).
    ``with_run`` is what the rules use: this join plus the series that carry
    a ``run`` of their own.
    """
    by = ", ".join(TARGET_BY)
    return f"on ({by}) group_left ({RUN_LABEL}) topk by ({by}) (1, {_run_info(seen=seen, runs=runs)})"


def _own_run_targets() -> str:
    """(job, instance) of the targets whose series carry a ``run`` of their own: a Pushgateway's groups
    pushed with ``run`` in their grouping key (run info carries ``run`` everywhere, so it is left out)."""
    name = schema.RUN_INFO.name
    return f'{{__name__=~"{name.split("_")[0]}_.+", __name__!="{name}", {RUN_LABEL}!=""}}'


def with_run(term: str, *, seen: float | str | None = None, runs: str = "") -> str:
    """``term`` (one selector or function call, or parenthesised) with its target's ``run`` label added.

    The result is an ``or`` of two branches: use it as a function's argument
    (``sum by (run) (...)``), or parenthesise it.

    A Pushgateway is one target holding many groups, often of several runs:
    pushed with ``run`` in the grouping key, each group's series carry that
    ``run`` themselves (its run info too). Those keep their own run, matched
    to run info of the same run on the same target (one per run: ``group
    by``), so two runs on one gateway are two runs. Every other target's
    series get the run of the target's run info (``run_join``). A target
    with series of their own run is kept out of that second branch as a
    whole (``unless``): copying one run-info's ``run`` over its groups would
    give two groups one label set, an error that stops the rule for every run.
    """
    by = ", ".join(TARGET_BY)
    info = _run_info(seen=seen, runs=runs)
    own = f"{term} * on ({by}, {RUN_LABEL}) group_left () group by ({by}, {RUN_LABEL}) ({info})"
    others = f"({term} unless on ({by}) {_own_run_targets()})"
    return f"{own} or {others} * {run_join(seen=seen, runs=runs)}"


def _run_by(by: Sequence[str], per_run: bool) -> tuple[str, ...]:
    return (RUN_LABEL, *(b for b in by if b != RUN_LABEL)) if per_run else tuple(by)


def counter(spec: MetricSpec, matchers: str = "") -> str:
    """A counter's selector under both names it may be exposed as: ``x_total`` (prometheus_client, OpenMetrics)
    and bare ``x`` (ptmon accepts both), so an exporter written against either is counted."""
    if spec.kind != "counter":
        raise ValueError(f"{spec.name} is a {spec.kind}, not a counter")
    names = "|".join(schema.counter_aliases(spec.name))
    return f'{{__name__=~"{names}"' + (f", {matchers}}}" if matchers else "}")


def _suffixed(spec: MetricSpec, suffix: str) -> str:
    if spec.kind != "histogram":
        raise ValueError(f"{spec.name} is a {spec.kind}, not a histogram")
    return spec.name + suffix


def rate(spec: MetricSpec, window: float | str, *, by: Sequence[str] = (), matchers: str = "",
         per_run: bool = False, runs: str = "") -> str:
    """``sum [by (...)] (rate(counter[w]))``: per-second increase, counter resets handled by Prometheus.

    ``per_run``: summed per run as well (targets without run info are left out); ``runs`` filters them.
    """
    inner = f"rate({counter(spec, matchers)}[{_window(window)}])"
    if per_run:
        inner = with_run(inner, runs=runs)
    return f"{_by(_run_by(by, per_run))}({inner})"


def increase(name: str, window: float | str, *, by: Sequence[str] = ()) -> str:
    """``sum (increase(x[w]))`` for a counter or a histogram's ``_count``: extrapolated like PromQL's."""
    return f"{_by(by)}(increase({name}[{_window(window)}]))"


def sync_quantile(q: float, window: float | str, *, by: Sequence[str] = (), per_run: bool = False,
                  runs: str = "") -> str:
    """Weight-sync latency quantile over the window, from bucket rates (histogram_quantile's interpolation).

    ``per_run``: one quantile per run (each run has its own trainer), not the fleet's mixed buckets.
    """
    buckets = _suffixed(schema.WEIGHT_SYNC_SECONDS, "_bucket")
    inner = f"rate({buckets}[{_window(window)}])"
    if per_run:
        inner = with_run(inner, runs=runs)
    return f"histogram_quantile({q:g}, {_by(('le', *_run_by(by, per_run)))}({inner}))"


def step_seconds_mean(window: float | str, *, runs: str = "") -> str:
    """Mean optimizer step time over the window: rate of the histogram's sum over rate of its count.

    ``runs``: only the targets whose run info matches (``run="x"``).
    """
    w = _window(window)
    spec = schema.TRAINER_STEP_SECONDS
    total, count = (f"rate({_suffixed(spec, suffix)}[{w}])" for suffix in ("_sum", "_count"))
    if runs:
        total, count = with_run(total, runs=runs), with_run(count, runs=runs)
    return f"sum({total}) / sum({count})"


def string(value: str) -> str:
    """A PromQL string literal (double-quoted, escaped): label values from the user go through this."""
    return json.dumps(value)


def engine_tokens_rate(window: float | str, *, by: Sequence[str] = ()) -> str:
    """Generated tokens/s of uninstrumented vLLM/SGLang engines (also behind Ray's ``ray_`` prefix)."""
    names = [n for spec in (schema.VLLM_GENERATION_TOKENS, schema.SGLANG_GENERATION_TOKENS)
             for n in engine_spellings(spec)]
    selector = '{__name__=~"' + "|".join(dict.fromkeys(names)) + '"}'
    return f"{_by(by)}(rate({selector}[{_window(window)}]))"


def gpus_by_role(window: float | str) -> str:
    """GPUs in use per target and role over the window: the rate of GPU-seconds (GPU-s per s)."""
    return rate(schema.GPU_SECONDS, window, by=(*TARGET_BY, schema.LABEL_ROLE))


def _price_join() -> str:
    """Each GPU-seconds series times the price gauge with exactly its labels (the same exporter's, same role).

    Matching on every label, not on (job, instance, role): a Pushgateway is
    one (job, instance) holding many groups, each with its own price, and a
    price joined on (job, instance, role) there is a many-to-many error that
    stops every spend rule of every run. The same labels are one group's own.
    A price below zero or above ``schema.MAX_GPU_HOUR_PRICE`` is filtered out,
    as the TUI passes it over: that series is left out of the sum rather than
    priced with a number that cannot be right.
    """
    return (f"ignoring () group_left () ({schema.GPU_HOUR_PRICE.name} >= 0 "
            f"<= {schema.MAX_GPU_HOUR_PRICE:g})")


def _young_or_old(selector: str, window: str, *, old: str, young: str) -> str:
    """``old`` for a series that had a sample ``window`` ago, else (it started inside the window) ``young``.

    PromQL's ``rate``/``increase`` extrapolate a series that starts inside the
    range from its first sample; MetricsQL's count it from 0 (and ``rate``
    divides by the time sampled, not the range). The two engines agree only
    where a sample precedes the range, so a young series gets an expression
    both read alike; one with a counter reset in the window falls back to
    ``old`` (a restart's earlier count must not vanish).
    """
    return (f"({old} and {selector} offset {window}) or ({young} unless resets({selector}[{window}]) > 0) "
            f"or {old}")


def counter_slope(spec: MetricSpec, window: float | str, *, matchers: str = "") -> str:
    """Per-second increase of a counter over the window, the same on Prometheus and VictoriaMetrics.

    ``rate`` where the series is older than the window; for a younger one,
    the least-squares slope of its samples (``deriv``: both engines fit the
    same points), which for a counter growing steadily (GPU-seconds) is its rate.
    """
    sel, w = counter(spec, matchers), _window(window)
    return _young_or_old(sel, w, old=f"rate({sel}[{w}])", young=f"deriv({sel}[{w}])")


def counter_increase(spec: MetricSpec, window: float | str, *, matchers: str = "") -> str:
    """A counter's increase over the window, the same on Prometheus and VictoriaMetrics.

    ``increase`` where the series is older than the window; for a younger
    one, its value (the exporters' counters start at 0 with the process, so
    that is the increase since it started).
    """
    sel, w = counter(spec, matchers), _window(window)
    return _young_or_old(sel, w, old=f"increase({sel}[{w}])", young=f"({sel} + 0)")


def burn_dollars_per_hour(window: float | str, *, per_run: bool = False, runs: str = "") -> str:
    """$/h now: GPUs in use (slope of GPU-seconds) times each role's price per GPU-hour, summed.

    The price is the exporters' gauge; ptmon applies its own config overrides
    to ``gpus_by_role`` instead, which a rule cannot know. ``per_run``: $/h of each run.
    """
    inner = f"({counter_slope(schema.GPU_SECONDS, window)}) * {_price_join()}"
    if per_run:
        return f"{_by(_run_by((), True))}({with_run(inner, runs=runs)})"
    return f"sum({inner})"


def spend_dollars(window: float | str | None = None, *, per_run: bool = False, runs: str = "") -> str:
    """Dollars spent: GPU-seconds times price / 3600; over ``window`` when given (resets handled), else ever.

    Without a window it is the counters' current totals, so a restarted
    process's earlier spend is gone from it; the windowed form
    (``counter_increase``) survives restarts of a process older than the
    window. ``per_run``: each run's own spend.
    """
    if window is None:
        inner = f"{counter(schema.GPU_SECONDS)} * {_price_join()}"
    else:
        inner = f"({counter_increase(schema.GPU_SECONDS, window)}) * {_price_join()}"
    if per_run:
        return f"{_by(_run_by((), True))}({with_run(inner, runs=runs)}) / 3600"
    return f"sum({inner}) / 3600"


def trainer_version(behind: float | str | None = None) -> str:
    """The trainer's published version to compare a worker's latest sample with: with ``behind``, as it was
    that long ago (``offset``), else its latest sample.

    Each target is scraped at its own moment: a worker's latest sample is up
    to a scrape interval old, and the trainer's latest may be newer than it by
    as much, every version published in between reading as lag (the healthy
    demo at 40x fired the staleness alert in 114 of 120 evaluations). The
    trainer's latest sample at least a scrape interval and a margin ago is at
    or before the worker's: skew never reads as lag, at the price of
    under-reading a real lag by what is published in one to two intervals.
    """
    name = schema.POLICY_VERSION.name
    return name if behind is None else f"{name} offset {_window(behind)}"


def staleness_max(*, per_run: bool = False, runs: str = "", behind: float | str | None = None) -> str:
    """Versions the furthest-behind rollout worker lags the trainer's published policy (never below 0:
    a worker may load a version a moment before the trainer's gauge is scraped saying it published it).

    ``per_run``: each run's trainer against that run's workers (targets without run info are left out);
    without it one run's trainer is compared with another run's workers. ``behind``: see ``trainer_version``.
    """
    version = trainer_version(behind)
    if per_run:
        trainer = with_run(version, runs=runs)
        workers = with_run(schema.ROLLOUT_POLICY_VERSION.name, runs=runs)
        return (f"clamp_min(max by ({RUN_LABEL}) ({trainer}) - on ({RUN_LABEL}) "
                f"min by ({RUN_LABEL}) ({workers}), 0)")
    return f"clamp_min(max({version}) - min({schema.ROLLOUT_POLICY_VERSION.name}), 0)"


def rollout_rate_chart(range_s: float | str, *, run: str | None = None) -> str:
    """The rollout-rate chart's expression for a range query: fleet rollouts/s over ``range_s`` at each step."""
    if run is not None:
        return rate(schema.ROLLOUTS, range_s, per_run=True, runs=f"{RUN_LABEL}={string(run)}")
    return rate(schema.ROLLOUTS, range_s)


def instant_queries(window_s: float, *, run: str | None = None) -> dict[str, str]:
    """Every windowed number ptmon asks a Prometheus server for, by key, for one instant query.

    Per-target answers keep ``job`` and ``instance`` so the source can put them
    on the right worker row; fleet numbers are single samples. ``run``: only
    the targets whose ``posttrain_run_info`` says that run (one Prometheus,
    several runs); engines without run info are then left out.
    """
    w = duration(window_s)
    if run is not None:
        runs = f"{RUN_LABEL}={string(run)}"
        out = {
            "rollouts": rate(schema.ROLLOUTS, w, by=TARGET_BY, per_run=True, runs=runs),
            "rollout_tokens": rate(schema.ROLLOUT_TOKENS, w, by=TARGET_BY, per_run=True, runs=runs),
            "rollout_errors": rate(schema.ROLLOUTS, w, matchers=_ERRORS, per_run=True, runs=runs),
            "sync_bytes": rate(schema.WEIGHT_SYNC_BYTES, w, per_run=True, runs=runs),
            "steps": rate(schema.TRAINER_STEPS, w, per_run=True, runs=runs),
            "trainer_tokens": rate(schema.TRAINER_TOKENS, w, per_run=True, runs=runs),
            "step_seconds": step_seconds_mean(w, runs=runs),
            "gpus": rate(schema.GPU_SECONDS, w, by=(*TARGET_BY, schema.LABEL_ROLE), per_run=True, runs=runs),
        }
        for key, q in QUANTILES.items():
            out["sync_" + key] = sync_quantile(q, w, per_run=True, runs=runs)
        return out
    out = {
        "rollouts": rate(schema.ROLLOUTS, w, by=TARGET_BY),
        "rollout_tokens": rate(schema.ROLLOUT_TOKENS, w, by=TARGET_BY),
        "engine_tokens": engine_tokens_rate(w, by=TARGET_BY),
        "rollout_errors": rate(schema.ROLLOUTS, w, matchers=_ERRORS),
        "sync_bytes": rate(schema.WEIGHT_SYNC_BYTES, w),
        "steps": rate(schema.TRAINER_STEPS, w),
        "trainer_tokens": rate(schema.TRAINER_TOKENS, w),
        "step_seconds": step_seconds_mean(w),
        "gpus": gpus_by_role(w),
    }
    for key, q in QUANTILES.items():
        out["sync_" + key] = sync_quantile(q, w)
    return out


def combine(queries: Mapping[str, str]) -> str:
    """One PromQL expression answering every query, each answer tagged ``ptmon_q="key"``.

    One request a poll instead of a dozen: ``label_replace`` adds the tag and
    ``or`` unions the answers (distinct tags never collide).
    """
    if not queries:
        raise ValueError("no queries to combine")
    for key in queries:
        if not key.replace("_", "").isalnum():
            raise ValueError(f"query key {key!r}: letters, digits and '_' only")
    return " or ".join(f'label_replace({expr}, "{Q_LABEL}", "{key}", "", "")' for key, expr in queries.items())
