"""Train a local token detector with LettuceDetect's recipe and register it.

The recipe (`runner.verifiers.detector_training`) on any encoder (``detector.backbone``,
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

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from runner.data import sha256_file
from runner.errors import ConfigError
from runner.results import ModelSpec, StudyResult
from runner.studies.contract import Inputs, Study
from runner.verifiers import (
    ARTIFACT,
    INPUT_FIELDS,
    DetectorConf,
    DetectorModel,
    TrainConf,
    backbone_folder,
    choose_threshold,
    folder_sha256,
    label_segments,
    predict_token_probs,
    signature,
    train,
    write_detector_card,
)

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


def grouped_split(
    frame: pd.DataFrame, share: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, validation): whole context groups go to validation, about `share` of rows."""
    if not 0.0 < share < 1.0:
        raise ConfigError(f"train.val_share must be in (0, 1), got {share}")
    groups = np.array(sorted(frame["group_id"].astype(str).unique()))
    rng = np.random.default_rng([seed, 1])
    held = set(groups[rng.permutation(len(groups))[: max(1, round(share * len(groups)))]])
    mask = frame["group_id"].astype(str).isin(held).to_numpy()
    return frame[~mask].reset_index(drop=True), frame[mask].reset_index(drop=True)


def _sample(frame: pd.DataFrame, n: int | None, seed: int, salt: int) -> pd.DataFrame:
    if n is None or n >= len(frame):
        return frame
    rows = np.sort(np.random.default_rng([seed, salt]).choice(len(frame), n, replace=False))
    return frame.iloc[rows].reset_index(drop=True)


def _by_task(rows: pd.DataFrame, risk: np.ndarray) -> dict[str, dict[str, float | None]]:
    """Validation AUROC / AP of the kept weights within each task (None: one class)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    out = {}
    for task in sorted(rows["task"].astype(str).unique()):
        mask = (rows["task"].astype(str) == task).to_numpy()
        y = rows["label"].to_numpy(int)[mask]
        two = len(set(y.tolist())) == 2
        out[task] = {
            "rows": int(mask.sum()),
            "auroc": float(roc_auc_score(y, risk[mask])) if two else None,
            "ap": float(average_precision_score(y, risk[mask])) if two else None,
        }
    return out


def plan_key(parts: dict) -> str:
    """A short hash of everything that decides the trained weights."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class TrainDetector(Study, name="train_detector", params=Params, titles=TITLES):
    """Fine-tune a token classifier on answer spans; keep the best; register it."""

    def check(self, inputs: Inputs, params: Params) -> None:
        """The detector and train groups are set and valid, before any data is read."""
        detector: DetectorConf = inputs.require("detector")
        conf: TrainConf = inputs.require("train")
        detector.input_rule()
        detector.check_recipe()
        conf.settings()
        backbone_folder(detector.backbone)

    def run(self, inputs: Inputs, params: Params) -> StudyResult:
        """Split, tokenise, train (resumable), choose the threshold, hand over the model."""
        import torch
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        from runner.verifiers import resolve_source

        detector: DetectorConf = inputs.require("detector")
        if detector.recipe == "sentence":  # runner.studies._sentence_recipe
            from runner.studies._sentence_recipe import run_sentence

            shared = {"split": grouped_split, "sample": _sample, "by_task": _by_task,
                      "plan_key": plan_key}  # fmt: skip
            return run_sentence(self, inputs, params, **shared)
        conf: TrainConf = inputs.require("train")
        data = inputs.require("data")
        rule, settings = detector.input_rule(), conf.settings()
        train_part, val_part = grouped_split(data.frame, conf.val_share, settings.seed)
        train_rows = _sample(train_part, conf.max_examples, settings.seed, 2)
        val_rows = _sample(val_part, conf.val_max_examples, settings.seed, 3)
        source = resolve_source(backbone_folder(detector.backbone))
        tokenizer = AutoTokenizer.from_pretrained(source)
        torch.manual_seed(settings.seed)
        model = AutoModelForTokenClassification.from_pretrained(source, num_labels=2)
        if detector.freeze_embeddings:
            for p in model.base_model.embeddings.parameters():
                p.requires_grad_(False)
        backbone_sha = folder_sha256(source)
        key = plan_key(
            {
                "backbone": backbone_sha,
                "data": data.fingerprint,
                # the sentence recipe's settings leave the token recipe's key unchanged
                "detector": {k: v for k, v in asdict(detector).items()
                             if k not in ("recipe", "aggregate")},
                "train": {k: v for k, v in asdict(conf).items()
                          if k not in ("time_budget_min", "threads", "device")},
            }
        )  # fmt: skip
        root = inputs.cache_dir or params.checkpoint_dir
        if root is None:
            raise ConfigError(
                "train_detector needs paths.cache_dir (or study.params.checkpoint_dir)"
            )
        out_dir = Path(root) / "detector_training" / key
        log.info(
            "training %s on %d rows (validation %d rows, %d groups held out); checkpoints in %s",
            detector.backbone, len(train_rows), len(val_rows),
            val_part["group_id"].nunique(), out_dir,
        )  # fmt: skip
        train_data = label_segments(tokenizer, rule, train_rows)
        val_data = label_segments(tokenizer, rule, val_rows)
        done = train(model, tokenizer, train_data, val_data, settings, out_dir, inputs.progress)
        best = AutoModelForTokenClassification.from_pretrained(done.best_dir)
        probs = predict_token_probs(
            best, val_data, tokenizer.pad_token_id, "cpu", settings.eval_batch_size
        )
        risk = np.zeros(len(val_rows))
        for k, p in enumerate(probs):
            owner = val_data.segments.example_of[k]
            risk[owner] = max(risk[owner], float(p.max()) if len(p) else 0.0)
        threshold = choose_threshold(val_rows["label"].to_numpy(int), risk)
        by_task = _by_task(val_rows, risk)
        card = {
            "recipe": "lettucedetect token classification",
            "backbone": detector.backbone,
            "backbone_source": source,
            "backbone_sha256": backbone_sha,
            "input_rule": rule.to_dict(),
            "threshold": threshold["threshold"],
            "validation": {**done.best, "threshold": threshold, "by_task": by_task},
            "training": {
                "data": data.name,
                "data_fingerprint": data.fingerprint,
                "data_sha256": {f: sha256_file(f) for f in data.files},
                "rows": len(train_rows),
                "validation_rows": len(val_rows),
                "validation_groups": int(val_part["group_id"].nunique()),
                "steps_done": done.steps_done,
                "steps_planned": done.steps_planned,
                "stopped_by": done.stopped_by,
                "train_seconds": done.train_seconds,
                "resumed_from_step": done.resumed_from,
                "freeze_embeddings": detector.freeze_embeddings,
                "settings": asdict(settings),
                "plan_key": key,
            },
            "input_stats": {
                "train": train_data.segments.stats.to_dict(),
                "validation": val_data.segments.stats.to_dict(),
            },
        }
        write_detector_card(done.best_dir, card)
        return self._result(inputs, detector, card, done, threshold, train_rows)

    def _result(self, inputs, detector, card, done, threshold, train_rows) -> StudyResult:
        result = StudyResult(titles=dict(TITLES))
        training = card["training"]
        row = Path(detector.backbone).name or detector.backbone  # a path's folder name
        for label in ("rows", "validation_rows", "validation_groups", "steps_done",
                      "steps_planned", "train_seconds"):  # fmt: skip
            result.add("training", row, label, training[label])
        result.add("training", row, "examples_seen", done.examples_seen)
        result.add(
            "training", row, "stopped_by_time_budget",
            float(done.stopped_by == "time_budget"),
        )  # fmt: skip
        for label in ("auroc", "ap", "token_precision", "token_recall", "token_f1", "step"):
            value = done.best.get(label)
            finite = value is not None and np.isfinite(value)
            result.add("validation", "kept weights", label, value if finite else None)
        for label in ("threshold", "f1", "precision", "recall"):
            value = threshold[label]
            result.add("validation", "example threshold", label,
                       value if np.isfinite(value) else None)  # fmt: skip
        for task, values in card["validation"]["by_task"].items():
            for label, value in values.items():
                result.add("validation", f"task {task}", label, value)
        for part, stats in card["input_stats"].items():
            for label, value in stats.items():
                result.add("inputs", part, label, value)
        result.series["train_loss"] = [(h["step"], h["loss"]) for h in done.history]
        for name in ("auroc", "ap", "token_f1"):
            result.series[f"validation_{name}"] = [
                (e["step"], e[name]) for e in done.evaluations if np.isfinite(e[name])
            ]
        result.extra["detector.json"] = card
        result.extra["evaluations.json"] = done.evaluations
        result.tags = {"backbone": detector.backbone, "stopped_by": done.stopped_by}
        if inputs.tracking is not None and inputs.tracking.enabled:
            example = train_rows[list(INPUT_FIELDS)].head(2).reset_index(drop=True)
            result.model = ModelSpec(
                python_model=DetectorModel(),
                name=detector.model_name,
                alias=detector.alias,
                metadata=card,
                input_example=example,
                tags={"backbone": detector.backbone, "plan_key": training["plan_key"]},
                artifacts={ARTIFACT: str(done.best_dir)},
                signature=signature(),
            )
        else:
            log.info("tracking is off: the model is in %s, not registered", done.best_dir)
        result.extra["model_folder.json"] = {"path": str(done.best_dir)}
        return result
