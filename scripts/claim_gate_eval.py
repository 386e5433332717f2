"""How the claim gate was chosen: lexical (and similarity) features of a claim against its
evidence, zero-shot and in a logistic regression, on the WiCE dev claims; then WiCE test.

Why a script: S1 of the claim studies is the claim gate (`runner.gates.ClaimGate`); this is
the measurement behind it, rerunnable. On ``dev`` every feature's zero-shot AUROC (the
better of its two directions) and the 5-fold (stratified, seeded) out-of-fold AUROC / AP of
the lexical gate with and without the frozen encoder's similarity features; ``test`` fits
each on all of dev and scores the 358 WiCE test claims once.

    python scripts/claim_gate_eval.py dev
    python scripts/claim_gate_eval.py test
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold

from runner.data import GREEN, load_wice
from runner.features import (
    LEXICAL_FEATURE_NAMES,
    SIMILARITY_FEATURE_NAMES,
    lexical_features,
    similarity_features,
)
from runner.gates import LogitGate
from runner.settings import SEED

VARIANTS = {"lexical": False, "lexical+similarity": True}


def claims(split: str, cache_dir: str | None) -> tuple[pd.DataFrame, np.ndarray]:
    """The split's claims as rows (claim = answer, its passages = context) with every
    feature joined, and the labels (1 = not fully supported)."""
    frame = load_wice(split=split).frame
    rows = pd.DataFrame(
        {
            "question": frame["question"].tolist(),
            "context": ["\n\n".join(p) for p in frame["passages"]],
            "answer": frame["claim"].tolist(),
        }
    )
    rows = rows.join(lexical_features(rows)).join(similarity_features(rows, cache_dir=cache_dir))
    return rows, (frame["label"] != GREEN).to_numpy(int)


def gate(similarity: bool) -> LogitGate:
    return LogitGate(list(LEXICAL_FEATURE_NAMES), tfidf=False, similarity=similarity)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("split", choices=["dev", "test"])
    parser.add_argument("--cache-dir", default=None, help="sentence vector cache folder")
    args = parser.parse_args()
    dev, y_dev = claims("dev", args.cache_dir)
    if args.split == "dev":
        for name in (*LEXICAL_FEATURE_NAMES, *SIMILARITY_FEATURE_NAMES):
            auroc = roc_auc_score(y_dev, dev[name])
            sign = "+" if auroc >= 0.5 else "-"
            print(f"zero-shot {name}: AUROC {max(auroc, 1 - auroc):.3f} ({sign})")
        folds = StratifiedKFold(5, shuffle=True, random_state=SEED).split(dev, y_dev)
        folds = list(folds)
        for name, similarity in VARIANTS.items():
            oof = np.empty(len(y_dev))
            for train, held in folds:
                fitted = gate(similarity).fit(dev.iloc[train], y_dev[train])
                oof[held] = fitted.score(dev.iloc[held])
            print(
                f"{name}, 5-fold on dev: AUROC {roc_auc_score(y_dev, oof):.3f} "
                f"AP {average_precision_score(y_dev, oof):.3f}"
            )
        return
    test, y_test = claims("test", args.cache_dir)
    for name, similarity in VARIANTS.items():
        risk = gate(similarity).fit(dev, y_dev).score(test)
        print(
            f"{name}, fitted on dev, WiCE test: AUROC {roc_auc_score(y_test, risk):.3f} "
            f"AP {average_precision_score(y_test, risk):.3f}"
        )


if __name__ == "__main__":
    main()
