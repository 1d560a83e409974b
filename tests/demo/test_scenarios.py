"""Scenario table: every name the CLI offers exists, and unknown names fail clearly."""

from __future__ import annotations

import pytest

from ptmon.demo.scenarios import DEFAULT_SCENARIO, SCENARIO_NAMES, get_scenario
from ptmon.monitor.cli import build_parser


def test_cli_choices_are_exactly_the_scenarios() -> None:
    demo = build_parser()._subparsers._group_actions[0].choices["demo"]  # type: ignore[union-attr, index]
    choices = next(a.choices for a in demo._actions if a.dest == "scenario")
    assert tuple(choices) == SCENARIO_NAMES
    assert DEFAULT_SCENARIO == "healthy"


def test_each_scenario_says_what_to_look_for() -> None:
    for name in SCENARIO_NAMES:
        s = get_scenario(name)
        assert s.name == name and s.summary and s.look_for


def test_unknown_scenario_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="healthy, slow-sync"):
        get_scenario("nope")
