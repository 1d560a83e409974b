"""The data layer as it was before the compact store (commit 850ca0d), frozen as the benchmarks' baseline.

``store`` keeps each series as a deque of (t, v) tuples; ``derive``/``build`` scan every point of the
window for rates and counter resets. Not used by ptmon itself: ``tests/bench/bench_build.py`` runs it
side by side with ``monitor`` on the same data, so the before/after figures come from one process.
"""
