"""The installed ``ptmon`` command: help, version, and clear usage errors."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

import pytest

from ptmon.monitor.cli import build_parser, main
from ptmon.monitor.config import ConfigError, find_config, load_settings
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


# --- config discovery: ./ptmon.toml, then $PTMON_CONFIG, then ~/.config/ptmon/ptmon.toml ----------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _toml(path: Path, name: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[[targets]]\nname = "{name}"\nurl = "127.0.0.1:{_closed_port()}"\n')
    return path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A working directory, a $PTMON_CONFIG file and an XDG config home, each with its own ptmon.toml."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return {"cwd": _toml(work / "ptmon.toml", "from-cwd"), "env": _toml(tmp_path / "env.toml", "from-env"),
            "user": _toml(home / ".config" / "ptmon" / "ptmon.toml", "from-user")}


def _snapshot_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["snapshot", "--over", "200ms", "--json", *argv]) == 1  # the target is down: nothing answered
    return cast(dict[str, Any], json.loads(capsys.readouterr().out))


def test_config_discovery_reads_the_working_directorys_ptmon_toml_first(
        places: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PTMON_CONFIG", str(places["env"]))
    out = _snapshot_json(capsys)
    assert out["config_file"] == "ptmon.toml"
    assert [t["name"] for t in out["targets"]] == ["from-cwd"]


def test_config_discovery_then_ptmon_config_then_the_users_config(
        places: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    places["cwd"].unlink()
    monkeypatch.setenv("PTMON_CONFIG", str(places["env"]))
    out = _snapshot_json(capsys)
    assert (out["config_file"], out["targets"][0]["name"]) == (str(places["env"]), "from-env")
    monkeypatch.delenv("PTMON_CONFIG")
    out = _snapshot_json(capsys)
    assert (out["config_file"], out["targets"][0]["name"]) == (str(places["user"]), "from-user")
    places["user"].unlink()
    assert find_config() is None


def test_config_discovery_of_home_dot_config_without_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    user = _toml(tmp_path / "home" / ".config" / "ptmon" / "ptmon.toml", "x")
    assert find_config() == str(user)


def test_the_table_names_the_config_file_it_read(places: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--over", "200ms", "--width", "200"]) == 1
    assert "config ptmon.toml" in capsys.readouterr().out


def test_an_explicit_config_or_no_config_skips_discovery(places: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = _snapshot_json(capsys, "--config", str(places["env"]))
    assert out["config_file"] == str(places["env"])
    out = _snapshot_json(capsys, "--no-config", f"cli=127.0.0.1:{_closed_port()}")
    assert out["config_file"] is None
    assert [t["name"] for t in out["targets"]] == ["cli"]


def test_a_ptmon_config_naming_a_missing_file_is_an_error_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PTMON_CONFIG", str(tmp_path / "nope.toml"))
    assert main(["watch"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"ptmon watch: {tmp_path / 'nope.toml'}: (file): expected an existing ptmon.toml "
        "(named by $PTMON_CONFIG; not found)")


# --- the live screens refuse a stdout that is no terminal --------------------------------------------------------

@pytest.mark.parametrize(("argv", "pointer"), [
    (["watch", "localhost:9"], "`ptmon snapshot` (--json)"),
    (["replay", "some.ptrec"], "`ptmon snapshot --from FILE --at TIME`"),
    (["demo", "--workers", "1"], "`ptmon demo --headless`"),
])
def test_a_live_screen_on_a_non_terminal_stdout_is_refused_with_a_pointer(
        argv: list[str], pointer: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from ptmon.monitor.app import PtmonApp

    def no_screen(self: object, *args: object, **kwargs: object) -> None:
        raise AssertionError("the screen started on a stdout that is no terminal")

    monkeypatch.setattr(PtmonApp, "run", no_screen)
    assert main(argv) == 2  # capsys: stdout is a StringIO, no terminal
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"ptmon {argv[0]}: stdout is not a terminal, and the live screen needs one; ")
    assert pointer in captured.err


@pytest.mark.slow  # starts a process
def test_watch_redirected_to_a_file_writes_no_escapes_and_exits_2(tmp_path: Path) -> None:
    with open(tmp_path / "out", "wb") as out:  # this interpreter's ptmon, not whichever is first on PATH
        done = subprocess.run([sys.executable, "-m", "ptmon.monitor", "watch", "localhost:9"], stdout=out,
                              stderr=subprocess.PIPE, text=False,
                              stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2
    assert (tmp_path / "out").read_bytes() == b""
    assert b"ptmon snapshot" in done.stderr and b"\x1b" not in done.stderr
