"""One import namespace, ``ptmon``: the wheel's contents, and nothing in a user's working directory runs.

Training repositories often hold a ``demo.py``, an ``exporters/`` package or a ``monitor/`` folder of
their own; before 0.2.0 ptmon's own top-level ``demo``/``exporters``/``monitor`` collided with them.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SENTINEL = "HOSTILE-FILE-EXECUTED"


def _ptmon_exe() -> str:
    exe = Path(sys.executable).with_name("ptmon")
    if not exe.exists():
        pytest.fail(f"the console script {exe} is not installed (pip install -e '.[test]')", pytrace=False)
    return str(exe)


def _hostile_cwd(path: Path, *, with_ptmon_py: bool) -> Path:
    """A working directory whose files, if imported, write SENTINEL into ``executed``."""
    mark = f"open({str(path / 'executed')!r}, 'a').write({SENTINEL!r} + ' ' + __file__ + '\\n')\n"
    (path / "demo.py").write_text(mark + "raise SystemExit(7)\n")
    if with_ptmon_py:
        (path / "ptmon.py").write_text(mark + "raise SystemExit(7)\n")
    (path / "exporters").mkdir()
    (path / "exporters" / "__init__.py").write_text(mark + "TrainerExporter = None\n")
    (path / "monitor").mkdir()  # empty: a namespace portion that used to shadow the editable install
    return path


@pytest.mark.slow  # builds a wheel in a subprocess
def test_the_wheel_holds_one_top_level_name_with_its_assets(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("ptmon-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"ptmon"}
    assert len([t for t in tops if t.endswith(".dist-info")]) == 1
    for needed in ("ptmon/monitor/app.tcss", "ptmon/monitor/deploy/assets/prometheus.yml",
                   "ptmon/monitor/deploy/assets/ptmon.rules.yml", "ptmon/monitor/deploy/assets/ptmon.alerts.yml",
                   "ptmon/monitor/deploy/assets/grafana-ptmon.json", "ptmon/exporters/py.typed",
                   "ptmon/monitor/py.typed", "ptmon/demo/py.typed", "ptmon/exporters/schema.py"):
        assert needed in names, needed
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "ptmon = ptmon.monitor.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow  # the demo's processes
def test_demo_runs_from_a_directory_of_look_alike_files(tmp_path: Path) -> None:
    cwd = _hostile_cwd(tmp_path, with_ptmon_py=True)
    result = subprocess.run([_ptmon_exe(), "demo", "--headless", "--duration", "5", "--workers", "1",
                             "--speed", "200"], cwd=cwd, capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "http://127.0.0.1:" in result.stdout
    assert not (cwd / "executed").exists(), (cwd / "executed").read_text()


@pytest.mark.slow  # a fresh interpreter
def test_the_exporters_import_from_a_directory_of_look_alike_files(tmp_path: Path) -> None:
    cwd = _hostile_cwd(tmp_path, with_ptmon_py=False)
    code = ("from ptmon.exporters import EvalExporter, RolloutExporter, TrainerExporter, serve\n"
            "print(TrainerExporter.__module__)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ptmon.exporters.trainer"
    assert not (cwd / "executed").exists(), (cwd / "executed").read_text()


@pytest.mark.slow  # the demo's processes
def test_a_child_that_crashes_at_import_is_named_with_its_traceback(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ptmon.demo import launcher
    from ptmon.demo.launcher import DemoOptions, Fleet, FleetError

    real = launcher.child_argv

    def crashing(role: str, **kwargs: object) -> list[str]:
        argv = real(role, **kwargs)  # type: ignore[arg-type]
        if role != "rollout":
            return argv
        return [sys.executable, "-P", "-c", "import ptmon.demo.no_such_module_here"]

    monkeypatch.setattr(launcher, "child_argv", crashing)
    fleet = Fleet(DemoOptions(workers=1, speed=200.0), run_dir=tmp_path)
    try:
        with pytest.raises(FleetError) as info:
            fleet.start(ready_timeout_s=60.0)
    finally:
        fleet.stop()
    message = str(info.value)
    assert message.startswith("rollout-0: exited with status 1 before reporting its port")
    assert "ModuleNotFoundError: No module named 'ptmon.demo.no_such_module_here'" in message


def test_every_package_folder_is_in_the_wheel() -> None:
    """A new sub-package left out of pyproject's explicit list would install without its modules."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {"ptmon." + ".".join(p.parent.relative_to(ROOT).parts)
               for top in ("exporters", "monitor", "demo") for p in (ROOT / top).rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert folders - set(config["packages"]) == set()
