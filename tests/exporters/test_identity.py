"""Run identity and the cheap value checks every recording call relies on."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from ptmon.exporters import EvalExporter
from ptmon.exporters._identity import as_count, as_number, process_metrics
from ptmon.exporters.schema import EXPORTER_ERRORS, RUN_INFO
from tests.exporters.helpers import value


@pytest.mark.parametrize(("raw", "number"), [(3, 3), (2.5, 2.5), (-1.0, -1.0), (Fraction(1, 2), 0.5),
                                             (math.nan, None), (math.inf, None), (-math.inf, None), (True, None),
                                             ("1", None), (b"1", None), (None, None), ([1], None),
                                             (10**400, None)])
def test_as_number(raw: object, number: float | None) -> None:
    assert as_number(raw) == number


@given(st.one_of(st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(), st.none(),
                 st.booleans()))
def test_as_count_is_finite_nonnegative_or_none(raw: object) -> None:
    checked = as_count(raw)
    if checked is not None:
        assert math.isfinite(checked) and checked >= 0
        assert checked == raw


def test_run_info_carries_run_model_algorithm_role() -> None:
    evals = EvalExporter(run="r7", model="llama-70b", algorithm="dpo", gpus=0, gpu_hour_price=3.0)
    assert value(evals.registry, RUN_INFO, run="r7", model="llama-70b", algorithm="dpo", role="eval") == 1


def test_error_series_exist_from_the_start() -> None:
    evals = EvalExporter(run="r", model="m", algorithm="a", gpus=0, gpu_hour_price=3.0)
    for call in ("record_eval", "push", "set_gpus"):
        assert value(evals.registry, EXPORTER_ERRORS, call=call) == 0


def test_first_drop_is_logged_once_per_call(caplog: pytest.LogCaptureFixture) -> None:
    evals = EvalExporter(run="r", model="m", algorithm="a", gpus=0, gpu_hour_price=3.0)
    with caplog.at_level("WARNING", logger="ptmon.exporters"):
        for _ in range(3):
            evals.record_eval(benchmark="gsm8k", score=math.nan)
    assert value(evals.registry, EXPORTER_ERRORS, call="record_eval") == 3
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "record_eval" in messages[0] and "nan" in messages[0]


def test_process_metrics_is_one_per_registry() -> None:
    registry = CollectorRegistry()
    assert process_metrics(registry) is process_metrics(registry)
    assert process_metrics(registry) is not process_metrics(CollectorRegistry())


@pytest.mark.parametrize("field", ["run", "model", "algorithm"])
def test_run_identity_that_cannot_be_served_is_refused_at_construction(field: str) -> None:
    options = {"run": "r", "model": "m", "algorithm": "a", field: "x\udcff"}
    with pytest.raises(ValueError, match=f"{field} must be valid Unicode"):
        EvalExporter(**options, gpus=0, gpu_hour_price=3.0)  # type: ignore[arg-type]


def test_run_identity_the_monitor_would_refuse_is_refused_at_construction() -> None:
    from ptmon.exporters.schema import MAX_LABEL_VALUE_BYTES, MAX_SERIES_BYTES

    with pytest.raises(ValueError, match=f"run of {MAX_LABEL_VALUE_BYTES + 1:,} bytes exceeds the label value limit"):
        EvalExporter(run="r" * (MAX_LABEL_VALUE_BYTES + 1), model="m", algorithm="a", gpus=0, gpu_hour_price=3.0)
    third = "v" * (MAX_SERIES_BYTES // 3)  # each value fits; the run-info series of all three does not
    with pytest.raises(ValueError, match=f"over the series limit of {MAX_SERIES_BYTES:,}"):
        EvalExporter(run=third, model=third, algorithm=third, gpus=0, gpu_hour_price=3.0)
    EvalExporter(run=third, model=third, algorithm="grpo", gpus=0, gpu_hour_price=3.0)  # two of them do
