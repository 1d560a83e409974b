"""A rollout-pool child for the multiprocess test: ``python -m tests.exporters.pool_worker INDEX CALLS``.

Run with PROMETHEUS_MULTIPROC_DIR set in its environment, as a real pool
worker would be: its metrics land in that directory's mmap files.
"""

from __future__ import annotations

import sys

from ptmon.exporters import RolloutExporter

__all__ = ["main"]


def main(index: int, calls: int) -> None:
    rollout = RolloutExporter(run="r1", model="qwen3-8b", algorithm="grpo", gpus=0, gpu_hour_price=3.0)
    for _ in range(calls):
        rollout.record_rollout(env="math", tokens=10, reward=0.5, seconds=1.0, policy_version=5 + index)
    rollout.record_rollout(env="math", tokens=-1)  # one bad value per child: the error counts aggregate too


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
