"""Every config group composes, is typed, and instantiates; config errors fail before work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runner.config import register_configs
from runner.errors import ConfigError, DataError
from runner.frames import REQUIRED_COLUMNS
from runner.pipeline import check_config
from runner.verifiers.loading import ModelNotAvailableError

CONF = Path(__file__).resolve().parents[1] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def _uses_registered_model(experiment: str) -> bool:
    cfg = OmegaConf.to_container(composed(f"experiment={experiment}"), resolve=False)
    parts = {key: cfg.get(key) for key in ("verifiers", "judges", "span_detector")}
    return "models:/" in json.dumps(parts)


@pytest.fixture(scope="module")
def detector_store(tmp_path_factory) -> Path:
    """An artifacts folder whose registry holds a (tiny) ``ragtruth_detector@champion``,
    as a machine has after ``make train-detector``; a fresh checkout has none."""
    from tests.routing.detector import register_tiny_detector

    artifacts = tmp_path_factory.mktemp("registry")
    register_tiny_detector(artifacts)
    register_tiny_detector(artifacts, "wice_claim_verifier")  # after train_claim_verifier
    return artifacts


@pytest.fixture(autouse=True)
def _forget_registry():
    from runner.verifiers.loading import use_registry

    yield
    use_registry(None)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_and_passes_the_pre_flight_checks(experiment, request):
    # The user's own files (`dataset.path: ???`) are the only values an experiment leaves
    # unset; the pre-flight check refuses them unset (test_cli_config_errors), so name one.
    required = sorted(OmegaConf.missing_keys(composed(f"experiment={experiment}")))
    assert all(key.startswith("dataset.") for key in required), required
    overrides = [f"{key}=mine.jsonl" for key in required]
    if _uses_registered_model(experiment):  # resolved in the run's store before any work
        store = request.getfixturevalue("detector_store")
        overrides.append(f"paths.artifacts_dir={store}")
    cfg = composed(f"experiment={experiment}", *overrides)
    assert cfg.experiment == experiment
    check_config(cfg)  # study params typed, every _target_ importable


def test_a_detector_experiment_without_a_trained_detector_fails_before_work_saying_how(
    tmp_path,
):
    cfg = composed("experiment=detector_eval", f"paths.artifacts_dir={tmp_path}")
    how = r"not in the registry.*experiment=train_detector"
    with pytest.raises(ModelNotAvailableError, match=how):
        check_config(cfg)


@pytest.mark.parametrize(
    "experiment", ["claims_verification_claim_verifier", "hri_predicted_claim_verifier"]
)
def test_a_claim_verifier_experiment_on_a_fresh_checkout_names_the_command_that_trains_it(
    tmp_path, experiment
):
    cfg = composed(f"experiment={experiment}", f"paths.artifacts_dir={tmp_path}")
    how = (
        r"models:/wice_claim_verifier@champion' is not in the registry"
        r".*experiment=train_claim_verifier\)"
    )
    with pytest.raises(ModelNotAvailableError, match=how):
        check_config(cfg)


@pytest.mark.parametrize("gate", options("gate"))
def test_every_gate_config_instantiates_an_estimator_with_the_gate_contract(gate):
    cfg = composed("experiment=rq1_cheap_signals", f"+gate@gates.extra={gate}")
    part = instantiate(cfg.gates.extra, _convert_="all")
    assert hasattr(part, "fit") and hasattr(part, "score") and isinstance(part.needs_fit, bool)


@pytest.mark.parametrize("split", options("split"))
def test_every_split_config_instantiates_a_splitter(split):
    cfg = composed("experiment=rq1_cheap_signals", f"split={split}")
    assert hasattr(instantiate(cfg.split), "folds")


@pytest.mark.parametrize("bootstrap", options("bootstrap"))
def test_every_bootstrap_config_is_typed_settings_whose_seed_follows_the_master_seed(bootstrap):
    from runner.evaluation.config import BootstrapConf

    cfg = composed("experiment=rq1_cheap_signals", f"bootstrap={bootstrap}", "seed=7")
    assert "_target_" not in cfg.bootstrap  # settings, not a part: nothing instantiates it
    settings = OmegaConf.to_object(cfg.bootstrap)
    assert isinstance(settings, BootstrapConf) and settings.n_resamples > 0
    assert settings.seed == 7


@pytest.mark.parametrize("split", ["grouped_kfold", "kfold", "target_adaptation"])
def test_split_seeds_follow_the_master_seed_unless_overridden(split):
    cfg = composed("experiment=rq1_cheap_signals", f"split={split}", "seed=7")
    assert cfg.split.seed == 7
    cfg = composed("experiment=rq1_cheap_signals", f"split={split}", "seed=7", "split.seed=3")
    assert cfg.split.seed == 3


@pytest.mark.parametrize("tracking", options("tracking"))
def test_every_tracking_config_composes(tracking):
    cfg = composed("experiment=rq1_cheap_signals", f"tracking={tracking}")
    assert cfg.tracking.enabled == (tracking != "off")


@pytest.mark.parametrize("dataset", ["ragtruth", "halubench"])
def test_response_datasets_instantiate_into_the_canonical_frame(dataset, data_dir):
    cfg = composed("experiment=rq1_cheap_signals", f"dataset={dataset}", "dataset.limit=20")
    data = instantiate(cfg.dataset, _convert_="all")
    assert len(data.frame) == 20
    assert set(REQUIRED_COLUMNS) <= set(data.frame.columns)


def test_a_wrong_type_fails_before_any_work_naming_the_key_and_the_class():
    cfg = composed("experiment=rq2_grouped_cv", "split.n_splits=abc")  # a part's node: untyped
    with pytest.raises(ConfigError, match=r"split\.n_splits: Value 'abc'.*GroupedKFold\)"):
        check_config(cfg)
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as err:
        composed("experiment=rq2_grouped_cv", "bootstrap.n_resamples=abc")  # a record's: typed
    assert "n_resamples" in str(err.value) + str(err.value.__cause__)


def test_an_unknown_key_fails_at_compose_time_naming_the_key():
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as err:
        composed("experiment=rq1_cheap_signals", "dataset.pth=/tmp/x")
    assert "pth" in str(err.value) + str(err.value.__cause__)


def test_an_unknown_gate_key_fails_at_compose_time():
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as err:
        composed("experiment=rq1_cheap_signals", "gates.uncovered.featur=x")
    assert "featur" in str(err.value) + str(err.value.__cause__)


def test_a_study_is_built_by_hydra_with_the_parts_its_experiment_hands_it():
    from runner.evaluation import BootstrapConf
    from runner.evaluation.splits import GroupedKFold
    from runner.studies.rq1_cheap_signals import CheapSignals, Params

    study = check_config(composed("experiment=rq1_cheap_signals", "study.params.timing_rows=9"))
    assert isinstance(study, CheapSignals)
    assert list(study.gates) == ["uncovered", "rouge_l", "token_f1", "tfidf", "max_sentence_tfidf"]
    assert isinstance(study.split, GroupedKFold) and isinstance(study.bootstrap, BootstrapConf)
    assert study.params == Params(timing_rows=9)


def test_unknown_study_params_fail_in_the_pre_flight_check_before_any_data_load():
    cfg = composed(
        "experiment=rq2_grouped_cv",
        "+study.params.n_resampels=5",
        "dataset.path=/does/not/exist.parquet",
    )
    with pytest.raises(ConfigError, match="n_resampels"):
        check_config(cfg)


def test_a_target_that_cannot_be_imported_is_a_config_error():
    cfg = composed("experiment=rq1_cheap_signals")
    OmegaConf.set_struct(cfg, False)
    cfg.gates.uncovered._target_ = "runner.gates.NoSuchGate"
    with pytest.raises(ConfigError, match=r"gates\.uncovered\._target_=.*NoSuchGate"):
        check_config(cfg)


def test_a_study_target_that_is_no_study_is_a_config_error():
    cfg = composed("experiment=rq1_cheap_signals")
    OmegaConf.set_struct(cfg, False)
    cfg.study = {"_target_": "collections.OrderedDict"}
    with pytest.raises(ConfigError, match="is not a runner Study"):
        check_config(cfg)


def _plain(cfg, *drop: str) -> dict:
    out = OmegaConf.to_container(cfg, resolve=False)  # paths follow ${experiment}
    for key in drop:
        out.pop(key, None)
    return out


@pytest.mark.parametrize(
    ("variant", "differences"),
    [
        ("rq5_source_shift_ragtruth", ("experiment", "dataset")),
        ("rq5_source_shift_row_cv", ("experiment", "split")),
    ],
)
def test_rq5_variants_extend_rq5_source_shift_and_differ_only_where_they_say(variant, differences):
    base, cfg = composed("experiment=rq5_source_shift"), composed(f"experiment={variant}")
    assert _plain(cfg, *differences) == _plain(base, *differences)
    for key in differences:
        assert cfg[key] != base[key], key
    text = (CONF / "experiment" / f"{variant}.yaml").read_text()
    assert "- rq5_source_shift" in text and "study:" not in text  # extends, does not re-list


GATES_C_E = ("ragscope_c", "ragscope_e")


def test_ragscope_e_extends_ragscope_c_with_the_tfidf_risks_and_enhanced_features():
    from runner.gates import ENHANCED_FEATURES

    cfg = composed("experiment=rq2_grouped_cv")
    c, e = (
        OmegaConf.to_container(cfg.gates[g], resolve=True) for g in ("ragscope_c", "ragscope_e")
    )
    assert e["features"] == list(ENHANCED_FEATURES) and e["tfidf"] is True
    assert {k: v for k, v in e.items() if k not in ("features", "tfidf")} == {
        k: v for k, v in c.items() if k not in ("features", "tfidf")
    }
    assert "_target_" not in (CONF / "gate" / "ragscope_e.yaml").read_text()
    # the override of one gate does not reach the other
    cfg = composed("experiment=rq2_grouped_cv", "gates.ragscope_e.C=0.5")
    assert cfg.gates.ragscope_e.C == 0.5 and cfg.gates.ragscope_c.C == 1.0


def test_rq5_composes_its_source_shift_splitters_under_splits():
    from runner.evaluation.splits import LeaveSourceOut, TargetAdaptation

    cfg = composed("experiment=rq5_source_shift", "seed=7", "splits.target.ks=[25,50]")
    study = check_config(cfg)
    params = study.params
    assert isinstance(study.splits["cross_source"], LeaveSourceOut)
    target = study.splits["target"]
    assert isinstance(target, TargetAdaptation)
    assert target.ks == (25, 50) and target.seed == 7 and target.group_col == "group_id"
    assert not hasattr(params, "ks")  # splitter settings live in splits.<name>, not the params


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["splits.target.ks=[1,50]"], r"splits\.target\.ks must be a list of integers"),
        (["splits.target.n_seeds=0"], r"splits\.target\.n_seeds must be a positive"),
        (["+splits.target.kz=5"], r"splits\.target\.kz: unknown key"),
        (["~splits.target"], r"needs splits\.target"),
        (["splits.cross_source.column=task"], r"set splits\.cross_source\.column=source"),
        (["study.params.calibrated_gate=nope"], r"calibrated_gate='nope' is not a configured"),
    ],
)
def test_rq5_splitter_and_gate_mistakes_fail_the_pre_flight_check(overrides, message):
    cfg = composed("experiment=rq5_source_shift", *overrides)
    with pytest.raises(ConfigError, match=message):
        check_config(cfg)


def test_every_named_splitter_needs_a_target():
    cfg = composed("experiment=rq5_source_shift")
    OmegaConf.set_struct(cfg, False)
    cfg.splits.extra = {"n_splits": 5}
    with pytest.raises(ConfigError, match=r"splits\.extra: no _target_"):
        check_config(cfg)


def test_a_study_parameter_the_study_does_not_take_names_its_params_class_and_keys():
    # RQ5's sample sizes were `study.params.ks`; they are the target splitter's `ks` now.
    cfg = composed("experiment=rq5_source_shift", "+study.params.ks=[25]")
    params = r"runner\.studies\.rq5_source_shift\.Params"  # the class grep finds
    with pytest.raises(ConfigError, match=rf"study\.params\.ks: unknown key \({params} has no"):
        check_config(cfg)


# ------------------------------------------------------------------ rag_file column mapping
# docs/rag_file_format.md documents `dataset.columns.<field>=<column>` and
# `'dataset.columns={...}'`; both, and the `+` form, reach the loader as the same mapping.


@pytest.mark.parametrize(
    "mapping",
    [
        ["dataset.columns.id=request_id", "dataset.columns.answer=response"],
        ["dataset.columns={id: request_id, answer: response}"],
        ["+dataset.columns.id=request_id", "+dataset.columns.answer=response"],
        ["dataset.columns={id: request_id}", "dataset.columns.answer=response"],
    ],
)
@pytest.mark.parametrize("experiment", ["route", "operating_report", "fit_gate"])
def test_the_documented_column_mapping_reaches_the_loader(tmp_path, experiment, mapping):
    from runner.data import as_stream
    from runner.pipeline import load_data

    path = tmp_path / "mapped.jsonl"
    row = {"request_id": "r1", "question": "q?", "context": "Sky is blue.", "response": "Blue."}
    path.write_text(json.dumps(row) + "\n")
    cfg = composed(f"experiment={experiment}", f"dataset.path={path}", *mapping)
    assert OmegaConf.to_container(cfg.dataset.columns) == {"id": "request_id", "answer": "response"}
    check_config(cfg)
    rows = as_stream(load_data(cfg))  # route reads the file in batches, the others whole
    frame = rows.read(rows.plan(10)[0]).frame
    assert frame["example_id"].tolist() == ["r1"] and frame["answer"].tolist() == ["Blue."]


def test_a_mapped_name_that_is_no_field_is_refused_before_any_data(tmp_path):
    cfg = composed("experiment=route", "dataset.path=x.jsonl", "dataset.columns.ansewr=response")
    with pytest.raises(ConfigError, match="'ansewr'"):
        check_config(cfg)


# ------------------------------------------------------------- suggested fixes that work
# An error message that suggests an override must suggest one that works: each suggestion
# is taken from the message itself, its placeholders filled in, and run.


def suggested_overrides(message: str) -> list[str]:
    return re.findall(r"\+?[a-z_]+(?:\.[a-z_<>]+)+=\S+", message)


def test_every_override_the_unknown_column_message_suggests_loads_the_file(tmp_path):
    from runner.data.rag_file import load_rag_file
    from runner.pipeline import load_data

    path = tmp_path / "mine.jsonl"
    path.write_text('{"id": "a", "question": "q", "context": "c", "response": "r"}\n')
    with pytest.raises(DataError) as err:
        load_rag_file(str(path))
    fixes = suggested_overrides(str(err.value))
    assert fixes == ["dataset.columns.<field>=<column>", "dataset.extra_columns=ignore"]
    mapping = fixes[0].replace("<field>", "answer").replace("<column>", "response")
    cfg = composed("experiment=operating_report", f"dataset.path={path}", mapping)
    check_config(cfg)
    assert load_data(cfg).frame["answer"].tolist() == ["r"]
    # ignoring the extra column leaves `answer` missing: the next message names the field
    cfg = composed("experiment=operating_report", f"dataset.path={path}", fixes[1])
    check_config(cfg)
    with pytest.raises(DataError, match="required field missing"):
        load_data(cfg)


@pytest.mark.parametrize(
    ("experiment", "given"),
    [("route", []), ("audit", ["dataset.decisions=d.parquet"])],
)
def test_the_override_a_missing_path_message_suggests_composes(tmp_path, experiment, given):
    with pytest.raises(ConfigError) as err:
        check_config(composed(f"experiment={experiment}", *given))
    fixes = [f for f in suggested_overrides(str(err.value)) if "=" in f]
    assert fixes, str(err.value)
    check_config(composed(f"experiment={experiment}", *given, *fixes))


PROBE = """
import sys
from runner.config import register_configs
register_configs()
import runner.routing, runner.verifiers
print('mlflow' in sys.modules)
from runner.routing.model import RoutingModel
print('mlflow' in sys.modules)
"""


@pytest.mark.slow
def test_registering_every_schema_and_importing_the_packages_never_imports_mlflow():
    # MLflow takes seconds to import: only a run that logs or serves a model pays for it
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
