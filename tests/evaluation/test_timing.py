"""ms/example: warm-up untimed, then `repeats` timed runs with time.perf_counter."""

from __future__ import annotations

import pytest

from runner.evaluation import timing
from runner.evaluation.timing import measure_ms_per_example


class FakeClock:
    """perf_counter stand-in: each timed run lasts the next duration in `durations` (s)."""

    def __init__(self, durations):
        self.durations = list(durations)
        self.now = 0.0
        self.started = False

    def __call__(self):
        if self.started:
            self.now += self.durations.pop(0)
        self.started = not self.started
        return self.now


def test_reports_median_min_and_every_run_per_example(monkeypatch):
    monkeypatch.setattr(timing.time, "perf_counter", FakeClock([0.4, 0.1, 0.3, 0.2, 0.5]))
    calls = []
    out = measure_ms_per_example(lambda: calls.append(1), n_examples=100, repeats=5, warmup=2)
    assert len(calls) == 7  # 2 warm-up + 5 timed
    assert out["runs_ms_per_example"] == pytest.approx([4.0, 1.0, 3.0, 2.0, 5.0])
    assert out["median_ms_per_example"] == pytest.approx(3.0)
    assert out["min_ms_per_example"] == pytest.approx(1.0)
    assert (out["n_examples"], out["repeats"], out["warmup"]) == (100, 5, 2)
    assert out["timer"] == "time.perf_counter"


def test_even_number_of_runs_takes_the_middle_mean(monkeypatch):
    monkeypatch.setattr(timing.time, "perf_counter", FakeClock([0.01, 0.03, 0.02, 0.04]))
    out = measure_ms_per_example(lambda: None, n_examples=10, repeats=4, warmup=0)
    assert out["median_ms_per_example"] == pytest.approx(2.5)


def test_real_clock_measures_actual_work():
    out = measure_ms_per_example(lambda: sum(range(20000)), n_examples=4, repeats=3)
    assert len(out["runs_ms_per_example"]) == 3
    assert 0 < out["min_ms_per_example"] <= out["median_ms_per_example"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_examples": 0}, "n_examples"),
        ({"repeats": 0}, "repeats"),
        ({"warmup": -1}, "warmup"),
        ({"n_examples": 2.5}, "n_examples"),
        ({"fn": 3}, "callable"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = {"fn": lambda: None, "n_examples": 10}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        measure_ms_per_example(**args)
