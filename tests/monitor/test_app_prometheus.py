"""``ptmon watch --prometheus URL`` driven as a person would (Pilot), end to end on real parts.

The real PtmonApp on a real LiveFeed whose settings come from
``load_settings(prometheus_url=...)``, reading a real Prometheus that scrapes
real exporters served on loopback (a trainer and two rollout workers, kept
moving: steps, rollouts, weight syncs). What is asserted is what a person
sees: the screen read back from its exported screenshot (tests/monitor/screen.py)
and the cells the tables draw. Then the failures a real fleet has: an exporter
killed (its row goes red with Prometheus's reason, an alert appears), a
Prometheus that hangs (SIGSTOP: its polls time out, then it comes back) and
one that is stopped (connection refused on every row); and, separately, a
server that accepts connections and never answers (the server's own row says
"timed out"). Through all of it the keyboard answers and nothing crashes.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from textual.pilot import Pilot

from ptmon.monitor.app import PtmonApp
from ptmon.monitor.config import load_settings
from ptmon.monitor.format import DASH
from ptmon.monitor.live import LiveFeed
from ptmon.monitor.widgets import Card, HelpScreen
from tests.conftest import PrometheusServer
from tests.monitor.screen import screen_lines, screen_text
from tests.support.fleet import Fleet, loopback_fleet

SIZE = (220, 56)  # wide enough that the targets table's error column and the alert messages are on screen
RATE_PER_WORKER = 20.0  # rollouts/s each worker's counter follows
SYNC_EVERY_S = 0.7
STEP_EVERY_S = 0.1
NAMES = ("trainer", "rollout-0", "rollout-1")  # the ptmon_name target labels
# TargetsTable columns
NAME, ROLE, UP, ERROR, URL = 0, 1, 2, 6, 7


# --- a small fleet of real exporters on loopback, kept moving ---------------------------------------


def _instance(fleet: Fleet, name: str) -> str:
    return f"127.0.0.1:{fleet.servers[NAMES.index(name)].port}"


class _Loop:
    """The trainer stepping every STEP_EVERY_S and syncing every SYNC_EVERY_S, the workers adopting each
    new policy version right after its sync (the fleet's tick)."""

    def __init__(self) -> None:
        self.next_step, self.next_sync, self.version = 0.0, SYNC_EVERY_S, 0

    def __call__(self, fleet: Fleet, now: float) -> None:
        if now >= self.next_step:
            with fleet.trainer.step():
                pass
            fleet.trainer.record(tokens=4096, loss=0.25)
            self.next_step += STEP_EVERY_S
        if now >= self.next_sync:
            self.version += 1
            with fleet.trainer.weight_sync(version=self.version, nbytes=1e9):
                time.sleep(0.02)
            for w in fleet.workers:
                w.set_policy_version(self.version)
            self.next_sync += SYNC_EVERY_S


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    """A trainer stepping every 0.1 s and syncing weights every 0.7 s, two rollout workers following
    ``RATE_PER_WORKER * elapsed`` and adopting each new policy version right after its sync."""
    with loopback_fleet(run="prom-run-1", rate_per_worker=RATE_PER_WORKER, reward=0.5, tick=_Loop()) as f:
        yield f


@pytest.fixture
def prometheus(prometheus_bin: str, tmp_path, fleet: Fleet) -> Iterator[PrometheusServer]:
    """A real Prometheus scraping the fleet every 0.5 s, each target labelled ``ptmon_name`` as
    ``ptmon demo --headless`` writes it (jobs: trainer, rollout). Left running (SIGCONT) at teardown."""
    jobs = {"trainer": NAMES[:1], "rollout": NAMES[1:]}
    configs = [{"job_name": job, "scrape_interval": "500ms", "scrape_timeout": "500ms", "metrics_path": "/metrics",
                "static_configs": [{"targets": [_instance(fleet, n)], "labels": {"ptmon_name": n}} for n in names]}
               for job, names in jobs.items()]
    prom = PrometheusServer(binary=prometheus_bin, directory=tmp_path, scrape_configs=configs, interval="500ms")
    prom.start()
    try:
        yield prom
    finally:
        process = prom._process  # noqa: SLF001 - a test may have stopped (SIGSTOP) it
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
        prom.stop()


# --- reading the screen ------------------------------------------------------------------------------


async def until(pilot: Pilot, predicate: Callable[[], object], *, what: str, timeout: float = 20.0) -> None:
    """Let the app run until ``predicate()`` holds; on timeout fail with what the screen shows."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                break
        except (KeyError, ValueError, IndexError):  # a row not on screen yet
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}; the screen:\n"
                                 f"{screen_text(pilot.app)}")
        await pilot.pause(0.1)
    await pilot.pause()


def rows(app: PtmonApp, panel: str) -> dict[str, list[str]]:
    """Each visible row of a table, by key, as the plain text of its cells."""
    table = app.table(panel)
    return {key: [cell.plain for cell in table.get_row(key)] for key in table.visible_keys()}


def row_is_red(app: PtmonApp, panel: str, key: str) -> bool:
    return all("red" in str(cell.style) or any("red" in str(s.style) for s in cell.spans)
               for cell in app.table(panel).get_row(key))


def card(app: PtmonApp, name: str) -> dict[str, str]:
    return {str(label): str(value) for label, value in app.query_one(f"#card-{name}", Card).rows}


def number(shown: str) -> float:
    """The leading number of a shown value ("38.9/s", "21ms", "v12"); NaN for a dash."""
    match = re.search(r"-?\d+(?:\.\d+)?", shown)
    return float(match.group()) if match else float("nan")


def line_with(app: PtmonApp, *parts: str) -> str | None:
    """The first screen line holding every one of ``parts``."""
    return next((line for line in screen_lines(app) if all(p in line for p in parts)), None)


def target_line(app: PtmonApp, name: str) -> str:
    """The screen line of ``name``'s row in the targets table (the left-hand table in the wide layout)."""
    line = next((line for line in screen_lines(app) if line.startswith(f"│ {name} ")), None)
    assert line is not None, (name, screen_text(app))
    return line


async def keys_still_work(pilot: Pilot) -> None:
    """Help opens and closes, pause freezes and resumes the screen, and polling goes on."""
    app = pilot.app
    await pilot.press("question_mark")
    assert isinstance(app.screen, HelpScreen)
    assert "this help" in screen_text(app)
    await pilot.press("escape")
    assert not isinstance(app.screen, HelpScreen)
    await pilot.press("p")
    assert app.paused
    await pilot.pause(0.1)
    assert "PAUSED" in screen_text(app)
    await pilot.press("p")
    assert not app.paused
    polls = app.polls
    await until(pilot, lambda: app.polls >= polls + 2, what="two more polls after resuming", timeout=10)
    assert "PAUSED" not in screen_text(app)
    assert app.is_running and app.return_code is None


def all_rows(app: PtmonApp, predicate: Callable[[list[str]], bool]) -> bool:
    shown = rows(app, "targets")
    return set(shown) == set(NAMES) and all(predicate(r) for r in shown.values())


# --- the tests ---------------------------------------------------------------------------------------


@pytest.mark.prometheus
async def test_watch_prometheus_shows_the_fleet_then_a_dead_exporter_a_hung_and_a_stopped_prometheus(
        fleet: Fleet, prometheus: PrometheusServer) -> None:
    prom = prometheus
    prom.wait_for("count(up == 1) == 3")
    settings = load_settings(prometheus_url=prom.url, interval_s=0.5, window_s=60)
    assert settings.prometheus is not None and not settings.targets
    app = PtmonApp(LiveFeed(settings), interval_s=settings.interval_s, window_s=settings.window_s,
                   thresholds=settings.thresholds)
    host = prom.url.split("/")[2]
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        # 1. Healthy: every target by its ptmon_name, up; live numbers on the cards and the workers table.
        def healthy() -> bool:
            d = app.dashboard
            return (d is not None and d.targets_up == 3 and bool(d.rollout_rate_per_s)
                    and bool(d.weight_sync_count) and d.weight_sync_p99_s is not None and bool(d.steps_per_s)
                    and all(w.rollouts_per_s for w in d.workers) and len(d.workers) == 2)

        await until(pilot, healthy, what="three targets up with rollouts, steps and syncs")
        # The header is painted from that Dashboard a frame later on a loaded machine: wait for the paint.
        await until(pilot, lambda: "targets 3/3" in screen_text(app), what="the header's 'targets 3/3'")
        text = screen_text(app)
        assert "prom-run-1" in text and "qwen-7b" in text
        assert "targets 3/3" in text
        # Fresh as well as up: on a loaded machine a poll can come late and mark a row "⚠ 1s old" (true then).
        await until(pilot, lambda: all(rows(app, "targets")[n][UP] == "● up" for n in NAMES),
                    what="every target up with fresh data")
        targets = rows(app, "targets")
        assert list(targets) == ["rollout-0", "rollout-1", "trainer"]  # by job, then name
        for name, role in zip(NAMES, ("trainer", "rollout", "rollout"), strict=False):
            assert targets[name][ROLE] == role
            assert targets[name][UP] == "● up"
            assert targets[name][ERROR] == ""
            assert targets[name][URL] == _instance(fleet, name)  # the instance Prometheus scrapes
            # On screen too: the painted line can lag the table's data by a frame on a loaded machine.
            parts = (role, "● up", _instance(fleet, name))
            await until(pilot, lambda n=name, p=parts: any(  # type: ignore[misc]
                line.startswith(f"│ {n} ") and all(x in line for x in p) for line in screen_lines(app)),
                what=f"{name}'s row on screen with {parts}")
        rollout = card(app, "rollout")
        assert number(rollout["rollouts"]) > 0, rollout  # e.g. "38.9/s ▶"
        assert number(rollout["tokens"]) > 0, rollout
        sync = card(app, "sync")
        # "last avg" when two syncs fell in one scrape interval (a loaded machine scrapes late): an average is
        # never called the last.
        last = "last avg" if "last avg" in sync else "last"
        assert all(sync[k] != DASH and number(sync[k]) > 0 for k in ("p50", "p99", last)), sync
        assert sync["failures"] == "0"
        assert number(card(app, "staleness")["policy"]) >= 1  # the trainer's policy moved past v0
        assert number(card(app, "trainer")["steps"]) > 0
        assert line_with(app, "rollouts", rollout["rollouts"].split()[0]), text  # the card, on screen
        workers = rows(app, "workers")
        assert set(workers) == {"rollout-0", "rollout-1"}
        for w in workers.values():
            assert number(w[1]) > 0 and number(w[3]) >= 1 and w[6] != "down", w  # rollouts/s, policy, status
            assert line_with(app, w[0], w[1]), (w, text)
        assert "no active alerts" in text

        # 2. Kill rollout-1's exporter: Prometheus marks it down, its row goes red with Prometheus's reason.
        victim = fleet.servers[2]
        await asyncio.to_thread(victim.close)
        await until(pilot, lambda: rows(app, "targets")["rollout-1"][UP] == "✗ DOWN", what="rollout-1 down")
        reason = f"down according to Prometheus (job=rollout, instance={_instance(fleet, 'rollout-1')})"
        targets = rows(app, "targets")
        assert targets["rollout-1"][ERROR] == reason
        assert row_is_red(app, "targets", "rollout-1")
        assert targets["trainer"][UP] == targets["rollout-0"][UP] == "● up"
        assert not row_is_red(app, "targets", "trainer")
        assert "target_down\0rollout-1" in app.table("alerts").visible_keys()
        text = screen_text(app)
        assert "targets 2/3" in text
        assert "✗ DOWN" in target_line(app, "rollout-1")
        assert "down according to Prometheus" in target_line(app, "rollout-1")  # the error column (cut at its edge)
        assert f"rollout-1 ({_instance(fleet, 'rollout-1')}) is down: {reason}" in text  # the alerts panel, whole
        assert rows(app, "workers")["rollout-1"][6] == "down"
        assert number(card(app, "rollout")["rollouts"]) > 0  # rollout-0 still counts
        assert app.is_running

        # 3. Prometheus hangs (SIGSTOP): every poll times out; each row says so; the keyboard answers.
        process = prom._process  # noqa: SLF001
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)
        try:
            await until(pilot, lambda: all_rows(app, lambda r: r[UP] == "✗ DOWN"
                                                 and r[ERROR].startswith(f"Prometheus {host}: timed out")),
                        what="every row down with Prometheus timed out")
            assert "targets 0/3" in screen_text(app)
            for name in NAMES:
                assert "✗ DOWN" in target_line(app, name)
                assert f"Prometheus {host}: timed out" in target_line(app, name)
            await keys_still_work(pilot)
        finally:
            os.kill(process.pid, signal.SIGCONT)
        # ... and comes back: the same rows, each with what Prometheus says about it now.
        await until(pilot, lambda: rows(app, "targets")["trainer"][UP] == "● up"
                    and rows(app, "targets")["rollout-0"][UP] == "● up"
                    and rows(app, "targets")["rollout-1"][ERROR] == reason,
                    what="recovery after SIGCONT", timeout=25)
        assert "targets 2/3" in screen_text(app)
        assert not any("timed out" in r[ERROR] for r in rows(app, "targets").values())
        assert not any("timed out" in r[2] for r in rows(app, "alerts").values())  # the message column

        # 4. Prometheus stopped: connection refused on every row; the screen stays up and answers keys.
        await asyncio.to_thread(prom.stop)
        refused = f"Prometheus {host}: connection refused"
        await until(pilot, lambda: all_rows(app, lambda r: r[UP] == "✗ DOWN" and r[ERROR] == refused),
                    what="every row: Prometheus connection refused")
        text = screen_text(app)
        assert "targets 0/3" in text
        for name in NAMES:
            assert "✗ DOWN" in target_line(app, name)
            # The error column's edge: columns only grow, and while Prometheus hung the up column may have held
            # "⚠ 12s old" (0.2.0's data age), so the visible cut varies by a few cells; the whole text is
            # asserted on the row's data above and in the alerts panel below.
            assert f"Prometheus {host}: connection" in target_line(app, name)
            assert f"{name} ({_instance(fleet, name)}) is down: {refused}" in text  # the alerts panel, whole
            assert row_is_red(app, "targets", name)
        assert {k.split("\0")[1] for k in app.table("alerts").visible_keys() if k.startswith("target_down")} == set(
            NAMES)
        assert "prom-run-1" in text  # the run's identity is still known
        assert "feed error" not in text  # a reason on the rows, not an exception in the header
        await keys_still_work(pilot)
        assert rows(app, "targets")["trainer"][ERROR] == refused
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_a_prometheus_that_never_answers_times_out_on_the_server_row_and_keys_work_meanwhile() -> None:
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # the kernel completes the handshake; nobody ever reads the request
        server = f"127.0.0.1:{hung.getsockname()[1]}"
        settings = load_settings(prometheus_url=server, interval_s=0.5, window_s=60)
        app = PtmonApp(LiveFeed(settings), interval_s=settings.interval_s, window_s=settings.window_s)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.polls >= 2, what="two polls")
            # Nothing known: one row, the server itself (not known yet, or already timed out).
            targets = rows(app, "targets")
            assert list(targets) == [server]
            assert targets[server][UP] in ("…", "✗ DOWN")
            assert targets[server][URL] == f"http://{server}"
            assert "targets 0/1" in screen_text(app)
            # The keyboard answers while the server holds the queries.
            await pilot.press("right_square_bracket")
            assert app.window_s == 300.0
            await keys_still_work(pilot)
            assert "window 5m" in screen_text(app)
            # Past the usual timeout the row says what it is waiting for (the first query may take 10 s).
            await until(pilot, lambda: rows(app, "targets")[server][ERROR].startswith(
                f"no answer from Prometheus {server} after "), what="the waiting message", timeout=5)
            # Then the query times out, and the server's row says so.
            await until(pilot, lambda: rows(app, "targets")[server][UP] == "✗ DOWN",
                        what="the server row down", timeout=25)
            row = rows(app, "targets")[server]
            assert row[ERROR].startswith(f"Prometheus {server}: timed out after "), row
            assert row_is_red(app, "targets", server)
            text = screen_text(app)
            assert "✗ DOWN" in target_line(app, server)
            assert f"Prometheus {server}: timed out" in target_line(app, server)
            assert f"{server} (http://{server}) is down: Prometheus {server}: timed out after " in text  # alerts
            assert "targets 0/1" in text and "feed error" not in text
            assert f"target_down\0{server}" in app.table("alerts").visible_keys()
            await keys_still_work(pilot)
            await pilot.press("q")
            await pilot.pause()
        assert app.return_code == 0
