"""scripts/bench_judges.py: three paths on the same claims, the same verdicts where the
prompt is the same, and a report that says what it timed."""

from __future__ import annotations

import json

import pytest
from tests.claims.judges.conftest import tiny_models
from tests.conftest import load_script

pytestmark = pytest.mark.slow  # reads the real WiCE test file


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_judges")


def test_the_report_times_three_paths_on_the_same_claims(bench, tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("RUNNER_DATA_DIR", str(data_dir))
    prose = tiny_models().bigram_llama(tmp_path / "prose", ["It", "seems", "fine."])
    overrides = []
    for name in ("smollm2_reask", "smollm2_prefill"):
        overrides += [
            "--set",
            f"judges.{name}.model={prose}",
            "--set",
            f"judges.{name}.gguf_file=null",
        ]
    out = tmp_path / "judges.json"
    assert bench.main(["--claims", "3", "--chunk", "2", "--out", str(out), *overrides]) == 0
    report = json.loads(out.read_text())
    assert report["claims"] == len(report["claim_ids"]) == 3
    assert set(report["seconds_per_claim"]) == {"filed", "today", "new"}
    assert report["filed_settings"] == bench.FILED_SETTINGS
    assert report["ratio"] > 0 and report["ratio_today_vs_new"] > 0
    # the same prompt and greedy decoding: sharing and kept prefixes change no verdict
    assert report["verdict_differences"] == 0 and report["differences"] == []
    # a model that never writes JSON needs a repair on every path, every claim
    for path in ("filed", "today", "new"):
        assert report["repaired_share"][path] == {"smollm2_reask": 1.0, "smollm2_prefill": 1.0}
    stats = report["new_path_stats"]
    assert stats["smollm2_prefill"]["cache"]["memory_hits"] == 3  # first answers shared
    assert stats["smollm2_reask"]["model_calls"] == 6  # 3 first answers + 3 re-asks
