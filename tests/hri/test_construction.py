"""The by-construction test: is a response outcome a severity-threshold rule of its labels?"""

from __future__ import annotations

import numpy as np
import pytest

from runner.data.hri_records import Claim, LabelAssignment, Response
from runner.hri.construction import outcome_construction

SEVERITY = {
    "SUPPORTED": 0.0,
    "PARTIAL": 0.5,
    "UNSUPPORTED": 0.75,
    "OUTDATED": 0.75,
    "CONTRADICTED": 1.0,
}


def response(i: int, labels: list[str], outcome: int | None) -> Response:
    claims = tuple(
        Claim(claim_id=f"c{k}", labels=(LabelAssignment(lab),)) for k, lab in enumerate(labels)
    )
    return Response(response_id=f"r{i}", claims=claims, outcome=outcome)


def random_label_sets(n: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    names = list(SEVERITY)
    return [[str(rng.choice(names)) for _ in range(int(rng.integers(1, 6)))] for _ in range(n)]


def test_any_claim_not_true_is_determined_at_the_lowest_level():
    sets = random_label_sets(60, 0)
    rs = [response(i, s, int(any(x != "SUPPORTED" for x in s))) for i, s in enumerate(sets)]
    test = outcome_construction(rs, SEVERITY)
    assert test.determined and test.conflicting_sets == 0 and test.best_rule_agreement == 1.0
    assert (test.best_rule.level, test.best_rule.k) == (0.5, 1)
    assert test.to_dict()["best_rule"].startswith(">=1 claim with contribution >= 0.5")


def test_two_or_more_severe_claims_is_found_with_k_two():
    sets = random_label_sets(80, 1)
    y = [int(sum(x in ("UNSUPPORTED", "OUTDATED", "CONTRADICTED") for x in s) >= 2) for s in sets]
    test = outcome_construction(
        [response(i, s, o) for i, (s, o) in enumerate(zip(sets, y, strict=True))], SEVERITY
    )
    assert test.determined
    assert (test.best_rule.level, test.best_rule.k) == (0.75, 2)
    assert test.best_rule.labels == ("CONTRADICTED", "OUTDATED", "UNSUPPORTED")


def test_an_outcome_drawn_apart_from_the_labels_is_not_determined():
    sets = random_label_sets(80, 2)
    rng = np.random.default_rng(3)
    rs = [response(i, s, int(rng.integers(0, 2))) for i, s in enumerate(sets)]
    test = outcome_construction(rs, SEVERITY)
    assert not test.determined and test.best_rule_agreement < 1.0
    assert test.to_dict()["determined"] is False


def test_conflicting_label_multisets_are_counted_by_hand():
    rs = [
        response(0, ["SUPPORTED", "PARTIAL"], 0),
        response(1, ["PARTIAL", "SUPPORTED"], 1),  # same multiset, other outcome
        response(2, ["CONTRADICTED"], 1),
        response(3, ["CONTRADICTED"], 1),
        response(4, ["SUPPORTED"], 0),
    ]
    test = outcome_construction(rs, SEVERITY)
    assert (test.responses, test.label_sets, test.conflicting_sets) == (5, 3, 1)
    assert not test.determined
    assert test.best_rule_agreement == pytest.approx(4 / 5)


def test_a_function_of_the_labels_that_is_no_severity_rule_is_not_determined():
    # Wrong exactly when a response has a PARTIAL claim but no CONTRADICTED one: a
    # function of the labels (no conflicts) that no monotone threshold rule reproduces.
    sets = [["PARTIAL"], ["CONTRADICTED"], ["PARTIAL", "CONTRADICTED"], ["SUPPORTED"]]
    y = [1, 0, 0, 0]
    test = outcome_construction(
        [response(i, s, o) for i, (s, o) in enumerate(zip(sets, y, strict=True))], SEVERITY
    )
    assert test.conflicting_sets == 0 and not test.determined


def test_missing_outcomes_and_unknown_labels_are_errors():
    with pytest.raises(ValueError, match="has no outcome"):
        outcome_construction([response(0, ["SUPPORTED"], None)], SEVERITY)
    with pytest.raises(ValueError, match="without a contribution"):
        outcome_construction([response(0, ["MADE_UP"], 1)], SEVERITY)
    with pytest.raises(ValueError, match="no responses"):
        outcome_construction([], SEVERITY)
