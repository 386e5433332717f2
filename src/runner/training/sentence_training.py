"""Train the sentence recipe: one 2-label sequence classifier over (evidence, sentence).

Why its own module: the recipe's inputs (`runner.verifiers.sentence_pairs`) carry one label
per input instead of one per token, so batches and validation differ from the token
recipe's; the loop does not. `train_sentences` runs `runner.training.detector_training.train`
(seeded batch order, resumable atomic checkpoints, time budget, best-by-validation weights)
with this module's batch builder and validation, so both recipes keep the same guarantees.

Validation: response-level AUROC / AP of the example risk (the sentences' probabilities
aggregated by ``aggregate``), AUROC / AP of every aggregate in `AGGREGATES` (to choose one by
validation), sentence-level AUROC / AP / F1 at 0.5, and token precision / recall / F1 at 0.5
with every answer token carrying its sentence's probability (the token recipe's measure).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from runner.training.detector_training import TrainResult, TrainSettings, train
from runner.verifiers import AGGREGATES, SentencePairs, example_risks, pad


def pair_tensors(data: SentencePairs, rows: np.ndarray, pad_id: int, device: str, use_types: bool):
    """A padded batch of pairs with their 0/1 labels (``labels`` omitted when unlabelled)."""
    import torch

    enc = data.encoded
    ids, mask = pad([enc.input_ids[i] for i in rows], pad_id)
    out = {
        "input_ids": torch.from_numpy(ids).to(device),
        "attention_mask": torch.from_numpy(mask).to(device),
    }
    if data.labels is not None:
        out["labels"] = torch.from_numpy(data.labels[rows]).to(device)
    if use_types and enc.token_type_ids is not None:
        types, _ = pad([enc.token_type_ids[i] for i in rows], 0)
        out["token_type_ids"] = torch.from_numpy(types).to(device)
    return out


def predict_pair_probs(
    model, data: SentencePairs, pad_id: int, device: str, batch_size: int
) -> np.ndarray:
    """P(unsupported) of every pair (input order)."""
    import torch

    use_types = int(getattr(model.config, "type_vocab_size", 0) or 0) > 0
    out = np.zeros(len(data.encoded.input_ids))
    order = np.argsort(-data.lengths, kind="stable")
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = pair_tensors(data, rows, pad_id, device, use_types)
            batch.pop("labels", None)
            logits = model(**batch).logits.float()
            out[rows] = torch.softmax(logits, dim=-1)[:, 1].cpu().numpy()
    return out


def _auc_ap(y: np.ndarray, score: np.ndarray) -> tuple[float, float]:
    from sklearn.metrics import average_precision_score, roc_auc_score

    if len(set(y.tolist())) < 2:
        return float("nan"), float("nan")
    return float(roc_auc_score(y, score)), float(average_precision_score(y, score))


def example_labels(data: SentencePairs) -> np.ndarray:
    """An example is unfaithful when one of its sentences overlaps a gold span."""
    n = int(data.example_of.max()) + 1 if len(data.example_of) else 0
    y = np.zeros(n, dtype=int)
    np.maximum.at(y, data.example_of, data.labels)
    return y


def pair_metrics(probs: np.ndarray, data: SentencePairs, aggregate: str) -> dict[str, Any]:
    """Validation measures of pair probabilities (see the module docstring)."""
    y = example_labels(data)
    out: dict[str, Any] = {"n_examples": len(y), "aggregate": aggregate}
    for how in AGGREGATES:
        auroc, ap = _auc_ap(y, example_risks(probs, data.example_of, len(y), how))
        out[f"auroc_{how}"], out[f"ap_{how}"] = auroc, ap
    out["auroc"], out["ap"] = out[f"auroc_{aggregate}"], out[f"ap_{aggregate}"]
    out["sentence_auroc"], out["sentence_ap"] = _auc_ap(data.labels, probs)
    flag, gold = probs >= 0.5, data.labels == 1
    tp, fp, fn = int((flag & gold).sum()), int((flag & ~gold).sum()), int((~flag & gold).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    out["sentence_precision"], out["sentence_recall"] = precision, recall
    out["sentence_f1"] = (
        2 * precision * recall / (precision + recall) if precision + recall else 0.0
    )
    # token level, every answer token carrying its sentence's probability: comparable with
    # the token recipe's token F1 (LettuceDetect's measure)
    tp = fp = fn = 0
    for p, gold_tokens in zip(probs, data.token_gold, strict=True):
        hit = gold_tokens == 1
        if p >= 0.5:
            tp, fp = tp + int(hit.sum()), fp + int((~hit).sum())
        else:
            fn += int(hit.sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    out["token_precision"], out["token_recall"] = precision, recall
    out["token_f1"] = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return out


def evaluate_pairs(
    model,
    data: SentencePairs,
    pad_id: int,
    device: str,
    batch_size: int,
    aggregate: str = "max",
    memo: dict | None = None,
) -> dict[str, Any]:
    """Validation pass: `pair_metrics` of the model's pair probabilities (kept in
    ``memo["probs"]`` when given: the caller need not score the kept weights again)."""
    probs = predict_pair_probs(model, data, pad_id, device, batch_size)
    if memo is not None:
        memo["probs"] = probs
    return pair_metrics(probs, data, aggregate)


def train_sentences(
    model,
    tokenizer,
    train_data: SentencePairs,
    val_data: SentencePairs,
    settings: TrainSettings,
    out_dir: Path,
    aggregate: str = "max",
    progress: bool = True,
    stop_after_steps: int | None = None,
    memo: dict | None = None,
) -> TrainResult:
    """Fine-tune an ``AutoModelForSequenceClassification`` (2 labels) on labelled pairs.

    The loop, its checkpoints and its guarantees are `detector_training.train`'s; the kept
    weights are the best by ``settings.select_by`` (``ap`` / ``auroc`` of the example risk
    under `aggregate`). `memo` receives the validation probabilities of the last evaluation
    of this call (``probs``), so a caller whose kept weights are the last evaluated ones
    (one epoch, evaluated at its end) reuses them instead of a second validation pass.
    """
    if train_data.labels is None or val_data.labels is None:
        raise ValueError("train_sentences: pairs without labels (build them with gold spans)")
    return train(
        model,
        tokenizer,
        train_data,
        val_data,
        settings,
        out_dir,
        progress,
        stop_after_steps=stop_after_steps,
        tensors=pair_tensors,
        evaluate_fn=partial(evaluate_pairs, aggregate=aggregate, memo=memo),
    )
