"""README "Instrument your loop", By hand: every python block runs as written, as its own process.

The blocks are whole programs whose *yours* functions are stand-ins (they
sleep), so the test runs them unchanged but for their ports (a free port for
each, so parallel runs never collide): the long-running ones (trainer,
rollout worker) must stay alive and serve what they record; the short ones
must exit 0. Issue 13 item 11: the examples had no imports of their own, a
worker exited at once after serve(), and the trainer died on the first
failed sync.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from ptmon.exporters import schema
from ptmon.monitor.parse import parse

ROOT = Path(__file__).resolve().parents[1]
PORTS = (9100, 9101, 9091)  # the ports the blocks name: each replaced by a free one
Page = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def by_hand_blocks() -> list[str]:
    """The python blocks of "### By hand", up to "Rules every exporter follows" (the rest are fragments)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n### By hand\n")
    end = text.index("\nRules every exporter follows:", start)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _on_free_ports(code: str) -> tuple[str, dict[int, int]]:
    ports = {p: _free_port() for p in PORTS if f"{p}" in code}
    for old, new in ports.items():
        code = re.sub(rf"\b{old}\b", str(new), code)
    return code, ports


def _scrape(port: int) -> Page:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        body = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in parse(body)}


def _total(samples: Page, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def test_the_by_hand_section_is_four_whole_programs() -> None:
    blocks = by_hand_blocks()
    assert len(blocks) == 4
    for block in blocks:
        assert block.lstrip().startswith(("import ", "from ")), block[:80]  # its own imports
        assert "0.0.0.0" not in re.sub(r"#.*", "", block)  # loopback by default (0.0.0.0 only in a comment)


def _serve_until(code: str, *, port: int, done: Callable[[Page], bool], seconds: float = 60) -> Page:
    """Run ``code`` (a program that serves on ``port``) until its page satisfies ``done``; the last page.
    The process must stay alive the whole time; it is ended after."""
    code, ports = _on_free_ports(code)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + seconds
    seen: Page = {}
    try:
        while time.monotonic() < deadline and not done(seen):
            assert proc.poll() is None, proc.communicate()[1][-2000:]  # it must not exit (nor die on a sync)
            try:
                seen = _scrape(ports[port])
            except OSError:
                pass
            time.sleep(0.3)
        assert proc.poll() is None
        return seen
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_the_trainer_program_keeps_training_through_failed_syncs_and_publishes_versions() -> None:
    block = next(b for b in by_hand_blocks() if "TrainerExporter(" in b and "serve(" in b)
    seen = _serve_until(block, port=9100, done=lambda page: _total(page, schema.POLICY_VERSION.name) >= 2
                        and _total(page, schema.TRAINER_STEPS.name) >= 8)
    version, steps = _total(seen, schema.POLICY_VERSION.name), _total(seen, schema.TRAINER_STEPS.name)
    assert version >= 2 and steps >= 8
    assert version <= steps / 4  # the version counts successful syncs (one every 4 steps at most), not steps


@pytest.mark.slow
def test_the_rollout_worker_program_stays_alive_and_serves_its_rollouts() -> None:
    block = next(b for b in by_hand_blocks() if "RolloutExporter(" in b and "serve(" in b)
    seen = _serve_until(block, port=9101, done=lambda page: _total(page, schema.ROLLOUTS.name) >= 10)
    assert _total(seen, schema.ROLLOUTS.name) >= 10
    assert _total(seen, schema.ROLLOUT_POLICY_VERSION.name) > 0


@pytest.mark.slow
@pytest.mark.parametrize("marker", ["EvalExporter(", "record_step("])
def test_the_short_programs_run_to_the_end(marker: str) -> None:
    block = next(b for b in by_hand_blocks() if marker in b)
    code, _ = _on_free_ports(block)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
