"""The rule that keeps a verifier's training data apart from what a study evaluates."""

from __future__ import annotations

from runner.data import evaluated_part, overlapping, trained_parts


def test_wice_is_split_level_and_factcheck_bench_is_one_data_set():
    assert evaluated_part("wice", {"split": "test"}) == "wice:test"
    assert evaluated_part("wice_oracle", {"split": "dev"}) == "wice:dev"
    # Factcheck-Bench's files share responses and claims: any of them is all of them
    assert evaluated_part("factbench", {"split": "whatever"}) == "factcheck_bench"


def test_a_verifier_trained_on_wice_dev_may_judge_wice_test_but_not_wice_dev():
    trained = ["wice:dev", "wice:non_supported_tokens/train"]
    assert overlapping(trained, "wice:test") == []
    assert overlapping(trained, "wice:dev") == ["wice:dev"]
    assert overlapping(trained, "factcheck_bench") == []


def test_factcheck_bench_stance_pairs_reach_every_factcheck_bench_evaluation():
    trained = ["factcheck_bench:stance", "wice:dev"]
    assert overlapping(trained, "factcheck_bench") == ["factcheck_bench:stance"]
    assert overlapping(trained, "wice:test") == []
    assert overlapping(["wice"], "wice:test") == ["wice"]  # a whole data set covers its splits


def test_trained_parts_prefer_what_the_loader_states():
    assert trained_parts("wice_claim_train", {"trained_on": ["wice:dev"], "split": "train"}) == [
        "wice:dev"
    ]
    assert trained_parts("ragtruth", {"split": "train"}) == ["ragtruth:train"]
