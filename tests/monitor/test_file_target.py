"""Which command-line targets are metrics files, and file targets in ptmon.toml."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ptmon.monitor.config import ConfigError, load_settings
from ptmon.monitor.file_target import is_path_argument


@pytest.mark.parametrize("text, is_file", [
    ("outputs/run/metrics.jsonl", True),
    ("metrics.ndjson", True),
    ("./metrics", True),
    ("/abs/metrics", True),
    ("~/run/metrics", True),
    ("file:///tmp/m", True),
    ("10.0.0.2:8000", False),
    ("localhost:9400/metrics", False),
    ("http://host/metrics.jsonl", False),
    ("host:8000", False),
])
def test_which_arguments_are_files(text: str, is_file: bool) -> None:
    assert is_path_argument(text) is is_file


def test_an_existing_file_is_a_file_whatever_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trainer-log").write_text("")
    assert is_path_argument("trainer-log")
    assert not is_path_argument("trainer-host:9400")


def test_a_path_next_to_an_engine_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings(urls=["outputs/metrics.jsonl", "10.0.0.2:8000"])
    files, engine = s.targets
    assert files.name == "outputs/metrics.jsonl"
    assert files.path == os.path.join(str(tmp_path), "outputs", "metrics.jsonl")
    assert files.framework is None  # detected from the keys
    assert engine.path is None and engine.url == "http://10.0.0.2:8000/metrics"


def test_framework_flag_names_the_files_framework() -> None:
    (t,) = load_settings(urls=["m.jsonl"], framework="verl").targets
    assert t.framework == "verl"
    (t,) = load_settings(urls=["m.jsonl"], framework="auto").targets
    assert t.framework is None


def test_framework_flag_refuses_what_it_cannot_mean() -> None:
    with pytest.raises(ConfigError, match=r"--framework: expected one of prime-rl, verl, .*got 'primerl'"):
        load_settings(urls=["m.jsonl"], framework="primerl")
    with pytest.raises(ConfigError, match="--framework: expected a metrics file among the targets"):
        load_settings(urls=["host:8000"], framework="verl")


def test_file_targets_in_ptmon_toml(tmp_path: Path) -> None:
    cfg = tmp_path / "ptmon.toml"
    cfg.write_text('[[targets]]\npath = "run/metrics.jsonl"\nframework = "prime-rl"\ngpus = 8\n\n'
                   '[[targets]]\nurl = "engine:8000"\n')
    trainer, engine = load_settings(config_path=str(cfg)).targets
    assert trainer.path == str(tmp_path / "run" / "metrics.jsonl")  # relative to the config file
    assert trainer.name == "run/metrics.jsonl"
    assert trainer.framework == "prime-rl" and trainer.gpus == 8
    assert engine.path is None


@pytest.mark.parametrize("body, message", [
    ('path = "m.jsonl"\nframework = "primerl"', r"targets\[0\]\.framework: expected a framework among"),
    ('path = "m.jsonl"\nurl = "host:8000"', r"targets\[0\]\.url: expected one of framework, gpus, name, path, role"),
    ('path = "m.jsonl"\ngpus = -1', r"targets\[0\]\.gpus: expected a number >= 0"),
])
def test_file_target_mistakes_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    cfg = tmp_path / "ptmon.toml"
    cfg.write_text(f"[[targets]]\n{body}\n")
    with pytest.raises(ConfigError, match=message):
        load_settings(config_path=str(cfg))
