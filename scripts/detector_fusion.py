"""Fusion at sentence level against response-level stacking, on RAGTruth test (issue 43, item 4).

Why a script: the issue asks which rule turns the detector's per-sentence evidence and the
lexical features into the best response risk: the detector alone, the base gate with the
detector's risk (as `detector_eval`'s stacked row: its probability; as the stacked gate,
`gate=ragscope_e_detector`: its log-odds), or a per-sentence model (each answer sentence's
detector logit with that sentence's 13 lexical features against the context) aggregated to
the response by max, noisy-or, the mean of the top two, or learned (the base gate plus the
aggregates, fitted with an inner out-of-fold loop so no aggregate was fitted on its own
fold), and the two best of those again on RAGScope-E+sim (`gate=ragscope_e_sim`: the frozen
encoder's best-evidence similarity added; ``--no-similarity`` leaves them out). Every
learned rule is scored out of fold on the same 5 context-grouped folds as
`detector_eval` (`GroupedKFold`, seed 13); RAGTruth test's sentence labels (a sentence
overlapping a gold span by one character) train the per-sentence model inside the folds.

    python scripts/detector_fusion.py --model models:/ragtruth_detector@champion \
        --out artifacts/detector_fusion      # make detector-fusion (~12 min, 2 cores)

Writes ``units.parquet`` (every sentence's logit and label; ``--units`` reuses it),
``fusion.json`` and ``fusion.md`` (AUROC / AP overall and by task) into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from runner.data import load_ragtruth
from runner.evaluation import GroupedKFold
from runner.features import lexical_features, with_lexical_features
from runner.gates import ENHANCED_FEATURES, LogitGate

SEED = 13
FOLDS = 5


def score_units(model: str, frame: pd.DataFrame, chunk: int = 300) -> pd.DataFrame:
    """Every answer sentence's detector logit (float32, 2 threads) and its gold label."""
    from runner.verifiers import LettuceDetectVerifier

    verifier = LettuceDetectVerifier(model=model, threads=2, batch_size=16, quantize=None)
    parts = []
    for lo in range(0, len(frame), chunk):
        part = verifier.sentence_logits(frame.iloc[lo : lo + chunk])
        parts.append(part.assign(row=part["row"] + lo))
        print(f"scored {min(lo + chunk, len(frame))} / {len(frame)} rows", flush=True)
    units = pd.concat(parts, ignore_index=True)
    labels = []
    for row, start, end in zip(units["row"], units["start"], units["end"], strict=True):
        gold = [(int(s["start"]), int(s["end"])) for s in frame.at[row, "spans"]]
        labels.append(int(any(start < g_end and g_start < end for g_start, g_end in gold)))
    return units.assign(label=labels)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-9, 1 - 1e-9)
    return np.log(p) - np.log1p(-p)


def _aggregates(p: np.ndarray, rows: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Per response: max, noisy-or, mean of the top two and mean of its sentences' p."""
    by_row = pd.Series(np.clip(p, 1e-9, 1 - 1e-9)).groupby(rows)
    out = {
        "max": by_row.max(),
        "noisy_or": 1 - np.exp(by_row.apply(lambda v: np.log1p(-v).sum())),
        "top2": by_row.apply(lambda v: np.sort(v.to_numpy())[-2:].mean()),
        "mean": by_row.mean(),
    }
    return {k: v.reindex(range(n)).to_numpy() for k, v in out.items()}


def _sentence_model():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))


def fuse(
    frame: pd.DataFrame, units: pd.DataFrame, similarity: bool = True, cache_dir: str | None = None
) -> dict[str, np.ndarray]:
    """Out-of-fold response risks of every rule (with `similarity`, two more on
    RAGScope-E+sim, its sentence vectors cached in `cache_dir`)."""
    n, y = len(frame), frame["label"].to_numpy(int)
    sentences = pd.DataFrame(
        {
            "question": frame["question"].to_numpy()[units["row"]],
            "context": frame["context"].to_numpy()[units["row"]],
            "answer": [
                frame.at[r, "answer"][s:e]
                for r, s, e in zip(units["row"], units["start"], units["end"], strict=True)
            ],
        }
    )
    per_row = units.groupby("row")["row"].transform("size").to_numpy()
    x = np.column_stack([units["logit"], lexical_features(sentences).to_numpy(), np.log(per_row)])
    labels, owner = units["label"].to_numpy(int), units["row"].to_numpy()
    folds = np.zeros(n, int)
    for k, fold in enumerate(GroupedKFold(FOLDS, seed=SEED).folds(frame)):
        folds[fold.test_idx] = k
    max_logit = units.groupby("row")["logit"].max().reindex(range(n)).to_numpy()
    base = LogitGate(features=list(ENHANCED_FEATURES), tfidf=True, random_state=SEED)
    names = ["RAGScope-E (out of fold)", "stacked, detector probability",
             "stacked, detector log-odds (gate=ragscope_e_detector)",
             "sentence model, max", "sentence model, noisy-or", "sentence model, top-2 mean",
             "learned: RAGScope-E + sentence model max and mean",
             "stacked, detector log-odds, on RAGScope-E+sim",
             "learned, on RAGScope-E+sim"]  # fmt: skip
    if not similarity:
        names = names[:-2]
    sim = clone(base).set_params(similarity=True, cache_dir=cache_dir)
    out = {name: np.zeros(n) for name in names}
    stacked = frame.assign(p_risk=1 / (1 + np.exp(-max_logit)), logit_risk=max_logit)
    for k in range(FOLDS):
        train, test = folds != k, folds == k
        fits = {
            names[0]: clone(base),
            names[1]: clone(base).set_params(extra_features=["p_risk"]),
            names[2]: clone(base).set_params(extra_features=["logit_risk"]),
        }
        for name, gate in fits.items():
            out[name][test] = gate.fit(stacked[train], y[train]).score(stacked[test])
        model = _sentence_model().fit(x[train[owner]], labels[train[owner]])
        agg = _aggregates(model.predict_proba(x[test[owner]])[:, 1], owner[test[owner]], n)
        for name, rule in zip(names[3:6], ("max", "noisy_or", "top2"), strict=True):
            out[name][test] = agg[rule][test]
        inner_max, inner_mean = agg["max"].copy(), agg["mean"].copy()
        for j in set(range(FOLDS)) - {k}:
            fit_rows, held = train & (folds != j), folds == j
            inner = _sentence_model().fit(x[fit_rows[owner]], labels[fit_rows[owner]])
            part = _aggregates(inner.predict_proba(x[held[owner]])[:, 1], owner[held[owner]], n)
            inner_max[held], inner_mean[held] = part["max"][held], part["mean"][held]
        learned = frame.assign(s_max=_logit(inner_max), s_mean=_logit(inner_mean))
        gate = clone(base).set_params(extra_features=["s_max", "s_mean"])
        out[names[6]][test] = gate.fit(learned[train], y[train]).score(learned[test])
        if similarity:
            gate = clone(sim).set_params(extra_features=["logit_risk"])
            out[names[7]][test] = gate.fit(stacked[train], y[train]).score(stacked[test])
            gate = clone(sim).set_params(extra_features=["s_max", "s_mean"])
            out[names[8]][test] = gate.fit(learned[train], y[train]).score(learned[test])
    return {"detector alone (max sentence probability)": max_logit, **out}


def table(frame: pd.DataFrame, risks: dict[str, np.ndarray]) -> list[dict]:
    y, tasks = frame["label"].to_numpy(int), frame["task"].to_numpy()
    rows = []
    for name, risk in risks.items():
        row = {
            "rule": name,
            "auroc": roc_auc_score(y, risk),
            "ap": average_precision_score(y, risk),
        }
        for task in sorted(set(tasks)):
            keep = tasks == task
            row[f"auroc {task}"] = roc_auc_score(y[keep], risk[keep])
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models:/ragtruth_detector@champion")
    parser.add_argument("--out", default="artifacts/detector_fusion")
    parser.add_argument("--units", help="a units.parquet from an earlier run (no scoring)")
    parser.add_argument("--no-similarity", action="store_true", help="skip the +sim rules")
    parser.add_argument("--cache-dir", default="artifacts/cache", help="sentence vector cache")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data_dir = os.environ.get("RUNNER_DATA_DIR")
    frame = load_ragtruth(split="test", data_dir=data_dir).frame.reset_index(drop=True)
    units = pd.read_parquet(args.units) if args.units else score_units(args.model, frame)
    if not args.units:
        units.to_parquet(out / "units.parquet")
    frame = with_lexical_features(frame, None)
    rows = table(frame, fuse(frame, units, not args.no_similarity, args.cache_dir))
    sentence_auroc = roc_auc_score(units["label"], units["logit"])
    summary = {"model": args.model, "sentences": len(units), "sentence_auroc": sentence_auroc}
    (out / "fusion.json").write_text(json.dumps({**summary, "rules": rows}, indent=2))
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [row["rule"], *(f"{row[c]:.4f}" for c in columns[1:])]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    (out / "fusion.md").write_text(text + "\n")
    print(f"{len(units)} sentences, sentence-level AUROC of the logit {sentence_auroc:.4f}")
    print(text)


if __name__ == "__main__":
    main()
