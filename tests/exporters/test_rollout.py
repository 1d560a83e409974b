"""RolloutExporter on fresh registries: recording, bad values, buckets, and exact totals under threads."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from ptmon.exporters import RolloutExporter, TrainerExporter, _build, serve
from ptmon.exporters.schema import (
    DEFAULT_REWARD_BUCKETS,
    EXPORTER_ERRORS,
    MAX_LABEL_VALUE_BYTES,
    ROLLOUT_OUTCOMES,
    ROLLOUT_POLICY_VERSION,
    ROLLOUT_REWARD,
    ROLLOUT_REWARD_NEGATIVE,
    ROLLOUT_REWARD_POSITIVE,
    ROLLOUT_SECONDS,
    ROLLOUT_TOKENS,
    ROLLOUTS,
    RUN_INFO,
)
from ptmon.monitor.parse import ExpositionParser
from tests.exporters.helpers import errors, exporter, value


def make(**kwargs: object) -> RolloutExporter:
    return exporter(RolloutExporter, **{"gpus": 2, **kwargs})


def test_record_rollout_all_values() -> None:
    rollout = make()
    rollout.record_rollout(env="math", tokens=812, reward=1.0, seconds=3.2, policy_version=7, outcome="ok")
    rollout.record_rollout(env="math", tokens=100, reward=-0.5, seconds=0.2, policy_version=7, outcome="truncated")
    rollout.record_rollout(env="code", tokens=50, outcome="error")
    reg = rollout.registry
    assert value(reg, ROLLOUTS, env="math", outcome="ok") == 1
    assert value(reg, ROLLOUTS, env="math", outcome="truncated") == 1
    assert value(reg, ROLLOUTS, env="code", outcome="error") == 1
    assert value(reg, ROLLOUT_TOKENS, env="math") == 912
    assert value(reg, ROLLOUT_TOKENS, env="code") == 50
    assert value(reg, ROLLOUT_SECONDS, "_count", env="math") == 2
    assert value(reg, ROLLOUT_SECONDS, "_sum", env="math") == pytest.approx(3.4)
    assert value(reg, ROLLOUT_SECONDS, "_bucket", env="math", le="0.25") == 1
    assert value(reg, ROLLOUT_SECONDS, "_bucket", env="math", le="5.0") == 2
    assert value(reg, ROLLOUT_SECONDS, "_count", env="code") == 0  # seconds were optional and not given
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="math", le="-0.5") == 1
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="math", le="0.9") == 1
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="math", le="1.0") == 2
    assert value(reg, ROLLOUT_POLICY_VERSION) == 7
    assert errors(reg, "record_rollout") == 0


def test_every_outcome_of_the_contract_is_accepted() -> None:
    rollout = make()
    for outcome in ROLLOUT_OUTCOMES:
        rollout.record_rollout(env="math", tokens=1, outcome=outcome)
    assert [value(rollout.registry, ROLLOUTS, env="math", outcome=o) for o in ROLLOUT_OUTCOMES] == [1] * 4


@pytest.mark.parametrize("labels", [{"env": "", "outcome": "ok"}, {"env": 3, "outcome": "ok"},
                                    {"env": ["math"], "outcome": "ok"}, {"env": "math", "outcome": "weird"},
                                    {"env": "math", "outcome": None}])
def test_bad_labels_drop_the_whole_rollout(labels: dict) -> None:
    rollout = make()
    rollout.record_rollout(tokens=10, reward=1.0, seconds=1.0, **labels)
    reg = rollout.registry
    assert errors(reg, "record_rollout") == 1
    assert value(reg, ROLLOUT_TOKENS, env="math") is None
    assert value(reg, ROLLOUTS, env="math", outcome="ok") is None


@pytest.mark.parametrize(("bad", "kept_tokens", "kept_seconds", "kept_rewards"), [
    ({"tokens": -3}, 0, 1, 1),
    ({"tokens": math.nan}, 0, 1, 1),
    ({"tokens": "812"}, 0, 1, 1),
    ({"tokens": 10**30}, 0, 1, 1),
    ({"seconds": -1.0}, 10, 0, 1),
    ({"seconds": math.inf}, 10, 0, 1),
    ({"reward": math.nan}, 10, 1, 0),
    ({"reward": "good"}, 10, 1, 0),
    ({"policy_version": -1}, 10, 1, 1),
])
def test_bad_values_are_dropped_one_by_one(bad: dict, kept_tokens: int, kept_seconds: int,
                                           kept_rewards: int) -> None:
    rollout = make()
    rollout.record_rollout(**{"env": "math", "tokens": 10, "reward": 0.5, "seconds": 1.0, **bad})
    reg = rollout.registry
    assert errors(reg, "record_rollout") == 1
    assert value(reg, ROLLOUTS, env="math", outcome="ok") == 1  # the rollout happened
    assert value(reg, ROLLOUT_TOKENS, env="math") == kept_tokens
    assert value(reg, ROLLOUT_SECONDS, "_count", env="math") == kept_seconds
    assert value(reg, ROLLOUT_REWARD, "_count", env="math") == kept_rewards


def test_int_and_numpy_like_values_take_the_slow_path_correctly() -> None:
    class Scalar:
        def __init__(self, x: float) -> None:
            self.x = x

        def __float__(self) -> float:
            return self.x

    rollout = make()
    rollout.record_rollout(env="math", tokens=Scalar(7.0), reward=1, seconds=2,  # type: ignore[arg-type]
                           policy_version=Scalar(3.0))  # type: ignore[arg-type]  # duck-typed on purpose
    reg = rollout.registry
    assert value(reg, ROLLOUT_TOKENS, env="math") == 7
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="math", le="1.0") == 1
    assert value(reg, ROLLOUT_SECONDS, "_bucket", env="math", le="2.5") == 1
    assert value(reg, ROLLOUT_POLICY_VERSION) == 3
    assert errors(reg, "record_rollout") == 0


def test_set_policy_version() -> None:
    rollout = make()
    rollout.set_policy_version(8)
    assert value(rollout.registry, ROLLOUT_POLICY_VERSION) == 8
    rollout.record_rollout(env="math", tokens=1, policy_version=7)  # a late rollout sampled with v7
    assert value(rollout.registry, ROLLOUT_POLICY_VERSION) == 7
    rollout.set_policy_version(9)
    rollout.set_policy_version(math.nan)  # type: ignore[arg-type]  # a bad value on purpose
    assert value(rollout.registry, ROLLOUT_POLICY_VERSION) == 9
    assert errors(rollout.registry, "set_policy_version") == 1


def test_reward_buckets_are_configurable() -> None:
    rollout = make(reward_buckets=[0, 5, 10])
    rollout.record_rollout(env="game", tokens=1, reward=7.0)
    reg = rollout.registry
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="game", le="5.0") == 0
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="game", le="10.0") == 1
    assert value(reg, ROLLOUT_REWARD, "_bucket", env="game", le="1.0") is None  # default buckets gone
    with pytest.raises(ValueError, match="reward_buckets"):
        make(reward_buckets=[1.0, 0.0])
    with pytest.raises(ValueError, match="reward_buckets"):
        make(reward_buckets=[])


def test_default_reward_buckets_come_from_the_contract() -> None:
    rollout = make()
    rollout.record_rollout(env="math", tokens=1, reward=0.0)
    les = {float(s.labels["le"]) for m in rollout.registry.collect() if m.name == ROLLOUT_REWARD.name
           for s in m.samples if s.name == ROLLOUT_REWARD.bucket}
    assert les == set(DEFAULT_REWARD_BUCKETS) | {math.inf}


def test_reward_sums_are_exact_for_mixed_signs() -> None:
    """Each reward adds to exactly one signed counter: positive (0 included) or negative (its magnitude)."""
    rollout = make()
    rewards = (1.0, -0.5, 0.25, 0.0, -1.0, 0.75, -0.0, 1, -2)  # ints take the checked path
    for reward in rewards:
        rollout.record_rollout(env="math", tokens=1, reward=reward)
    reg = rollout.registry
    assert value(reg, ROLLOUT_REWARD_POSITIVE, env="math") == 1.0 + 0.25 + 0.75 + 1 == 3.0
    assert value(reg, ROLLOUT_REWARD_NEGATIVE, env="math") == 0.5 + 1.0 + 2 == 3.5
    assert value(reg, ROLLOUT_REWARD, "_count", env="math") == len(rewards)
    # The sum prometheus_client withholds (negative buckets) is exactly positive - negative.
    assert value(reg, ROLLOUT_REWARD, "_sum", env="math") is None
    assert value(reg, ROLLOUT_REWARD_POSITIVE, env="math") - value(reg, ROLLOUT_REWARD_NEGATIVE, env="math") == sum(
        rewards)
    assert errors(reg, "record_rollout") == 0


def test_reward_counters_exist_from_an_envs_first_rollout_and_move_one_at_a_time() -> None:
    # Both series at 0 before any reward, so increase() over a window sees the first reward of each sign.
    rollout = make()
    rollout.record_rollout(env="code", tokens=1)
    reg = rollout.registry
    assert (value(reg, ROLLOUT_REWARD_POSITIVE, env="code"), value(reg, ROLLOUT_REWARD_NEGATIVE, env="code")) == (0, 0)
    rollout.record_rollout(env="code", tokens=1, reward=-0.5)
    assert (value(reg, ROLLOUT_REWARD_POSITIVE, env="code"), value(reg, ROLLOUT_REWARD_NEGATIVE, env="code")) == (
        0, 0.5)
    rollout.record_rollout(env="code", tokens=1, reward=2.0, outcome="truncated")  # other outcome, same env counters
    assert (value(reg, ROLLOUT_REWARD_POSITIVE, env="code"), value(reg, ROLLOUT_REWARD_NEGATIVE, env="code")) == (
        2.0, 0.5)
    for bad in (math.nan, math.inf, -math.inf, "1.0", True):  # dropped: neither counter moves
        rollout.record_rollout(env="code", tokens=1, reward=bad)  # type: ignore[arg-type]  # bad on purpose
    assert (value(reg, ROLLOUT_REWARD_POSITIVE, env="code"), value(reg, ROLLOUT_REWARD_NEGATIVE, env="code")) == (
        2.0, 0.5)
    assert errors(reg, "record_rollout") == 5
    assert value(reg, ROLLOUT_REWARD, "_count", env="code") == 2


_POOL_CHILD = """
import sys
from ptmon.exporters import RolloutExporter
rollout = RolloutExporter(run="r1", model="m", algorithm="grpo", gpus=0, gpu_hour_price=3.0)
index = int(sys.argv[1])
for i in range(100):
    rollout.record_rollout(env="math", tokens=1, reward=(1.0, -0.25, 0.0, 0.5)[(i + index) % 4])
"""


@pytest.mark.slow
def test_reward_counters_aggregate_across_a_multiprocess_pool(tmp_path: Path) -> None:
    """Real child processes in prometheus_client's multiprocess mode: the signed sums add up across them."""
    directory = tmp_path / "multiproc"
    directory.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    repo = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", _POOL_CHILD, str(i)], cwd=repo, env=env) for i in range(3)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    # 3 children x 100 rollouts, each reward 25 times per child: positive 3 x 25 x 1.5, negative 3 x 25 x 0.25.
    assert value(registry, ROLLOUT_REWARD_POSITIVE, env="math") == 112.5
    assert value(registry, ROLLOUT_REWARD_NEGATIVE, env="math") == 18.75
    assert value(registry, ROLLOUT_REWARD, "_count", env="math") == 300


def test_internal_failure_is_counted_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    rollout = make()
    rollout.record_rollout(env="math", tokens=1)

    def broken(amount: float) -> None:
        raise OSError("mmap file vanished")

    children = rollout._children[("math", "ok")]
    monkeypatch.setitem(rollout._children, ("math", "ok"), (broken, *children[1:]))
    rollout.record_rollout(env="math", tokens=1)  # must not raise
    assert errors(rollout.registry, "record_rollout") == 1


def test_trainer_and_rollout_can_share_one_registry() -> None:
    """Colocated RL: one process, one registry, two roles; the shared metrics get one series per role."""
    registry = CollectorRegistry()
    TrainerExporter(run="r1", model="m", algorithm="grpo", gpus=8, gpu_hour_price=3.0, registry=registry)
    rollout = make(registry=registry)
    rollout.record_rollout(env="math", tokens=3)
    assert value(registry, RUN_INFO, run="r1", model="m", algorithm="grpo", role="trainer") == 1
    assert value(registry, RUN_INFO, run="r1", model="qwen3-8b", algorithm="grpo", role="rollout") == 1
    with pytest.raises(ValueError, match="role='rollout'"):
        make(registry=registry)


@pytest.mark.slow
def test_sixteen_threads_give_exact_totals() -> None:
    """16 threads x 50,000 record_rollout calls: every count, token, bucket and sum exact.

    Rewards of both signs (0.5 and -0.25, exact in binary) in each env, so the signed reward
    counters are checked to the last bit too.
    """
    rollout = make()
    threads, calls = 16, 50_000
    start = threading.Barrier(threads)

    def worker(index: int) -> None:
        env = "math" if index % 2 else "code"
        outcome = ROLLOUT_OUTCOMES[index % 4]
        reward = 0.5 if index % 4 < 2 else -0.25  # per env: 4 threads of each
        record = rollout.record_rollout
        start.wait()
        for _ in range(calls):
            record(env=env, tokens=3, reward=reward, seconds=1.0, policy_version=index, outcome=outcome)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    reg = rollout.registry
    per_env = threads // 2 * calls
    for env in ("math", "code"):
        assert value(reg, ROLLOUT_TOKENS, env=env) == 3 * per_env
        assert value(reg, ROLLOUT_SECONDS, "_count", env=env) == per_env
        assert value(reg, ROLLOUT_SECONDS, "_sum", env=env) == per_env * 1.0
        assert value(reg, ROLLOUT_REWARD, "_bucket", env=env, le="-0.5") == 0
        assert value(reg, ROLLOUT_REWARD, "_bucket", env=env, le="0.0") == per_env // 2  # the -0.25s
        assert value(reg, ROLLOUT_REWARD, "_bucket", env=env, le="0.4") == per_env // 2
        assert value(reg, ROLLOUT_REWARD, "_bucket", env=env, le="0.5") == per_env
        assert value(reg, ROLLOUT_REWARD_POSITIVE, env=env) == 0.5 * (per_env // 2) == 100_000.0
        assert value(reg, ROLLOUT_REWARD_NEGATIVE, env=env) == 0.25 * (per_env // 2) == 50_000.0
    outcomes = {o: value(reg, ROLLOUTS, env=e, outcome=o) or 0 for o in ROLLOUT_OUTCOMES for e in ("math",)}
    total = sum(value(reg, ROLLOUTS, env=e, outcome=o) or 0 for o in ROLLOUT_OUTCOMES for e in ("math", "code"))
    assert total == threads * calls
    assert outcomes["error"] == outcomes["dropped_stale"] == 4 * calls  # odd indexes 1,5,9,13 and 3,7,11,15
    assert errors(reg, "record_rollout") == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["math", "code"]), st.sampled_from(ROLLOUT_OUTCOMES),
                          st.integers(0, 10**6), st.floats(-2, 2), st.floats(0, 400)), max_size=30))
def test_inline_fast_path_matches_the_public_api(rollouts: list) -> None:
    """record_rollout's inlined increments expose exactly what prometheus_client's public API would."""
    exporter = make()
    reference = CollectorRegistry()
    counts, tokens = _build.counter(ROLLOUTS, reference), _build.counter(ROLLOUT_TOKENS, reference)
    seconds_h, reward_h = _build.histogram(ROLLOUT_SECONDS, reference), _build.histogram(ROLLOUT_REWARD, reference)
    positive, negative = _build.counter(ROLLOUT_REWARD_POSITIVE, reference), _build.counter(ROLLOUT_REWARD_NEGATIVE,
                                                                                           reference)
    for env, outcome, n, reward, seconds in rollouts:
        exporter.record_rollout(env=env, tokens=n, reward=reward, seconds=seconds, outcome=outcome)
        counts.labels(env=env, outcome=outcome).inc()
        tokens.labels(env=env).inc(n)
        seconds_h.labels(env=env).observe(seconds)
        reward_h.labels(env=env).observe(reward)
        positive.labels(env=env).inc(max(reward, 0.0))  # both exist from the env's first rollout
        negative.labels(env=env).inc(max(-reward, 0.0))
    names = {ROLLOUTS.name, ROLLOUT_TOKENS.name, ROLLOUT_SECONDS.bucket, ROLLOUT_SECONDS.sum, ROLLOUT_SECONDS.count,
             ROLLOUT_REWARD.bucket, ROLLOUT_REWARD.count, ROLLOUT_REWARD_POSITIVE.name, ROLLOUT_REWARD_NEGATIVE.name}

    def samples(registry: CollectorRegistry) -> list:
        return sorted((s.name, sorted(s.labels.items()), s.value) for f in registry.collect() for s in f.samples
                      if s.name in names)

    assert samples(exporter.registry) == samples(reference)


def test_an_env_that_is_not_valid_unicode_is_dropped_so_the_endpoint_keeps_serving() -> None:
    # A lone surrogate (a file name decoded with surrogateescape, say) cannot be encoded as UTF-8: kept as a
    # label, it would make every later scrape of this registry fail, losing every metric, not one rollout.
    from prometheus_client import generate_latest

    rollout = make()
    rollout.record_rollout(env="math\udcff", tokens=10, reward=1.0, seconds=1.0)
    rollout.record_rollout(env="math", tokens=5)
    reg = rollout.registry
    assert errors(reg, "record_rollout") == 1
    assert value(reg, ROLLOUT_TOKENS, env="math") == 5
    assert b'posttrain_rollout_tokens_total{env="math"} 5.0' in generate_latest(reg)


# One contract for label sizes (exporters/schema.py): what the monitor would refuse is never exposed.
OVERSIZED_ENVS = [
    "x" * (MAX_LABEL_VALUE_BYTES + 1),
    '"' * (MAX_LABEL_VALUE_BYTES // 2 + 1),  # few enough characters, but each is escaped to two bytes
    "\u00e9" * (MAX_LABEL_VALUE_BYTES // 2 + 1),  # two UTF-8 bytes each
    "\U0001f680" * (MAX_LABEL_VALUE_BYTES // 4 + 1),
]


def test_a_label_value_the_monitor_would_refuse_is_dropped_and_counted() -> None:
    rollout = make()
    rollout.record_rollout(env="math", tokens=1)
    for env in OVERSIZED_ENVS:
        rollout.record_rollout(env=env, tokens=5)
        rollout.record_rollout(env=env, tokens=5)  # every call, not only the first, is counted
    assert errors(rollout.registry, "record_rollout") == 2 * len(OVERSIZED_ENVS)
    at_the_limit = "x" * (MAX_LABEL_VALUE_BYTES - 2) + '"'  # exposed as exactly the limit
    for env in ("x" * 5000, at_the_limit):  # the 5,000-byte env is within the contract
        rollout.record_rollout(env=env, tokens=7)
    assert errors(rollout.registry, "record_rollout") == 2 * len(OVERSIZED_ENVS)
    with serve(rollout.registry) as server:
        body = httpx.get(server.url, timeout=10).text
    samples = ExpositionParser().parse(body)  # the monitor's parser, at the contract's limits
    assert {s.labels["env"] for s in samples if s.name == ROLLOUTS.name} == {"math", "x" * 5000, at_the_limit}


async def test_a_worker_recording_an_oversized_env_is_still_scraped_whole() -> None:
    from tests.monitor.helpers import T0, scrape_one_worker

    def record(worker: RolloutExporter) -> None:
        worker.record_rollout(env="x" * 70_000, tokens=5, reward=1.0, seconds=1.0)
        worker.record_rollout(env="math", tokens=10, reward=1.0, seconds=1.0)

    d, feed = await scrape_one_worker(record)
    (target,) = d.targets
    assert target.up is True and target.error is None
    assert d.rollout_tokens_per_s == pytest.approx(1.0)  # 10 tokens every 10 s: only the good env's
    (dropped,) = [s for s in feed.store.series("w", EXPORTER_ERRORS.name) if s.labels["call"] == "record_rollout"]
    assert dropped.last() == (pytest.approx(T0 + 100.0), 11.0)  # one drop a round, counted where ptmon sees it


async def test_a_5000_byte_env_reaches_the_screen() -> None:
    from tests.monitor.helpers import scrape_one_worker

    d, _ = await scrape_one_worker(lambda w: w.record_rollout(env="x" * 5000, tokens=10), rounds=3)
    assert d.targets[0].up is True and d.targets[0].error is None
