"""The recommendation's pure parts on synthetic scores: points, choice, steps, command."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest

from runner.routing import RoutingConf
from runner.routing.contract import budget_thresholds, contract_thresholds, infeasible_message
from runner.routing.contract.risk_control import calibrate_cascade
from runner.routing.report import recommendation as rec
from runner.routing.report import ship_command

ROOT = Path(__file__).resolve().parents[2]


def rows(n: int = 600, seed: int = 0, signal: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.25).astype(int)
    return y, signal * y + rng.normal(size=n)


def scored(name: str, risk: np.ndarray, ap: float = 0.5, ms: float | None = 0.2) -> rec.Scored:
    return rec.Scored(name, risk, ap, ms, {0.5: 0.123})


RC = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.10, delta=0.1)


def test_a_budget_point_has_the_budget_thresholds_the_ci_and_its_cost():
    y, risk = rows()
    p = rec.contract_point(y, scored("g", risk, ms=0.4), RoutingConf())
    cut = budget_thresholds(risk, 0.10, 0.50)
    assert (p["review_at"], p["accept_at"]) == (cut.review_at, cut.accept_at)
    assert p["accept_share"] + p["verify_share"] + p["review_share"] == pytest.approx(1.0)
    assert p["accepted_risk_guaranteed"] is None and p["accepted_risk_ci_high"] == 0.123
    assert p["accepted_risk_oof"] == pytest.approx(y[risk <= cut.accept_at].mean())
    assert p["gate_s_per_1000"] == 0.4 and p["verifier_s_per_1000"] is None
    assert p["reviews_per_1000"] == pytest.approx(1000 * p["review_share"])


def test_a_controlled_point_carries_the_bound_and_contract_thresholds():
    y, risk = rows()
    p = rec.contract_point(y, scored("g", risk), RC)
    t, guarantee = contract_thresholds(y, risk, RC)
    assert guarantee.feasible and p["feasible"]
    assert (p["review_at"], p["accept_at"]) == (t.review_at, t.accept_at)
    assert p["accept_share"] == pytest.approx(t.accept_share)
    assert p["accepted_risk_guaranteed"] == 0.10 and p["accepted_risk_ci_high"] is None


def test_an_infeasible_target_says_why_and_the_best_achievable():
    y, risk = rows(n=60, signal=0.5)
    tight = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.02, delta=0.1)
    p = rec.contract_point(y, scored("g", risk), tight)
    assert not p["feasible"] and p["infeasible"] == infeasible_message(y, risk, tight)
    best = rec.best_targets(y, scored("g", risk), tight)
    assert set(best) == {"max_accepted_risk"}
    assert best["max_accepted_risk"] is None or best["max_accepted_risk"] > 0.02


def test_the_gate_accepting_most_at_the_guaranteed_risk_is_chosen():
    y, strong = rows(signal=3.0)
    weak = strong + np.random.default_rng(1).normal(scale=2.0, size=y.size)
    best, points, why = rec.choose(y, [scored("weak", weak), scored("strong", strong)], RC)
    assert best.name == "strong"
    assert points["strong"]["accept_share"] > points["weak"]["accept_share"]
    assert "accepts the most rows" in why and "`weak`" in why


def test_ties_at_the_contract_go_to_ap_then_to_the_cheaper_gate():
    y, risk = rows()
    best, _, why = rec.choose(y, [scored("a", risk, ap=0.4), scored("b", risk, ap=0.6)], RC)
    assert best.name == "b" and "higher AP" in why
    pair = [scored("slow", risk, ms=2.0), scored("fast", risk, ms=0.1)]
    best, _, why = rec.choose(y, pair, RC)
    assert best.name == "fast" and "cheaper" in why


def test_with_budgets_the_lowest_ci_upper_end_is_chosen():
    y, risk = rows()
    a = rec.Scored("a", risk, 0.5, 0.1, {0.5: 0.20})
    b = rec.Scored("b", risk, 0.5, 0.1, {0.5: 0.15})
    best, _, why = rec.choose(y, [a, b], RoutingConf())
    assert best.name == "b" and "0.150 vs 0.200" in why


def test_next_budgets_step_once_each_way_and_skip_refused_settings():
    got = [label for label, _ in rec.neighbours(RC, [0.05, 0.1, 0.2], [0.3, 0.5, 0.7])]
    assert got == [
        "routing.max_accepted_risk=0.05",
        "routing.max_accepted_risk=0.15",
        "routing.review_budget=0.05",
        "routing.review_budget=0.2",
    ]
    budgets = RoutingConf(review_budget=0.4, accept_budget=0.5)
    got = [label for label, _ in rec.neighbours(budgets, [0.2, 0.3, 0.6], [0.3, 0.5, 0.7])]
    assert got == ["routing.accept_budget=0.3", "routing.review_budget=0.3"]  # sums past 1 left out


def test_the_cascade_point_is_calibrate_cascade_and_costs_the_band():
    y, g = rows(signal=1.5)
    v = 3.0 * y + np.random.default_rng(2).normal(size=y.size)
    verifier = rec.BandVerifier("det", v, ms_per_row=30.0, threshold=0.5)
    p = rec.contract_point(y, scored("g", g), RC, verifier)
    t, _ = contract_thresholds(y, g, RC)
    cal = calibrate_cascade(y, g, v, t.review_at, 0.10, 0.1)
    assert (p["accept_at"], p["verifier_threshold"]) == (cal.accept_at, cal.verifier_threshold)
    assert p["accept_share"] == pytest.approx(cal.accepted_share)
    # the final shares route realises: a band row the verifier does not accept stays verify
    assert p["verify_share"] == pytest.approx(cal.verify_share)
    assert p["review_share"] == pytest.approx(cal.review_share)
    assert cal.review_share == pytest.approx(t.review_share)  # the review rule's rows only
    assert p["sent_share"] == pytest.approx(cal.verifier_share)
    assert cal.verifier_share > cal.verify_share  # the verifier accepted some of the band
    assert p["verifier_s_per_1000"] == pytest.approx(30.0 * cal.verifier_share)
    assert p["path"] == cal.path != "gate alone" and p["feasible"]


def test_a_cascade_whose_verifier_accepts_nothing_sends_it_nothing():
    y, g = rows(signal=1.5)
    noise = np.random.default_rng(3).random(y.size)  # knows nothing: no verifier path certifies
    verifier = rec.BandVerifier("det", noise, ms_per_row=30.0, threshold=0.5)
    p = rec.contract_point(y, scored("g", g), RC, verifier)
    alone = rec.contract_point(y, scored("g", g), RC)
    assert p["path"] == "gate alone" and p["verifier_threshold"] is None
    assert p["sent_share"] == 0.0 and p["verifier_s_per_1000"] == 0.0
    assert p["review_share"] == pytest.approx(alone["review_share"])
    assert p["verify_share"] == pytest.approx(1 - p["accept_share"] - p["review_share"])
    assert p["verify_share"] > 0


def test_the_command_keeps_what_reproduces_the_scores_and_drops_the_rest():
    overrides = [
        "dataset.path=/data/my file.jsonl",
        "split.n_splits=3",
        "seed=7",
        "gates.rouge_l.foo=1",
        "gates.uncovered.bar=2",
        "bootstrap.n_resamples=50",
        "study.params.timing_rows=20",
        "tracking=off",
        "routing.model_name=team_gate",
        "routing.max_accepted_risk=0.2",
        "+verifier@verifiers.det=lettucedetect",
        "verifiers.det.model=/m",
    ]
    command = ship_command.fit_gate_command("/ignored.jsonl", "rouge_l", RC, overrides)
    args = shlex.split(command)
    assert args[:4] == ["python", "-m", "runner", "experiment=fit_gate"]
    assert "dataset.path=/data/my file.jsonl" in args and "/ignored.jsonl" not in command
    assert {
        "split.n_splits=3",
        "seed=7",
        "gates.rouge_l.foo=1",
        "+gate@gates.rouge_l=rouge_l",
    } <= set(args)
    assert {"routing.model_name=team_gate", "routing.max_accepted_risk=0.1"} <= set(args)
    for dropped in ("uncovered", "bootstrap", "study.params", "tracking", "verifiers", "0.2"):
        assert dropped not in command
    cascade = ship_command.fit_gate_command(
        None, "ragscope_e", RoutingConf(**{**vars(RC), "verifier": "det"}), overrides
    )
    assert (
        "+verifier@verifiers.det=lettucedetect verifiers.det.model=/m routing.verifier=det"
        in cascade
    )
    assert "+gate@" not in cascade
    own = ship_command.fit_gate_command(None, "mine", RC, ["+gates.mine._target_=pkg.Mine"])
    assert "+gates.mine._target_=pkg.Mine" in own and "+gate@" not in own  # defined by the user


def test_recommend_fills_json_and_cells_with_the_chosen_point():
    y, risk = rows()
    out = rec.recommend(
        y,
        [scored("g", risk)],
        RoutingConf(),
        review_budgets=[0.05, 0.1, 0.2],
        accept_budgets=[0.5],
        dataset_path="/d.jsonl",
    )
    assert out["ship"] == "g" and out["feasible"] and out["rows"][0]["setting"] == "recommended"
    assert "routing.gate=g" in out["command"] and len(out["hints"]) == 2  # both are budgets
    assert out["hints"][0].startswith(
        "routing.accept_rule=risk_controlled routing.max_accepted_risk="
    )
    assert out["rows"][0]["accepted_risk_ci_high"] == 0.123 and not out["best_achievable"]
    cells = rec.cells(out)
    assert len(cells) == len(out["rows"]) * len(rec.CELL_COLUMNS)
    assert ("g / recommended", "accept share", out["rows"][0]["accept_share"]) in cells


def test_fit_gate_gates_are_the_gates_fit_gate_configures():
    from hydra import compose, initialize_config_dir

    from runner.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=fit_gate"])
    assert tuple(cfg.gates) == ship_command.FIT_GATE_GATES


def test_an_unreachable_target_ships_at_the_best_achievable_and_says_what_that_gives():
    y, risk = rows(n=2000, signal=2.0)
    tight = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.005, delta=0.1)
    out = rec.recommend(
        y, [scored("g", risk)], tight, review_budgets=[0.1], accept_budgets=[0.5],
        dataset_path="/d.jsonl",
    )  # fmt: skip
    best = out["best_achievable"]["max_accepted_risk"]
    assert not out["feasible"] and out["command_at_best_achievable"] and best > 0.005
    shipped, asked = out["rows"][:2]
    assert shipped["setting"] == "recommended (at the best achievable targets)"
    assert asked["setting"] == "as asked (target not met)" and asked["accept_share"] == 0.0
    assert shipped["feasible"] and shipped["accept_share"] > 0
    assert shipped["accepted_risk_guaranteed"] == best
    assert f"routing.max_accepted_risk={best:g}" in out["command"]


def test_a_target_the_review_side_leaves_no_rows_ships_a_command_whose_contract_fits():
    # risk ~ U(0, 1), P(y | risk) = risk: review precision >= 0.45 certifies every row, so
    # no accepted-risk target fits beside it; the accept side's own best would not either.
    rng = np.random.default_rng(0)
    risk = rng.random(3000)
    y = (rng.random(3000) < risk).astype(int)
    asked = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.45,
                        review_rule="precision_controlled", min_review_precision=0.45)  # fmt: skip
    out = rec.recommend(
        y, [scored("g", risk)], asked, review_budgets=[0.1], accept_budgets=[0.5],
        dataset_path="/d.jsonl",
    )  # fmt: skip
    assert not out["feasible"] and out["command_at_best_achievable"]
    assert out["rows"][0]["feasible"] and out["rows"][0]["accept_share"] > 0
    routing = dict(a.split("=", 1) for a in shlex.split(out["command"]) if "=" in a)
    shipped = RoutingConf(
        accept_rule="risk_controlled",
        max_accepted_risk=float(routing["routing.max_accepted_risk"]),
        review_rule="precision_controlled",
        min_review_precision=float(routing["routing.min_review_precision"]),
    )
    assert shipped.max_accepted_risk == 0.45  # the asked bound kept, the review side tighter
    assert contract_thresholds(y, risk, shipped)[1].feasible


def _recommend_cascade(y, g, v):
    routing = RoutingConf(
        accept_rule="risk_controlled", max_accepted_risk=0.10, delta=0.1, gate="g"
    )
    verifier = rec.BandVerifier("det", v, ms_per_row=30.0, threshold=0.5)
    return rec.recommend(
        y, [scored("g", g)], routing, review_budgets=[0.1], accept_budgets=[0.5],
        dataset_path="rows.jsonl", verifier=verifier,
    )  # fmt: skip


def test_a_cascade_is_recommended_only_where_it_accepts_more_than_the_gate_alone():
    rng = np.random.default_rng(1)
    y = (rng.random(2000) < 0.25).astype(int)
    g = 1.5 * y + rng.normal(size=y.size)
    # a verifier that certifies a path of its own, yet the cascade, which spends part of δ
    # on that path, accepts no more rows than the gate alone at the full δ
    weak = 1.0 * y + np.random.default_rng(101).normal(size=y.size)
    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.10, delta=0.1)
    point = rec.contract_point(y, scored("g", g), routing, rec.BandVerifier("det", weak, 30.0, 0.5))
    alone = rec.contract_point(y, scored("g", g), routing)
    assert point["path"] != "gate alone" and point["accept_share"] <= alone["accept_share"]
    out = _recommend_cascade(y, g, weak)
    assert out["kind"] == "gate" and out["ship"] == "g" and out["verifier"] is None
    assert "does not pay its way" in out["why"] and "routing.verifier" not in out["command"]
    strong = 4.0 * y + np.random.default_rng(101).normal(size=y.size)
    out = _recommend_cascade(y, g, strong)
    assert out["kind"] == "cascade" and "the cascade accepts" in out["why"]
    assert out["rows"][0]["accept_share"] > alone["accept_share"]
