"""monitor.parse against prometheus_client's parsers (the oracle), promtool, and its own cache.

Oracle quirks handled in ``_oracle``: prometheus_client's text parser renames
the samples of a counter whose TYPE line lacks ``_total`` (it appends
``_total``), returns ints for integral values, and its OpenMetrics parser
returns ``Timestamp`` objects; NaN is compared as NaN.
"""

from __future__ import annotations

import copy
import gc
import http.server
import math
import os
import pickle
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
from prometheus_client.parser import text_string_to_metric_families as text_families

from ptmon.exporters.schema import MAX_LABEL_VALUE_BYTES, MAX_SERIES_BYTES, ROLLOUT_SECONDS, ROLLOUTS
from ptmon.monitor.parse import (
    _SKIP,
    ACCEPT_HEADER,
    ExpositionParser,
    Labels,
    ParseError,
    Sample,
    is_openmetrics,
    parse,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "exposition"

Key = tuple[str, tuple[tuple[str, str], ...], Any, Any]


def _value(v: float) -> Any:
    return "NaN" if math.isnan(v) else float(v)


def _ts(t: Any) -> float | None:
    return None if t is None else round(float(t), 6)


def _key(samples: list[Sample]) -> list[Key]:
    return [(s.name, tuple(sorted(s.labels.items())), _value(s.value), _ts(s.timestamp)) for s in samples]


def _oracle(text: str, *, om: bool) -> list[Key]:
    """prometheus_client's samples, with its renaming of ``_total``-less counters undone."""
    renamed = set()
    if not om:
        for line in text.split("\n"):
            words = line.split()
            if words[:2] == ["#", "TYPE"] and words[3:4] == ["counter"] and not words[2].endswith("_total"):
                renamed.add(words[2])
    out: list[Key] = []
    for family in (om_families if om else text_families)(text):
        for s in family.samples:
            name = s.name
            if family.type == "counter" and family.name in renamed and name == family.name + "_total":
                name = family.name
            out.append((name, tuple(sorted(s.labels.items())), _value(s.value), _ts(s.timestamp)))
    return out


# ---------------------------------------------------------------------------
# Fixtures: real exporters' output and hand-made edge cases, against the oracle.

# prometheus_client 0.26 writes OpenMetrics its own OpenMetrics parser rejects: metadata
# 'vllm:x' with samples 'vllm_x_total' ("Clashing name"), and histograms with negative
# buckets without _sum. Those two are compared with the text parser (no timestamps in them).
_OM_ORACLE_REJECTS = {"vllm_openmetrics.txt", "posttrain_rollout_openmetrics.txt"}
FIXTURE_FILES = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".prom", ".txt"))
# Real captures of third-party servers (copied from ../shared/corpus; each names its source on line 1).
THIRD_PARTY = sorted(p.name for p in (FIXTURES / "third_party").iterdir() if p.suffix == ".prom")


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_fixture_matches_prometheus_client(name: str) -> None:
    text = _read(name)
    om = name.endswith(".txt")
    expected = _oracle(text, om=om and name not in _OM_ORACLE_REJECTS)
    assert len(expected) > 5
    assert _key(parse(text)) == expected  # format detected from '# EOF'
    assert _key(parse(text, openmetrics=om)) == expected


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_fixture_warm_parser_gives_the_cold_result(name: str) -> None:
    text = _read(name)
    parser = ExpositionParser()
    cold = _key(parse(text))
    assert _key(parser.parse(text)) == cold
    assert _key(parser.parse(text)) == cold
    assert _key(parser.parse(text.replace(" 1\n", " 2\n"))) == _key(parse(text.replace(" 1\n", " 2\n")))


def test_fixture_set_holds_the_captures() -> None:
    """The metadata-heavy captures and the third-party corpus are parsed by the tests above and below."""
    assert {"alertmanager_0.25.0.prom", "prometheus_2.42.0.prom", "pushgateway_1.5.1.prom",
            "victoria_metrics_1.79.5.prom"} <= set(FIXTURE_FILES)
    assert len(THIRD_PARTY) >= 14


@pytest.mark.parametrize("name", THIRD_PARTY)
def test_third_party_capture_matches_prometheus_client(name: str) -> None:
    text = (FIXTURES / "third_party" / name).read_text(encoding="utf-8")
    assert text.startswith("# source: ")
    expected = _oracle(text, om=False)
    assert expected
    assert _key(parse(text)) == expected
    parser = ExpositionParser()
    assert _key(parser.parse(text)) == expected
    assert _key(parser.parse(text)) == expected  # warm: the cache gives the cold result


def test_edge_case_fixture_details() -> None:
    by = {(s.name, s.labels.get("kind") or s.labels.get("a") or ""): s for s in parse(_read("edge_cases.prom"))}
    assert math.isnan(by["edge_special", "nan"].value)
    assert by["edge_special", "pinf"].value == math.inf
    assert by["edge_special", "ninf"].value == -math.inf
    assert by["edge_special", "infinity"].value == math.inf
    assert math.copysign(1, by["edge_special", "neg_zero"].value) == -1
    assert by["edge_ts_total", "1"].timestamp == 1_700_000_000.0  # milliseconds in, seconds out
    assert by["edge_ts_total", "2"].timestamp == -0.001
    assert by["edge_ts_total", ""].timestamp == 1_700_000_000.123
    assert by["edge_ws", "f"].timestamp == 1_700_000_000.0
    assert [by["edge_ws", k].value for k in "bcefghij"] == [1, 2, 3, 5, 6, 7, 8, 9]
    esc = next(s for s in parse(_read("edge_cases.prom")) if s.name == "edge_escapes")
    assert esc.labels == {"path": "C:\\Program Files\\ptmon", "quote": 'say "hi"', "multi": "line1\nline2",
                          "mixed": "\\n is not \n"}


def test_label_values_are_data_kept_literally() -> None:
    data = next(s for s in parse(_read("edge_cases.prom")) if s.name == "edge_data")
    assert data.labels["rich"] == "[bold red]boom[/]"
    assert data.labels["ctl"] == "bell\x07\x1b[31m"
    assert data.labels["tab"] == "a\tb"
    assert data.labels["braces"] == "}{"
    assert data.labels["hash"] == " # not an exemplar"
    assert data.labels["uni"] == "ünïcødé ✓ 日本"
    assert data.labels["sep"] == "\x1c\u2028"  # str.splitlines() would have cut the line here


def test_dcgm_names_labels_and_counter_without_total() -> None:
    samples = parse(_read("dcgm.prom"))
    energy = [s for s in samples if s.name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    assert [s.value for s in energy] == [91837465123.0, 4453201877.0]
    assert energy[0].labels["Hostname"] == "gpu-node-07"
    assert energy[0].labels["DCGM_FI_DRIVER_VERSION"] == "550.90.07"


def test_openmetrics_fixture_timestamps_and_exemplars() -> None:
    samples = {(s.name, s.labels.get("le", s.labels.get("gpu", ""))): s for s in parse(_read("openmetrics_edge.txt"))}
    assert samples["om_latency_seconds_bucket", "0.1"].value == 8  # exemplar ignored
    assert samples["om_latency_seconds_bucket", "0.1"].timestamp is None  # the exemplar's timestamp is not the sample's
    assert samples["om_tokens_total", ""].timestamp == 1_700_000_001.5  # seconds, not milliseconds
    assert samples["om_temp_celsius", "0"].timestamp == 1_700_000_002.0
    assert samples["vllm:cache_hits_total", ""].value == 3


# ---------------------------------------------------------------------------
# Labels, identity across scrapes, the cache.


def test_labels_are_read_only_hashable_and_copyable() -> None:
    (s,) = parse('m{a="1",b="2"} 3\n')
    labels = s.labels
    assert isinstance(labels, Labels) and labels == {"a": "1", "b": "2"}
    for mutate in (lambda: labels.__setitem__("a", "x"), lambda: labels.pop("a"), lambda: labels.update(c="3"),
                   labels.clear, lambda: labels.setdefault("c", "3"), labels.popitem,
                   lambda: labels.__delitem__("a")):
        with pytest.raises(TypeError, match="read-only"):
            mutate()
    assert labels == {"a": "1", "b": "2"}
    assert hash(labels) == hash(Labels({"b": "2", "a": "1"}))
    assert {labels: 1}[Labels({"a": "1", "b": "2"})] == 1
    for clone in (copy.copy(labels), copy.deepcopy(labels), pickle.loads(pickle.dumps(labels))):
        assert type(clone) is Labels and clone == labels
    assert dict(labels) | {"c": "3"} == {"a": "1", "b": "2", "c": "3"}


def test_same_labels_object_across_scrapes() -> None:
    parser = ExpositionParser()
    first = parser.parse('a{x="1"} 1\na{x="2"} 2\nb 3\nc{x="1"} 4 1000\n')
    second = parser.parse('a{x="1"} 10\na{x="2"} 2\nb 30\nc{x="1"} 40 2000\nd{x="1"} 5\n')
    assert [s.value for s in second] == [10, 2, 30, 40, 5]
    assert second[3].timestamp == 2.0
    for old, new in zip(first, second[:4], strict=True):
        assert new.labels is old.labels and new.name is old.name
    assert second[4].labels is not first[0].labels  # another series, equal labels: its own object
    assert second[4].labels == first[0].labels
    # An unchanged line hands back the very same (immutable) Sample.
    assert second[1] is first[1]


def test_values_and_series_change_between_scrapes() -> None:
    parser = ExpositionParser()
    scrapes = [
        'm{a="1"} 1\nm{a="2"} 2\n',
        'm{a="1"} 1.5\nm{a="3"} NaN\n',  # a series gone, one new, NaN
        'm{a="1"} +Inf\nm{a="2"} 2 1000\nm{a="3"} 7\n',
        'm{a="1"} 1\n',
    ]
    for _ in range(2):
        for text in scrapes:
            assert _key(parser.parse(text)) == _key(parse(text))


def test_cache_stays_bounded_under_series_churn() -> None:
    parser = ExpositionParser()
    lines = 100
    for scrape in range(200):
        text = "".join(f'req{{id="{scrape}-{i}"}} {i}\n' for i in range(lines))
        assert len(parser.parse(text)) == lines
        # The cache is private; its bound is the promise "memory stays bounded whatever a target sends":
        # after every scrape it holds this page's series and nothing else.
        assert set(parser._caches[0]) == {f'req{{id="{scrape}-{i}"}}' for i in range(lines)}
        assert parser._held[0] == sum(len(key) for key in parser._caches[0])


def test_parser_recovers_after_an_error() -> None:
    parser = ExpositionParser()
    good = 'm{a="1"} 1\nm{a="2"} 2\n'
    parser.parse(good)
    with pytest.raises(ParseError) as err:
        parser.parse('m{a="1"} 1\nm{a="2"} two\n')  # the fast path's float() refuses; the careful path explains
    assert err.value.lineno == 2 and "invalid sample value 'two'" in str(err.value)
    with pytest.raises(ParseError, match="invalid sample value '2_0'"):
        parser.parse('m{a="1"} 1\nm{a="2"} 2_0\n')  # float() would take it; Prometheus does not
    assert _key(parser.parse(good)) == _key(parse(good))


def test_crlf_line_ends_are_accepted_in_text_format() -> None:
    assert _key(parse('a{x="1"} 1\r\nb 2 1000\r\n# TYPE c gauge\r\nc 3\r\n')) == [
        ("a", (("x", "1"),), 1.0, None), ("b", (), 2.0, 1.0), ("c", (), 3.0, None)]


def test_duplicate_series_are_all_returned() -> None:
    assert [s.value for s in parse("a 1\na 2\n")] == [1.0, 2.0]


def test_exemplars_are_ignored_in_text_format_too() -> None:
    (s,) = parse('a_total{x="1"} 5 # {trace_id="t"} 1\n', openmetrics=False)
    assert (s.value, s.timestamp) == (5.0, None)


# ---------------------------------------------------------------------------
# Content negotiation.


def test_is_openmetrics() -> None:
    assert is_openmetrics("application/openmetrics-text; version=1.0.0; charset=utf-8")
    assert is_openmetrics("Application/OpenMetrics-Text;version=0.0.1")
    assert not is_openmetrics("text/plain; version=0.0.4; charset=utf-8")
    assert not is_openmetrics(None)
    assert not is_openmetrics("")


def test_accept_header_prefers_openmetrics_like_prometheus() -> None:
    _, content_type = choose_encoder(ACCEPT_HEADER)
    assert is_openmetrics(content_type)
    assert "text/plain;version=0.0.4" in ACCEPT_HEADER


def test_format_detection() -> None:
    om_text = "a 1 1500\n# EOF\n"
    assert parse(om_text)[0].timestamp == 1500.0  # detected: seconds
    assert parse(om_text, openmetrics=False)[0].timestamp == 1.5  # forced text: milliseconds, '# EOF' a comment
    assert parse("a 1 1500\n")[0].timestamp == 1.5
    with pytest.raises(ParseError, match="line 2: blank line"):
        parse("a 1\n\n# EOF\n")  # detected, so OpenMetrics' rules apply


def test_real_exporter_over_http_negotiates_and_parses() -> None:
    registry = CollectorRegistry()
    rollouts = Counter(ROLLOUTS.name, ROLLOUTS.help, ROLLOUTS.labels, registry=registry)
    seconds = Histogram(ROLLOUT_SECONDS.name, ROLLOUT_SECONDS.help, ROLLOUT_SECONDS.labels,
                        buckets=ROLLOUT_SECONDS.buckets, registry=registry)
    version = Gauge("posttrain_fixture_version", "A gauge.", registry=registry)
    rollouts.labels("math", "ok").inc(7)
    seconds.labels("math").observe(3.0)
    version.set(12)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        parser = ExpositionParser()
        for accept, om in ((ACCEPT_HEADER, True), ("text/plain;version=0.0.4", False)):
            response = httpx.get(url, headers={"Accept": accept})
            assert is_openmetrics(response.headers["content-type"]) is om
            samples = parser.parse(response.text, openmetrics=om)
            assert _key(samples) == _oracle(response.text, om=False)  # (see _OM_ORACLE_REJECTS)
            by = {(s.name, s.labels.get("le", "")): s.value for s in samples if s.labels.get("env", "math") == "math"}
            assert by[ROLLOUTS.name, ""] == 7
            assert by[ROLLOUT_SECONDS.bucket, "2.5"] == 0 and by[ROLLOUT_SECONDS.bucket, "5.0"] == 1
            assert by[ROLLOUT_SECONDS.count, ""] == 1 and by["posttrain_fixture_version", ""] == 12
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# ---------------------------------------------------------------------------
# Errors: line number, a short clear reason, never the whole input.

ERRORS = [
    ("a 1\nb\n", 2, "missing value after 'b'"),
    ("a{x=\"1\"}\n", 1, "missing value"),
    ("a abc\n", 1, "invalid sample value 'abc'"),
    ("a 1_000\n", 1, "invalid sample value '1_000'"),
    ("a ١٢\n", 1, "invalid sample value"),  # float() takes Arabic-Indic digits; Prometheus does not
    ("a 0x1p3\n", 1, "invalid sample value '0x1p3'"),
    ("a 1 1.5\n", 1, "invalid timestamp '1.5' (expected integer milliseconds)"),
    ("a 1 2 3\n", 1, "unexpected text '3' after the timestamp"),
    ("# ok\na{x=\"1\",x=\"2\"} 1\n", 2, "duplicate label name 'x'"),
    ('a{x="1" 1\n', 1, "expected ',' or '}' after a label value"),
    ('a{x="1", 1\n', 1, "invalid label name '1'"),
    ('a{x="1\n', 1, "label value of 'x' is not closed"),
    ("a{x=1} 1\n", 1, "label value of 'x' must be in double quotes"),
    ('a{x "1"} 1\n', 1, "expected '=' after label name 'x'"),
    ('a{1x="1"} 1\n', 1, "invalid label name '1x'"),
    ('a{,x="1"} 1\n', 1, "empty label (stray comma)"),
    ('a{x="1"} 1\nb{x="2"} 1\nc{x="3"}} 1\n', 3, "invalid sample value '}'"),
    ('a{__name__="b"} 1\n', 1, "'__name__' is reserved"),
    ('{"a.b"} 1\n', 1, "missing metric name before '{'"),
    ('a{"x.y"="1"} 1\n', 1, "quoted (UTF-8) label or metric names are not supported"),
    ("1a 1\n", 1, "invalid metric name '1a'"),
    ("a-b 1\n", 1, "invalid metric name 'a-b'"),
    ("a 1 #\n", 1, "invalid exemplar"),
    ("a 1#x\n", 1, "unexpected '#'"),
    ("# TYPE a countr\n", 1, "unknown metric type 'countr'"),
    ("# TYPE a\n", 1, "unknown metric type ''"),
    ("# HELP\n", 1, "missing metric name after '# HELP'"),
    ("# TYPE 1a gauge\n", 1, "invalid metric name '1a' in '# TYPE'"),
]

OM_ERRORS = [
    ("a 1\n\nb 2\n# EOF\n", 2, "blank line (not allowed in OpenMetrics)"),
    ("a 1\nb 2\n", 2, "missing '# EOF' at the end"),
    ("a 1\n# EOF\nb 2\n", 3, "text after '# EOF'"),
    ("a 1\n# EOF\n\n", 3, "text after '# EOF'"),
    ('a{x="1",} 1\n# EOF\n', 1, "trailing comma in a label set"),
    ("# a comment\na 1\n# EOF\n", 1, "no comments in OpenMetrics"),
    ("a 1 1700000000000.5.5\n# EOF\n", 1, "invalid timestamp"),
    ("a 1 NaN\n# EOF\n", 1, "invalid timestamp 'NaN'"),
    ("# TYPE a untyped\n# EOF\n", 1, "unknown metric type 'untyped'"),
    ("a\t1\n# EOF\n", 1, "expected a single space before the value"),
]


@pytest.mark.parametrize(("text", "lineno", "reason"), ERRORS)
def test_invalid_text_lines(text: str, lineno: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse(text, openmetrics=False)
    assert err.value.lineno == lineno
    assert str(err.value).startswith(f"line {lineno}: ")
    assert reason in str(err.value)


@pytest.mark.parametrize(("text", "lineno", "reason"), OM_ERRORS)
def test_invalid_openmetrics(text: str, lineno: int, reason: str) -> None:
    with pytest.raises(ParseError) as err:
        parse(text, openmetrics=True)
    assert err.value.lineno == lineno
    assert reason in str(err.value)


def test_errors_are_found_on_the_warm_path_too() -> None:
    parser = ExpositionParser()
    for text, lineno, reason in ERRORS:
        valid = "\n".join(f"m{{i=\"{i}\"}} {i}" for i in range(3)) + "\n"
        parser.parse(valid)
        with pytest.raises(ParseError) as err:
            parser.parse(valid + text, openmetrics=False)
        assert err.value.lineno == lineno + 3 and reason in str(err.value)


def test_error_message_is_short_for_huge_lines() -> None:
    huge = 'a{x="' + "y" * 100_000 + '"} one\n'
    with pytest.raises(ParseError) as err:
        ExpositionParser(max_label_value_length=None).parse(huge)
    message = str(err.value)
    assert "invalid sample value 'one'" in message
    assert len(message) < 300 and "(100011 characters)" in message
    assert len(err.value.line) <= 1000


def test_error_message_escapes_control_characters() -> None:
    with pytest.raises(ParseError) as err:
        parse('a{x="\x1b[31m"} bad\n')
    assert "\x1b" not in str(err.value) and "\\x1b[31m" in str(err.value)


def test_label_value_limit_in_bytes() -> None:
    parser = ExpositionParser(max_label_value_length=10)
    assert parser.parse('a{x="0123456789"} 1\n')[0].labels["x"] == "0123456789"
    with pytest.raises(ParseError, match=r"line 2: label value of 11 bytes exceeds the limit of 10"):
        parser.parse('a 1\na{x="01234567890"} 1\n')
    with pytest.raises(ParseError, match="label value of 11 bytes exceeds the limit of 10"):
        parser.parse('a{x="日本語ab"} 1\n')  # 5 characters, 11 bytes
    with pytest.raises(ParseError, match=f"label value of 100000 bytes exceeds the limit of {MAX_LABEL_VALUE_BYTES}"):
        parse('a{x="' + "z" * 100_000 + '"} 1\n')  # the default: the contract's, which the exporters keep too


def test_line_length_limit() -> None:
    parser = ExpositionParser(max_line_length=20)
    assert parser.parse("a 1\n")[0].value == 1
    with pytest.raises(ParseError, match="line 2: line of 21 characters exceeds the limit of 20") as err:
        parser.parse("a 1\nb" + " " * 19 + "1\n")
    assert "   " not in str(err.value)


# ---------------------------------------------------------------------------
# Prometheus itself (promtool's text parser) on the whitespace and escape variants.

ACCEPTED_BY_PROMETHEUS = [
    'ws {a="b"} 1',
    'ws{ a = "c" , b="d" } 2',
    'ws{a="e",} 3',
    "ws\t4",
    'ws{a="f"}\t5\t1700000000000',
    '   ws{a="g"} 6',
    'ws{a="h"}  7',
    "ws{} 8",
    'ws{a="i"}9',
    "ws{a=\"j\"} Infinity",
    "ws{a=\"k\"} -Inf +5",
    'ws{a="l\\\\ \\" \\n"} NaN',
]
REJECTED_BY_PROMETHEUS = ["x 1_0", "x 0x1p3", "x 1 1.5", 'x{a="1",a="2"} 1', "x abc",
                          # whitespace other than spaces and tabs is no separator (float() would strip it)
                          "x 1\x0b", "x 1\x0c", 'x{a="1"} 2\x0b', "x\x0b1", "x 1 \x0b5", "x 1 5\x0c", "\x0b",
                          "# TYPE x gauge\x0b\nx 1",
                          # an exemplar on a gauge (the text format has none at all for promtool)
                          '# TYPE x gauge\nx 1 # {trace_id="t"} 1']


def test_promtool_and_ptmon_agree_on_accepted_lines(promtool_bin: str, tmp_path: Path) -> None:
    text = "\n".join(ACCEPTED_BY_PROMETHEUS) + "\n"
    result = subprocess.run([promtool_bin, "check", "metrics"], input=text, capture_output=True, text=True,
                            timeout=30)
    assert "parsing error" not in result.stdout + result.stderr
    assert [s.value for s in parse(text)][:9] == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert _key(parse(text)) == _oracle(text, om=False)


@pytest.mark.parametrize("line", REJECTED_BY_PROMETHEUS)
def test_promtool_and_ptmon_agree_on_rejected_lines(promtool_bin: str, line: str) -> None:
    result = subprocess.run([promtool_bin, "check", "metrics"], input=line + "\n", capture_output=True,
                            text=True, timeout=30)
    assert "parsing error" in result.stdout + result.stderr
    with pytest.raises(ParseError):
        parse(line + "\n")


# ---------------------------------------------------------------------------
# Hypothesis: generated expositions against the oracle, and warm against cold.

_LABEL_NAME = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True).filter(lambda s: not s.startswith("__"))
_LABEL_VALUE = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_FLOAT_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.6e}"),
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["NaN", "nan", "+Inf", "-Inf", "inf", "-inf", "Infinity", "+infinity", ".5", "5.", "-0", "1E3"]),
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@st.composite
def _escaped_value(draw: st.DrawFn) -> str:
    parts = [_escape(ch) for ch in draw(_LABEL_VALUE)]
    # Now and then an escape the formats do not define: Prometheus and both oracles keep it as written.
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), "\\" + draw(st.sampled_from("tqP d.0")))
    return "".join(parts)


@st.composite
def _label_text(draw: st.DrawFn, *, om: bool) -> str:
    names = draw(st.lists(_LABEL_NAME, max_size=4, unique=True))
    if not names:
        return draw(st.sampled_from(["", "{}"]))
    pairs = [f'{n}="{draw(_escaped_value())}"' for n in names]
    if om:
        return "{" + ",".join(pairs) + "}"
    sep = draw(st.sampled_from([",", ", ", " ,"]))
    pad = draw(st.sampled_from(["", " "]))
    trailing = draw(st.sampled_from(["", ","]))
    return "{" + pad + sep.join(pairs) + trailing + pad + "}"


@st.composite
def text_exposition(draw: st.DrawFn) -> str:
    families = draw(st.lists(st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,10}", fullmatch=True), min_size=1,
                             max_size=5, unique=True))
    assume(not any(a + "_total" == b for a in families for b in families))
    lines: list[str] = []
    for family in families:
        kind = draw(st.sampled_from([None, "gauge", "untyped", "counter"]))
        name = family + "_total" if kind == "counter" else family
        if draw(st.booleans()):
            help_text = draw(st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=20))
            lines.append(f"# HELP {name} {help_text.replace(chr(92), chr(92) * 2)}")
        if kind:
            lines.append(f"# TYPE {name} {kind}")
        for _ in range(draw(st.integers(1, 4))):
            labels = draw(_label_text(om=False))
            sep = draw(st.sampled_from([" ", "  ", "\t"]))
            value = draw(_FLOAT_TEXT)
            line = f"{name}{labels}{sep}{value}"
            if draw(st.booleans()):
                line += f"{sep}{draw(st.integers(-(10**13), 10**13))}"
            lines.append(line)
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# a comment", "#", "# TYPE-less comment: ok"])))
    return "\n".join(lines) + "\n"


@st.composite
def om_exposition(draw: st.DrawFn) -> str:
    stems = draw(st.lists(st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,8}", fullmatch=True), min_size=1, max_size=4))
    lines: list[str] = []
    for i, stem in enumerate(stems):
        family = f"{stem}{i}"  # unique, and no reserved suffix can end in a digit
        kind = draw(st.sampled_from(["gauge", "counter", "unknown"]))
        lines.append(f"# TYPE {family} {kind}")
        if draw(st.booleans()):
            lines.append(f"# HELP {family} " + draw(st.from_regex(r"[a-zA-Z][a-zA-Z0-9 .,]{0,20}", fullmatch=True)))
        name = family + "_total" if kind == "counter" else family
        with_ts = draw(st.booleans())
        seen: set[str] = set()
        for _ in range(draw(st.integers(1, 3))):
            labels = draw(_label_text(om=True))
            canonical = labels if labels != "{}" else ""
            if canonical in seen:
                continue
            seen.add(canonical)
            if kind == "counter":
                value = repr(draw(st.floats(min_value=0, allow_infinity=False)))
            else:
                value = draw(_FLOAT_TEXT)
            line = f"{name}{labels} {value}"
            if with_ts:
                line += " " + draw(st.sampled_from(["1700000000", "1700000000.5", "1.5e9", "0.001"]))
            if kind == "counter" and draw(st.booleans()):
                line += ' # {trace_id="' + draw(st.from_regex(r"[a-z0-9 ]{0,10}", fullmatch=True)) + '"} 1.5'
            lines.append(line)
    return "\n".join(lines) + "\n# EOF\n"


_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(text_exposition())
def test_generated_text_matches_prometheus_client(text: str) -> None:
    assert _key(parse(text)) == _oracle(text, om=False)


@_SETTINGS
@given(om_exposition())
def test_generated_openmetrics_matches_prometheus_client(text: str) -> None:
    assert _key(parse(text)) == _oracle(text, om=True)


_NEW_NUMBERS = ["0", "1", "42", "-7", "1e3", "NaN", "+Inf", "2.5", "17", "1.0"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(text_exposition(), min_size=2, max_size=3), st.randoms(use_true_random=False))
def test_generated_scrape_sequences_warm_equals_cold(texts: list[str], rng: random.Random) -> None:
    parser = ExpositionParser()
    for text in texts + texts[::-1]:
        # Same series, new numbers: rewrite the last token of some lines, as a target does between
        # scrapes (on a timestamped line that is the timestamp; '2.5' there must fail alike).
        rewritten = []
        for line in text.split("\n"):
            head, sep, _ = line.rpartition(" ")
            if sep and not line.lstrip().startswith("#") and rng.random() < 0.6:
                line = f"{head} {rng.choice(_NEW_NUMBERS)}"
            rewritten.append(line)
        for body in (text, "\n".join(rewritten), text):
            try:
                cold = _key(parse(body))
            except ParseError as e:
                with pytest.raises(ParseError) as warm:
                    parser.parse(body)
                assert (warm.value.lineno, str(warm.value)) == (e.lineno, str(e))
                continue
            assert _key(parser.parse(body)) == cold


def test_threads_get_independent_parsers() -> None:
    # One parser per target; parsers share nothing, so targets can parse on separate threads.
    text = "".join(f'm{{i="{i}"}} {i}\n' for i in range(200))
    results: list[list[Key]] = []

    def run() -> None:
        p = ExpositionParser()
        for _ in range(5):
            out = p.parse(text)
        results.append(_key(out))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [_key(parse(text))] * 3


def test_double_underscore_label_names_are_accepted_but_not_name() -> None:
    # Prometheus's text parser takes them (promtool agrees); prometheus_client's refuses: we side with Prometheus.
    (s,) = parse('a{__meta_x="1"} 1\n')
    assert s.labels == {"__meta_x": "1"}
    with pytest.raises(ParseError, match="'__name__' is reserved"):
        parse('a{__name__="b"} 1\n')


# An escape other than \\, \" and \n: the Prometheus server keeps it literally (its text and OpenMetrics
# lexers take any backslash pair and only replace those three; checked by scraping these lines with
# Prometheus 2.42, which stored x="C:\\Program Files"), and so do both prometheus_client parsers. Only
# promtool's linter refuses it. Exporters that write Windows paths or '\t' unescaped are real (hand-made
# templates), so refusing would take a whole target down over one label.
UNKNOWN_ESCAPES = [
    ('a{x="C:\\Program Files"} 1', {"x": "C:\\Program Files"}),
    ('a{x="tab\\there", y="\\d+"} 1', {"x": "tab\\there", "y": "\\d+"}),
    ('a{x="\\\\\\q\\n"} 1', {"x": "\\\\q\n"}),  # \\ then \q (kept) then \n
    ('a{x="end\\ "} 1', {"x": "end\\ "}),
]


@pytest.mark.parametrize(("line", "labels"), UNKNOWN_ESCAPES)
@pytest.mark.parametrize("om", [False, True])
def test_unknown_escapes_are_kept_literally_like_prometheus(line: str, labels: dict[str, str], om: bool) -> None:
    if om:
        line = line.replace(", ", ",")
    text = line + "\n" + ("# EOF\n" if om else "")
    parser = ExpositionParser()
    for _ in range(2):  # cold, then warm
        (sample,) = parser.parse(text, openmetrics=om)
        assert dict(sample.labels) == labels
    assert _key(parse(text, openmetrics=om)) == _oracle(text, om=om)
    if not om:  # the character-by-character path (a space before '{') agrees
        (sample,) = parse(line.replace("a{", "a {", 1) + "\n")
        assert dict(sample.labels) == labels


def test_line_count_limit_refuses_a_flood_before_parsing_it() -> None:
    # A cardinality explosion: the body cap alone lets ~1.1M one-line series through, which cost ~800 MB
    # of caches to parse. The scraper sets this limit (10 x the store's series cap) like Prometheus's sample_limit.
    parser = ExpositionParser(max_lines=3)
    assert [s.value for s in parser.parse("a 1\nb 2\nc 3\n")] == [1, 2, 3]  # the final newline ends a line
    flood = "".join(f'm{{i="{i}"}} {i}\n' for i in range(10))
    with pytest.raises(ParseError) as err:
        parser.parse(flood)
    assert str(err.value) == "line 4: 10 lines exceed the limit of 3 per scrape"
    assert err.value.lineno == 4 and err.value.line == 'm{i="3"} 3'
    assert not parser._caches[0] or set(parser._caches[0]) <= {"a", "b", "c"}  # nothing of the flood is kept


# ---------------------------------------------------------------------------
# Issue 12: the real grammar, not a cache guess; whitespace and exemplars as Prometheus; bounded bytes.


@pytest.mark.parametrize(("first", "then"), [
    ("x 1\n", 'x {a="b"} 2\n'),  # a space before the label set is legal text format
    ("x  1\n", 'x  {a="b"} 2\n'),
    ("x 1 1000\n", 'x {a="b"} 2 2000\n'),
    ("x 1\n", 'x\t{a="b"} 2\n'),
])
def test_space_before_the_label_set_whatever_was_cached_before(first: str, then: str) -> None:
    parser = ExpositionParser()
    assert _key(parser.parse(first)) == _key(parse(first))
    for _ in range(3):  # and every later scrape: the cache must not make one error stick
        assert [(s.name, dict(s.labels), s.value) for s in parser.parse(first + then)] == [
            ("x", {}, 1.0), ("x", {"a": "b"}, 2.0)]
    assert _key(parse(first + then)) == _key(parse(then + first))[::-1]


@pytest.mark.parametrize("om", [False, True])
@pytest.mark.parametrize("body", [
    "a 1\x0b\n", "a 1\x0c\n", "a 1 5\x0b\n", "a\x0b1\n", 'a{x="1"}\x0c 1\n', "\x0c\n",
])
def test_vertical_tab_and_form_feed_are_no_whitespace(body: str, om: bool) -> None:
    text = body + ("# EOF\n" if om else "")
    with pytest.raises(ParseError):
        parse(text, openmetrics=om)
    parser = ExpositionParser()  # warm: the series (and the value '1') already known
    parser.parse("a 1\na 1 5\n" + ("# EOF\n" if om else ""), openmetrics=om)
    with pytest.raises(ParseError):
        parser.parse(text, openmetrics=om)


def test_carriage_return_is_refused_in_openmetrics_and_crlf_tolerated_in_text() -> None:
    parser = ExpositionParser()
    for _ in range(2):
        with pytest.raises(ParseError, match=r"line 1: invalid sample value '1\\r'"):
            parser.parse("a 1\r\n# EOF\n", openmetrics=True)
        assert [s.value for s in parser.parse("a 1\r\nb 2 1000\r\n", openmetrics=False)] == [1.0, 2.0]
    with pytest.raises(ParseError, match="invalid sample value"):
        parse("a 1\rb 2\n")  # a lone CR is no line end


@pytest.mark.parametrize(("text", "ok"), [
    ('# TYPE c counter\nc_total 1 # {t="1"} 1\n# EOF\n', True),
    ('# TYPE h histogram\nh_bucket{le="+Inf"} 1 # {t="1"} 1\nh_count 1\nh_sum 1\n# EOF\n', True),
    ('# TYPE g gauge\ng 1 # {t="1"} 1\n# EOF\n', False),
    ('# TYPE c counter\nc_created 1 # {t="1"} 1\n# EOF\n', False),
    ('# TYPE h histogram\nh_sum 1 # {t="1"} 1\n# EOF\n', False),
    ('u 1 # {t="1"} 1\n# EOF\n', False),  # no TYPE: unknown, which cannot have one
    ('# TYPE c counter\nc_total 1\nother 1 # {t="1"} 1\n# EOF\n', False),  # not c's sample
])
def test_openmetrics_exemplars_only_where_the_spec_allows_them(text: str, ok: bool) -> None:
    parser = ExpositionParser()
    for _ in range(2):  # cold and warm alike
        if ok:
            assert _key(parser.parse(text)) == _oracle(text, om=True)
        else:
            with pytest.raises(ParseError, match="cannot have one"):
                parser.parse(text)
            with pytest.raises(ValueError):  # prometheus_client's OpenMetrics parser agrees
                _oracle(text, om=True)


def test_text_format_exemplars_tolerated_except_on_a_gauge() -> None:
    assert len(parse('# TYPE c_total counter\nc_total 1 # {t="1"} 1\nu 2 # {t="1"} 1\n')) == 2
    with pytest.raises(ParseError, match="line 2: exemplar on 'g'"):
        parse('# TYPE g gauge\ng 1 # {t="1"} 1\n')


def test_a_series_over_the_byte_budget_is_refused_with_its_size() -> None:
    fat = "fat{" + ",".join(f'l{i}="{"v" * 4000}"' for i in range(200)) + "} 1\n"  # 800 KB of labels
    parser = ExpositionParser()
    with pytest.raises(ParseError) as err:
        parser.parse("ok 1\n" + fat)
    assert err.value.lineno == 2
    size = len(fat) - len(" 1\n")
    assert f"series of {size:,} bytes (name and labels) exceeds the limit of {MAX_SERIES_BYTES:,}" in str(err.value)
    assert set(parser._caches[0]) == {"ok"}  # nothing of it is kept
    small = ExpositionParser(max_series_bytes=12)
    assert small.parse('a{b="12345"} 1\n')[0].labels == {"b": "12345"}  # 12 bytes: at the limit
    with pytest.raises(ParseError, match="series of 13 bytes"):
        small.parse('a{b="123456"} 1\n')
    with pytest.raises(ParseError, match="series of 14 bytes"):  # the careful path's too, in bytes
        small.parse('a {b="日本"} 1\n')


def test_the_page_budget_refuses_a_page_of_too_much_series_text() -> None:
    parser = ExpositionParser(max_page_series_bytes=1000)
    page = "".join(f'm{{i="{i:03d}",pad="{"p" * 80}"}} 1\n' for i in range(10))  # 10 series of 98 bytes
    assert len(parser.parse(page)) == 10
    churned = "".join(f'm{{i="{i:03d}",pad="{"q" * 80}"}} 1\n' for i in range(10))
    assert len(parser.parse(churned)) == 10  # the last page's series make room: they are not on this one
    with pytest.raises(ParseError) as err:
        parser.parse(churned + 'm{i="010",pad="' + "q" * 80 + '"} 1\n')
    assert err.value.lineno == 11
    assert "the series of this scrape exceed 1,000 bytes of names and labels" in str(err.value)
    assert parser._held[0] <= 1000 and len(parser._caches[0]) == 10


def test_a_failed_scrape_leaves_only_its_own_series_cached() -> None:
    parser = ExpositionParser()
    for scrape in range(50):  # every scrape: new series, then an error (the old cache grew on each)
        with pytest.raises(ParseError):
            parser.parse("".join(f'r{{id="{scrape}-{i}"}} {i}\n' for i in range(20)) + "bad line\n")
        assert len(parser._caches[0]) == 20
    parser.parse("a 1\n")
    assert set(parser._caches[0]) == {"a"} and len(parser._meta[0]) == 0


def test_metadata_cache_is_bounded_to_the_page() -> None:
    parser = ExpositionParser()
    for scrape in range(30):
        parser.parse(f"# HELP m{scrape} {'h' * 1000}\n# TYPE m{scrape} gauge\nm{scrape} 1\n")
        assert len(parser._meta[0]) == 2


# Warm against cold on any input: lines made of the grammar's pieces, right and wrong, repeated across
# scrapes in any order (so that what one scrape cached meets the next one's lines).
# The pieces of a sample line in order, and what each may be instead of a plain line's.
_ODD = {
    "indent": [" ", "\t"],
    "name": ["x_total", "x_bucket", "1x", ""],
    "gap": ["  ", "\t"],
    "labels": ['{a="b",}', "{}", '{a="b c"}', '{a="#"}', '{a="b"', '{ a = "b" }', '{le="+Inf"}', '{a="\\n"}'],
    "sep": ["  ", "\t", ""],
    "value": ["+Inf", "NaN", "1_0", "1\x0b", "1\x0c", "1\r", '{a="b"}', "#", "abc", "-0", "1e3", ""],
    "ts": [" 1000", " 1.5", "\t7", " -5", " 1000 9", " \x0b"],
    "exemplar": [' # {t="1"} 1', " #", " # {t}"],
}
_META = st.sampled_from(["# TYPE x gauge", "# TYPE x counter", "# TYPE x histogram", "# HELP x h", "# EOF",
                         "#", "# x", "", "# TYPE x_total counter", "# UNIT x s"])


@st.composite
def _any_line(draw: st.DrawFn) -> str:
    """A plain line (``x 1``, ``y {a="b"} 2``, ...) with up to three of its pieces made odd, or metadata."""
    if draw(st.integers(0, 4)) == 0:
        return draw(_META)
    pieces = dict.fromkeys(_ODD, "")
    pieces.update(name=draw(st.sampled_from(["x", "y"])), gap=draw(st.sampled_from(["", " "])),
                  labels=draw(st.sampled_from(["", '{a="b"}'])), sep=" ", value=draw(st.sampled_from(["1", "2"])))
    for _ in range(draw(st.integers(0, 3))):
        piece = draw(st.sampled_from(sorted(_ODD)))
        pieces[piece] = draw(st.sampled_from(_ODD[piece]))
    return "".join(pieces.values())


@st.composite
def _scrapes(draw: st.DrawFn) -> list[str]:
    pool = draw(st.lists(_any_line(), min_size=2, max_size=6))
    bodies = draw(st.lists(st.lists(st.sampled_from(pool), min_size=1, max_size=6), min_size=2, max_size=5))
    ends = st.sampled_from(["\n", "\n", "", "\r\n"])
    return ["\n".join(lines) + draw(ends) for lines in bodies]


def _outcome(parser: ExpositionParser, body: str, om: bool | None) -> object:
    try:
        return _key(parser.parse(body, openmetrics=om))
    except ParseError as e:
        return (e.lineno, str(e))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_scrapes(), st.sampled_from([False, True, None]))
def test_warm_and_cold_parse_agree_on_any_input(bodies: list[str], om: bool | None) -> None:
    warm = ExpositionParser()
    for body in bodies + bodies[::-1]:
        assert _outcome(warm, body, om) == _outcome(ExpositionParser(), body, om), body


# ---------------------------------------------------------------------------
# Memory per target through the real scraper: a hostile loopback target churning fat series.


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _FatChurn(http.server.BaseHTTPRequestHandler):
    """Each scrape: 4 new series of 200 labels x 4,000 bytes (a 3.2 MB body, under the 16 MiB cap)."""

    scrapes = 0
    filler = "v" * 3990

    def do_GET(self) -> None:
        n = type(self).scrapes = type(self).scrapes + 1
        body = "".join(
            "churn{" + ",".join(f'l{i}="{n:06d}{s}{i:03d}{self.filler}"' for i in range(200)) + "} 1\n"
            for s in range(4)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.slow  # 300 scrapes of 3.2 MB from a loopback server thread (about a minute)
async def test_fat_label_churn_target_stays_under_a_fixed_memory_ceiling() -> None:
    # Issue 12: this target grew `ptmon snapshot` from 71 MB to 1.99 GB in 300 s while staying "up".
    # 300 s at one scrape a second, run faster than real time on an injected clock.
    from ptmon.monitor.settings import Target
    from ptmon.monitor.sources import Scraper
    from ptmon.monitor.store import Store

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FatChurn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    clock = [1_700_000_000.0]
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    scraper = Scraper([Target(name="fat", url=url)], store=Store(), timeout_s=30.0, clock=lambda: clock[0])
    ceiling = 100 * 2**20
    try:
        for _ in range(5):  # warm up: the client, the pool, the parse thread
            await scraper.scrape_once()
            clock[0] += 1.0
        gc.collect()
        before = _rss_bytes()
        growth = 0
        for second in range(300):
            await scraper.scrape_once()
            clock[0] += 1.0
            growth = _rss_bytes() - before
            assert growth < ceiling, f"RSS grew {growth / 2**20:.0f} MB after {second + 1} scrapes"
    finally:
        await scraper.aclose()
        server.shutdown()
        server.server_close()
    (health,) = scraper.health()
    assert health.up is False and health.series == 0
    assert health.error is not None
    assert "line 1: series of 801," in health.error and f"exceeds the limit of {MAX_SERIES_BYTES:,}" in health.error


# ---------------------------------------------------------------------------
# Issue 18: the cold path reads the whole page at once (columns, else line by line from the page's
# matches, else the careful walk); ``keep`` drops the samples a consumer does not read.


def _line_by_line() -> ExpositionParser:
    """A cold parser that takes the line loop (a line length limit turns the whole-page path off)."""
    return ExpositionParser(max_line_length=10**9)


class _PageLoopOnly(ExpositionParser):
    """A cold parser whose page is read match by match (``_parse_page``), never a column at a time."""

    __slots__ = ()

    def _parse_common(self, *args: Any) -> None:
        return None


class _ColumnsAlways(ExpositionParser):
    """A cold parser that tries the column path on any page, however few its samples."""

    __slots__ = ()
    _COLUMNS_FROM = -sys.maxsize


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_scrapes(), st.sampled_from([False, True, None]))
def test_the_three_cold_paths_agree_on_any_input(bodies: list[str], om: bool | None) -> None:
    for body in bodies:
        expected = _outcome(_line_by_line(), body, om)
        assert _outcome(ExpositionParser(), body, om) == expected, body
        assert _outcome(_PageLoopOnly(), body, om) == expected, body
        assert _outcome(_ColumnsAlways(), body, om) == expected, body


@pytest.mark.parametrize("name", FIXTURE_FILES + [f"third_party/{n}" for n in THIRD_PARTY])
def test_fixture_cold_paths_agree_and_fill_the_same_caches(name: str) -> None:
    text = _read(name)
    parsers = [ExpositionParser(), _PageLoopOnly(), _line_by_line(), _ColumnsAlways()]
    results = [_key(p.parse(text)) for p in parsers]
    assert results[0] == results[1] == results[2] == results[3]
    om = name.endswith(".txt")
    keys = [p._caches[om].keys() for p in parsers]
    assert keys[0] == keys[1] == keys[2] == keys[3]
    assert parsers[0]._held == parsers[1]._held == parsers[2]._held == parsers[3]._held


@pytest.mark.parametrize("blocks", [
    ['a="x=",b="y"', 'a="z"'],  # a value ending in '=': its '="' could be read as a separator
    ['a="x"', 'a="x="'], ['a="="'],
    ['a="},{b"', 'a="x"'],  # the join's separator inside a value
    ['a="x", b="y"', 'a="x",\tb="y"', 'a="x",  \t b="y"', 'a="x",', 'a="v",b="w",'],  # blanks, trailing commas
    ['a="x",a="y"', 'b="1"'],  # a label named twice: refused
    ['a="\x01\t\x7f"', 'a="é✓\u2028"', 'a=""', 'a="",b=""', 'a=":",b="\\"'],
    ['a="1",b="2",c="3"', "", 'le="+Inf"'],
])
def test_label_blocks_read_a_column_at_a_time_as_line_by_line(blocks: list[str]) -> None:
    page = "".join(f"m{i}{{{b}}} {i}\n" if b else f"m{i} {i}\n" for i, b in enumerate(blocks * 3))
    expected = _outcome(_line_by_line(), page, False)
    assert _outcome(_ColumnsAlways(), page, False) == expected
    assert _outcome(ExpositionParser(), page, False) == expected
    om = page.replace(",}", "}") + "# EOF\n"
    assert _outcome(_ColumnsAlways(), om, True) == _outcome(_line_by_line(), om, True)


class _CountsColumns(ExpositionParser):
    """A parser that counts the pages it tried a column at a time."""

    __slots__ = ("columns",)

    def __init__(self) -> None:
        super().__init__()
        self.columns = 0

    def _parse_common(self, *args: Any) -> bool | None:
        self.columns += 1
        return super()._parse_common(*args)


@pytest.mark.parametrize(("name", "columns"), [
    ("third_party/llamacpp_help_text_commit_snippet.prom", 0),  # 8 lines: the column path's fixed cost
    ("prometheus_2.42.0.prom", 0),  # metadata-heavy: HELP/TYPE lines are cheaper match by match
    ("alertmanager_0.25.0.prom", 0),
    ("victoria_metrics_1.79.5.prom", 1),  # 765 sample lines, no metadata
])
def test_a_cold_page_takes_columns_only_when_it_has_many_samples(name: str, columns: int) -> None:
    parser = _CountsColumns()
    assert _key(parser.parse(_read(name))) == _key(_line_by_line().parse(_read(name)))
    assert parser.columns == columns
    fleet = "".join(f'w_total{{worker="w{i:03d}"}} {i}\n' for i in range(ExpositionParser._COLUMNS_FROM))
    big = _CountsColumns()
    assert len(big.parse(fleet)) == ExpositionParser._COLUMNS_FROM and big.columns == 1


def _moved(text: str, step: int) -> str:
    """``text`` with every integer sample value (or timestamp) moved by ``step``."""
    out = []
    for line in text.split("\n"):
        head, _, value = line.rpartition(" ")
        if line and not line.startswith("#") and " # " not in line and head and value.lstrip("-").isdigit():
            line = f"{head} {int(value) + step}"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("name", FIXTURE_FILES + [f"third_party/{n}" for n in THIRD_PARTY])
def test_keep_returns_exactly_the_kept_names_cold_and_warm(name: str) -> None:
    text = _read(name)
    names = sorted({s.name for s in parse(text)})
    wanted = set(names[::3])  # a third of the names
    asked: list[str] = []

    def keep(sample_name: str) -> bool:
        asked.append(sample_name)
        return sample_name in wanted

    warm = ExpositionParser(keep=keep)
    for step in (0, 0, 7, 0, 3):
        page = _moved(text, step)
        expected = [k for k in _key(parse(page)) if k[0] in wanted]
        assert _key(parse(page, keep=wanted.__contains__)) == expected
        assert _key(warm.parse(page)) == expected
    assert set(asked) == set(names)
    if "edge" not in name:  # (a line that cannot be cached, an exemplar's, is asked about each time)
        assert len(asked) <= len(parse(text))  # once per new series at most, not once per scrape


def test_keep_still_checks_what_a_rejected_line_holds() -> None:
    reject = ExpositionParser(keep=lambda name: name == "ok", max_lines=3, max_label_value_length=8,
                              max_series_bytes=40)
    assert [s.name for s in reject.parse('ok 1\nno{a="b"} 2\n')] == ["ok"]
    for page, reason in [
        ("ok 1\nno 2\nno2 3\nno3 4\n", "4 lines exceed the limit of 3"),
        ('ok 1\nno{a="123456789"} 2\n', "label value of 9 bytes exceeds the limit of 8"),
        ('ok 1\nno{a="1",b="2",c="3",d="4",e="5",f="6",g="7"} 2\n', "series of 45 bytes"),
        ('ok 1\nno{a="1",a="2"} 2\n', "duplicate label name 'a'"),
        ("ok 1\nno two\n", "invalid sample value 'two'"),
        ("ok 1\nno{a=b} 2\n", "label value of 'a' must be in double quotes"),
    ]:
        for parser in (ExpositionParser(keep=lambda name: name == "ok", max_lines=3, max_label_value_length=8,
                                        max_series_bytes=40), reject):
            with pytest.raises(ParseError, match=reason):
                parser.parse(page)


def test_keep_skips_a_rejected_series_value_once_it_is_known() -> None:
    parser = ExpositionParser(keep=lambda name: name != "skipped")
    assert [s.name for s in parser.parse("kept 1\nskipped 2\n")] == ["kept"]
    # The value of a known rejected series is not read: a warm scrape costs it a dict lookup.
    assert [(s.name, s.value) for s in parser.parse("kept 3\nskipped two\n")] == [("kept", 3.0)]
    with pytest.raises(ParseError, match="invalid sample value 'two'"):
        parse("kept 3\nskipped two\n", keep=lambda name: name != "skipped")  # a cold parse reads it


def test_keep_caches_stay_bounded_by_the_page() -> None:
    parser = ExpositionParser(keep=lambda name: name.startswith("k"))
    for scrape in range(30):
        text = "".join(f'{n}{{id="{scrape}-{i}"}} {i}\n' for i in range(10) for n in ("k", "x"))
        assert len(parser.parse(text)) == 10
        assert set(parser._caches[0]) == {f'{n}{{id="{scrape}-{i}"}}' for i in range(10) for n in ("k", "x")}
        assert parser._held[0] == sum(map(len, parser._caches[0]))
    # In steady state nothing is rescanned: a page of the same series leaves the cache as it was.
    cache = dict(parser._caches[0])
    parser.parse(text.replace("} 3\n", "} 4\n"))
    assert parser._caches[0].keys() == cache.keys()


_POOL = [f'{name}{{w="{i}"}}' for name in ("kept", "dropped") for i in range(6)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.tuples(st.sampled_from(_POOL), st.integers(0, 3), st.booleans()), max_size=14),
                min_size=1, max_size=8))
def test_the_count_of_rejected_series_is_kept_only_while_the_cache_is_unchanged(
        pages: list[list[tuple[str, int, bool]]]) -> None:
    """The health's count of series ``keep`` rejected is what the cache holds, through churn, new series,
    timestamped lines (the careful path) and a page refused halfway: kept between steady scrapes, counted
    again whenever a cache changes."""
    parser = ExpositionParser(keep=lambda name: name == "kept")
    for page in pages:
        lines = [f"{series} {value}" + (" 1700000000000" if stamped else "") for series, value, stamped in page]
        if len(page) > 5:
            lines.insert(len(lines) // 2, "dropped{w=\"9\"} one")  # refused: the cache keeps what was read
        try:
            parser.parse("\n".join(lines) + "\n")
        except ParseError:
            pass
        if parser.skipped:
            assert parser.skipped_series(openmetrics=False) == list(parser._caches[0].values()).count(_SKIP)
        else:
            assert parser.skipped_series(openmetrics=False) == 0


def test_keep_none_returns_every_sample_and_openmetrics_too() -> None:
    text = _read("posttrain_rollout_openmetrics.txt")
    every = parse(text)
    assert _key(parse(text, keep=None)) == _key(every)
    names = {s.name for s in every}
    some = {n for n in names if n.endswith("_total")}
    assert some and some != names
    warm = ExpositionParser(keep=some.__contains__)
    for _ in range(3):
        assert _key(warm.parse(text)) == [k for k in _key(every) if k[0] in some]


@pytest.mark.parametrize(("body", "outcome"), [
    ("# TYPE a gauge\na 1\n# EOF\n", [("a", (), 1.0, None)]),
    ("# TYPE a gauge\na 1\n# EOF", [("a", (), 1.0, None)]),
    ("# TYPE a gauge\n\na 1\n# EOF\n", (2, "line 2: blank line (not allowed in OpenMetrics)")),
    ("a 1\n# EOF\n\n", (3, "line 3: text after '# EOF'")),
    ("a 1\n# EOF\nb 2\n", (3, "line 3: text after '# EOF'")),
    ("a 1\nb 2\n", (2, "line 2: missing '# EOF' at the end (the OpenMetrics body is incomplete)")),
])
def test_openmetrics_pages_of_common_lines_end_as_the_careful_path_says(body: str, outcome: object) -> None:
    assert _outcome(ExpositionParser(), body, True) == outcome
    assert _outcome(_line_by_line(), body, True) == outcome


def test_a_parser_holds_a_small_bounded_memory_of_values_for_a_page_of_moving_counters() -> None:
    """Every target keeps its own parser for the whole watch; moving counters never repeat a value, so the value
    cache sits near its cap. At 50,000 remembered texts a parser held ~5 MB (170 MB of a 64-target watch)."""
    import tracemalloc

    def page(k: int) -> str:
        return "".join(f'c_total{{i="{i}"}} {k * 1000 + i + 0.5}\n' for i in range(1000))

    parser = ExpositionParser()
    parser.parse(page(0))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = 0
        for k in range(1, 120):
            samples = parser.parse(page(k))
            held = max(held, tracemalloc.get_traced_memory()[0] - before)  # the cache's high-water mark
    finally:
        tracemalloc.stop()
    assert samples[7].value == 119 * 1000 + 7.5  # the values are still read, not served from a stale cache
    assert held < 1_500_000, held  # the last page's samples (~0.2 MB) and at most 4,096 values
