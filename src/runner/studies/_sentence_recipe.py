"""``experiment=train_detector detector.recipe=sentence``: the sentence-level cross-encoder.

Why a recipe beside the token one (issue 31): the token recipe's 256-token window holds a
whole answer and about a fifth of a RAGTruth context; a sentence is short, so the same
small encoder, given one answer sentence and the context sentences most relevant to it
(`runner.verifiers.sentence_pairs`), sees the evidence that sentence needs. A sequence
classifier (``AutoModelForSequenceClassification``, 2 labels) on the same backbone learns
P(sentence unsupported); the example risk aggregates an answer's sentences
(``detector.aggregate``).

The split, the row samples, the plan key and the checkpoint folder are the token recipe's
(`runner.studies.train_detector`): the same seed holds out the same validation rows, so the
two recipes are compared on the same 600 rows, and test is never read. The folder's
``detector.json`` says ``recipe: sentence``, so every verifier that loads it
(`LettuceDetectVerifier`, the pyfunc `DetectorModel`) scores with this recipe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from runner.data import sha256_file
from runner.errors import ConfigError
from runner.results import StudyResult
from runner.studies.contract import Inputs
from runner.verifiers import (
    AGGREGATES,
    backbone_folder,
    build_pairs,
    choose_threshold,
    example_risks,
    folder_sha256,
    gold_spans,
    pair_metrics,
    predict_pair_probs,
    resolve_source,
    train_sentences,
    write_detector_card,
)

log = logging.getLogger(__name__)

RECIPE = "sentence"


def length_baseline(rows) -> dict[str, float | None]:
    """AUROC / AP of the answer's word count on the same rows (the bar any detector
    whose risk is a maximum over pieces must clear; docs/detector.md)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    y = rows["label"].to_numpy(int)
    words = np.array([len(str(a).split()) for a in rows["answer"]], dtype=float)
    if len(set(y.tolist())) < 2:
        return {"auroc": None, "ap": None}
    return {
        "auroc": float(roc_auc_score(y, words)),
        "ap": float(average_precision_score(y, words)),
    }


def labelled_pairs(tokenizer, rule, rows):
    """Pairs of every sentence of `rows` with labels from the rows' gold spans."""
    if "spans" not in rows.columns:
        raise ConfigError(
            "training a sentence detector needs answer spans: the data set's frame has no "
            "'spans' column (RAGTruth has one; a rag_file does not)"
        )
    gold = [
        gold_spans(list(s), a, str(i))
        for s, a, i in zip(rows["spans"], rows["answer"], rows["example_id"], strict=True)
    ]
    return build_pairs(
        tokenizer,
        rule,
        rows["question"].tolist(),
        rows["context"].tolist(),
        rows["answer"].tolist(),
        rows["example_id"].tolist(),
        gold,
    )


def run_sentence(
    study,
    inputs: Inputs,
    params,
    split: Callable,
    sample: Callable,
    by_task: Callable,
    plan_key: Callable,
) -> StudyResult:
    """Split, build pairs, train (resumable), choose the threshold, hand over the model.

    `split`, `sample`, `by_task` and `plan_key` are `runner.studies.train_detector`'s
    (passed in, not imported: that module dispatches here), so both recipes hold out the
    same validation rows and key their checkpoints the same way.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    detector = inputs.require("detector")
    conf = inputs.require("train")
    data = inputs.require("data")
    rule, settings = detector.input_rule(), conf.settings()
    train_part, val_part = split(data.frame, conf.val_share, settings.seed)
    train_rows = sample(train_part, conf.max_examples, settings.seed, 2)
    val_rows = sample(val_part, conf.val_max_examples, settings.seed, 3)
    source = resolve_source(backbone_folder(detector.backbone))
    tokenizer = AutoTokenizer.from_pretrained(source)
    torch.manual_seed(settings.seed)
    model = AutoModelForSequenceClassification.from_pretrained(source, num_labels=2)
    if detector.freeze_embeddings:
        for p in model.base_model.embeddings.parameters():
            p.requires_grad_(False)
    backbone_sha = folder_sha256(source)
    key = plan_key(
        {
            "backbone": backbone_sha,
            "data": data.fingerprint,
            "detector": asdict(detector),
            "train": {k: v for k, v in asdict(conf).items()
                      if k not in ("time_budget_min", "threads", "device")},
        }
    )  # fmt: skip
    root = inputs.cache_dir or params.checkpoint_dir
    if root is None:
        raise ConfigError("train_detector needs paths.cache_dir (or study.params.checkpoint_dir)")
    out_dir = Path(root) / "detector_training" / key
    train_data = labelled_pairs(tokenizer, rule, train_rows)
    val_data = labelled_pairs(tokenizer, rule, val_rows)
    log.info(
        "training the sentence recipe on %s: %d rows (%d sentence pairs), validation %d rows "
        "(%d pairs, %d groups held out); checkpoints in %s",
        detector.backbone, len(train_rows), len(train_data.labels), len(val_rows),
        len(val_data.labels), val_part["group_id"].nunique(), out_dir,
    )  # fmt: skip
    memo: dict = {}
    done = train_sentences(
        model, tokenizer, train_data, val_data, settings, out_dir, detector.aggregate,
        inputs.progress, memo=memo,
    )  # fmt: skip
    if "probs" in memo and done.evaluations[-1]["step"] == done.best.get("step"):
        probs = memo["probs"]  # the kept weights are the last evaluated (in this call)
    else:
        best = AutoModelForSequenceClassification.from_pretrained(done.best_dir)
        probs = predict_pair_probs(best, val_data, tokenizer.pad_token_id, "cpu",
                                   settings.eval_batch_size)  # fmt: skip
    risk = example_risks(probs, val_data.example_of, len(val_rows), detector.aggregate)
    y = val_rows["label"].to_numpy(int)
    threshold = choose_threshold(y, risk)
    measures = pair_metrics(probs, val_data, detector.aggregate)
    aggregates = {
        how: {"auroc": _finite(measures[f"auroc_{how}"]), "ap": _finite(measures[f"ap_{how}"])}
        for how in AGGREGATES
    }
    card = {
        "recipe": RECIPE,
        "recipe_description": "sentence pairs: answer sentence + best evidence, sequence "
        "classification; example risk = aggregate of sentence probabilities",
        "aggregate": detector.aggregate,
        "backbone": detector.backbone,
        "backbone_source": source,
        "backbone_sha256": backbone_sha,
        "input_rule": rule.to_dict(),
        "threshold": threshold["threshold"],
        "validation": {
            **done.best,
            "threshold": threshold,
            "by_task": by_task(val_rows, risk),
            "aggregates": aggregates,
            "length_baseline": length_baseline(val_rows),
        },
        "training": {
            "data": data.name,
            "data_fingerprint": data.fingerprint,
            "data_sha256": {f: sha256_file(f) for f in data.files},
            "rows": len(train_rows),
            "pairs": len(train_data.labels),
            "positive_pair_share": float(train_data.labels.mean())
            if len(train_data.labels)
            else 0.0,
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
            "train": train_data.stats.to_dict(),
            "validation": val_data.stats.to_dict(),
        },
    }
    write_detector_card(done.best_dir, card)
    result = study._result(inputs, detector, card, done, threshold, train_rows)
    for how, values in aggregates.items():
        for label, value in values.items():
            result.add("validation", f"aggregate {how}", label, value)
    for label, value in card["validation"]["length_baseline"].items():
        result.add("validation", "answer length baseline", label, value)
    for label in ("sentence_auroc", "sentence_ap", "sentence_f1"):
        result.add("validation", "kept weights", label, _finite(done.best.get(label)))
    return result


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None
