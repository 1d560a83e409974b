"""The monitor package's public names resolve, and the data layer never loads Textual."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ptmon.monitor as monitor


def test_every_public_name_resolves() -> None:
    for name in monitor.__all__:
        assert getattr(monitor, name) is not None, name
    assert sorted(dir(monitor)) == sorted(monitor.__all__)


@pytest.mark.slow  # starts a process
def test_data_layer_names_do_not_import_textual() -> None:
    code = (
        "import sys\nimport ptmon.monitor as monitor\n"
        "for n in monitor.__all__:\n"
        "    if n != 'PtmonApp': getattr(monitor, n)\n"
        "import ptmon.monitor.cli, ptmon.monitor.snapshot\n"
        "print('textual' in sys.modules, 'rich' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    textual_loaded = out.split()[0]
    assert textual_loaded == "False"
