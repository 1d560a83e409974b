"""The store: bounded ring buffers per (target, series), a series cap, strictly increasing time."""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import tracemalloc

import pytest

from ptmon.monitor.parse import ExpositionParser, Sample
from ptmon.monitor.store import DEFAULT_CAPACITY, DEFAULT_MAX_LABEL_BYTES, DEFAULT_MAX_SERIES, Store, label_cost


def samples(text: str, parser: ExpositionParser | None = None) -> list[Sample]:
    return (parser or ExpositionParser()).parse(text, openmetrics=False)


def test_defaults_are_one_hour_at_one_second_and_20k_series() -> None:
    store = Store()
    assert (store.capacity, store.max_series) == (DEFAULT_CAPACITY, DEFAULT_MAX_SERIES) == (3600, 20_000)


def test_each_series_keeps_only_the_newest_capacity_points() -> None:
    store = Store(capacity=5)
    for t in range(12):
        store.ingest("a", float(t), [Sample("m", {}, float(t * 10))])
    (series,) = store.series("a", "m")
    assert series.points() == [(7.0, 70.0), (8.0, 80.0), (9.0, 90.0), (10.0, 100.0), (11.0, 110.0)]
    assert len(series) == 5 and series.last() == (11.0, 110.0)
    assert store.scrape_times("a") == [7.0, 8.0, 9.0, 10.0, 11.0]
    assert store.first_scrape("a") == 7.0  # the oldest held, not the first ever


def test_first_scrape_is_the_oldest_time_held_and_none_without_one() -> None:
    store = Store(capacity=3)
    assert store.first_scrape("a") is None
    for t in (5.0, 6.0, 7.0):
        store.ingest("a", t, [Sample("m", {}, 1.0)])
        assert store.first_scrape("a") == 5.0 == store.scrape_times("a")[0]
    store.ingest("a", 8.0, [])  # a scrape with no samples still counts, as scrape_times says
    assert store.first_scrape("a") == 6.0 == store.scrape_times("a")[0]


def test_points_window_is_inclusive_at_both_ends() -> None:
    store = Store()
    for t in range(10):
        store.ingest("a", float(t), [Sample("m", {}, float(t))])
    (series,) = store.series("a", "m")
    assert [t for t, _ in series.points(3.0, 6.0)] == [3.0, 4.0, 5.0, 6.0]
    assert [t for t, _ in series.points(start=7.5)] == [8.0, 9.0]
    assert [t for t, _ in series.points(end=1.0)] == [0.0, 1.0]
    assert series.points(20.0, 30.0) == [] and series.points(-5.0, -1.0) == []


def test_series_are_per_target_and_per_label_set() -> None:
    store = Store()
    store.ingest("a", 1.0, samples('m{x="1"} 1\nm{x="2"} 2\nother 3\n'))
    store.ingest("b", 1.0, samples('m{x="1"} 10\n'))
    assert sorted(store.targets()) == ["a", "b"]
    assert {dict(s.labels)["x"]: s.last() for s in store.series("a", "m")} == {"1": (1.0, 1.0), "2": (1.0, 2.0)}
    assert [s.last() for s in store.series("b", "m")] == [(1.0, 10.0)]
    assert sorted(store.names("a")) == ["m", "other"]
    assert store.series("nobody", "m") == [] and store.series_count("nobody") == 0
    assert list(store.names("nobody")) == [] and store.scrape_times("nobody") == []


def test_label_order_does_not_make_a_new_series() -> None:
    store = Store()
    store.ingest("a", 1.0, [Sample("m", {"x": "1", "y": "2"}, 1.0)])
    store.ingest("a", 2.0, [Sample("m", {"y": "2", "x": "1"}, 2.0)])
    assert store.series_count("a") == 1
    assert store.series("a", "m")[0].points() == [(1.0, 1.0), (2.0, 2.0)]


def test_stored_labels_are_a_copy_and_read_only() -> None:
    store = Store()
    labels = {"x": "1"}
    store.ingest("a", 1.0, [Sample("m", labels, 1.0)])
    labels["x"] = "changed"
    (series,) = store.series("a", "m")
    assert dict(series.labels) == {"x": "1"}
    with pytest.raises(TypeError):
        series.labels["x"] = "2"  # type: ignore[index]


def test_a_reused_mutable_dict_is_never_mistaken_for_the_old_series() -> None:
    store = Store()
    labels = {"x": "1"}
    store.ingest("a", 1.0, [Sample("m", labels, 1.0)])
    labels["x"] = "2"  # same object, new contents: must land in a new series
    store.ingest("a", 2.0, [Sample("m", labels, 2.0)])
    assert {dict(s.labels)["x"]: s.points() for s in store.series("a", "m")} == {
        "1": [(1.0, 1.0)], "2": [(2.0, 2.0)]}


def test_the_parsers_labels_take_the_identity_fast_path_with_the_same_result() -> None:
    parser = ExpositionParser()
    store = Store()
    text = 'm{x="1"} {v}\nm{x="2"} {v}\nn 5\n'
    for t in range(3):
        store.ingest("a", float(t), samples(text.replace("{v}", str(t)), parser))
    assert store.series_count("a") == 3
    assert {dict(s.labels)["x"]: s.points() for s in store.series("a", "m")} == {
        "1": [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0)], "2": [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0)]}


def test_a_samples_own_timestamp_wins_over_the_scrape_time() -> None:
    store = Store()
    store.ingest("a", 100.0, [Sample("m", {}, 1.0, 42.5), Sample("n", {}, 2.0)])
    assert store.series("a", "m")[0].points() == [(42.5, 1.0)]
    assert store.series("a", "n")[0].points() == [(100.0, 2.0)]


def test_repeated_or_backwards_timestamps_are_not_stored() -> None:
    store = Store()
    # An exporter that pins its own timestamp repeats it every scrape; a series listed
    # twice repeats it within one scrape. Neither may create a zero-length interval.
    first = store.ingest("a", 10.0, [Sample("m", {}, 1.0, 5.0), Sample("m", {}, 9.0, 5.0)])
    again = store.ingest("a", 11.0, [Sample("m", {}, 2.0, 5.0)])
    older = store.ingest("a", 12.0, [Sample("m", {}, 3.0, 4.0)])
    newer = store.ingest("a", 13.0, [Sample("m", {}, 4.0, 6.0)])
    assert (first.accepted, again.accepted, older.accepted, newer.accepted) == (1, 0, 0, 1)
    assert store.series("a", "m")[0].points() == [(5.0, 1.0), (6.0, 4.0)]


def test_series_beyond_the_cap_are_dropped_counted_and_stay_dropped() -> None:
    store = Store(max_series=3)
    first = store.ingest("a", 1.0, [Sample("m", {"i": str(i)}, float(i)) for i in range(5)])
    assert (first.accepted, first.dropped_series) == (3, 2)
    # The first three keep flowing; the other two are still refused next scrape.
    second = store.ingest("a", 2.0, [Sample("m", {"i": str(i)}, float(i + 10)) for i in range(5)])
    assert (second.accepted, second.dropped_series) == (3, 2)
    assert store.series_count("a") == 3 and store.dropped_series("a") == 4
    assert sorted(s.labels["i"] for s in store.series("a", "m")) == ["0", "1", "2"]
    # The cap is per target: another target has its own room.
    assert store.ingest("b", 1.0, [Sample("m", {"i": "9"}, 1.0)]).dropped_series == 0


def test_memory_stays_bounded_whatever_a_target_sends() -> None:
    store = Store(capacity=4, max_series=100)
    parser = ExpositionParser()
    for scrape in range(6):
        text = "".join(f'm{{i="{scrape}-{i}"}} 1\n' for i in range(1000))  # all-new series every scrape
        store.ingest("churn", float(scrape), samples(text, parser))
    assert store.series_count("churn") == 100
    assert max(len(s) for s in store.series("churn", "m")) <= 4
    assert len(store.scrape_times("churn")) == 4
    # The identity cache follows the scrape size (itself capped by the scraper's body limit).
    assert len(store._targets["churn"].known) <= max(4 * store.max_series, 2 * 1000)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        Store(capacity=1)
    with pytest.raises(ValueError, match="max_series"):
        Store(max_series=0)


def test_a_full_target_forgets_series_not_seen_for_capacity_scrapes_to_make_room() -> None:
    store = Store(capacity=3, max_series=2)
    a, b, c = (Sample("m", {"w": w}, 1.0) for w in "abc")
    store.ingest("t", 0.0, [a, b])
    # Worker "a" is gone, "c" is new: no room while "a" still has points in the last 3 scrapes.
    assert store.ingest("t", 1.0, [b, c]).dropped_series == 1
    assert store.ingest("t", 2.0, [b, c]).dropped_series == 1
    third = store.ingest("t", 3.0, [b, c])  # scrapes held: 1, 2, 3; "a" last seen at 0
    assert third.dropped_series == 0 and third.accepted == 2
    assert sorted(s.labels["w"] for s in store.series("t", "m")) == ["b", "c"]
    assert store.series_count("t") == 2
    (new,) = [s for s in store.series("t", "m") if s.labels["w"] == "c"]
    assert new.points() == [(3.0, 1.0)]


def test_series_still_sent_are_never_evicted_even_at_the_cap() -> None:
    parser = ExpositionParser()
    store = Store(capacity=2, max_series=2)
    for t in range(5):
        result = store.ingest("t", float(t), samples(f'm{{w="a"}} {t}\nm{{w="b"}} {t}\nm{{w="x{t}"}} 1\n', parser))
        assert result.dropped_series == 1
    assert {s.labels["w"]: len(s) for s in store.series("t", "m")} == {"a": 2, "b": 2}


# --- the compact layout: columns, spans and the drop index against a plain list of points ------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ptmon.monitor.store import Series, Span  # noqa: E402


def reference_span(points: list[tuple[float, float]]) -> Span | None:
    if not points:
        return None
    values = [v for _, v in points]
    resets = sum(a for a, b in zip(values, values[1:], strict=False) if a > b)
    return Span(len(points), points[0][0], points[0][1], points[-1][0], points[-1][1], resets)


@settings(max_examples=150, deadline=None)
@given(capacity=st.integers(2, 40),
       values=st.lists(st.integers(0, 6), min_size=0, max_size=200),
       queries=st.lists(st.tuples(st.integers(-5, 210), st.integers(0, 30)), min_size=1, max_size=6),
       query_every=st.integers(1, 50))
def test_spans_columns_and_drops_equal_a_scan_of_the_points(capacity, values, queries, query_every) -> None:
    # Counters with frequent drops, ring wrap-around and front cuts; queries interleaved with appends,
    # so the lazily built drop index is checked while it grows and while old points are cut away.
    s = Series("m", {}, capacity=capacity)
    kept: list[tuple[float, float]] = []
    for i, v in enumerate(values):
        assert s.append(float(i), float(v))
        kept = (kept + [(float(i), float(v))])[-capacity:]
        if i % query_every == 0 or i == len(values) - 1:
            assert s.points() == kept and len(s) == len(kept) and s.last() == kept[-1]
            for lo, width in queries:
                start, end = lo - 0.5, lo + width
                inside = [p for p in kept if start < p[0] <= end]
                assert s.span(start, end) == reference_span(inside)
                times, vals = s.columns(start, end)
                assert list(zip(times, vals, strict=False)) == inside
                assert s.drop_times(start, end) == [a[0] for a, b in zip(inside, inside[1:], strict=False)
                                                    if a[1] > b[1]]
                assert s.points(float(lo), float(lo + width)) == [p for p in kept if lo <= p[0] <= lo + width]
            assert s.span() == reference_span(kept)


def _bytes_per_point(own_times: bool, *, hot: int = 1000) -> float:
    """Traced bytes a point of 50 series of 1,000 points; ``hot`` 1000: no point frozen (the plain columns)."""
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = Store(capacity=1000, hot=hot)
        for t in range(1000):
            stamp = float(t) if own_times else None
            store.ingest("a", float(t), [Sample("m", {"i": str(i)}, float(t), stamp) for i in range(50)])
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return used / (50 * 1000)


def test_a_series_with_its_own_timestamps_costs_about_16_bytes_a_point() -> None:
    per_point = _bytes_per_point(own_times=True)
    assert 16 <= per_point < 24, per_point  # two float64 columns, plus the front-cut slack


def test_a_series_in_step_with_its_scrapes_costs_about_8_bytes_a_point() -> None:
    """Its times are the target's scrape times, held once for all its series: a value column only."""
    per_point = _bytes_per_point(own_times=False)
    assert 8 <= per_point < 12, per_point  # one float64 column, the slack, and the target's clock shared by 50


# --- non-finite points (issue 14): a VictoriaMetrics raw answer carries staleness markers (NaN) -------


def test_a_reset_across_a_nan_is_still_a_reset() -> None:
    # The repro: a worker restarts; between its last point and its first after the restart the
    # server's raw answer holds a staleness marker. Without the fix: no reset, an increase of 427.
    s = Series("m", {}, capacity=100)
    for t, v in enumerate([370.9, 770.8, 1170.9, math.nan, 398.2, 798.2]):
        s.append(float(t), v)
    span = s.span()
    assert span is not None and span.resets == 1170.9 and span.n == 5
    assert span.last_v - span.first_v + span.resets == pytest.approx(1598.2)
    assert s.drop_times() == [2.0]  # the finite point before the drop, not the NaN


def test_non_finite_ends_are_passed_over_and_a_window_of_only_nan_has_no_span() -> None:
    s = Series("m", {}, capacity=100)
    for t, v in enumerate([math.nan, 10.0, 20.0, math.inf, 5.0, math.nan]):
        s.append(float(t), v)
    assert s.span() == Span(3, 1.0, 10.0, 4.0, 5.0, 20.0)
    assert s.span(4.5, 5.0) is None and s.span(-1.0, 0.0) is None
    assert s.points()[0][0] == 0.0 and len(s) == 6  # the points themselves are kept as sent


def reference_finite_span(points: list[tuple[float, float]]) -> Span | None:
    return reference_span([p for p in points if math.isfinite(p[1])])


@settings(max_examples=150, deadline=None)
@given(capacity=st.integers(2, 40),
       values=st.lists(st.one_of(st.integers(0, 6).map(float), st.sampled_from([math.nan, math.inf])),
                       min_size=0, max_size=200),
       queries=st.lists(st.tuples(st.integers(-5, 210), st.integers(0, 30)), min_size=1, max_size=6),
       query_every=st.integers(1, 50))
def test_spans_and_drops_ignore_non_finite_points_as_a_scan_would(capacity, values, queries, query_every) -> None:
    # As the test above, with NaN and inf mixed in: every span and drop equals a scan of the finite points.
    s = Series("m", {}, capacity=capacity)
    kept: list[tuple[float, float]] = []
    for i, v in enumerate(values):
        assert s.append(float(i), v)
        kept = (kept + [(float(i), v)])[-capacity:]
        if i % query_every == 0 or i == len(values) - 1:
            for lo, width in queries:
                start, end = lo - 0.5, lo + width
                inside = [p for p in kept if start < p[0] <= end]
                assert s.span(start, end) == reference_finite_span(inside)
                finite = [p for p in inside if math.isfinite(p[1])]
                assert s.drop_times(start, end) == [a[0] for a, b in zip(finite, finite[1:], strict=False)
                                                    if a[1] > b[1]]
            assert s.span() == reference_finite_span(kept)


def test_a_reset_across_a_nan_is_carried_when_it_leaves_the_buffer() -> None:
    # Spend across restarts: once the restart's points are cut off the front, its pre-reset value is
    # still counted (``carried``), NaN between or not.
    s = Series("m", {}, capacity=16)
    for t, v in enumerate([100.0, 200.0, math.nan, 5.0]):
        s.append(float(t), v)
    assert s.span() is not None and s.span().resets == 200.0  # type: ignore[union-attr]
    for t in range(4, 60):
        s.append(float(t), 5.0 + t)
    span = s.span()
    assert span is not None and span.resets == 0.0 and s.carried == 200.0
    assert span.last_v + span.resets + s.carried == 5.0 + 59 + 200.0


# -- the label byte budget (issue 12 item 3) ----------------------------------------------------------


def fat_page(parser: ExpositionParser, first: int, count: int, *, labels: int = 4, width: int = 4000) -> list[Sample]:
    """``count`` new series (ids ``first``..) each with ``labels`` values of ``width`` bytes: label churn."""
    lines = []
    for i in range(first, first + count):
        value = str(i).rjust(width, "x")
        lines.append("fat{" + ",".join(f'l{j}="{value}"' for j in range(labels)) + "} 1")
    return parser.parse("\n".join(lines) + "\n", openmetrics=False)


def test_label_cost_counts_text_and_what_python_keeps_per_label() -> None:
    # 2,000 one-byte labels are 20 KB of text but ~400 KB in memory: the cost counts both.
    assert label_cost("m", {}) == 1 + 1024
    assert label_cost("m", {"a": "bc"}) == 1 + 3 + 200 + 1024
    assert label_cost("m", {"a": "é"}) == 1 + 1 + 2 + 200 + 1024  # UTF-8 bytes, not characters
    many = {f"l{i}": "x" for i in range(2000)}
    assert label_cost("m", many) > 400_000


def test_default_label_budget_holds_the_series_cap_of_ordinary_series() -> None:
    store = Store()
    assert store.max_label_bytes == DEFAULT_MAX_LABEL_BYTES
    ordinary = {"job": "rollout", "instance": "10.0.0.12:9401", "env": "gsm8k", "role": "rollout",
                "run": "grpo-7b-0412", "worker": "rollout-12", "le": "0.25", "engine": "0", "gpu": "3",
                "model_name": "Qwen2.5-7B"}
    assert DEFAULT_MAX_SERIES * label_cost("posttrain_rollout_seconds_bucket", ordinary) <= DEFAULT_MAX_LABEL_BYTES


def test_a_churning_fat_label_target_is_cut_at_its_byte_budget_and_keeps_what_fits() -> None:
    budget = 2**20
    store = Store(max_label_bytes=budget, capacity=1000)
    parser = ExpositionParser()
    per_series = label_cost("fat", fat_page(ExpositionParser(), 0, 1)[0].labels)
    fit = budget // per_series
    results = [store.ingest("churn", float(t), fat_page(parser, 4 * t, 4)) for t in range(fit)]
    assert store.series_count("churn") == fit and store.label_bytes("churn") == fit * per_series <= budget
    refused = [r for r in results if r.dropped_series]
    assert refused and all(r.over_label_bytes == r.dropped_series for r in refused)
    assert store.dropped_series("churn") == 4 * fit - fit
    # Another target has its own budget; the churning one's stored series keep taking points.
    assert store.ingest("steady", float(fit), fat_page(ExpositionParser(), 0, 4)).accepted == 4
    first = fat_page(ExpositionParser(), 0, 1)
    assert store.ingest("churn", float(fit), first).accepted == 1


def test_series_older_than_the_buffer_give_their_budget_back() -> None:
    per_series = label_cost("fat", fat_page(ExpositionParser(), 0, 1)[0].labels)
    budget = 10 * per_series
    store = Store(max_label_bytes=budget, capacity=4)
    parser = ExpositionParser()
    dropped = [store.ingest("churn", float(t), fat_page(parser, 4 * t, 4)).dropped_series for t in range(3)]
    assert dropped == [0, 0, 2]  # 10 fit; the third scrape's last two are refused
    # Each sweep frees the series of the scrape that left the stored horizon (4 points deep), nothing newer.
    dropped = [store.ingest("churn", float(t), fat_page(parser, 4 * t, 4)).dropped_series for t in range(3, 9)]
    assert dropped == [4, 0, 0, 2, 4, 0] and store.label_bytes("churn") <= budget
    newest = {s.labels["l0"] for s in store.series("churn", "fat")}
    assert {str(i).rjust(4000, "x") for i in range(32, 36)} <= newest


def test_dropped_series_do_not_keep_their_labels_alive_past_one_budget() -> None:
    # The identity cache remembers dropped series so a flood stays cheap to drop; before the budget, the
    # labels it kept of dropped series were bounded only by their count (80,000 entries: gigabytes).
    budget = 2**20
    store = Store(max_label_bytes=budget, capacity=3600)
    parser = ExpositionParser()
    gc.collect()
    tracemalloc.start()
    try:
        for t in range(300):
            store.ingest("churn", float(t), fat_page(parser, 4 * t, 4))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # 1,200 series of 16 KB were sent (19 MB); the store keeps one budget and its cache at most one more.
    assert held < 5 * budget


@pytest.mark.slow
def test_a_fat_label_churn_target_scraped_for_25_s_grows_the_monitor_less_than_100_mb() -> None:
    # A real scraper and store in their own process against a loopback target sending 24 new 120 KB series
    # a scrape (every value and series under the contract's limits): before the budget the process grew
    # 165 MB in 25 s (2 GB in 300 s with the page) and kept growing; now it levels off at the budget.
    run = subprocess.run([sys.executable, "-m", "tests.monitor.churn_monitor", "25"], capture_output=True,
                         text=True, timeout=120, check=True)
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["sent_bytes"] > 100 * 2**20  # the target sent more than the ceiling
    assert out["rss_peak"] - out["rss_start"] < 100 * 10**6
    assert out["label_bytes"] <= out["max_label_bytes"] == DEFAULT_MAX_LABEL_BYTES
    assert out["dropped"] > 0 and out["error"].startswith("label memory limit 64 MiB reached: ")


def test_a_reset_stored_in_a_burst_is_carried_even_if_nothing_read_the_series_in_between() -> None:
    # A counter read once (its reset index exists), then a burst of points (a replay's seek, a backfill):
    # 100 -> 200, a restart to 0, then 40 more; capacity 16 cuts the restart's points before anyone reads the
    # series again. Its pre-reset value must still be carried, not lost with the points.
    s = Series("c_total", {}, capacity=16)
    s.append(0.0, 100.0)
    assert s.span() is not None
    s.append(1.0, 200.0)
    for i in range(40):
        s.append(2.0 + i, float(i))
    span = s.span()
    assert span is not None and span.resets == 0.0 and s.carried == 200.0
    assert span.last_v + span.resets + s.carried == 39.0 + 200.0


@settings(max_examples=150, deadline=None)
@given(capacity=st.integers(2, 40),
       values=st.lists(st.one_of(st.integers(0, 6).map(float), st.sampled_from([math.nan, math.inf])),
                       min_size=1, max_size=120),
       start=st.integers(-5, 130), width=st.integers(0, 40))
def test_a_span_read_after_every_point_equals_one_read_after_all_of_them(capacity, values, start, width) -> None:
    # The live loop spans each series once a scrape, one new point each time: the reset index's one-point
    # update and span's all-finite path must give what a series indexed in one batch gives, and a scan.
    stepped, batched = Series("m", {}, capacity=capacity), Series("m", {}, capacity=capacity)
    for i, v in enumerate(values):
        stepped.append(float(i), v)
        batched.append(float(i), v)
        stepped.span()
        stepped.span(start - 0.5, start + width)
    kept = list(zip(map(float, range(len(values))), values, strict=True))[-capacity:]
    inside = [p for p in kept if start - 0.5 < p[0] <= start + width]
    assert stepped.span(start - 0.5, start + width) == batched.span(start - 0.5, start + width)
    assert stepped.span(start - 0.5, start + width) == reference_finite_span(inside)
    assert stepped.span() == batched.span() == reference_finite_span(kept)
    assert stepped.drop_times() == batched.drop_times()


def test_sorted_labels_are_kept_per_label_left_out() -> None:
    s = Series("h_bucket", {"le": "0.5", "env": "math", "a": "1"}, capacity=4)
    assert s.sorted_labels(without="le") == (("a", "1"), ("env", "math"))
    assert s.sorted_labels(without="le") is s.sorted_labels(without="le")  # kept: asked every build
    assert s.sorted_labels() == (("a", "1"), ("env", "math"), ("le", "0.5"))  # another question, answered anew
    assert s.sorted_labels(without="absent") == s.sorted_labels()
