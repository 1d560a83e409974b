"""The framework's own staleness and bubbles on screen and in the snapshot, each with its definition (issue 15).

prime-rl's dicts (tests/exporters/bridges/samples.py: ``off_policy/mean|max`` from the orchestrator,
``time/wait_for_batch`` from the trainer, ``time/wait_for_policy`` from the orchestrator) go through a real
MetricsBridge on a served Colocated registry, scraped by a real LiveFeed.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from ptmon.exporters.bridges.tables import TABLES
from ptmon.monitor.settings import Thresholds
from ptmon.monitor.snapshot import render
from ptmon.monitor.widgets.cards import card_rows
from tests.exporters.bridges import samples
from tests.exporters.bridges.helpers import bridge_dashboard, window_s

WINDOW = window_s(samples.STEPS, samples.STEP_S)


def rows(card: str, d: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in card_rows(card, d, Thresholds())}  # type: ignore[arg-type]


async def test_prime_rl_staleness_and_bubbles_reach_screen_and_snapshot_with_their_definitions() -> None:
    d, _, _ = await bridge_dashboard("prime-rl", samples.prime_rl, steps=samples.STEPS)
    definition = TABLES["prime-rl"].staleness
    assert d.framework_staleness == (("prime-rl", 0.5, 2.0, definition),)
    assert d.staleness_max == 0.0  # ptmon's own version difference stays its own: 0 right after each sync
    by_reason = {reason: (share, dollars) for reason, share, dollars, _ in d.bubbles}
    assert by_reason.keys() == {"wait_for_batch", "wait_for_policy"}
    batch_share, batch_dollars = by_reason["wait_for_batch"]
    assert batch_share == pytest.approx(samples.STEPS * 0.5 / WINDOW)  # 0.5 s waited per step
    assert d.burn_dollars_per_hour is not None
    assert batch_dollars == pytest.approx(batch_share * d.burn_dollars_per_hour)  # the trainer holds every GPU
    policy_share, policy_dollars = by_reason["wait_for_policy"]
    assert policy_share == pytest.approx(samples.STEPS * 0.2 / WINDOW)
    assert policy_dollars is None  # colocated: the rollout role holds no GPUs of its own to bill

    card = rows("staleness", d)
    assert card["prime-rl max"] == "2"
    assert card["wait batch"] == f"4.4% ${batch_dollars:.2f}/h"
    assert "warn/crit" not in card  # the biggest bubble takes the thresholds' row

    console = Console(width=240, record=True, color_system=None)
    render(d, console)
    text = console.export_text()
    assert "staleness max / mean (prime-rl)" in text and definition in text
    assert "bubble: wait_for_batch" in text and "4.4% of wall time" in text and "burnt waiting" in text
    assert "share of wall time the trainer waited for a batch" in text


async def test_without_the_frameworks_numbers_the_card_is_as_before() -> None:
    d, _, _ = await bridge_dashboard("verl", samples.SAMPLES["verl"].dicts, steps=samples.STEPS,
                                     rollouts_per_step=samples.SAMPLES["verl"].rollouts_per_step)
    assert d.framework_staleness == () and d.bubbles == ()
    assert list(rows("staleness", d)) == ["max", "mean", "warn/crit", "policy"]
