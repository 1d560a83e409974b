"""The hand-rolled YAML writer: quoting that cannot change a value's meaning, readable block layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptmon.monitor.deploy._yaml import comment_block, dump
from tests.monitor.deploy.helpers import run


def test_block_layout_and_quoting() -> None:
    text = dump({"global": {"scrape_interval": "5s", "n": 3, "on": True, "x": 0.5},
                 "rule_files": ["a.yml"], "empty": {}, "none": [], "key with space": "v"},
                header="line one\nline two")
    assert text == (
        "# line one\n# line two\n\n"
        "global:\n  scrape_interval: '5s'\n  'n': 3\n  'on': true\n  x: 0.5\n"
        "rule_files:\n- 'a.yml'\nempty: {}\nnone: []\n'key with space': 'v'\n"
    )  # 'on' and 'n' as plain keys would be booleans to YAML 1.1


@pytest.mark.parametrize(("value", "written"), [
    ('sum(rate(x{a="b"}[5m]))', """'sum(rate(x{a="b"}[5m]))'"""),
    ("it's", "'it''s'"),
    ("yes", "'yes'"),  # YAML 1.1 would read a plain yes as true
    ("{{ $value }}", "'{{ $value }}'"),
    ("two\nlines", json.dumps("two\nlines")),
    (" padded", json.dumps(" padded")),
])
def test_strings_are_always_quoted(value: str, written: str) -> None:
    assert dump({"k": value}) == f"k: {written}\n"


def test_lists_of_mappings_nest() -> None:
    assert dump({"groups": [{"name": "g", "rules": [{"record": "a", "expr": "1"}]}]}) == (
        "groups:\n- name: 'g'\n  rules:\n  - record: 'a'\n    expr: '1'\n")


def test_values_yaml_cannot_hold_are_refused() -> None:
    with pytest.raises(ValueError):
        dump({"x": float("nan")})
    with pytest.raises(TypeError):
        dump({"x": object()})
    with pytest.raises(TypeError):
        dump({1: "x"})  # type: ignore[dict-item]


def test_comment_block() -> None:
    assert comment_block("a\n\nb\n") == "# a\n#\n# b\n"


@pytest.mark.prometheus
def test_prometheus_reads_tricky_strings_back(tmp_path: Path, promtool_bin: str) -> None:
    # A label value with quotes, a backslash, a newline and template braces survives the round trip:
    # promtool's unit test sees the alert's annotation exactly as written.
    tricky = 'it\'s "quoted" \\ {{ "braces" }}\nsecond line'
    rules = {"groups": [{"name": "g", "rules": [
        {"alert": "Tricky", "expr": "vector(1)", "annotations": {"note": "{{ `" + tricky + "` }}"}}]}]}
    (tmp_path / "r.yml").write_text(dump(rules))
    tests = {"rule_files": ["r.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": [],
        "alert_rule_test": [{"eval_time": "0m", "alertname": "Tricky",
                             "exp_alerts": [{"exp_labels": {}, "exp_annotations": {"note": tricky}}]}]}]}
    (tmp_path / "t.yml").write_text(dump(tests))
    result = run(promtool_bin, "test", "rules", "t.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
