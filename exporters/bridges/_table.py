"""What a framework's per-step metrics mean, as data: one ``Table`` of ``Key`` rows per framework.

Each row says which key (or key pattern) carries which quantity, in which
unit, and whether its value is this step's number, a running total, or a
rate to multiply by a time of the same step; and it names the file of the
framework's own repository that emits the key, so every row can be checked
against the source. The bridge (``ptmon.exporters.bridges``) only reads
these tables; no metric name of ptmon's is spelled here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

__all__ = ["Quantity", "Kind", "Key", "Table", "QUANTITIES"]

Quantity = Literal[
    "step_seconds",  # a training step ended; its wall time
    "step",  # a training step ended; its time is not logged (the value is ignored)
    "trainer_tokens",  # tokens trained on
    "loss", "kl", "entropy", "grad_norm", "learning_rate",
    "weight_sync_seconds",  # one trainer-to-inference weight sync
    "staleness_mean", "staleness_max",  # of the samples the step consumed, as the framework defines it
    "dropped_stale",  # samples discarded for being too stale
    "rollouts",  # rollouts behind this step's numbers
    "reward_mean",  # mean reward of those rollouts
    "rollout_tokens_mean",  # mean generated tokens per rollout
    "rollout_tokens",  # generated tokens of those rollouts
    "eval_score",  # an eval result; the pattern's first group names the benchmark
    "wait_for_batch",  # seconds the trainer waited for a batch this step (its GPUs idle)
    "wait_for_policy",  # seconds inference waited for a new policy this step (the rollout GPUs idle)
]
QUANTITIES: tuple[str, ...] = Quantity.__args__  # type: ignore[attr-defined]

# per_step: the value is this step's; cumulative: a running total (set, not added); rate: per second,
# multiplied by the seconds that ``over`` names in the same step.
Kind = Literal["per_step", "cumulative", "rate"]


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a framework's metrics dict and what it holds."""

    key: str  # the key as logged (after the table's prefix/tag stripping), or a regex when ``pattern``
    quantity: Quantity
    unit: str  # "s", "tokens", "tokens/s", "versions", "samples", "rollouts", "reward", "score", ...
    source: str  # file in the framework's repository that emits the key (the README cites it)
    kind: Kind = "per_step"
    over: str | None = None  # rate: the key of the same step holding the seconds to multiply by
    unless: str | None = None  # ignored when this key is in the same dict (two spellings of one thing)
    skip_zero: bool = False  # 0 means "did not happen this step" (no sync, no previous step)
    pattern: bool = False  # ``key`` is a regular expression matched against the whole key


@dataclass(frozen=True)
class Table:
    """One framework's keys, and how to read its dicts."""

    framework: str
    repository: str  # owner/name on GitHub
    keys: tuple[Key, ...]
    step_keys: tuple[str, ...] = ()  # keys carrying the step number when ``log`` is given none
    markers: tuple[str, ...] = ()  # key prefixes only this framework logs: what ``auto`` looks for
    strip_prefixes: tuple[str, ...] = ()  # a logger's own prefix (W&B's "train/"), removed before lookup
    strip_at_tag: bool = False  # ROLL's reduction tags: "actor/pg_loss@sum" -> "actor/pg_loss"
    staleness: str = ""  # how the framework defines its staleness number, for the README
    notes: tuple[str, ...] = field(default=())

    @cached_property
    def exact(self) -> dict[str, Key]:
        return {k.key: k for k in self.keys if not k.pattern}

    @cached_property
    def over_keys(self) -> frozenset[str]:
        """Keys read only as the seconds a rate is per (they map to nothing themselves)."""
        return frozenset(k.over for k in self.keys if k.over is not None) - self.exact.keys()

    @cached_property
    def patterns(self) -> tuple[tuple[re.Pattern[str], Key], ...]:
        return tuple((re.compile(k.key), k) for k in self.keys if k.pattern)

    def normalise(self, key: str) -> str:
        for prefix in self.strip_prefixes:
            if key.startswith(prefix):
                key = key[len(prefix):]
                break
        if self.strip_at_tag and "@" in key:
            key = key.rsplit("@", 1)[0]
        return key

    def lookup(self, key: str) -> tuple[Key, str] | None:
        """The row for a normalised key, and the benchmark a pattern's first group names ("" if none)."""
        row = self.exact.get(key)
        if row is not None:
            return row, ""
        for regex, row in self.patterns:
            match = regex.fullmatch(key)
            if match is not None:
                return row, match.group(1) if regex.groups else ""
        return None

    def marked(self, key: str) -> bool:
        return key.startswith(self.markers) if self.markers else False
