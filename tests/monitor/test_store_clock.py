"""Series in step with their target's scrapes share its times: they read exactly as series with times of their own.

A store fed scrapes with no sample timestamps (its series share the
target's clock) and one fed the same points each stamped with its scrape's
time (every series keeps its own time column, the store as it was) must
answer every read the same: through missed scrapes, a series listed twice,
a scrape time that does not move forward, counter resets and NaNs, the
clock's and the columns' front cuts, and series evicted and born again.
"""

from __future__ import annotations

import math
import random

import pytest

from ptmon.monitor.parse import Labels, Sample
from ptmon.monitor.store import Series, Store

CAPACITY = 8


def _reads(s: Series, times: list[float]) -> list[object]:
    out: list[object] = [len(s), s.last(), s.points(), s.span(), s.drop_times(), s.carried]
    for start in times[::3]:
        for end in times[::5]:
            out += [s.points(start, end), s.columns(start, end), s.span(start, end), s.drop_times(start, end)]
    out += [s.value_at(t) for t in times]
    return [repr(x) for x in out]


def _feed(seed: int, scrapes: int) -> tuple[Store, Store, list[float]]:
    rng = random.Random(seed)
    steady = seed % 2 == 0
    shared, own = Store(capacity=CAPACITY, max_series=7), Store(capacity=CAPACITY, max_series=7)
    labels = [Labels({"i": str(i)}) for i in range(9)]
    value = [0.0] * 9
    t, times = 100.0, []
    for k in range(scrapes):
        t += 1.0 if rng.random() < 0.97 else rng.choice((0.5, 0.0, -1.0))  # a stamp may repeat or go back
        times.append(t)
        samples = []
        # Series 0-2 come at (nearly) every scrape from the first, 3-5 from later scrapes, the rest now and
        # then; the order of a page may change.
        present = [i for i in range(9) if rng.random() < (0.5 if i > 5 else 0.0 if k < 3 * i - 6 else 0.995)]
        if steady:  # a page in the same order at every scrape, its extra series rare: the scrape plan's case
            present = [i for i in present if i <= 5 or rng.random() < 0.1]
        for i in present if steady else rng.sample(present, len(present)):
            value[i] = 0.0 if rng.random() < 0.15 else value[i] + rng.random()
            v = math.nan if rng.random() < 0.03 else value[i]
            samples.append(Sample("c_total", labels[i], v))
            if rng.random() < 0.01:
                samples.append(Sample("c_total", labels[i], v + 1))  # listed twice in one scrape
        shared.ingest("a", t, samples)
        own.ingest("a", t, [s._replace(timestamp=t) for s in samples])
        if rng.random() < 0.2:  # a build reads between scrapes: the reset index is kept up to date
            for s in shared.series("a", "c_total") + own.series("a", "c_total"):
                s.span()
    return shared, own, sorted(set(times))


@pytest.mark.parametrize("scrapes", [5, 12, 30, 60])
@pytest.mark.parametrize("seed", range(25))
def test_shared_times_read_as_own_times(seed: int, scrapes: int) -> None:
    shared, own, times = _feed(seed, scrapes)
    assert shared.series_count("a") == own.series_count("a")
    a = {tuple(s.labels.items()): s for s in shared.series("a", "c_total")}
    b = {tuple(s.labels.items()): s for s in own.series("a", "c_total")}
    assert a.keys() == b.keys()
    for key, s in a.items():
        assert _reads(s, times) == _reads(b[key], times), key


def test_a_series_that_stops_keeps_its_times_after_the_clock_moves_on() -> None:
    store = Store(capacity=4)
    for k in range(3):
        store.ingest("a", float(k), [Sample("g", {}, float(k)), Sample("h", {}, 10.0 + k)])
    for k in range(3, 40):  # "g" stops: the clock is cut many times over
        store.ingest("a", float(k), [Sample("h", {}, 10.0 + k)])
    (g,) = store.series("a", "g")
    assert g.points() == [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0)]
    (h,) = store.series("a", "h")
    assert h.points() == [(36.0, 46.0), (37.0, 47.0), (38.0, 48.0), (39.0, 49.0)]
    store.ingest("a", 40.0, [Sample("g", {}, 5.0)])  # and comes back
    assert g.points() == [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (40.0, 5.0)]


def test_a_page_of_the_same_shape_is_stored_by_its_plan() -> None:
    """The fast path really runs (its results are checked against own times above): after the first scrape of
    a page, later ones like it are stored without looking a series up."""
    store = Store(capacity=CAPACITY)
    page = [Sample("c_total", Labels({"i": str(i)}), 0.0) for i in range(3)]
    for k in range(3 * CAPACITY):
        store.ingest("a", float(k), [s._replace(value=float(k + i)) for i, s in enumerate(page)])
    data = store._targets["a"]
    assert data.plan is not None and data.plan.scrape == data.clock.base + len(data.clock.times) - 1
    for i, s in enumerate(sorted(store.series("a", "c_total"), key=lambda s: s.labels["i"])):
        assert s.points() == [(float(k), float(k + i)) for k in range(2 * CAPACITY, 3 * CAPACITY)]
