"""HRI calibration: ranking metrics, cut-offs and figures, checked against direct computation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml
from hydra.utils import instantiate
from sklearn.metrics import average_precision_score, cohen_kappa_score, roc_auc_score, roc_curve

from runner.data.hri_claims import load_hri_claims
from runner.errors import ConfigError, DataError
from runner.evaluation import operating as op
from runner.evaluation.config import BootstrapConf
from runner.hri.aggregation import AGGREGATIONS
from runner.pipeline import check_config
from runner.studies import RunContext
from runner.studies import hri_calibration as hc

from .test_hri_example import compose_experiment, hri_dict

matplotlib.use("Agg")

LABELS_BAD = ["UNSUPPORTED", "CONTRADICTED", "PARTIAL", "OUTDATED", "SUPPORTED"]
LABELS_GOOD = ["SUPPORTED", "SUPPORTED", "SUPPORTED", "PARTIAL", "UNSUPPORTED"]


def synthetic_file(tmp_path: Path, n: int = 40, seed: int = 0) -> Path:
    """A claims file with outcomes: wrong responses tend to carry worse labels."""
    rng = np.random.default_rng(seed)
    responses = []
    for i in range(n):
        y = int(i % 3 == 0) if i % 2 else int(i % 4 == 0)
        pool = LABELS_BAD if y else LABELS_GOOD
        claims = []
        for k in range(int(rng.integers(1, 6))):
            label = str(rng.choice(pool))
            entry = {"claim_id": f"c{k}", "labels": [label], "criticality": int(rng.integers(1, 4))}
            if label == "PARTIAL" and rng.uniform() < 0.5:
                entry["labels"] = [{"label": "PARTIAL", "dimensions": ["C"]}]
            claims.append(entry)
        if i == 3:
            claims.append(
                {
                    "claim_id": "fb",
                    "labels": ["VALIDATED_NEGATIVE_FEEDBACK"],
                    "feedback": [{"at": "2026-05-01", "validated_by": "qa"}],
                }
            )
        responses.append(
            {
                "response_id": f"r{i:02d}",
                "source": "A" if i % 2 else "B",
                "task": "pilot",
                "outcome": y,
                "as_of": "2026-07-01",
                "claims": claims,
            }
        )
    path = tmp_path / "labelled.yaml"
    path.write_text(yaml.safe_dump({"responses": responses}))
    return path


CONTEXT = RunContext(experiment="hri_calibration", seed=13)


def study(
    params: hc.Params | None = None, n_resamples: int = 60, seed: int = 13, bootstrap: bool = True
) -> hc.HriCalibration:
    """The study as the pipeline builds it: the `hri` group (validated on construction),
    typed bootstrap settings and params."""
    return hc.HriCalibration(
        hri=hri_dict(),
        bootstrap=BootstrapConf(n_resamples=n_resamples, level=0.95, seed=seed)
        if bootstrap
        else None,
        params=params or hc.Params(),
    )


def run(data, params: hc.Params | None = None, **settings):
    return study(params, **settings).run(data, CONTEXT)


def cell_map(cells: pd.DataFrame) -> dict:
    return {(r.table, r.row, r.column): r for r in cells.itertuples(index=False)}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    data = load_hri_claims(str(synthetic_file(tmp_path_factory.mktemp("cal"))))
    result = run(data)
    return data, result, result.cells_frame()


def test_ranking_cells_equal_sklearn_on_the_per_response_scores(synthetic):
    _, result, cells = synthetic
    scores, got = result.scores, cell_map(cells)
    assert len(scores) == 40 and set(scores["task"]) == {"pilot"}
    for scope, rows in (
        ("pilot", scores),
        ("pilot:A", scores[scores["group_id"] == "A"]),
        ("pilot:B", scores[scores["group_id"] == "B"]),
    ):
        for agg in AGGREGATIONS:
            auc = got["hri_ranking", scope, f"{agg}/AUROC"]
            ap = got["hri_ranking", scope, f"{agg}/AP"]
            assert auc.value == pytest.approx(roc_auc_score(rows["label"], rows[agg]))
            assert ap.value == pytest.approx(average_precision_score(rows["label"], rows[agg]))
            assert auc.ci_low <= auc.ci_high and ap.ci_low <= ap.ci_high
            if agg != "additive":
                delta = got["hri_ranking_delta", scope, f"{agg}-additive/AUROC"]
                assert delta.value == pytest.approx(
                    auc.value - got["hri_ranking", scope, "additive/AUROC"].value
                )


def test_scores_are_the_hri_of_each_response(synthetic):
    _, result, _ = synthetic
    ex = result.extra["hri_explanations.json"]
    for rec in result.scores.itertuples(index=False):
        assert rec.hri_star == ex[rec.example_id]["hri_star"]
        assert rec.band == ex[rec.example_id]["band"]
    fb = ex["r03"]["feedback"]
    assert fb["terms"][0]["age"] == 61.0 and fb["s_H"] > 0


def test_band_rates_and_provisional_operating_points_by_hand(synthetic):
    _, result, cells = synthetic
    got, scores = cell_map(cells), result.scores
    y = scores["label"].to_numpy()
    total = sum(
        got["hri_band_rates", "pilot/hri_star", f"{b}/responses"].value
        for b in ("Low", "Medium", "High", "Critical")
    )
    assert total == 40
    for band in ("Low", "Medium", "High", "Critical"):
        in_band = (scores["band"] == band).to_numpy()
        assert got["hri_band_rates", "pilot/hri_star", f"{band}/responses"].value == in_band.sum()
        rate = got["hri_band_rates", "pilot/hri_star", f"{band}/rate"].value
        if in_band.any():
            assert rate == pytest.approx(y[in_band].mean())
        else:
            assert rate is None or math.isnan(rate)
    flagged = scores["band"].isin(["High", "Critical"]).to_numpy()
    tp = (flagged & (y == 1)).sum()
    row = "pilot/hri_star"
    assert got["hri_operating_points", row, "provisional_review/recall"].value == pytest.approx(
        tp / y.sum()
    )
    assert got["hri_operating_points", row, "provisional_review/precision"].value == pytest.approx(
        tp / flagged.sum()
    )
    cost = (5 * ((y == 1) & ~flagged).sum() + 1 * ((y == 0) & flagged).sum()) / 40
    assert got["hri_operating_points", row, "provisional_review/cost"].value == pytest.approx(cost)


def test_suggested_review_cutoff_is_the_cost_optimal_threshold(synthetic):
    _, result, cells = synthetic
    got, scores = cell_map(cells), result.scores
    y = scores["label"].to_numpy().astype(float)
    for agg in AGGREGATIONS:
        t, _ = op.cost_optimal_threshold(y, scores[agg].to_numpy(), np.ones((1, 40)), 5.0, 1.0)
        cell = got["hri_suggested_cutoffs", f"pilot/{agg}", "review"]
        if math.isinf(t[0]):
            assert cell.value is None or math.isnan(cell.value)
        else:
            assert cell.value == pytest.approx(100 * t[0])
            assert got[
                "hri_operating_points", f"pilot/{agg}", "cost_optimal/cutoff"
            ].value == pytest.approx(100 * t[0])


def test_curve_cells_hold_every_roc_point_and_figures_draw_from_cells_alone(synthetic):
    _, result, cells = synthetic
    scores = result.scores
    fpr, _, _ = roc_curve(scores["label"], scores["additive"])
    roc = cells[(cells["table"] == "hri_roc_curve") & (cells["row"] == "pilot/additive")]
    assert len(roc) == 2 * len(fpr)
    assert roc["column"].iloc[0] == "fpr@0000"
    figs = study().figures(cells.copy())
    assert list(figs) == ["hri_roc_pr_pilot"]
    ax_roc, ax_pr = figs["hri_roc_pr_pilot"].axes
    assert len(ax_roc.get_lines()) == len(AGGREGATIONS) + 1  # plus the chance diagonal
    assert len(ax_pr.get_lines()) == len(AGGREGATIONS) + 1  # plus the base-rate line
    assert "AUROC" in ax_roc.get_legend().get_texts()[0].get_text()
    for fig in figs.values():
        matplotlib.pyplot.close(fig)


def test_same_seed_same_cells_other_seed_other_intervals(synthetic):
    data, _, cells = synthetic
    again = run(data).cells_frame()
    pd.testing.assert_frame_equal(cells, again)
    other = run(data, seed=99).cells_frame()
    ranking = cells["table"] == "hri_ranking"
    assert (cells.loc[ranking, "value"] == other.loc[ranking, "value"]).all()
    assert not (cells.loc[ranking, "ci_low"] == other.loc[ranking, "ci_low"]).all()


def test_extras_are_json_and_name_the_best_aggregation(synthetic):
    _, result, _ = synthetic
    summary = json.loads(json.dumps(result.extra["hri_calibration_summary.json"]))
    best = summary["best"]["pilot"]["AUROC"]
    assert best["best"] in AGGREGATIONS and len(best["delta_ci"]) == 2
    assert summary["collections"]["pilot"]["stratified_by_source"] is True


def test_responses_without_outcome_are_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "responses": [
                    {"response_id": "r", "claims": [{"claim_id": "a", "labels": ["SUPPORTED"]}]}
                ]
            }
        )
    )
    with pytest.raises(DataError, match="response 'r' has no outcome"):
        run(load_hri_claims(str(path)))


def test_a_collection_with_one_outcome_is_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "responses": [
                    {
                        "response_id": f"r{i}",
                        "outcome": 1,
                        "claims": [{"claim_id": "a", "labels": ["SUPPORTED"]}],
                    }
                    for i in range(3)
                ]
            }
        )
    )
    with pytest.raises(DataError, match="needs both outcomes"):
        run(load_hri_claims(str(path)))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"aggregations": ["additive", "median"]}, "unknown \\['median'\\]"),
        ({"aggregations": ["hri_star"]}, "baseline='additive'"),
        ({"cost_missed": 0.0}, "cost_missed must be > 0"),
        ({"cost_ratios": []}, "cost_ratios"),
        ({"block_precision": 1.5}, "block_precision"),
    ],
)
def test_bad_params_are_config_errors(synthetic, params, message):
    data, _, _ = synthetic
    with pytest.raises(ConfigError, match=message):  # before any data is read
        study(hc.Params(**params))
    built = study()
    built.params = hc.Params(**params)
    with pytest.raises(ConfigError, match=message):  # and again when it runs
        built.run(data, CONTEXT)


def test_missing_bootstrap_settings_are_a_config_error(synthetic):
    data, _, _ = synthetic
    with pytest.raises(ConfigError, match="bootstrap"):
        run(data, bootstrap=False)


# --------------------------------------------------------------------------- by construction


def collections_file(tmp_path: Path, n: int = 48, seed: int = 5) -> Path:
    """Two collections over the same kind of claims: one outcome derived, one independent.

    ``derived``: a response is wrong exactly when one of its claims is not SUPPORTED (the
    rule Factbench.jsonl is built with). ``independent``: the outcome is drawn on its own,
    leaning towards wrong for responses with bad labels but with exceptions both ways.
    """
    rng = np.random.default_rng(seed)
    pool = ["SUPPORTED", "SUPPORTED", "PARTIAL", "UNSUPPORTED", "CONTRADICTED"]
    responses = []
    for task in ("derived", "independent"):
        for i in range(n):
            labels = [str(rng.choice(pool)) for _ in range(int(rng.integers(1, 5)))]
            bad = any(lab != "SUPPORTED" for lab in labels)
            if task == "derived":
                y = int(bad)
            else:
                y = int(rng.uniform() < (0.7 if bad else 0.3))
            responses.append(
                {
                    "response_id": f"{task}-{i:02d}",
                    "task": task,
                    "source": "S",
                    "outcome": y,
                    "claims": [
                        {"claim_id": f"c{k}", "labels": [lab]} for k, lab in enumerate(labels)
                    ],
                }
            )
    path = tmp_path / "collections.yaml"
    path.write_text(yaml.safe_dump({"responses": responses}))
    return path


@pytest.fixture(scope="module")
def split_run(tmp_path_factory):
    data = load_hri_claims(str(collections_file(tmp_path_factory.mktemp("split"))))
    result = run(data)
    return result, result.cells_frame()


def rows_of(cells: pd.DataFrame, table: str) -> set[str]:
    return set(cells.loc[cells["table"] == table, "row"])


def test_an_outcome_derived_from_the_claim_labels_goes_to_the_sanity_table(split_run):
    result, cells = split_run
    got = cell_map(cells)
    assert got["hri_outcome_construction", "derived", "determined"].value == 1
    assert got["hri_outcome_construction", "derived", "best_rule_agreement"].value == 1.0
    assert "derived" in rows_of(cells, "hri_sanity_ranking")
    for agg in AGGREGATIONS:
        assert got["hri_sanity_ranking", "derived", f"{agg}/AUROC"].value == 1.0
    for table in (
        "hri_ranking",
        "hri_ranking_delta",
        "hri_band_rates",
        "hri_operating_points",
        "hri_suggested_cutoffs",
        "hri_cost_sweep",
        "hri_roc_curve",
    ):
        assert not any(r.startswith("derived") for r in rows_of(cells, table)), table
    summary = result.extra["hri_calibration_summary.json"]
    assert summary["collections"]["derived"]["headline"] is False
    assert summary["sanity_scopes"] == ["derived"]
    assert "derived" not in summary["best"]
    assert result.scores.groupby("task")["outcome_by_construction"].all().to_dict() == {
        "derived": True,
        "independent": False,
    }


def test_an_independent_outcome_is_in_the_headline_tables_and_figures(split_run):
    result, cells = split_run
    got, scores = cell_map(cells), result.scores
    assert got["hri_outcome_construction", "independent", "determined"].value == 0
    assert "independent" not in rows_of(cells, "hri_sanity_ranking")
    mine = scores[scores["task"] == "independent"]
    for agg in AGGREGATIONS:
        cell = got["hri_ranking", "independent", f"{agg}/AUROC"]
        assert cell.value == pytest.approx(roc_auc_score(mine["label"], mine[agg]))
        assert cell.value < 1.0
        assert ("hri_suggested_cutoffs", f"independent/{agg}", "review") in got
    assert result.extra["hri_calibration_summary.json"]["headline_collections"] == ["independent"]
    figs = study().figures(cells.copy())
    assert list(figs) == ["hri_roc_pr_independent"]
    for fig in figs.values():
        matplotlib.pyplot.close(fig)


def test_a_collection_pooling_a_derived_source_is_a_sanity_row(tmp_path):
    path = collections_file(tmp_path)
    raw = yaml.safe_load(path.read_text())
    for r in raw["responses"]:  # one collection, two sources: derived and independent
        r["source"], r["task"] = r["task"], "mixed"
    path.write_text(yaml.safe_dump(raw))
    result = run(load_hri_claims(str(path)))
    cells = result.cells_frame()
    assert rows_of(cells, "hri_sanity_ranking") == {"mixed", "mixed:derived"}
    assert rows_of(cells, "hri_ranking") == {"mixed:independent"}
    assert not rows_of(cells, "hri_band_rates")
    assert (
        "pools sources"
        in result.extra["hri_calibration_summary.json"]["collections"]["mixed"]["notes"][-1]
    )


@pytest.mark.slow
def test_real_factcheck_bench_calibration(tmp_path, data_dir):
    composed = compose_experiment(
        tmp_path, "hri_calibration", [f"dataset.path={data_dir / 'factcheck-bench'}"]
    )
    data = instantiate(composed.dataset, _convert_="all")
    result = check_config(composed).run(data, CONTEXT)
    got = cell_map(result.cells_frame())
    scores = result.scores
    # In Factbench.jsonl a response is labelled non-factual exactly when one of its claims is
    # not true: the study finds that in the data and keeps those rows out of the headline.
    for scope in ("factbench", "factbench:factcheckgpt", "factbench:felm-wk"):
        assert got["hri_outcome_construction", scope, "determined"].value == 1
        for agg in AGGREGATIONS:
            assert got["hri_sanity_ranking", scope, f"{agg}/AUROC"].value == 1.0
    cells = result.cells_frame()
    headline = cells[cells["table"] == "hri_ranking"]
    assert set(headline["row"]) == {"factcheckgpt_gold", "factcheckgpt_stance"}
    perfect = (headline["value"] == 1.0) & (headline["ci_low"] == 1.0)
    assert not perfect.any()
    assert got["hri_outcome_construction", "factcheckgpt_gold", "conflicting_multisets"].value > 0
    assert not any(
        r.startswith("factbench") for r in cells.loc[cells["table"] == "hri_band_rates", "row"]
    )
    stance = scores[scores["task"] == "factcheckgpt_stance"]
    assert got["hri_ranking", "factcheckgpt_stance", "additive/AUROC"].value == pytest.approx(
        roc_auc_score(stance["label"], stance["additive"])
    )
    assert got["hri_calibration_data", "factcheckgpt_stance", "responses"].value == 92
    # Label agreement recomputed from the raw file: gold factuality vs evidence stances.
    gold, from_stance = [], []
    for line in (data_dir / "factcheck-bench" / "factcheck-GPT-benchmark.jsonl").open():
        rec = json.loads(line)
        if rec["response_factuality"] == "NA":
            continue
        for sent in rec["sentences"].values():
            for worthy, fact, stances in zip(
                sent["claim_checkworthiness"],
                sent["claims_factuality_label"],
                sent["stance_claim_autoEvid"],
                strict=True,
            ):
                if worthy != "factual":
                    continue
                gold.append({True: "SUPPORTED", False: "CONTRADICTED"}.get(fact, "UNSUPPORTED"))
                from_stance.append(
                    "CONTRADICTED"
                    if "refute" in stances
                    else "SUPPORTED"
                    if "completely-support" in stances
                    else "PARTIAL"
                    if "partially-support" in stances
                    else "UNSUPPORTED"
                )
    kappa = got["hri_label_agreement", "factcheckgpt_gold vs factcheckgpt_stance", "kappa"]
    assert kappa.value == pytest.approx(cohen_kappa_score(gold, from_stance))
    assert (
        got["hri_label_agreement", "factcheckgpt_gold vs factcheckgpt_stance", "claims"].value
        == len(gold)
        == 661
    )
    assert set(study().figures(result.cells_frame())) == {
        "hri_roc_pr_factcheckgpt_gold",
        "hri_roc_pr_factcheckgpt_stance",
    }
