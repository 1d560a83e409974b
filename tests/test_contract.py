"""Only exporters/schema.py spells a metric name: everything else imports the MetricSpec.

A rename in the contract must be a rename everywhere; a loose string elsewhere
would silently stop matching. Docstrings and comments may mention names.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from ptmon.exporters import schema
from ptmon.exporters.schema import CONTRACT

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("exporters", "monitor", "demo")
# Third-party names too: the engines', DCGM's, and the training loops' own (SkyRL behind Ray, verl's RL-Insight,
# prime-rl's trainer gauges, each spelled whole: "trainer_" alone is an ordinary word in ptmon's code).
_LOOP_NAMES = "|".join(sorted((re.escape(s.name) for s in schema.PRIME_RL_TRAINER), key=len, reverse=True))
NAME = re.compile(r"\b(?:(?:posttrain|vllm|sglang|DCGM_FI|ray_skyrl|rl_insight_monitor)[_:][A-Za-z0-9_:]*[A-Za-z0-9]"
                  rf"|(?:{_LOOP_NAMES})\b)")
SKIP_BEFORE = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}


def code_strings(path: Path) -> list[tuple[int, str]]:
    """String literals that are not docstrings (a string statement on its own line)."""
    out: list[tuple[int, str]] = []
    previous = tokenize.ENCODING
    for tok in tokenize.tokenize(io.BytesIO(path.read_bytes()).readline):
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type == tokenize.STRING and previous not in SKIP_BEFORE:
            out.append((tok.start[0], tok.string))
        previous = tok.type
    return out


def test_no_module_but_the_schema_spells_a_metric_name() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() == "exporters/schema.py":
                continue
            for line, text in code_strings(path):
                for name in NAME.findall(text):
                    offenders.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert offenders == []


def test_prometheus_own_series_and_the_target_name_label_are_spelled_only_in_the_schema() -> None:
    # Prometheus's scrape_* series are distinctive enough to find in any string; the target-name label and
    # the demo's job prefix count where a string is exactly one of them (a name used as a key or a prefix;
    # generated YAML and alert templates may mention them). `up` is also a status word on screen: not checked.
    distinctive = [n for n in schema.PROMETHEUS_SCRAPE_SERIES if "_" in n]
    whole = {schema.TARGET_NAME_LABEL, schema.DEMO_JOB_PREFIX}
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() == "exporters/schema.py":
                continue
            for line, text in code_strings(path):
                value = text.strip("\"'")
                if any(n in text for n in distinctive) or value in whole:
                    offenders.append(f"{path.relative_to(ROOT)}:{line}: {text[:60]}")
    assert len(distinctive) == 2
    assert offenders == []


def test_the_check_would_see_a_loose_loop_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('a = "trainer_step"\nb = "ray_skyrl_training_phase"\nc = "rl_insight_monitor_timing_s_step"\n'
                   'd = "trainer_steps"\ne = "trainer_tokens"\n')
    found = [n for _, t in code_strings(bad) for n in NAME.findall(t)]
    assert found == ["trainer_step", "ray_skyrl_training_phase", "rl_insight_monitor_timing_s_step"]


def test_the_check_would_see_a_loose_name(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""Mentions posttrain_rollouts_total in a docstring: fine."""\n'
                   f'x = "{CONTRACT[0].name}"  # posttrain_loss in a comment: fine\n')
    found = [n for _, t in code_strings(bad) for n in NAME.findall(t)]
    assert found == [CONTRACT[0].name]


def _label_lookups(path: Path, labels: set[str]) -> list[tuple[int, str]]:
    """Label names spelled where a series' labels are read or made: ``x["role"]``, ``x.get("role")``,
    ``{"role": ...}``. (A column header or a word on screen that happens to read "role" is not a lookup.)"""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        keys: list[ast.expr] = []
        if isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            keys = node.args[:1]
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
        found += [(k.lineno, k.value) for k in keys
                  if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value in labels]
    return found


# Where the same words are keys of something else, not of a series' labels.
NOT_LABELS = {
    "monitor/config.py": "ptmon.toml keys (run =, role =) and CLI options",
    "exporters/bridges/trl.py": "the exporter's identity arguments (run, model, algorithm)",
    "demo/proc.py": "a child's announcement JSON (name, role, port)",
    "monitor/recording/meta.py": "the recording's settings JSON (a target's name, url, role)",
}


def test_label_names_are_spelled_only_in_the_schema() -> None:
    labels = {getattr(schema, n) for n in dir(schema) if n.startswith("LABEL_")}
    assert {"run", "role", "env", "outcome", "benchmark"} <= labels
    offenders = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
                 for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
                 if path.relative_to(ROOT).as_posix() not in {"exporters/schema.py", *NOT_LABELS}
                 for line, text in _label_lookups(path, labels)]
    assert offenders == []


def test_the_label_check_would_see_a_loose_label(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('labels = {"role": "trainer"}\nx = labels["benchmark"]\ny = labels.get("env")\n'
                   'header = "role"\n')
    assert [t for _, t in _label_lookups(bad, {"role", "benchmark", "env"})] == ["role", "benchmark", "env"]
