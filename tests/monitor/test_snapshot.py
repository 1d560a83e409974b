"""``ptmon snapshot``: the real command as a subprocess against a served exporter, plus its renderers."""

from __future__ import annotations

import io
import json
import math
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from ptmon.exporters.rollout import RolloutExporter
from ptmon.exporters.serve import serve
from ptmon.exporters.trainer import TrainerExporter
from ptmon.monitor.dashboard import Alert, Dashboard, EvalPoint, TargetHealth, WorkerRow
from ptmon.monitor.snapshot import DEFAULT_WIDTH, exit_status, render, snapshot_console, to_json

PTMON = str(Path(sys.executable).with_name("ptmon"))
REQUIRED = ("rollout_rate_per_s", "rollout_tokens_per_s", "weight_sync_p50_s", "weight_sync_p99_s",
            "weight_sync_count", "staleness_max", "spend_dollars", "burn_dollars_per_hour",
            "ipd_points_per_kilodollar", "marginal_ipd_points_per_kilodollar", "targets", "alerts")


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/metrics"


def ptmon(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PTMON, "snapshot", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def busy_rollout_worker():
    """A real rollout exporter on loopback, fed 200 rollouts/s by a thread while the test runs."""
    worker = RolloutExporter(run="snap", model="m", algorithm="grpo", gpus=2, gpu_hour_price=3.0)
    trainer = TrainerExporter(run="snap", model="m", algorithm="grpo", gpus=4, gpu_hour_price=3.0)
    trainer.publish_policy(3)
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            for _ in range(2):
                worker.record_rollout(env="math", tokens=50, policy_version=2)
            time.sleep(0.01)

    thread = threading.Thread(target=feed, daemon=True)
    servers = [serve(worker.registry), serve(trainer.registry)]
    thread.start()
    try:
        yield servers
    finally:
        stop.set()
        thread.join()
        for s in servers:
            s.close()


@pytest.mark.slow  # starts a process
def test_snapshot_json_against_served_exporters(busy_rollout_worker) -> None:
    urls = [s.url for s in busy_rollout_worker]
    # 5 s, not 2: each scrape is stamped when it is sent and the exporter computes GPU-seconds when it answers;
    # on a loaded CI machine that gap varies by ~0.1 s, which moved a 2 s window's burn by 8% (stop 20's CI).
    proc = ptmon(*urls, "--over", "5", "--json", "--interval", "0.5")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    for key in REQUIRED:
        assert key in doc, key
    assert [(t["url"], t["role"], t["up"], t["error"]) for t in doc["targets"]] == [
        (urls[0], "rollout", True, None), (urls[1], "trainer", True, None)]
    assert all(set(t) >= {"name", "url", "role", "up", "error"} for t in doc["targets"])
    # ~200 rollouts/s (a sleeping thread runs a little slower, never faster), 50 tokens each.
    assert 50 < doc["rollout_rate_per_s"] < 220
    assert doc["rollout_tokens_per_s"] == pytest.approx(50 * doc["rollout_rate_per_s"], rel=0.05)
    assert doc["staleness_max"] == 1
    assert doc["spend_dollars"] > 0
    assert doc["burn_dollars_per_hour"] == pytest.approx(2 * 3.0 + 4 * 3.0, rel=0.05)
    # Nothing measured a weight sync or an eval: null, not 0.
    for key in ("weight_sync_p50_s", "weight_sync_p99_s", "ipd_points_per_kilodollar",
                "marginal_ipd_points_per_kilodollar"):
        assert doc[key] is None, key
    assert doc["weight_sync_count"] == 0  # the counter is there and did not move: a real zero
    assert doc["alerts"] == []


@pytest.mark.slow  # starts a process
def test_snapshot_table_against_served_exporters(busy_rollout_worker) -> None:
    proc = ptmon(busy_rollout_worker[0].url, "--over", "1.5", "--interval", "0.5")
    assert proc.returncode == 0, proc.stderr
    assert "rollouts/s" in proc.stdout and "Targets" in proc.stdout and "rollout" in proc.stdout


@pytest.mark.slow  # starts a process
def test_snapshot_exits_1_when_no_target_answers() -> None:
    url = closed_url()
    proc = ptmon(url, "--over", "1", "--json")
    assert proc.returncode == 1
    assert "no target answered" in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["targets"][0]["up"] is False and doc["targets"][0]["error"]
    assert doc["rollout_rate_per_s"] is None
    assert [a["name"] for a in doc["alerts"]] == ["target_down"]


@pytest.mark.slow  # starts a process
def test_snapshot_config_error_exits_2_with_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "ptmon.toml"
    cfg.write_text('interval = "soon"\n')
    proc = ptmon("--config", str(cfg), "--over", "1")
    assert proc.returncode == 2
    assert str(cfg) in proc.stderr and "interval" in proc.stderr
    assert proc.stdout == ""
    proc = ptmon("--over", "1")
    assert proc.returncode == 2 and "no targets" in proc.stderr


HOSTILE = "w[bold red]1[/]\x1b[2J\x1b]0;pwned\x07"


def hostile_dashboard() -> Dashboard:
    return Dashboard(
        now=1000.0, window_s=60.0, interval_s=1.0, run=HOSTILE, benchmark=HOSTILE,
        targets=(TargetHealth(HOSTILE, "http://x/metrics", "rollout", False, error=HOSTILE),),
        workers=(WorkerRow(HOSTILE, "rollout", False, None, None, None, None, None, "down"),),
        alerts=(Alert("target_down", "warn", f"{HOSTILE} is down", 1000.0, HOSTILE),),
        weight_sync_p99_s=float("nan"),
    )


def test_table_prints_scraped_strings_literally() -> None:
    buf = io.StringIO()
    render(hostile_dashboard(), Console(file=buf, force_terminal=True, width=400))
    out = buf.getvalue()
    assert "\x1b[2J" not in out and "\x1b]0;" not in out and "\x07" not in out
    assert "w[bold red]1[/]\\x1b[2J\\x1b]0;pwned\\x07" in out
    assert out.count("[bold red]") >= 5  # run, benchmark, target name and error, worker, alert: all literal


def _hostile(field: str) -> str:
    """A field-tagged string that would style the output, set the title and write the clipboard if obeyed."""
    return f"{field}[bold red]1[/][link=http://evil]l[/link]\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x9b2J"


# Every Dashboard string a target controls (scraped labels and peer error text) and what the table shows.
TARGET_FIELDS = ("run", "model", "algorithm", "benchmark", "role_a", "role_b", "target_name", "target_url",
                 "target_role", "target_error", "worker_name", "worker_role", "alert_message")


def hostile_everywhere() -> Dashboard:
    h = _hostile
    return Dashboard(
        now=1000.0, window_s=60.0, interval_s=1.0, run=h("run"), model=h("model"), algorithm=h("algorithm"),
        benchmark=h("benchmark"), spend_dollars=3.0, spend_by_role=((h("role_a"), 1.0), (h("role_b"), 2.0)),
        targets=(TargetHealth(h("target_name"), h("target_url"), h("target_role"), False,
                              error=h("target_error")),),
        workers=(WorkerRow(h("worker_name"), h("worker_role"), False, None, None, None, None, None, "down"),),
        alerts=(Alert("target_down", "warn", h("alert_message"), 1000.0, h("alert_subject")),),
    )


@pytest.mark.parametrize("terminal", [False, True])
def test_every_row_of_the_table_is_literal(terminal: bool) -> None:
    buf = io.StringIO()
    render(hostile_everywhere(), Console(file=buf, force_terminal=terminal, width=2000,
                                       color_system="standard" if terminal else None))
    raw = buf.getvalue().encode("utf-8")
    # Rich's own styling is SGR (ESC [ ... m) and only on a terminal; nothing else may carry an ESC or a C1 CSI.
    unstyled = re.sub(rb"\x1b\[[0-9;]*m", b"", raw) if terminal else raw
    assert b"\x1b" not in unstyled and b"\x07" not in unstyled and "\x9b".encode() not in unstyled
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw.decode("utf-8"))
    for field in TARGET_FIELDS:  # each one whole: no bracket consumed as markup, controls shown as escapes
        shown = f"{field}[bold red]1[/][link=http://evil]l[/link]\\x1b]0;pwned\\x07\\x1b]52;c;cHduZWQ=\\x07\\x9b2J"
        assert shown in text, field


def test_json_has_nulls_for_unknowns_and_no_nan() -> None:
    doc = to_json(hostile_dashboard())
    assert doc["weight_sync_p99_s"] is None  # NaN is not JSON
    assert doc["spend_dollars"] is None and doc["level"] == "warn" and doc["targets_up"] == 0
    text = json.dumps(doc, allow_nan=False)
    assert json.loads(text)["targets"][0]["name"] == HOSTILE  # JSON keeps the exact string
    assert not math.isnan(doc["now"])


def test_table_numbers_read_as_on_the_live_screen() -> None:
    """The table formats through monitor.format: same text as the TUI's cards, a dash for unknowns."""
    d = Dashboard(
        now=1000.0, window_s=60.0, interval_s=1.0,
        rollout_rate_per_s=42.37, rollout_tokens_per_s=18_240.0, engine_kv_cache_usage=0.5,
        weight_sync_p50_s=0.25, weight_sync_p90_s=2.791, weight_sync_p99_s=45.2, weight_sync_count=3.0,
        weight_sync_bytes_per_s=6.33e9, policy_version=12.0, staleness_max=2.0, staleness_mean=1.5,
        seconds_since_last_step=192.0, loss=0.123456, gpu_util_percent=87.0,
        spend_dollars=1234.5, spend_by_role=(("trainer", 12.345),), burn_dollars_per_hour=98.2,
        score=0.6667, baseline_score=0.5,
    )
    buf = io.StringIO()
    render(d, Console(file=buf, width=200))
    rows = {line.split("  ")[0].strip(): line.split("  ")[-1].strip()
            for line in buf.getvalue().splitlines() if "  " in line}
    assert rows["rollouts/s"] == "42.4"
    assert rows["rollout tokens/s"] == "18.2k"
    assert rows["KV cache"] == "50%"
    assert rows["p50 / p90 / p99"] == "250ms / 2.79s / 45.2s"
    assert rows["syncs in window"] == "3"
    assert rows["bytes/s"] == "6.33 GB/s"
    assert rows["staleness max / mean"] == "2 / 1.50"
    assert rows["since last step"] == "3m12s"
    assert rows["loss"] == "0.12"  # as the trainer card shows it
    assert rows["utilisation (mean)"] == "87%"
    assert rows["spend"] == "$1,234"
    assert rows["by role"] == "trainer $12.35"
    assert rows["burn"] == "$98.20/h"
    assert rows["score (latest) / baseline"] == "0.667 / 0.500"
    # Unknown: a dash, never 0 and never "—%" or "— W".
    for label in ("errors/s", "power (total)", "per 1M rollout tokens", "points per $1k (cumulative)"):
        assert rows[label] == "—", label
    assert rows["last / max"] == "— / —"


async def test_the_window_is_the_time_scraped_even_when_the_run_started_long_before() -> None:
    # The trainer's _created says the run started 1000 s before this snapshot (the feed's clock runs
    # 1000 s ahead of the wall clock the exporter stamps with): uptime counts from there, while rates are
    # still measured over the ~1.5 s actually scraped, not over a 300-s window of which 1.5 s hold data.
    from ptmon.monitor.live import LiveFeed
    from ptmon.monitor.settings import Settings, Target
    from ptmon.monitor.snapshot import collect

    trainer = TrainerExporter(run="snap", model="m", algorithm="grpo", gpus=4, gpu_hour_price=3.0)
    server = serve(trainer.registry)
    settings = Settings(targets=(Target(name="trainer", url=server.url),), interval_s=0.5, window_s=300.0)
    try:
        d = await collect(settings, over=1.0, feed=LiveFeed(settings, clock=lambda: time.time() + 1000.0))
    finally:
        server.close()
    assert d.uptime_s is not None and d.uptime_s > 1000.0
    assert 0.5 < d.window_s < 30.0
    assert d.burn_dollars_per_hour == pytest.approx(4 * 3.0, rel=0.2)


# --- --fail-on and exit codes -----------------------------------------------------------------------------------

def _answered(*alerts: Alert, up: bool = True) -> Dashboard:
    target = TargetHealth(name="t", url="http://t/metrics", role="trainer", up=up,
                          last_success=990.0 if up else None)
    return Dashboard(now=1000.0, window_s=60.0, interval_s=1.0, targets=(target,), alerts=alerts)


WARN = Alert(name="weight_sync_slow", level="warn", message="p99 12s", since=990.0)
CRITICAL = Alert(name="trainer_stalled", level="critical", message="no step for 300s", since=990.0)


@pytest.mark.parametrize(("alerts", "fail_on", "status"), [
    ((), None, 0), ((WARN,), None, 0), ((CRITICAL,), None, 0),  # without --fail-on a level never fails
    ((), "warn", 0), ((WARN,), "warn", 3), ((CRITICAL,), "warn", 3), ((WARN, CRITICAL), "warn", 3),
    ((), "critical", 0), ((WARN,), "critical", 0), ((CRITICAL,), "critical", 3),
])
def test_fail_on_exits_3_once_the_level_is_reached(alerts: tuple[Alert, ...], fail_on: str | None,
                                                   status: int) -> None:
    assert exit_status(_answered(*alerts), fail_on=fail_on) == status


def test_no_target_answering_is_1_whatever_fail_on_says() -> None:
    down = Alert(name="target_down", level="critical", message="t: refused", since=990.0)
    assert exit_status(_answered(down, up=False), fail_on="critical") == 1
    assert exit_status(_answered(down, up=False)) == 1


def test_the_command_exits_3_and_says_why(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import ptmon.monitor.snapshot as snapshot
    from ptmon.monitor.cli import main

    async def crafted(settings: object, *, over: float, feed: object = None) -> Dashboard:
        return _answered(WARN)

    monkeypatch.setattr(snapshot, "collect", crafted)
    assert main(["snapshot", "localhost:9", "--fail-on", "warn", "--json"]) == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["level"] == "warn"
    assert captured.err.strip() == "ptmon snapshot: level warn (--fail-on warn)"
    assert main(["snapshot", "localhost:9", "--fail-on", "critical"]) == 0


# --- a table that never wraps -----------------------------------------------------------------------------------

def test_the_table_never_wraps_a_row_long_cells_end_in_an_ellipsis() -> None:
    long_url = "http://a-very-long-host-name.example.internal:9100/metrics/" + "x" * 150
    long_error = "connection refused: " + "the peer said no " * 12
    target = TargetHealth(name="rollout-worker-17", url=long_url, role="rollout", up=False, series=12345,
                          error=long_error)
    alert = Alert(name="target_down", level="critical", message="rollout-worker-17 is down: " + long_error,
                  since=990.0)
    d = Dashboard(now=1000.0, window_s=60.0, interval_s=1.0, targets=(target,), alerts=(alert,))
    buf = io.StringIO()
    render(d, snapshot_console(width=100, file=buf))
    lines = buf.getvalue().splitlines()
    assert max(cell_len(line) for line in lines) <= 100
    row = [line for line in lines if "rollout-worker-17" in line and "DOWN" in line]
    assert len(row) == 1  # one line: the url and error cut, not folded onto the next lines
    assert "12345" in row[0] and "…" in row[0]  # the number whole, the long text cut
    assert sum("connection refused" in line for line in lines) == 2  # once in targets, once in alerts


def test_the_table_is_160_columns_when_not_a_terminal_unless_told() -> None:
    assert snapshot_console(file=io.StringIO()).width == DEFAULT_WIDTH == 160
    assert snapshot_console(file=io.StringIO(), width=120).width == 120


def test_json_counts_are_integers_and_rates_stay_floats() -> None:
    worker = WorkerRow(name="w", role="rollout", up=True, rollouts_per_s=2.0, tokens_per_s=100.0,
                       policy_version=12.0, staleness=1.0, mean_reward=0.5, status="ok")
    d = Dashboard(now=1000.0, window_s=60.0, interval_s=1.0, weight_sync_count=4.0, weight_sync_failures=0.0,
                  weight_sync_failures_in_a_row=0.0, policy_version=12.0, staleness_max=1.0, staleness_mean=1.0,
                  eval_samples=500.0, rollout_rate_per_s=2.0, steps_per_s=1.0, workers=(worker,),
                  eval_curve=(EvalPoint(timestamp=990.0, spend_dollars=10.0, score=0.5, policy_version=11.0,
                                        samples=500.0),))
    text = json.dumps(to_json(d))
    out = json.loads(text)
    assert '"weight_sync_count": 4,' in text
    for key, value in (("weight_sync_count", 4), ("weight_sync_failures", 0), ("weight_sync_failures_in_a_row", 0),
                       ("policy_version", 12), ("staleness_max", 1), ("eval_samples", 500)):
        assert out[key] == value and type(out[key]) is int, key
    assert type(out["workers"][0]["policy_version"]) is int and type(out["workers"][0]["staleness"]) is int
    assert type(out["eval_curve"][0]["samples"]) is int and type(out["eval_curve"][0]["policy_version"]) is int
    # Rates, means and scores stay floats even when whole.
    for key in ("rollout_rate_per_s", "steps_per_s", "staleness_mean"):
        assert type(out[key]) is float, key
    assert type(out["workers"][0]["rollouts_per_s"]) is float


def test_a_fractional_count_from_prometheus_extrapolation_is_not_rounded() -> None:
    d = Dashboard(now=1000.0, window_s=60.0, interval_s=1.0, weight_sync_count=3.75)
    assert to_json(d)["weight_sync_count"] == 3.75


@pytest.mark.parametrize("as_json", [True, False])
def test_a_query_string_secret_is_masked_in_the_table_json_and_errors(
        as_json: bool, capsys: pytest.CaptureFixture[str]) -> None:
    from ptmon.monitor.cli import main

    url = closed_url() + "?module=m&token=s3cr3t-abc&api_key=k3y-xyz"
    assert main(["snapshot", "--over", "200ms", "--width", "400", url, *(["--json"] if as_json else [])]) == 1
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert "s3cr3t-abc" not in shown and "k3y-xyz" not in shown
    assert "?module=m&token=***&api_key=***" in shown
    if as_json:
        out = json.loads(captured.out)
        assert out["targets"][0]["url"].endswith("/metrics?module=m&token=***&api_key=***")
        assert "token=***" in out["alerts"][0]["message"]  # the target_down alert quotes the URL


def test_a_query_string_secret_is_masked_in_a_config_error() -> None:
    from ptmon.monitor.config import ConfigError, load_settings

    with pytest.raises(ConfigError) as info:
        load_settings(urls=["http://h:1/m?token=s3cr3t#frag"])
    assert "s3cr3t" not in str(info.value) and "token=***" in str(info.value)


def test_a_recording_keeps_no_query_string_secret() -> None:
    from ptmon.monitor.recording.meta import settings_to_json
    from ptmon.monitor.settings import Settings, Target

    text = settings_to_json(Settings(targets=(Target(name="t", url="http://h:1/m?password=s3cr3t&x=1"),)))
    assert "s3cr3t" not in text and "password=***&x=1" in text


def test_a_target_warning_is_in_its_row_when_it_has_no_error() -> None:
    warned = "GPU-hour price $-3 ignored (expected $0 to $1,000); the default price is used"
    d = Dashboard(now=1000.0, window_s=60.0, interval_s=1.0, targets=(
        TargetHealth("w", "http://w/metrics", "rollout", True, warning=warned),
        TargetHealth("d", "http://d/metrics", "rollout", False, error="connection refused", warning=warned)))
    buf = io.StringIO()
    render(d, Console(file=buf, force_terminal=False, width=400))
    out = buf.getvalue()
    assert f"warning: {warned}" in out and out.count("GPU-hour price") == 1  # the error wins on the down row


def test_table_shows_the_ipd_uncertainty_point_size_and_budget() -> None:
    d = Dashboard(now=1000.0, window_s=60.0, interval_s=1.0, score=0.6, score_se=0.0123, baseline_score=0.5,
                  ipd_points_per_kilodollar=0.59, ipd_se_points_per_kilodollar=0.048,
                  marginal_ipd_points_per_kilodollar=0.4, marginal_ipd_se_points_per_kilodollar=0.1,
                  dollars_per_next_point=25.0, eval_point=0.01, target_score=0.8, eta_status="estimated",
                  eta_dollars=500.0, eta_dollars_se=134.6, eta_hours=10.0, eta_hours_se=2.69)
    buf = io.StringIO()
    render(d, Console(file=buf, width=200))
    rows = {line.split("  ")[0].strip(): line.split("  ")[-1].strip()
            for line in buf.getvalue().splitlines() if "  " in line}
    assert rows["score (latest) / baseline"] == "0.600 ±0.012 / 0.500"
    assert rows["points per $1k (cumulative)"] == "0.59 ±0.05"
    assert rows["points per $1k (marginal)"] == "0.40 ±0.10"
    assert rows["$ per next point"] == "$25.00" and rows["point"] == "0.01 of score"
    assert rows["budget to target"] == "0.800: $500 ±135 · 10h00m ±2h41m"
    never = replace(d, dollars_per_next_point=None, next_point_never=True, eta_status="never", eta_dollars=None)
    buf = io.StringIO()
    render(never, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "$ per next point" in text and any(line.rstrip().endswith("never") for line in text.splitlines()
                                              if line.startswith("$ per next point"))
    assert "0.800: never" in text
    doc = to_json(never)
    assert doc["next_point_never"] is True and doc["dollars_per_next_point"] is None
    assert (doc["eta_status"], doc["target_score"], doc["eval_point"]) == ("never", 0.8, 0.01)
    assert doc["ipd_se_points_per_kilodollar"] == 0.048
