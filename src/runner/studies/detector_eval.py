"""The trained detector on held-out data, like for like against the cheap gates.

Everything is scored on a split the detector never saw (RAGTruth test by default; train
and test share no context). Rows:

- the detector (``verifiers.<verifier>``, e.g. ``models:/ragtruth_detector@champion``) as
  trained, and its int8 dynamic-quantised copy (same weights, `Verifier.with_settings`);
- the baseline gates (RAGScope-E, ROUGE-L) **fitted on the training split and scored on
  the test split**, the detector's own protocol;
- the stacked gate: the base gate's features plus the detector's risk, scored out of fold
  under the grouped split on the test rows, beside the base gate scored the same way (so
  the pair differs only in the detector's column).

Measures: AUROC and AP per task, Macro and Combined with 95 % context-group bootstrap
intervals; paired deltas on the same resamples; example-level P/R/F1 at the threshold the
validation split chose (``detector.json``) and at 0.5; LettuceDetect's span-level
character-overlap P/R/F1 (tokens >= ``span_threshold``); ms/example of complete inference
(input rule + tokenisation + forward, model loading excluded) on a seeded task-stratified
sample, at the verifier's ``threads``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from runner.data import load_ragtruth
from runner.errors import ConfigError, DataError
from runner.evaluation import BootstrapConf, gate_runtime, scopes, score_gates
from runner.features import with_lexical_features
from runner.frames import check_labels
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study, check_named
from runner.verifiers import gold_spans, span_overlap_counts, time_scoring, timing_sample

log = logging.getLogger(__name__)

TITLES = {
    "detector_test": "Held-out AUROC / AP (95 % context-group CIs): detector, its int8 copy, "
    "gates fitted on train, the stacked gate (out of fold)",
    "detector_deltas": "Paired differences on the same bootstrap resamples",
    "detector_examples": "Example-level precision / recall / F1 of the detector",
    "detector_spans": "Span-level character-overlap precision / recall / F1 (LettuceDetect's)",
    "detector_cost": "ms/example of complete local inference",
}


@dataclass
class Params:
    """Which parts fill the tables and how cost is measured."""

    verifier: str = "detector"
    baselines: list[str] = field(default_factory=lambda: ["ragscope_e", "rouge_l"])
    fit_split: str = "train"  # RAGTruth split the baseline gates are fitted on
    fit_limit: int | None = None  # first N rows of it only (quick runs); null = all
    stacked: str | None = "ragscope_e"  # base gate of the stacked row (null: no stacked row)
    # a second stacked row with the detector's answer-level aggregates of its sentence
    # probabilities (token-weighted mean, share of tokens at or above its threshold) beside
    # the max (issue 43, item 4)
    fused: bool = True
    int8: bool = True
    span_threshold: float = 0.5
    timing_sample: int = 64
    timing_repeats: int = 3
    gate_timing_rows: int = 540
    score_chunk: int = 64


def _prf(tp: int, n_pred: int, n_gold: int) -> dict[str, float]:
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def example_prf(y: np.ndarray, risk: np.ndarray, threshold: float) -> dict[str, float]:
    """Precision / recall / F1 of ``risk >= threshold`` as the hallucinated class."""
    flag = risk >= threshold
    return _prf(int((flag & (y == 1)).sum()), int(flag.sum()), int((y == 1).sum()))


def span_prf(token_scores: list, frame: pd.DataFrame, threshold: float) -> dict[str, float]:
    """Character-overlap P/R/F1 summed over examples (flagged token runs vs gold spans)."""
    tp = n_pred = n_gold = 0
    for scores, (_, row) in zip(token_scores, frame.iterrows(), strict=True):
        predicted = scores.spans(threshold - 1e-12)  # TokenScores flags strictly above
        gold = gold_spans(list(row["spans"]), row["answer"], str(row["example_id"]))
        a, b, c = span_overlap_counts(predicted, gold)
        tp, n_pred, n_gold = tp + a, n_pred + b, n_gold + c
    return _prf(tp, n_pred, n_gold)


def _token_scores(verifier: Any, frame: pd.DataFrame, chunk: int, progress: bool) -> list:
    from tqdm.auto import tqdm

    out = []
    for start in tqdm(range(0, len(frame), chunk), disable=not progress, desc="detector"):
        part = frame.iloc[start : start + chunk]
        out += verifier.token_scores(part["question"], part["context"], part["answer"])
    return out


@dataclass
class DetectorEval(Study, name="detector_eval", titles=TITLES):
    """A trained token detector against gates, on data it never saw."""

    verifiers: dict[str, Any]
    gates: dict[str, Any]
    split: Any
    bootstrap: BootstrapConf
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """The named verifier and gates are configured."""
        params = self.params
        check_named(self.verifiers, [params.verifier], "study.params.verifier", "verifiers")
        check_named(self.gates, params.baselines, "study.params.baselines", "gates")
        if params.stacked:
            check_named(self.gates, [params.stacked], "study.params.stacked", "gates")

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score, fit the baselines on the training split, bootstrap, time."""
        params, boot = self.params, self.bootstrap
        test = data.frame.reset_index(drop=True)
        check_labels(
            test["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
        )
        name, verifier = params.verifier, self.verifiers[params.verifier]
        verifier.load()
        token_scores = _token_scores(verifier, test, params.score_chunk, run.progress)
        scores = test[["example_id", "group_id", "task", "label"]].copy()
        scores[name] = [s.max_prob() for s in token_scores]
        card = getattr(verifier, "_card", None) or {}
        result = StudyResult(titles=dict(TITLES))
        runtime: dict[str, Any] = {"input_rule": verifier.rule().to_dict(), "card": card}
        sample = timing_sample(test, params.timing_sample, run.seed)
        runtime[name], _ = time_scoring(verifier, sample, repeats=params.timing_repeats)
        rows = [name]
        if params.int8:
            quant = verifier.with_settings(quantize="int8_dynamic")
            q_name = f"{name} [int8]"
            q_scores = _token_scores(quant, test, params.score_chunk, run.progress)
            scores[q_name] = [s.max_prob() for s in q_scores]
            runtime[q_name], _ = time_scoring(quant, sample, repeats=params.timing_repeats)
            rows.append(q_name)
        features = with_lexical_features(test, run.cache_dir)
        fitted = self._baselines(run, features, scores)
        rows += list(fitted)
        if params.stacked:
            rows += self._stacked(run, features, scores, token_scores, card, verifier)
        stats = scopes.bootstrap_scopes(scores, rows, boot)
        scopes.add_scope_table(result, "detector_test", stats, rows)
        pairs = [(name, b) for b in fitted]
        if params.int8:
            pairs.append((rows[1], name))
        if params.stacked:
            pairs.append((f"stacked {params.stacked} + {name}", f"{params.stacked} (out of fold)"))
            if params.fused:
                pairs.append(
                    (
                        f"fused {params.stacked} + {name} aggregates",
                        f"{params.stacked} (out of fold)",
                    )
                )
        scopes.add_delta_table(result, "detector_deltas", stats, pairs)
        self._flags(result, params, test, scores[name].to_numpy(), token_scores, card, verifier)
        gate_cost = gate_runtime(
            {b: self.gates[b] for b in params.baselines}, features,
            self.split, params.gate_timing_rows, params.timing_repeats,
        )  # fmt: skip
        runtime["gates"] = gate_cost
        _add_costs(result, rows, runtime, gate_cost)
        scopes.add_bootstrap_info(result, stats)
        result.scores, result.runtime = scores, runtime
        result.tags = {"detector": str(verifier.model), "input_rule": verifier.rule().rule}
        return result

    def _baselines(self, run, features, scores) -> dict[str, str]:
        """Fit each baseline gate on the training split, score the test rows."""
        params = self.params
        train = load_ragtruth(split=params.fit_split, limit=params.fit_limit).frame
        overlap = set(train["group_id"]) & set(features["group_id"])
        if overlap:
            raise ConfigError(f"{params.fit_split} and the test data share {len(overlap)} contexts")
        train = with_lexical_features(train, run.cache_dir)
        out = {}
        for gate_name in params.baselines:
            gate = self.gates[gate_name]
            if getattr(gate, "needs_fit", False):
                gate = clone(gate).fit(train, train["label"].to_numpy())
            row = f"{gate_name} (fit on {params.fit_split})"
            scores[row] = np.asarray(gate.score(features), dtype=float)
            out[row] = gate_name
        return out

    def _stacked(self, run, features, scores, token_scores, card, verifier) -> list[str]:
        """Base gate features + detector risk, and the base gate alone, both out of fold
        (with ``fused``: also the base gate + the detector's answer-level aggregates)."""
        params = self.params
        frame = features.copy()
        frame["detector_risk"] = scores[params.verifier].to_numpy()
        base = self.gates[params.stacked]
        stacked_name = f"stacked {params.stacked} + {params.verifier}"
        base_name = f"{params.stacked} (out of fold)"
        gates = {
            stacked_name: clone(base).set_params(extra_features=["detector_risk"]),
            base_name: clone(base),
        }
        if params.fused:
            threshold = float(card.get("threshold", verifier.threshold))
            frame["detector_mean"] = [float(np.mean(s.probs)) for s in token_scores]
            frame["detector_flagged_share"] = [
                float(np.mean(s.probs >= threshold)) for s in token_scores
            ]
            extra = ["detector_risk", "detector_mean", "detector_flagged_share"]
            gates[f"fused {params.stacked} + {params.verifier} aggregates"] = clone(
                base
            ).set_params(extra_features=extra)
        oof = score_gates(gates, frame, self.split, progress=run.progress)
        for column in gates:
            scores[column] = oof[column].to_numpy()
        return list(gates)

    def _flags(self, result, params, test, risk, token_scores, card, verifier) -> None:
        y = test["label"].to_numpy(int)
        chosen = float(card.get("threshold", verifier.threshold))
        for label, threshold in (("validation threshold", chosen), ("0.5", 0.5)):
            prf = example_prf(y, risk, threshold)
            for column, value in (("threshold", threshold), *prf.items()):
                result.add("detector_examples", label, column, value)
        if "spans" in test.columns:
            for task in [*scopes.task_order(test), scopes.COMBINED]:
                keep = (
                    np.ones(len(test), bool)
                    if task == scopes.COMBINED
                    else (test["task"] == task).to_numpy()
                )
                part = [s for s, k in zip(token_scores, keep, strict=True) if k]
                prf = span_prf(part, test[keep], params.span_threshold)
                for column, value in prf.items():
                    result.add("detector_spans", task, column, value)


def _add_costs(result: StudyResult, rows: list[str], runtime: dict, gate_cost: dict) -> None:
    """ms per example of every row: measured with the detector, else its baseline gate's."""
    for row in rows:
        cost = runtime.get(row, {}).get("ms_per_example")
        base = row.split(" ")[0]
        if cost is None and base in gate_cost:
            cost = gate_cost[base]["median_ms_per_example"]
        if cost is not None:
            result.add("detector_cost", row, "ms/example", cost)
