"""ptmon.toml: the full example loads; every mistake names the file, the key and what was expected."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ptmon.monitor.config import (
    PROMETHEUS_MAX_BODY_BYTES,
    ConfigError,
    load_settings,
    parse_duration,
    prometheus_from_url,
    target_from_url,
)
from ptmon.monitor.settings import Settings, Target, Thresholds

FULL_EXAMPLE = """\
interval = 1.0            # seconds between scrapes of each target
window = "5m"             # measurement window: seconds or a duration ("90s", "5m", "1h")
timeout = 0.8             # per-scrape timeout, shorter than the interval
max_series = 20000        # per target; more new series are dropped and the target is flagged
max_body_bytes = 16777216 # a larger /metrics body is an error for that target
concurrency = 16          # scrapes in flight at once

[prices]                  # $/GPU-hour per role; overrides the exporters' price gauge
trainer = 3.0
rollout = 2.5

[eval]
primary_benchmark = "gsm8k"
baseline_score = 0.62
baseline_spend = 0.0
marginal_k = 5

[alerts]                  # any field of monitor.settings.Thresholds
weight_sync_p99_warn_s = 30
staleness_critical = 6

[[targets]]
name = "trainer"
url = "http://10.0.0.1:9100/metrics"
role = "trainer"
bearer_token_file = "secrets/token"

[[targets]]
name = "rollout-0"
url = "10.0.0.2:9100"
role = "rollout"
basic_auth = { username = "ptmon", password_file = "secrets/password" }

[[targets]]
url = "https://10.0.0.3:9400/metrics"
role = "gpu"
ca_file = "secrets/ca.pem"
verify_tls = true
"""


def write(tmp_path: Path, text: str, name: str = "ptmon.toml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture
def full(tmp_path: Path) -> str:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "password").write_text("s3cret\n")
    (tmp_path / "secrets" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    return write(tmp_path, FULL_EXAMPLE)


def test_the_full_example_loads(full: str, tmp_path: Path) -> None:
    s = load_settings(config_path=full)
    assert (s.interval_s, s.window_s, s.timeout_s, s.effective_timeout_s) == (1.0, 300.0, 0.8, 0.8)
    assert (s.max_series, s.max_body_bytes, s.concurrency) == (20_000, 16 * 2**20, 16)
    assert dict(s.prices) == {"trainer": 3.0, "rollout": 2.5}
    assert (s.primary_benchmark, s.baseline_score, s.baseline_spend_dollars, s.marginal_k) == ("gsm8k", 0.62, 0.0, 5)
    assert s.thresholds == Thresholds(weight_sync_p99_warn_s=30.0, staleness_critical=6.0)
    secrets = tmp_path / "secrets"
    assert s.targets == (
        Target("trainer", "http://10.0.0.1:9100/metrics", role="trainer", bearer_token_file=str(secrets / "token")),
        Target("rollout-0", "http://10.0.0.2:9100/metrics", role="rollout", basic_auth=("ptmon", "s3cret")),
        Target("10.0.0.3:9400", "https://10.0.0.3:9400/metrics", role="gpu", ca_file=str(secrets / "ca.pem")),
    )


def test_no_file_and_no_flags_gives_the_defaults() -> None:
    assert load_settings() == Settings()


def test_command_line_flags_override_the_file(full: str) -> None:
    s = load_settings(config_path=full, interval_s=10.0, window_s=60.0, timeout_s=5.0)
    assert (s.interval_s, s.window_s, s.timeout_s) == (10.0, 60.0, 5.0)
    assert dict(s.prices) == {"trainer": 3.0, "rollout": 2.5}  # the rest still comes from the file


def test_command_line_urls_replace_the_files_targets(full: str) -> None:
    s = load_settings(config_path=full, urls=["localhost:9100", "http://127.0.0.1:8000"])
    assert s.targets == (Target("localhost:9100", "http://localhost:9100/metrics"),
                         Target("127.0.0.1:8000", "http://127.0.0.1:8000/metrics"))
    assert s.primary_benchmark == "gsm8k"


@pytest.mark.parametrize(("url", "name", "expected"), [
    ("localhost:9100", "localhost:9100", "http://localhost:9100/metrics"),
    ("http://h:9100", "h:9100", "http://h:9100/metrics"),
    ("http://h:9100/", "h:9100", "http://h:9100/metrics"),
    ("https://h/custom/path?x=1", "h", "https://h/custom/path?x=1"),
    ("[::1]:9100", "[::1]:9100", "http://[::1]:9100/metrics"),
    ("  HTTP://Host:80/m  ", "host:80", "http://host:80/m"),
])
def test_target_from_url(url: str, name: str, expected: str) -> None:
    t = target_from_url(url)
    assert (t.name, t.url, t.role, t.basic_auth) == (name, expected, None, None)


def test_credentials_in_a_url_become_basic_auth_and_leave_the_url() -> None:
    t = target_from_url("http://user:p%40ss@h:9100/metrics")
    assert (t.name, t.url, t.basic_auth) == ("h:9100", "http://h:9100/metrics", ("user", "p@ss"))


@pytest.mark.parametrize(("url", "expected"), [
    ("", "a URL like"),
    ("ftp://h/x", "an http:// or https:// URL"),
    ("http://h:99999", "a valid host and port"),
    ("http://h:port", "a valid host and port"),
    ("http:///metrics", "a URL with a host"),
    ("http://h/metrics#x", "without a #fragment"),
    ("h 9100", "without spaces"),
    # A bare port would resolve as a host named '9100' (the IPv4 address 0.0.35.140): say what was meant.
    ("9100", r"a host and a port, like localhost:9100 \(a bare port is not a host\)"),
    (":9100", r"a host and a port, like localhost:9100"),
])
def test_bad_urls_say_what_was_expected(url: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        target_from_url(url)


def test_durations() -> None:
    assert [parse_duration(v) for v in (2, 0.5, "30s", "5m", "1h30m", "500ms", "1d", "2.5")] == [
        2.0, 0.5, 30.0, 300.0, 5400.0, 0.5, 86400.0, 2.5]
    for bad in ("5 minutes", "m5", "", True, [1], "nan", "inf"):
        with pytest.raises(ValueError):
            parse_duration(bad)


# Each case: (file body, the key the error must name, text of what was expected).
BAD_FILES = [
    ("intervall = 1\n", "intervall", "unknown key"),
    ("[eval]\nprimary_bench = 'x'\n", "eval.primary_bench", "unknown key"),
    ("[alerts]\nweight_sync_p99_warn = 3\n", "alerts.weight_sync_p99_warn", "unknown key"),
    ("[[targets]]\nurl = 'h:1'\nrole = 'trainer'\nverify = false\n", "targets[0].verify", "unknown key"),
    ("interval = 0\n", "interval", "a positive duration, got 0"),
    ("interval = -1.5\n", "interval", "a positive duration"),
    ("interval = 'soon'\n", "interval", "seconds as a number or a duration"),
    ("interval = true\n", "interval", "seconds as a number or a duration"),
    ("window = '5 min'\n", "window", "seconds as a number or a duration"),
    ("interval = 1\ntimeout = 1\n", "timeout", "a timeout shorter than the interval (1 s, from interval in"),
    ("max_series = 0\n", "max_series", "an integer >= 1"),
    ("concurrency = 2.5\n", "concurrency", "an integer >= 1"),
    ("max_body_bytes = 10\n", "max_body_bytes", "an integer >= 1024"),
    ("prices = 3\n", "prices", "a table"),
    ("[prices]\ntrainr = 3.0\n", "prices.trainr", "one of trainer, rollout, eval, engine, gpu"),
    ("[prices]\ntrainer = -1\n", "prices.trainer", "a number >= 0"),
    ("[prices]\ntrainer = '3'\n", "prices.trainer", "a number"),
    ("[eval]\nmarginal_k = 1\n", "eval.marginal_k", "an integer >= 2"),
    ("[eval]\nbaseline_score = 'high'\n", "eval.baseline_score", "a number"),
    ("[eval]\nprimary_benchmark = ''\n", "eval.primary_benchmark", "a non-empty string"),
    ("[eval]\npoint = 0\n", "eval.point", "a positive number"),
    ("[eval]\ntarget_score = 'all of it'\n", "eval.target_score", "a number"),
    ("[alerts]\nstaleness_warn = 'two'\n", "alerts.staleness_warn", "a number"),
    # A threshold that can never or always fire is a typo, not a choice.
    ("[alerts]\nstaleness_warn = -1\n", "alerts.staleness_warn", "a number >= 0, got -1"),
    ("[alerts]\nweight_sync_p99_critical_s = 0\n", "alerts.weight_sync_p99_critical_s", "a positive number"),
    ("[alerts]\nstall_factor = 0\n", "alerts.stall_factor", "a positive number"),
    ("[alerts]\neval_push_max_age_s = 0\n", "alerts.eval_push_max_age_s", "a positive number"),
    ("[alerts]\npolicy_stuck_s = 0\n", "alerts.policy_stuck_s", "a positive number"),
    ("[alerts]\nweight_sync_failure_share_critical = 1.5\n", "alerts.weight_sync_failure_share_critical",
     "a fraction between 0 and 1, got 1.5"),
    ("[alerts]\nweight_sync_failures_in_a_row_critical = 0\n", "alerts.weight_sync_failures_in_a_row_critical",
     "a positive number"),
    ("[alerts]\neval_regression_points = -0.1\n", "alerts.eval_regression_points", "a number >= 0"),
    ("[alerts]\nrollout_drop_ratio = 5\n", "alerts.rollout_drop_ratio", "a fraction between 0 and 1, got 5"),
    ("[alerts]\nweight_sync_p99_warn_s = 200\n", "alerts.weight_sync_p99_warn_s",
     "at most weight_sync_p99_critical_s (120, the default), got 200"),
    ("[alerts]\nstaleness_warn = 3\nstaleness_critical = 2\n", "alerts.staleness_warn",
     "at most staleness_critical (2, from alerts.staleness_critical), got 3"),
    ("targets = 'h:1'\n", "targets", "an array of tables"),
    ("[[targets]]\nname = 'a'\n", "targets[0].url", "a URL (required)"),
    ("[[targets]]\nurl = 'h:1'\n[[targets]]\nurl = 'ftp://x'\n", "targets[1].url", "an http:// or https:// URL"),
    ("[[targets]]\nurl = 'h:1'\nrole = 'learner'\n", "targets[0].role", "one of trainer, rollout"),
    ("[[targets]]\nurl = 'h:1'\nverify_tls = 'no'\n", "targets[0].verify_tls", "true or false"),
    ("[[targets]]\nurl = 'h:1'\nca_file = 'nope.pem'\n", "targets[0].ca_file", "an existing PEM file"),
    ("[[targets]]\nname = 'a'\nurl = 'h:1'\n[[targets]]\nname = 'a'\nurl = 'h:2'\n",
     "targets[1].name", "a unique name ('a' is also targets[0])"),
    ("[[targets]]\nurl = 'h:1'\n[[targets]]\nurl = 'http://h:1/metrics'\n",
     "targets[1].name", "a unique name ('h:1' is also targets[0])"),
    ("[[targets]]\nurl = 'h:1'\nbasic_auth = { username = 'u' }\n", "targets[0].basic_auth",
     "password or password_file"),
    ("[[targets]]\nurl = 'h:1'\nbasic_auth = { password = 'p' }\n", "targets[0].basic_auth.username",
     "a username (required)"),
    ("[[targets]]\nurl = 'h:1'\nbasic_auth = { username = 'u', password_file = 'missing' }\n",
     "targets[0].basic_auth.password_file", "a readable file"),
    ("[[targets]]\nurl = 'h:1'\nbasic_auth = { username = 'u', pasword = 'p' }\n",
     "targets[0].basic_auth.pasword", "unknown key"),
    ("[[targets]]\nurl = 'h:1'\nbearer_token_file = 't'\nbasic_auth = { username = 'u', password = 'p' }\n",
     "targets[0]", "bearer_token_file or basic_auth, not both"),
    ("interval = \n", "(syntax)", "valid TOML"),
]


@pytest.mark.parametrize(("body", "key", "expected"), BAD_FILES, ids=[b[1] + ":" + b[2][:20] for b in BAD_FILES])
def test_every_mistake_names_the_file_the_key_and_what_was_expected(
    tmp_path: Path, body: str, key: str, expected: str
) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}: expected "), message
    assert expected in message, message
    assert (info.value.source, info.value.key) == (path, key)
    assert isinstance(info.value, ValueError)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match=r"absent\.toml: \(file\): expected a readable TOML file"):
        load_settings(config_path=path)


def test_a_password_is_never_echoed_in_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[[targets]]\nurl = 'h:1'\nbasic_auth = { username = 'u', password = 4815162342 }\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path)
    # the temporary path may hold any digits (pytest-142): look only after it
    assert "4815162342" not in str(info.value).replace(str(path), "") and (
        "targets[0].basic_auth.password: expected a string" in str(info.value))


def test_timeout_against_interval_is_checked_after_the_flags_apply(tmp_path: Path) -> None:
    path = write(tmp_path, "interval = 2\ntimeout = 1.5\n")
    assert load_settings(config_path=path).timeout_s == 1.5
    with pytest.raises(ConfigError, match=r"timeout: expected a timeout shorter than the interval "
                                          r"\(1 s, from --interval in command line\), got 1.5"):
        load_settings(config_path=path, interval_s=1.0)
    assert load_settings(config_path=path, interval_s=1.0, timeout_s=0.5).timeout_s == 0.5
    with pytest.raises(ConfigError, match=r"^command line: --timeout: expected a timeout shorter"):
        load_settings(timeout_s=3.0)


def test_command_line_mistakes_name_the_flag_or_the_url() -> None:
    with pytest.raises(ConfigError, match=r"^command line: --interval: expected a positive number, got 0"):
        load_settings(interval_s=0)
    with pytest.raises(ConfigError, match=r"^command line: URL 2: expected an http:// or https:// URL"):
        load_settings(urls=["h:1", "ftp://h"])
    with pytest.raises(ConfigError, match=r"^command line: URL 2: expected each target once \(h:1"):
        load_settings(urls=["h:1", "http://h:1/metrics"])


def test_two_urls_on_one_host_port_are_two_targets_named_by_what_tells_them_apart() -> None:
    # The blackbox exporter's /probe, exporter-exporter's /proxy, a reverse proxy: several targets, one port.
    s = load_settings(urls=["127.0.0.1:19115", "http://127.0.0.1:19115/probe?target=a&module=http",
                            "http://127.0.0.1:19115/probe?target=b&module=http", "other:9100"])
    assert [(t.name, t.url) for t in s.targets] == [
        ("127.0.0.1:19115/metrics", "http://127.0.0.1:19115/metrics"),
        ("127.0.0.1:19115/probe?target=a&module=http", "http://127.0.0.1:19115/probe?target=a&module=http"),
        ("127.0.0.1:19115/probe?target=b&module=http", "http://127.0.0.1:19115/probe?target=b&module=http"),
        ("other:9100", "http://other:9100/metrics")]  # alone on its port: host:port, as before
    paths = load_settings(urls=["h:1/metrics", "h:1/proxy"])
    assert [t.name for t in paths.targets] == ["h:1/metrics", "h:1/proxy"]  # the path tells them apart
    # One URL twice is still one target given twice.
    with pytest.raises(ConfigError, match=r"^command line: URL 3: expected each target once \(h:1/metrics is"):
        load_settings(urls=["h:1", "h:1/proxy", "http://h:1/metrics"])


def test_the_file_names_two_targets_on_one_port_alike_unless_it_names_them(tmp_path: Path) -> None:
    path = write(tmp_path, "[[targets]]\nurl = 'h:1/probe?target=a'\n[[targets]]\nurl = 'h:1/probe?target=b'\n"
                           "[[targets]]\nname = 'mine'\nurl = 'h:1/metrics'\n")
    assert [t.name for t in load_settings(config_path=path).targets] == [
        "h:1/probe?target=a", "h:1/probe?target=b", "mine"]


def test_an_interval_below_a_tenth_of_a_second_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(interval_s=1e-7)
    assert str(info.value) == "command line: --interval: expected an interval of at least 0.1 s, got 1e-07"
    path = write(tmp_path, 'interval = "50ms"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path)
    assert str(info.value) == f"{path}: interval: expected an interval of at least 0.1 s, got 0.05"
    assert load_settings(interval_s=0.1).interval_s == 0.1


SECRET = "tok-with\ninner-newline"


@pytest.mark.parametrize("table", [
    "bearer_token_file = 'secret'",
    "basic_auth = { username = 'u', password_file = 'secret' }",
])
def test_a_secret_file_with_a_line_break_inside_is_an_error_naming_the_file_not_its_content(
        tmp_path: Path, table: str) -> None:
    (tmp_path / "secret").write_text(SECRET + "\n")
    path = write(tmp_path, f"[[targets]]\nurl = 'h:1'\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path)
    message = str(info.value)
    key = "bearer_token_file" if "bearer" in table else "basic_auth.password_file"
    what = "token" if "bearer" in table else "password"
    assert message == (f"{path}: targets[0].{key}: expected a file holding the {what} on one line "
                       f"({tmp_path / 'secret'} has a line break inside; its content is not shown)")
    assert "tok-with" not in message and "newline" not in message
    (tmp_path / "secret").write_text("one-line-token\n")  # fixed: loads
    assert load_settings(config_path=path).targets[0].url == "http://h:1/metrics"


def test_a_token_file_that_is_not_there_yet_is_read_at_scrape_time(tmp_path: Path) -> None:
    path = write(tmp_path, "[[targets]]\nurl = 'h:1'\nbearer_token_file = 'later'\n")
    assert load_settings(config_path=path).targets[0].bearer_token_file == str(tmp_path / "later")


def test_credentials_in_a_url_never_appear_in_its_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(urls=["http://admin:hunter2@h:99999/metrics"])
    assert "hunter2" not in str(info.value) and "***@h:99999" in str(info.value)
    path = write(tmp_path, "[[targets]]\nurl = 'ftp://admin:hunter2@h/metrics'\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path)
    assert "hunter2" not in str(info.value) and "'ftp://***@h/metrics'" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_settings(prometheus_url="http://admin:hunter2@h:9090/?x=1")
    assert "hunter2" not in str(info.value)


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = tmp_path / "conf"
    sub.mkdir()
    path = write(sub, "[[targets]]\nurl = 'h:1'\nbearer_token_file = '../token'\n")
    monkeypatch.chdir(tmp_path.parent)
    assert load_settings(config_path=path).targets[0].bearer_token_file == str(tmp_path / "token")


def test_thresholds_that_make_sense_are_taken(tmp_path: Path) -> None:
    path = write(tmp_path, "[alerts]\nmarginal_ipd_min = -50\nstaleness_warn = 4\nstaleness_critical = 4\n"
                           "rollout_drop_ratio = 1\nstall_min_s = 0\nweight_sync_failure_share_critical = 0.2\n"
                           "weight_sync_failures_in_a_row_critical = 5\n")
    t = load_settings(config_path=path).thresholds
    assert (t.weight_sync_failure_share_critical, t.weight_sync_failures_in_a_row_critical) == (0.2, 5.0)
    assert (t.marginal_ipd_min, t.staleness_warn, t.staleness_critical, t.rollout_drop_ratio, t.stall_min_s) == (
        -50.0, 4.0, 4.0, 1.0, 0.0)


def test_a_file_that_is_not_utf8_is_a_config_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "ptmon.toml"
    path.write_bytes(b"interval = 1\n# caf\xe9 latin-1\n")
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=str(path))
    assert str(info.value) == f"{path}: (syntax): expected UTF-8 text (line 2: byte 0xe9 is not UTF-8)"


def test_a_byte_order_mark_from_a_windows_editor_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "ptmon.toml"
    path.write_bytes(b"\xef\xbb\xbfinterval = 2\n")
    assert load_settings(config_path=str(path)).interval_s == 2.0


@pytest.mark.parametrize(("body", "flags", "message"), [
    ("interval = 10\nwindow = 15\n", {}, "{path}: window: expected at least two scrape intervals (20 s, from "
                                         "interval in {path}), got 15.0"),
    ("window = 15\n", {"interval_s": 10.0}, "{path}: window: expected at least two scrape intervals (20 s, from "
                                            "--interval in command line), got 15.0"),
    ("interval = 10\n", {"window_s": 5.0}, "command line: --window: expected at least two scrape intervals (20 s, "
                                           "from interval in {path}), got 5.0"),
    ("", {"interval_s": 200.0}, "command line: --interval: expected at most half the window (300 s, from the "
                                "default), got 200.0"),
])
def test_a_window_too_short_for_a_rate_is_an_error(tmp_path: Path, body: str, flags: dict, message: str) -> None:
    # One scrape per window means every rate, quantile and slope stays unknown: say so instead.
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path, **flags)
    assert str(info.value) == message.format(path=path)
    assert load_settings(config_path=path, interval_s=1.0, window_s=2.0).window_s == 2.0  # two intervals: fine


# --- a Prometheus server as the source ---------------------------------------------------------


@pytest.mark.parametrize(("url", "name", "expected"), [
    ("localhost:9090", "localhost:9090", "http://localhost:9090"),
    ("http://h:9090/", "h:9090", "http://h:9090"),
    ("https://mimir.example/prometheus/", "mimir.example", "https://mimir.example/prometheus"),
    ("[::1]:9090", "[::1]:9090", "http://[::1]:9090"),
])
def test_prometheus_from_url_keeps_the_path_as_the_api_prefix(url: str, name: str, expected: str) -> None:
    t = prometheus_from_url(url)
    assert (t.name, t.url) == (name, expected)


def test_prometheus_on_the_command_line() -> None:
    s = load_settings(prometheus_url="http://u:p%40ss@h:9090")
    assert s.prometheus == Target("h:9090", "http://h:9090", basic_auth=("u", "p@ss"))
    assert s.targets == ()
    assert s.max_body_bytes == PROMETHEUS_MAX_BODY_BYTES == 64 * 2**20  # one answer covers the fleet


def test_prometheus_in_the_file_as_a_url_or_a_table(tmp_path: Path) -> None:
    s = load_settings(config_path=write(tmp_path, 'prometheus = "h:9090"\nmax_body_bytes = 2048\n'))
    assert s.prometheus == Target("h:9090", "http://h:9090")
    assert s.max_body_bytes == 2048  # the file's cap wins over the Prometheus default
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    s = load_settings(config_path=write(tmp_path, textwrap.dedent("""\
        [prometheus]
        url = "https://thanos:10902"
        name = "thanos"
        bearer_token_file = "token"
        ca_file = "ca.pem"
        """)))
    assert s.prometheus == Target("thanos", "https://thanos:10902", bearer_token_file=str(tmp_path / "token"),
                                  ca_file=str(tmp_path / "ca.pem"))


def test_the_command_line_source_replaces_the_files_whichever_kind(full: str, tmp_path: Path) -> None:
    s = load_settings(config_path=full, prometheus_url="h:9090")
    assert (s.prometheus, s.targets) == (Target("h:9090", "http://h:9090"), ())
    assert s.primary_benchmark == "gsm8k"  # the rest still comes from the file
    path = write(tmp_path, 'prometheus = "h:9090"\n')
    s = load_settings(config_path=path, urls=["localhost:9100"])
    assert (s.prometheus, [t.name for t in s.targets]) == (None, ["localhost:9100"])
    assert s.max_body_bytes == 16 * 2**20


BAD_PROMETHEUS = [
    ('prometheus = "h:9090"\n[[targets]]\nurl = "h:9100"\n', "prometheus", "either prometheus or [[targets]]"),
    ("prometheus = 9090\n", "prometheus", 'a URL ("http://host:9090") or a table with url, got 9090'),
    ('prometheus = "ftp://h"\n', "prometheus.url", "an http:// or https:// URL"),
    ('prometheus = "h:9090/?tenant=a"\n', "prometheus.url", "a base URL without a ?query"),
    ('[prometheus]\nurl = "h:9090"\nrole = "trainer"\n', "prometheus.role", "unknown key"),
    ('[prometheus]\nname = "p"\n', "prometheus.url", "a URL (required)"),
    ('[prometheus]\nurl = "h:9090"\nca_file = "nope.pem"\n', "prometheus.ca_file", "an existing PEM file"),
    ('[prometheus]\nurl = "h:1"\nbearer_token_file = "t"\nbasic_auth = { username = "u", password = "p" }\n',
     "prometheus", "bearer_token_file or basic_auth, not both"),
]


@pytest.mark.parametrize(("body", "key", "expected"), BAD_PROMETHEUS,
                         ids=[b[1] + ":" + b[2][:20] for b in BAD_PROMETHEUS])
def test_prometheus_mistakes_name_the_file_and_the_key(tmp_path: Path, body: str, key: str, expected: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_settings(config_path=path)
    assert str(info.value).startswith(f"{path}: {key}: expected "), str(info.value)
    assert expected in str(info.value)


def test_prometheus_mistakes_on_the_command_line() -> None:
    with pytest.raises(ConfigError, match=r"^command line: --prometheus: expected either /metrics URLs or "
                                          r"--prometheus, not both"):
        load_settings(urls=["h:9100"], prometheus_url="h:9090")
    with pytest.raises(ConfigError, match=r"^command line: --prometheus: expected a host and a port"):
        load_settings(prometheus_url="9090")


def test_a_run_filter_goes_with_a_prometheus_source(tmp_path: Path) -> None:
    assert load_settings(prometheus_url="h:9090", run="grpo-7").run == "grpo-7"
    path = write(tmp_path, 'prometheus = "h:9090"\nrun = "from-file"\n')
    assert load_settings(config_path=path).run == "from-file"
    assert load_settings(config_path=path, run="flag").run == "flag"  # the command line wins
    with pytest.raises(ConfigError, match=r"^command line: --run: expected a Prometheus source with it"):
        load_settings(urls=["h:9100"], run="grpo-7")
    with pytest.raises(ConfigError, match=r"^command line: --run: expected a run name"):
        load_settings(prometheus_url="h:9090", run="")
    path = write(tmp_path, 'run = "x"\n[[targets]]\nurl = "h:9100"\n', name="direct.toml")
    with pytest.raises(ConfigError, match=r"direct.toml: run: expected a Prometheus source with it"):
        load_settings(config_path=path)
    with pytest.raises(ConfigError, match=r"bad.toml: run: expected a non-empty string, got 7"):
        load_settings(config_path=write(tmp_path, 'prometheus = "h:9090"\nrun = 7\n', name="bad.toml"))


def test_a_window_longer_than_the_buffer_holds_is_a_warning_not_an_error() -> None:
    from ptmon.monitor.config import config_warnings

    fits = load_settings(urls=["http://127.0.0.1:1/metrics"], interval_s=1.0, window_s=3600.0)
    assert config_warnings(fits) == ()
    short = load_settings(urls=["http://127.0.0.1:1/metrics"], interval_s=0.25, window_s=3600.0)
    assert config_warnings(short) == (
        "the 1 h window is longer than the 15 min the buffer holds at a 0.25 s interval (3,600 scrapes a series): "
        "rates, charts and quantiles cover the last 15 min; a longer interval holds more",)


def test_eval_point_and_target_score(tmp_path: Path) -> None:
    s = load_settings(config_path=write(tmp_path, "[eval]\npoint = 1\ntarget_score = 0.8\n"))
    assert (s.eval_point, s.target_score) == (1.0, 0.8)
    assert (Settings().eval_point, Settings().target_score) == (0.01, None)  # a percentage point; no ETA
