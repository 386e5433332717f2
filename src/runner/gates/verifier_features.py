"""A verifier's risk as a gate feature, each distinct row scored once.

Why: the stacked gate (RAGScope-E's features plus the trained detector's risk) ranks RAGTruth
test better than either part (docs/detector.md, issue 43), and a user fits and routes it as
any gate (`conf/gate/ragscope_e_detector.yaml`). A verifier costs tens of milliseconds a row
where the lexical features cost a fraction of one, and the out-of-fold loop fits a clone of
the gate on every fold, so every row would be scored once per fold; `VerifierRisks` keeps
each row's risk by its texts and is shared by a gate and its clones, so a row is scored once.
Gates never import a verifier: the configured one arrives built (Hydra instantiates it
inside the gate's node) and is used through ``score(frame) -> risk``, as studies use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from runner.features import Kept

KEPT_ROWS = 200_000
"""Rows whose risk a gate keeps per verifier (a few MB: the key is the row's own text
objects, the value one float); a route of more distinct rows re-scores only rows it evicted."""

TEXTS = ("question", "context", "answer")


def risk_column(name: str) -> str:
    """The feature column of verifier `name`: ``<name>_risk`` (``detector_risk``), its risk
    on the log-odds scale where it has one."""
    return f"{name}_risk"


class VerifierRisks:
    """Each configured verifier's risk per distinct (question, context, answer), kept."""

    def __init__(self, limit: int = KEPT_ROWS) -> None:
        self.limit = limit
        self._kept: dict[str, tuple[Any, Kept[float]]] = {}

    def column(self, name: str, verifier: Any, frame: pd.DataFrame) -> np.ndarray:
        """`verifier`'s risk on every row of `frame`; rows kept from an earlier call are not
        scored again, the others in one ``score`` call on those rows (their own ids, so a
        verifier's error names the row; ``#<position>`` where the frame has none)."""
        owner, kept = self._kept.get(name, (None, None))
        if owner is not verifier or kept is None:  # another verifier under this name: start over
            kept = Kept(self.limit)
            self._kept[name] = (verifier, kept)
        keys = list(zip(*(frame[c].tolist() for c in TEXTS), strict=True))
        first = {key: i for i, key in reversed(list(enumerate(keys)))}

        def score(missing: list) -> list[float]:
            positions = [first[key] for key in missing]
            rows = frame.iloc[positions]
            if "example_id" not in rows.columns:  # a served request: rows by position
                rows = rows.assign(example_id=[f"#{p}" for p in positions])
            values = np.asarray(_log_odds_risk(verifier, rows), dtype=np.float64).reshape(-1)
            if values.shape[0] != len(rows):
                raise RuntimeError(
                    f"verifier {name!r} returned {values.shape[0]} risks for {len(rows)} rows"
                )
            return values.tolist()

        found = kept.many(keys, score)
        return np.array([found[key] for key in keys], dtype=np.float64)


def _log_odds_risk(verifier: Any, rows: pd.DataFrame) -> np.ndarray:
    """The verifier's risk on the log-odds scale where it has one (``risk_logit``), else its
    ``score``: a probability near 0 or 1 is a squashed input for a linear model (stacking
    the detector's log-odds instead of its probability: RAGTruth test AUROC 0.833 against
    0.830, AP 0.758 against 0.750; docs/detector.md)."""
    risk_logit = getattr(verifier, "risk_logit", None)
    return risk_logit(rows) if callable(risk_logit) else verifier.score(rows)


def with_verifier_risks(
    frame: pd.DataFrame, verifiers: Mapping[str, Any], risks: VerifierRisks
) -> pd.DataFrame:
    """`frame` with each verifier's ``<name>_risk`` column: as joined, else scored."""
    missing = {
        risk_column(name): verifier
        for name, verifier in verifiers.items()
        if risk_column(name) not in frame.columns
    }
    if not missing:
        return frame
    for column in TEXTS:
        if column not in frame.columns:
            raise ValueError(f"a verifier feature needs column {column!r}; the frame lacks it")
    names = {risk_column(name): name for name in verifiers}
    return frame.assign(
        **{
            column: risks.column(names[column], verifier, frame)
            for column, verifier in missing.items()
        }
    )
