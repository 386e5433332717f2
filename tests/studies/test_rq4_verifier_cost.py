"""RQ4 (Table VII, Figure 5): gates and verifiers side by side, accuracy only where real.

Runs the study on a grouped subset of the real RAGTruth test rows with toy verifier models
(built and saved here, loaded back by path) so it stays fast; the composed experiment file
is the real one, only sizes and models are swapped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from runner.config import register_configs
from runner.data.ragtruth import load_ragtruth
from runner.errors import ConfigError
from runner.evaluation import BootstrapConf
from runner.pipeline import check_config
from runner.studies import RunContext
from runner.studies import rq4_verifier_cost as rq4

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"

register_configs()

VERIFIERS = ["deberta_nli_top3", "hhem_full", "hhem_top3", "lettucedetect"]


def _toy(model_class, arch: dict, texts: list[str], folder: Path) -> Path:
    """A toy model whose BPE tokenizer is trained on the study's texts (short sequences)."""
    from runner.verifiers.architecture import build_config, build_random_model
    from runner.verifiers.tokenizer_training import train_tokenizer

    arch = {
        **arch,
        "tokenizer": {**arch["tokenizer"], "vocab_size": 2000},
        "config": {**arch["config"], "vocab_size": 2048},
    }
    tokenizer = train_tokenizer(texts, arch["tokenizer"])
    build_random_model(model_class, build_config(arch, tokenizer), 3).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def toy_models(tmp_path_factory, data):
    """Toy checkpoints of the three verifier classes, saved to disk."""
    import torch
    from tests.verifiers.conftest import SPECS, TINY_ARCH
    from transformers import (
        DebertaV2ForSequenceClassification,
        ModernBertForTokenClassification,
        T5ForTokenClassification,
    )

    torch.set_num_threads(1)
    texts = [*data.frame["context"].unique(), *data.frame["answer"], *data.frame["question"]]
    root = tmp_path_factory.mktemp("rq4_models")
    t5 = {**TINY_ARCH["t5"], "tokenizer": SPECS["bpe_t5"]}
    return {
        "deberta": _toy(
            DebertaV2ForSequenceClassification, TINY_ARCH["deberta"], texts, root / "deberta"
        ),
        "t5": _toy(T5ForTokenClassification, t5, texts, root / "t5"),
        "modernbert": _toy(
            ModernBertForTokenClassification, TINY_ARCH["modernbert"], texts, root / "modernbert"
        ),
    }


@pytest.fixture(scope="module")
def data(data_dir_module):
    """Six context groups (36 responses) per task of the RAGTruth test split."""
    loaded = load_ragtruth(split="test", data_dir=data_dir_module)
    frame = loaded.frame
    keep = [
        g
        for task in ("QA", "Summary", "Data2txt")
        for g in list(dict.fromkeys(frame.loc[frame["task"] == task, "group_id"]))[:6]
    ]
    subset = frame[frame["group_id"].isin(keep)].reset_index(drop=True)
    return dataclasses.replace(loaded, frame=subset)


@pytest.fixture(scope="module")
def data_dir_module():
    from tests.conftest import real_data_dir

    return real_data_dir()


def compose_cfg(tmp_path: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                "experiment=rq4_verifier_cost",
                "tracking=off",
                "progress=false",
                "bootstrap=fast",
                "split.n_splits=3",
                f"paths.artifacts_dir={tmp_path}",
                "study.params.timing_sample=6",
                "study.params.timing_repeats=1",
                "study.params.timing_warmup=0",
                "study.params.gate_timing_rows=20",
                "study.params.gate_timing_repeats=1",
                *overrides,
            ],
        )


def toy_overrides(models: dict[str, Path], weights: str = "pretrained") -> list[str]:
    paths = {
        "deberta_nli_top3": models["deberta"],
        "hhem_full": models["t5"],
        "hhem_top3": models["t5"],
        "lettucedetect": models["modernbert"],
    }
    out = []
    for name, path in paths.items():
        out += [
            f"verifiers.{name}.weights={weights}",
            f"verifiers.{name}.model={path}",
            f"verifiers.{name}.threads=1",
        ]
    # the toy tokenizers split real text finely: allow long inputs (the context is still cut)
    out += [f"verifiers.{name}.max_length=4096" for name in paths]
    return out


def run_study(cfg, data):
    context = RunContext(
        experiment=str(cfg.experiment),
        seed=int(cfg.seed),
        progress=bool(cfg.progress),
        cache_dir=cfg.paths.cache_dir,
    )
    return check_config(cfg).run(data, context)


def cells(result) -> pd.DataFrame:
    return result.cells_frame()


def test_experiment_composes_every_table_vii_row():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=rq4_verifier_cost", "tracking=off"])
    assert list(cfg.gates) == ["uncovered", "rouge_l", "ragscope_e"]
    assert list(cfg.verifiers) == VERIFIERS
    assert cfg.verifiers.deberta_nli_top3.evidence == "top_k_sentences"
    assert cfg.verifiers.hhem_full.evidence == "full_context"
    assert cfg.verifiers.hhem_full.max_length == 512
    assert cfg.verifiers.hhem_top3.evidence == "top_k_sentences"
    assert cfg.verifiers.lettucedetect.architecture.name == "modernbert_base"
    assert {v.weights for v in cfg.verifiers.values()} == {"random"}


@pytest.mark.slow  # the whole study with four verifiers (~10 s)
def test_real_weights_give_accuracy_with_intervals_and_cost(tmp_path, toy_models, data):
    result = run_study(compose_cfg(tmp_path, *toy_overrides(toy_models)), data)
    table = cells(result)
    t7 = table[table["table"] == "table7"]
    rows = list(dict.fromkeys(t7["row"]))
    assert rows == [
        "uncovered",
        "rouge_l",
        "ragscope_e",
        "deberta_nli_top3 [fp32]",
        "hhem_full [fp32]",
        "hhem_top3 [fp32]",
        "lettucedetect [fp32]",
    ]
    acc = t7[t7["column"].isin(["AUROC", "AP"])]
    assert acc["value"].between(0, 1).all()
    assert (acc["ci_low"] <= acc["value"]).all() and (acc["value"] <= acc["ci_high"]).all()
    assert (t7.loc[t7["column"] == "ms/example", "value"] > 0).all()
    for name in VERIFIERS:
        assert result.scores[name].notna().all()
        assert result.runtime["verifiers"][name]["n_timed_examples"] == 6
    assert result.scores["hhem_full"].ne(result.scores["hhem_top3"]).any()
    assert result.tags["weights"] == "pretrained"


@pytest.mark.slow  # the whole study with four verifiers (~10 s)
def test_random_weights_report_cost_but_never_accuracy(tmp_path, toy_models, data, monkeypatch):
    monkeypatch.setenv("RUNNER_ARTIFACTS_DIR", str(tmp_path))  # the trained tokenizers' cache
    cfg = compose_cfg(tmp_path, *toy_overrides(toy_models, weights="random"))
    from tests.verifiers.conftest import TINY_ARCH, corpus

    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_text("\n".join(corpus()))
    arch = {
        "deberta_nli_top3": "deberta",
        "hhem_full": "t5",
        "hhem_top3": "t5",
        "lettucedetect": "modernbert",
    }
    for name, key in arch.items():
        cfg.verifiers[name].architecture = TINY_ARCH[key]
        cfg.verifiers[name].tokenizer_corpus = str(corpus_file)
    result = run_study(cfg, data)
    t7 = cells(result)
    t7 = t7[t7["table"] == "table7"]
    verifier_rows = t7[t7["row"].str.contains("random weights")]
    assert sorted(verifier_rows["row"].unique()) == sorted(
        f"{n} [fp32, random weights]" for n in VERIFIERS
    )
    accuracy = verifier_rows[verifier_rows["column"].isin(["AUROC", "AP"])]
    assert len(accuracy) == 8 and accuracy["value"].isna().all()
    assert accuracy["ci_low"].isna().all()
    assert (verifier_rows.loc[verifier_rows["column"] == "ms/example", "value"] > 0).all()
    assert not set(VERIFIERS) & set(result.scores.columns)  # no scores leak into outputs
    assert result.tags["weights"] == "random"
    assert result.tags["verifier.hhem_full.model"] == "random:tiny_t5"
    assert result.tags["verifier.deberta_nli_top3.precision"] == "fp32"
    runtime = t7 = cells(result)
    details = runtime[runtime["table"] == "table7_runtime"]
    assert set(details["column"]) >= {"parameters (M)", "tokens/example", "truncated examples"}


def test_the_built_study_tags_the_composed_random_architectures(tmp_path):
    # `instantiate` hands each verifier its `architecture` as an `ArchitectureConf` record
    study = check_config(compose_cfg(tmp_path))
    tags = rq4._tags(study.verifiers)
    assert tags["weights"] == "random"
    assert tags["verifier.deberta_nli_top3.model"] == "random:deberta_v3_small"
    assert tags["verifier.hhem_full.model"] == "random:flan_t5_base_encoder"
    assert tags["verifier.lettucedetect.model"] == "random:modernbert_base"


def test_unconfigured_rows_fail_before_any_work(tmp_path):
    cfg = compose_cfg(tmp_path, "study.params.verifiers=[deberta_nli_top3,nli_large]")
    with pytest.raises(ConfigError, match="nli_large"):
        check_config(cfg)  # the pre-flight check: before any data is read
    with pytest.raises(ConfigError, match=r"study.params.gates='ragscope_e' is not a config"):
        rq4.VerifierCost(  # building the study is the check
            gates={"uncovered": None},
            verifiers={},
            split=None,
            bootstrap=BootstrapConf(),
            params=rq4.Params(gates=["uncovered", "ragscope_e"], verifiers=[]),
        )


def test_figure_5_is_drawn_from_cells_with_a_log_cost_axis():
    frame = pd.DataFrame(
        [
            ("table7", "uncovered", "AP", 0.59, None, None),
            ("table7", "uncovered", "ms/example", 0.7, None, None),
            ("table7", "ragscope_e", "AP", 0.66, 0.63, 0.69),
            ("table7", "ragscope_e", "ms/example", 6.2, None, None),
            ("table7", "hhem_full [fp32, random weights]", "AP", np.nan, None, None),
            ("table7", "hhem_full [fp32, random weights]", "ms/example", 220.0, None, None),
        ],
        columns=["table", "row", "column", "value", "ci_low", "ci_high"],
    )
    study = rq4.VerifierCost(
        gates={"uncovered": None},
        verifiers={},
        split=None,
        bootstrap=BootstrapConf(),
        params=rq4.Params(gates=["uncovered"], verifiers=[]),
    )
    figs = study.figures(frame)
    assert list(figs) == ["fig5_cost_quality"]
    ax = figs["fig5_cost_quality"].axes[0]
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.texts]
    assert "ragscope_e" in labels and any("AP n/a" in t for t in labels)
