"""The predicted-label HRI study end to end: tiny real verifiers, a small claim file."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml
from hydra.utils import instantiate
from omegaconf import OmegaConf
from sklearn.metrics import roc_auc_score
from tests.claims.judges.conftest import tiny_models

from runner.data.hri_claims import load_hri_claims
from runner.errors import ConfigError
from runner.evaluation.config import BootstrapConf
from runner.hri.aggregation import AGGREGATIONS
from runner.hri.config import load_hri_config
from runner.studies import RunContext
from runner.studies import hri_predicted as hp

from .test_hri_example import hri_dict

matplotlib.use("Agg")

POOL = ["SUPPORTED", "SUPPORTED", "PARTIAL", "UNSUPPORTED", "CONTRADICTED"]


def claims_file(tmp_path: Path, n: int = 12, seed: int = 3) -> Path:
    """Responses with gold labels, passages and an outcome leaning on the labels."""
    rng = np.random.default_rng(seed)
    responses = []
    for i in range(n):
        labels = [str(rng.choice(POOL)) for _ in range(int(rng.integers(1, 4)))]
        bad = any(lab != "SUPPORTED" for lab in labels)
        y = int(bad) if i % 4 else int(not bad)  # every fourth response goes the other way
        responses.append(
            {
                "response_id": f"r{i:02d}",
                "task": "gold",
                "question": f"What about topic {i}?",
                "outcome": y,
                "claims": [
                    {
                        "claim_id": f"c{k}",
                        "labels": [lab],
                        "criticality": int(rng.integers(1, 4)),
                        "text": f"Topic {i} has property {k}.",
                        "passages": [f"Topic {i} is described here.", f"Property {k} holds."],
                    }
                    for k, lab in enumerate(labels)
                ],
            }
        )
    path = tmp_path / "predicted.yaml"
    path.write_text(yaml.safe_dump({"responses": responses}))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tm = tiny_models()
    root = tmp_path_factory.mktemp("hri_predicted")
    data = load_hri_claims(str(claims_file(root)))
    texts = data.frame["claim"].tolist() * 4
    models = {
        "yellow": tm.bigram_llama(
            root / "yellow", ["Partly", "stated.", '{"verdict":', '"yellow"}']
        ),
        "green": tm.bigram_llama(
            root / "green", ["Stated", "in", "[1].", '{"verdict":', '"green"}']
        ),
        "tokenizer": tm.bpe_tokenizer(root / "tok", texts),
    }
    return data, models


def study_cfg(models, judges=("yellow", "green")):
    return OmegaConf.create(
        {
            "experiment": "hri_predicted",
            "seed": 13,
            "progress": False,
            "hri": hri_dict(),
            "bootstrap": BootstrapConf(n_resamples=40, level=0.95, seed=13),
            "span_detector": {
                "_target_": "runner.claims.span_detector.SpanDetector",
                "threshold": 0.3,
                "sweep": [0.3],
                "verifier": {
                    "_target_": "runner.verifiers.LettuceDetectVerifier",
                    "weights": "random",
                    "architecture": tiny_models().TINY_MODERNBERT,
                    "tokenizer": str(models["tokenizer"]),
                    "max_length": 256,
                    "threshold": 0.3,
                },
            },
            "judges": {
                name: {
                    "_target_": "runner.claims.judges.TransformersJudge",
                    "name": name,
                    "family": f"bigram-{name}",
                    "model": str(models[name]),
                    "seed": 13,
                }
                for name in judges
            },
        }
    )


def build(cfg, params=None) -> hp.HriPredicted:
    """The study built with the parts `cfg` configures (its checks run on construction)."""
    s1 = cfg.get("span_detector")
    return hp.HriPredicted(
        hri=load_hri_config(hri_dict()),  # the `hri` group, as a run builds it
        bootstrap=OmegaConf.to_object(cfg.bootstrap),
        span_detector=None if s1 is None else instantiate(s1, _convert_="all"),
        judges={n: instantiate(node, _convert_="all") for n, node in cfg.judges.items()},
        params=params or hp.Params(collection="gold"),
    )


def run(cfg, data, params):
    """The study as the pipeline runs it: built with its parts and params, then `run`."""
    context = RunContext(experiment=cfg.experiment, seed=cfg.seed, progress=cfg.progress)
    return build(cfg, params).run(data, context)


def figures(models, cells):
    """The study's figures: drawn from the cells alone, so any built study draws the same."""
    return build(study_cfg(models)).figures(cells)


@pytest.fixture(scope="module")
def outcome(setup):
    data, models = setup
    result = run(study_cfg(models), data, hp.Params(collection="gold", judge_responses=6))
    return result, result.cells_frame()


def cell_map(cells: pd.DataFrame) -> dict:
    return {(r.table, r.row, r.column): r for r in cells.itertuples(index=False)}


def test_scopes_count_responses_and_the_claims_judged(outcome, setup):
    data, _ = setup
    result, cells = outcome
    got = cell_map(cells)
    assert got["hri_predicted_data", "every response", "responses"].value == 12
    assert got["hri_predicted_data", "every response", "claims"].value == len(data.frame)
    assert got["hri_predicted_data", "judged", "responses"].value == 6
    summary = result.extra["hri_predicted_summary.json"]
    judged = summary["judged_responses"]
    assert len(judged) == 6
    n_judged = int(data.frame["response_id"].isin(judged).sum())
    assert (
        summary["judged_claims"] == n_judged == got["hri_predicted_data", "judged", "claims"].value
    )
    assert got["hri_predicted_labels", "S2 LLM judge / yellow", "claims"].value == n_judged
    assert got["hri_predicted_labels", "S2 LLM judge / yellow", "yellow"].value == n_judged


def test_every_response_scope_holds_s1_and_the_reference_only(outcome):
    _, cells = outcome
    rows = set(cells.loc[cells["table"] == "hri_predicted_ranking", "row"])
    s1 = [r for r in rows if r.startswith("S1 span detector")]
    assert len(s1) == 1 and "random weights" in s1[0]
    assert rows == {s1[0], "reference: gold labels"}
    judged = set(cells.loc[cells["table"] == "hri_predicted_ranking_judged", "row"])
    assert {"S2 LLM judge / yellow", "S2 LLM judge / green", "union(yellow, green)"} <= judged
    assert all("random weights" in r for r in judged if "S1" in r)


def test_ranking_cells_equal_sklearn_on_the_per_response_scores(outcome):
    result, cells = outcome
    got, scores = cell_map(cells), result.scores
    judged = set(result.extra["hri_predicted_summary.json"]["judged_responses"])
    for table, keep in (
        ("hri_predicted_ranking", lambda s: s),
        ("hri_predicted_ranking_judged", lambda s: s[s["example_id"].isin(judged)]),
    ):
        for row in set(cells.loc[cells["table"] == table, "row"]):
            mine = keep(scores[scores["system"] == row])
            for agg in AGGREGATIONS:
                cell = got[table, row, f"{agg}/AUROC"]
                if mine[agg].nunique() == 1:
                    assert cell.value == pytest.approx(0.5)
                else:
                    assert cell.value == pytest.approx(roc_auc_score(mine["label"], mine[agg]))
                assert cell.ci_low <= cell.value + 1e-12 <= cell.ci_high + 2e-12


def test_constant_verdicts_give_a_constant_index_and_the_reference_reads_gold(outcome):
    result, cells = outcome
    got, scores = cell_map(cells), result.scores
    for judge in ("yellow", "green"):  # one verdict for every claim: no ranking at all
        mine = scores[scores["system"] == f"S2 LLM judge / {judge}"]
        assert mine["additive"].nunique() == 1
        assert (
            got["hri_predicted_ranking_judged", f"S2 LLM judge / {judge}", "additive/AUROC"].value
            == 0.5
        )
    green = scores[scores["system"] == "S2 LLM judge / green"]
    assert (green["additive"] == 0).all()
    ref = scores[scores["system"] == "reference: gold labels"]
    assert got[
        "hri_predicted_ranking", "reference: gold labels", "additive/AUROC"
    ].value == pytest.approx(roc_auc_score(ref["label"], ref["additive"]))
    delta = got["hri_predicted_delta_judged", "S2 LLM judge / green", "additive/AUROC"]
    assert delta.value == pytest.approx(
        0.5 - got["hri_predicted_ranking_judged", "reference: gold labels", "additive/AUROC"].value
    )


def test_same_seed_same_cells_and_a_figure_per_scope(outcome, setup):
    data, models = setup
    _, cells = outcome
    again = run(study_cfg(models), data, hp.Params(collection="gold", judge_responses=6))
    pd.testing.assert_frame_equal(cells, again.cells_frame())
    figs = figures(models, cells.copy())
    assert list(figs) == ["hri_predicted_auroc", "hri_predicted_auroc_judged"]
    for fig in figs.values():
        matplotlib.pyplot.close(fig)


def test_config_errors_come_before_any_model_runs(setup):
    data, models = setup
    with pytest.raises(ConfigError, match="collection='nope'"):
        run(study_cfg(models), data, hp.Params(collection="nope"))
    with pytest.raises(ConfigError, match="verdict_labels"):
        run(
            study_cfg(models),
            data,
            hp.Params(collection="gold", verdict_labels={"green": "SUPPORTED"}),
        )
    with pytest.raises(ConfigError, match="clashes"):
        cfg = study_cfg(models, judges=("yellow",))
        cfg.judges["S1"] = cfg.judges.pop("yellow")
        run(cfg, data, hp.Params(collection="gold"))


def test_s1_on_a_response_sample_gets_its_own_scope(setup):
    data, models = setup
    result = run(
        study_cfg(models, judges=("yellow",)),
        data,
        hp.Params(collection="gold", s1_responses=8, judge_responses=4),
    )
    cells = result.cells_frame()
    got = cell_map(cells)
    summary = result.extra["hri_predicted_summary.json"]
    assert set(summary["judged_responses"]) <= set(summary["s1_responses"])
    assert got["hri_predicted_data", "S1 sample", "responses"].value == 8
    assert got["hri_predicted_data", "judged", "responses"].value == 4
    assert set(cells.loc[cells["table"] == "hri_predicted_ranking", "row"]) == {
        "reference: gold labels"
    }
    s1_rows = set(cells.loc[cells["table"] == "hri_predicted_ranking_s1", "row"])
    assert len(s1_rows) == 2 and any("random weights" in r for r in s1_rows)
    assert list(figures(models, cells)) == [
        "hri_predicted_auroc",
        "hri_predicted_auroc_s1",
        "hri_predicted_auroc_judged",
    ]


def test_two_setups_of_one_model_share_each_first_answer(setup):
    data, models = setup
    cfg = study_cfg(models, ("yellow",))
    node = dict(cfg.judges.yellow)
    cfg.judges = {
        "reask": {**node, "name": "reask", "repair": "reask"},
        "prefill": {**node, "name": "prefill", "repair": "prefill"},
    }
    result = run(cfg, data, hp.Params(collection="gold", judge_responses=6))
    n_judged = result.extra["hri_predicted_summary.json"]["judged_claims"]
    info = result.runtime["hri_predicted"]["judges"]
    assert info["reask"]["model_calls"] == n_judged  # valid first answers: no repairs
    assert info["prefill"]["model_calls"] == 0  # every first answer came from "reask"
    assert info["prefill"]["cache"]["memory_hits"] == n_judged
