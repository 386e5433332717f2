"""Every combination rule on hand-made verdict tables (S3 AND, S4 vote, S5 cascade, k-of-n)."""

from __future__ import annotations

import pytest

from runner.claims.ensembles import (
    Combination,
    and_rule,
    cascade_rule,
    enumerate_combinations,
    k_of_n,
    union_rule,
    vote_rule,
)

G, Y, R = "green", "yellow", "red"
# Every ordered pair of labels, as two members' verdicts on nine claims.
A = [G, G, G, Y, Y, Y, R, R, R]
B = [G, Y, R, G, Y, R, G, Y, R]


def test_and_keeps_the_worse_label():
    assert and_rule(A, B).tolist() == [G, Y, R, Y, Y, R, R, R, R]


def test_vote_keeps_agreement_and_sends_disagreement_to_review():
    assert vote_rule(A, B).tolist() == [G, Y, Y, Y, Y, Y, Y, Y, R]


def test_cascade_lets_the_judge_decide_only_what_the_screener_flags():
    screen = A
    judge = B
    # Unflagged by the screener (green): stays green, whatever the judge would say.
    # Flagged (yellow/red): the judge's label stands, and it may overturn the flag.
    assert cascade_rule(screen, judge).tolist() == [G, G, G, G, Y, R, G, Y, R]


def test_union_flags_when_any_member_flags_with_the_worst_label():
    assert union_rule([A, B]).tolist() == and_rule(A, B).tolist()
    assert union_rule([[G, G], [G, Y], [R, G]]).tolist() == [R, Y]


def test_all_agree_flags_only_when_every_member_flags_with_the_mildest_label():
    assert k_of_n([A, B], 2).tolist() == [G, G, G, G, Y, Y, G, Y, R]


def test_two_of_three_is_the_second_most_severe_label():
    members = [[G, Y, R, R], [G, G, Y, R], [Y, G, G, R]]
    assert k_of_n(members, 2).tolist() == [G, G, Y, R]
    assert k_of_n(members, 1).tolist() == union_rule(members).tolist()
    assert k_of_n(members, 3).tolist() == [G, G, G, R]  # k = n: all flag, mildest label


@pytest.mark.parametrize("k", [0, 3])
def test_k_must_be_between_one_and_the_number_of_members(k):
    with pytest.raises(ValueError, match="k must be between 1 and 2"):
        k_of_n([A, B], k)


def test_members_must_label_the_same_claims_with_valid_labels():
    with pytest.raises(ValueError, match="different numbers"):
        and_rule([G, Y], [G])
    with pytest.raises(ValueError, match="different numbers"):
        vote_rule([G, Y], [G])
    with pytest.raises(ValueError, match="different numbers"):
        cascade_rule([G, Y], [G])
    with pytest.raises(ValueError, match="not a claim label"):
        vote_rule([G, "maybe"], [G, G])
    with pytest.raises(ValueError, match="at least one member"):
        union_rule([])


def test_an_abstention_routed_to_yellow_is_never_turned_green_by_a_flagging_rule():
    abstained = [Y, Y, Y]
    other = [G, Y, R]
    for rule in (and_rule, vote_rule):
        assert G not in rule(abstained, other).tolist()
    assert G not in union_rule([abstained, other]).tolist()


def test_combination_names_and_rules():
    assert Combination(("a",), 1).name == "a alone"
    assert Combination(("a", "b"), 1).name == "union(a, b)"
    assert Combination(("a", "b"), 2).name == "all-agree(a, b)"
    assert Combination(("a", "b", "S1"), 2).name == "2-of-3(a, b, S1)"
    combo = Combination(("a", "b"), 1)
    assert combo.apply({"a": A, "b": B}).tolist() == union_rule([A, B]).tolist()
    with pytest.raises(KeyError):
        combo.apply({"a": A})


def test_enumeration_covers_every_subset_and_k_with_and_without_the_span_detector():
    names = [c.name for c in enumerate_combinations(["a", "b"], "S1")]
    assert names == [
        "S1 alone",
        "a alone",
        "b alone",
        "union(a, S1)",
        "all-agree(a, S1)",
        "union(b, S1)",
        "all-agree(b, S1)",
        "union(a, b)",
        "all-agree(a, b)",
        "union(a, b, S1)",
        "2-of-3(a, b, S1)",
        "all-agree(a, b, S1)",
    ]
    three = enumerate_combinations(["a", "b", "c"])
    assert "2-of-3(a, b, c)" in [c.name for c in three]
    assert len(three) == 3 + 3 * 2 + 3  # singles, pairs x (union, all), triple x k=1..3
    assert enumerate_combinations([], "S1")[0].name == "S1 alone"


def test_enumeration_rejects_clashing_names():
    with pytest.raises(ValueError, match="unique"):
        enumerate_combinations(["a", "a"])
    with pytest.raises(ValueError, match="clashes"):
        enumerate_combinations(["S1"], "S1")
