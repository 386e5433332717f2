"""Train a local detector and register it: the token recipe (LettuceDetect's) or the
sentence recipe (each answer sentence against its best evidence), `runner.training.recipes`.

The recipe (``detector.recipe``) on any encoder (``detector.backbone``,
the shipped MiniLM-L6 by default), on any data set whose frame carries answer spans
(RAGTruth train by default). A validation split of the training data, grouped by context
(``group_id``), picks the kept weights and the example threshold (best F1); nothing of a
test split is read. The model folder (weights, tokenizer and ``detector.json``: input rule,
threshold, training summary) goes to the registry as ``models:/<detector.model_name>@
<detector.alias>`` (the pipeline logs it, as for `fit_gate`); every verifier then loads it
by that URI. Checkpoints live under ``<paths.cache_dir>/detector_training/<plan key>``, so
the same command rerun after a kill resumes where it stopped.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runner.data import sha256_file
from runner.errors import ConfigError
from runner.results import ModelSpec, StudyResult
from runner.studies.contract import RunContext, Study
from runner.training import (
    DetectorConf,
    RecipeJob,
    TrainConf,
    add_training_cells,
    backbone_folder,
    check_training_data,
    check_training_folder,
    check_training_plan,
    choose_threshold,
    detector_card,
    grouped_split,
    plan_key,
    plan_settings,
    promote,
    resolve_device,
    sample_rows,
    train_recipe,
)
from runner.verifiers import folder_sha256, resolve_source, write_detector_card

log = logging.getLogger(__name__)

TITLES = {
    "training": "What was trained, on what, for how long",
    "validation": "Validation (grouped by context) of the kept weights",
    "inputs": "What the input rule did",
}


@dataclass
class Params:
    """Where checkpoints go when ``paths.cache_dir`` is null (a folder of the run)."""

    checkpoint_dir: str | None = None


@dataclass
class TrainDetector(Study, name="train_detector", titles=TITLES):
    """Fine-tune a detector on answer spans; keep the best; register it if it is better."""

    detector: DetectorConf
    train: TrainConf
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """The detector and train groups are set and valid, the device exists and the
        backbone folder holds weights and a tokenizer, before any data is read."""
        detector, conf = self.detector, self.train
        detector.input_rule()
        detector.check_recipe()
        resolve_device(conf.settings().device)
        check_training_plan(detector, conf)

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Split, train with the recipe (resumable), choose the threshold, hand over the
        model under the alias the promotion rule gives it."""
        from transformers import AutoTokenizer

        detector, conf, params = self.detector, self.train, self.params
        check_training_data(data)
        rule, settings = detector.input_rule(), conf.settings()
        train_part, val_part = grouped_split(data.frame, conf.val_share, settings.seed)
        train_rows = sample_rows(train_part, conf.max_examples, settings.seed, 2)
        val_rows = sample_rows(val_part, conf.val_max_examples, settings.seed, 3)
        source = resolve_source(backbone_folder(detector.backbone))
        backbone_sha = folder_sha256(source)
        key = plan_key(
            {
                "backbone": backbone_sha,
                "data": data.fingerprint,
                "detector": plan_settings(detector),
                "train": {k: v for k, v in asdict(conf).items()
                          if k not in ("time_budget_min", "threads", "device")},
            }
        )  # fmt: skip
        root = run.cache_dir or params.checkpoint_dir
        if root is None:
            raise ConfigError(
                "train_detector needs paths.cache_dir (or study.params.checkpoint_dir)"
            )
        out_dir = Path(root) / "detector_training" / key
        check_training_folder(out_dir)  # an earlier attempt's files, before any loading
        log.info(
            "training %s (recipe %s) on %d rows (validation %d rows, %d groups held out); "
            "checkpoints in %s",
            detector.backbone, detector.recipe, len(train_rows), len(val_rows),
            val_part["group_id"].nunique(), out_dir,
        )  # fmt: skip
        job = RecipeJob(
            source, AutoTokenizer.from_pretrained(source), rule, settings, detector,
            (train_rows, val_rows), out_dir, run.progress, conf.negatives_per_positive,
            conf.synthetic_per_positive,
        )  # fmt: skip
        trained = train_recipe(detector.recipe, job)
        done = trained.done
        threshold = choose_threshold(val_rows["label"].to_numpy(int), trained.risk)
        rows = (train_rows, val_rows, val_part)
        card = detector_card(
            trained, detector, source, backbone_sha, rule, threshold, data, rows, settings, key
        )
        write_detector_card(done.best_dir, card)  # the verifier scoring it reads the rule
        promotion = promote(run.tracking, detector, settings.threads, val_rows, done.best_dir, key)
        card["promotion"] = promotion.to_dict()
        write_detector_card(done.best_dir, card)
        result = self._result(run, detector, card, done, threshold, train_rows, promotion)
        for row, column, value in trained.cells:
            result.add("validation", row, column, value)
        result.extra["validation_rows.json"] = {
            "example_ids": val_rows["example_id"].astype(str).tolist(),
            "sha256": promotion.validation_rows_sha256,
        }  # the rows every AP of the promotion decision was measured on, in order
        return result

    def _result(self, run, detector, card, done, threshold, train_rows, promotion) -> StudyResult:
        result = StudyResult(titles=dict(TITLES))
        training = card["training"]
        row = Path(detector.backbone).name or detector.backbone  # a path's folder name
        add_training_cells(result, row, card, done, threshold, promotion)
        result.extra["detector.json"] = card
        result.extra["evaluations.json"] = done.evaluations
        result.tags = {
            "backbone": detector.backbone,
            "stopped_by": done.stopped_by,
            "cut_by_time_budget": str(done.stopped_by == "time_budget").lower(),
            "promotion_alias": promotion.alias,
            "promotion": promotion.reason,
        }
        if run.tracking is not None and run.tracking.enabled:
            # the detector's MLflow pyfunc: importing it imports MLflow, which only a run
            # that registers the model should pay for (not every config registration)
            from runner.verifiers.detector_model import (
                ARTIFACT,
                DETECTOR_INPUT_FIELDS,
                DetectorModel,
                detector_signature,
            )

            example = train_rows[list(DETECTOR_INPUT_FIELDS)].head(2).reset_index(drop=True)
            result.model = ModelSpec(
                python_model=DetectorModel(),
                name=detector.model_name,
                alias=promotion.alias,
                metadata=card,
                input_example=example,
                tags={
                    "backbone": detector.backbone,
                    "plan_key": training["plan_key"],
                    "weights_sha256": sha256_file(Path(done.best_dir) / "model.safetensors"),
                    "validation_rows_sha256": promotion.validation_rows_sha256,
                },
                artifacts={ARTIFACT: str(done.best_dir)},
                signature=detector_signature(),
                version=promotion.reused_version,
            )
        else:
            log.info("tracking is off: the model is in %s, not registered", done.best_dir)
        result.extra["model_folder.json"] = {"path": str(done.best_dir)}
        return result
