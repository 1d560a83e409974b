"""The installed ``ptmon`` command: help, version, and clear usage errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import version

import pytest

from ptmon.monitor.cli import build_parser, main


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
