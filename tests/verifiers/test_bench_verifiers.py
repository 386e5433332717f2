"""scripts/bench_verifiers.py: same inputs for every path, fp32 paths equal the naive loop."""

import pytest
from tests.conftest import load_script
from tests.verifiers.conftest import make_frame


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_verifiers")


@pytest.mark.slow  # every inference path of a model, twice (~10 s)
def test_every_fp32_path_equals_the_naive_loop(bench, tiny_deberta):
    frame = make_frame(9)
    report = bench.bench_one(
        "deberta_nli",
        [f"model={tiny_deberta}", "max_length=48"],
        frame,
        [2, 8],
        repeats=1,
        warmup=0,
    )
    paths = {r["path"]: r for r in report["paths"]}
    assert {
        "naive",
        "default",
        "fp32 bs=8",
        "int8-dynamic bs=2",
        "int8-mixed bs=1",
        "bf16-autocast bs=1",
    } <= set(paths)
    assert paths["naive"]["attention"] == "stock"  # the baseline is plain transformers
    assert paths["default"]["attention"] == "fused"
    assert paths["naive"]["speedup_vs_naive"] == 1.0
    assert bench.check_fp32(report) == []
    assert all(r["max_abs_delta_risk"] <= 1e-5 for r in report["paths"] if r["precision"] == "fp32")


def test_target_picks_the_fastest_path_that_agrees(bench):
    rows = [
        {"path": "naive", "speedup_vs_naive": 1.0, "spearman_logit": 1.0, "spearman_risk": 1.0},
        {"path": "fast", "speedup_vs_naive": 3.0, "spearman_logit": 0.95, "spearman_risk": 0.95},
        {"path": "ok", "speedup_vs_naive": 2.6, "spearman_logit": 0.995, "spearman_risk": None},
    ]
    t = bench.target({"verifier": "deberta_nli", "paths": rows})
    assert (t["path"], t["met"]) == ("ok", True)
    rows[2]["speedup_vs_naive"] = 2.0
    assert bench.target({"verifier": "deberta_nli", "paths": rows})["met"] is False
