"""The installed ``ptmon`` command: help, version, and clear usage errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import version

import pytest

from ptmon.monitor.cli import build_parser, main
from ptmon.monitor.config import ConfigError, load_settings
from ptmon.monitor.settings import Settings


def ptmon(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ptmon") or ""
    cmd = [exe, *args] if exe else [sys.executable, "-m", "ptmon.monitor", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.slow  # starts a process
def test_version_is_the_installed_distributions() -> None:
    done = ptmon("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"ptmon {version('ptmon')}"


@pytest.mark.slow  # starts a process
def test_help_lists_every_subcommand() -> None:
    done = ptmon("--help")
    assert done.returncode == 0
    for command in ("demo", "watch", "snapshot"):
        assert command in done.stdout


def test_no_subcommand_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: ptmon" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "fast"])
def test_a_bad_interval_is_a_usage_error_naming_the_value(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["watch", "localhost:9100", "--interval", value])
    assert exit_info.value.code == 2
    assert repr(value) in capsys.readouterr().err


@pytest.mark.slow  # starts a process
def test_help_does_not_load_textual() -> None:
    code = "import sys\nfrom ptmon.monitor.cli import build_parser\nbuild_parser()\nprint('textual' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("command", [["watch", "localhost:9100"], ["snapshot", "localhost:9100"], ["demo"]])
def test_an_interval_below_a_tenth_of_a_second_is_a_usage_error(command: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # 1e-7 s hammered one target at ~1,100 requests/s.
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*command, "--interval", "1e-7"])
    assert exit_info.value.code == 2
    assert "expected an interval of at least 0.1 s, got '1e-7'" in capsys.readouterr().err
    assert build_parser().parse_args([*command, "--interval", "0.1"]).interval == 0.1


@pytest.mark.parametrize(("argv", "dest", "seconds"), [
    (["watch", "localhost:9100", "--interval", "500ms"], "interval", 0.5),
    (["watch", "localhost:9100", "--window", "5m"], "window", 300.0),
    (["watch", "localhost:9100", "--timeout", "800ms"], "timeout", 0.8),
    (["snapshot", "localhost:9100", "--window", "1h"], "window", 3600.0),
    (["snapshot", "localhost:9100", "--over", "1m"], "over", 60.0),
    (["record", "localhost:9100", "-o", "r.ptrec", "--duration", "1h30m"], "duration", 5400.0),
    (["record", "localhost:9100", "-o", "r.ptrec", "--interval", "2s"], "interval", 2.0),
    (["demo", "--duration", "90s"], "duration", 90.0),
    (["demo", "--interval", "250ms"], "interval", 0.25),
    (["replay", "r.ptrec", "--window", "10m"], "window", 600.0),
    (["watch", "localhost:9100", "--window", "120"], "window", 120.0),  # plain seconds still work
])
def test_every_flag_taking_seconds_takes_a_duration_as_ptmon_toml_does(argv: list[str], dest: str,
                                                                        seconds: float) -> None:
    assert getattr(build_parser().parse_args(argv), dest) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["5 minutes", "5mm", "m5", "-5m", "0s"])
def test_a_bad_duration_is_a_usage_error_saying_what_is_expected(value: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["snapshot", "localhost:9100", f"--window={value}"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert repr(value) in err
    assert "duration" in err


def _cli_settings(*argv: str) -> Settings:
    args = build_parser().parse_args(["snapshot", *argv])
    return load_settings(config_path=args.config, urls=args.urls, interval_s=args.interval, window_s=args.window,
                         timeout_s=args.timeout)


def test_name_equals_url_names_the_target_and_a_plain_url_keeps_its_default_name() -> None:
    s = _cli_settings("trainer=localhost:9100", "rollout-0=http://10.0.0.5:9200/metrics", "localhost:9300")
    assert [(t.name, t.url) for t in s.targets] == [
        ("trainer", "http://localhost:9100/metrics"),
        ("rollout-0", "http://10.0.0.5:9200/metrics"),
        ("localhost:9300", "http://localhost:9300/metrics"),
    ]


def test_an_equals_sign_inside_a_url_is_not_a_name() -> None:
    # A blackbox exporter's probe: the "=" is the query's, and "host:9115/probe?target" is no name.
    s = _cli_settings("localhost:9115/probe?target=trainer", "http://h:1/m?x=1")
    assert [t.url for t in s.targets] == ["http://localhost:9115/probe?target=trainer", "http://h:1/m?x=1"]
    assert s.targets[0].name == "localhost:9115"


def test_a_name_given_twice_or_without_a_url_is_refused_naming_the_argument() -> None:
    with pytest.raises(ConfigError, match=r"URL 2: expected each target once \(a is given twice\)"):
        _cli_settings("a=localhost:1", "a=localhost:2")
    with pytest.raises(ConfigError, match=r"URL 1: expected a URL after trainer= \(NAME=URL"):
        _cli_settings("trainer=")
