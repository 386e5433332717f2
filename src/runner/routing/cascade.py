"""The verifier cascade: the gate routes every row, a verifier decides the verify band.

Why a part of its own: `route` applies the cascade to traffic and `operating_report` shows
what it buys on labelled rows, so both must send the same rows to the verifier and turn
its risk into the same decision. The rules, in one place:

- only rows the gate puts in the ``verify`` band reach the verifier (`score_band`, which
  counts the rows it sent and times them, loading the model first so loading is not
  counted as cost);
- a verified row is ``review`` when the verifier's risk >= the verifier threshold, else
  ``accept`` (`final_decisions`); the threshold is ``routing.verifier_threshold``, or the
  verifier's own: a trained detector's validation-chosen example threshold
  (``detector.json``), else its flag threshold (LettuceDetect's ``threshold``: a token at
  or above it flags the answer); a verifier with neither is a configuration error;
- as one ranking (`cascade_risk`), the gate's review band ranks above the verify band and
  the verify band above the accept band; inside the verify band rows rank by the
  verifier's risk, inside the other two by the gate's. A larger review budget then reviews
  the verifier's riskiest rows of the band next, which is how a team would spend it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from runner.errors import ConfigError

BAND_ORDER = {"accept": 0, "verify": 1, "review": 2}
"""Rank of each gate band in the cascade's ranking (higher = riskier)."""


def verifier_threshold(verifier: Any, setting: float | None, name: str) -> float:
    """The risk at or above which a verified row goes to review.

    Parameters
    ----------
    verifier : scorer
        The configured verifier: its ``example_threshold()`` (a trained detector's
        validation-chosen threshold) or else its ``threshold`` attribute is the default.
    setting : float or None
        ``routing.verifier_threshold``; None = the verifier's own.
    name : str
        The verifier's name in the experiment, for the message.

    Raises
    ------
    ConfigError
        When neither is set, or the setting is not a finite number.
    """
    own = (
        verifier.example_threshold()
        if callable(getattr(verifier, "example_threshold", None))
        else getattr(verifier, "threshold", None)
    )
    value = setting if setting is not None else own
    if value is None:
        raise ConfigError(
            f"routing.verifier={name!r}: {type(verifier).__name__} has no flag threshold of "
            "its own; set routing.verifier_threshold=<risk at or above which a verified row "
            "goes to review>"
        )
    # -inf is a calibrated cascade's "the verifier accepts nothing": every verified row is
    # reviewed (`runner.routing.risk_control.calibrate_cascade`)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or np.isnan(value):
        raise ConfigError(f"routing.verifier_threshold={value!r}: a number")
    return float(value)


def routed_threshold(
    verifier: Any, name: str, setting: float | None, registered: dict | None
) -> tuple[float, str]:
    """The verifier threshold `route` applies, and where it came from.

    ``routing.verifier_threshold`` when set; else the one `fit_gate` calibrated with the
    model (its metadata's ``cascade``, when the model was fitted with this verifier); else
    the verifier's own (`verifier_threshold`). A model calibrated with another verifier is
    a configuration error: its thresholds assume that verifier's scores.
    """
    if setting is not None:
        return verifier_threshold(verifier, setting, name), "routing.verifier_threshold"
    if registered:
        if registered.get("verifier") != name:
            raise ConfigError(
                f"routing.verifier={name!r}: the model's cascade was calibrated with verifier "
                f"{registered.get('verifier')!r}; route with that one or set "
                "routing.verifier_threshold"
            )
        value = float(registered["verifier_threshold"])
        return verifier_threshold(verifier, value, name), "the model's calibrated cascade"
    return verifier_threshold(verifier, None, name), "the verifier's own"


@dataclass(frozen=True)
class BandScores:
    """The verifier's risk on the verify band, and what scoring it cost.

    Attributes
    ----------
    risk : ndarray of float
        One per row of the frame; NaN for rows the verifier did not see.
    rows_sent : int
        Rows passed to the verifier (the band's size, counted at the call).
    ms_per_row : float
        Wall-clock ms per verified row (0 when the band is empty).
    load_seconds : float
        Time spent loading the verifier's model before the timed call.
    """

    risk: np.ndarray
    rows_sent: int
    ms_per_row: float
    load_seconds: float


def score_band(verifier: Any, frame: pd.DataFrame, band: np.ndarray) -> BandScores:
    """Score only the rows of `frame` where `band` is True, timing the call."""
    band = np.asarray(band, dtype=bool)
    risk = np.full(len(frame), np.nan)
    rows = frame.iloc[np.flatnonzero(band)].reset_index(drop=True)
    if rows.empty:
        return BandScores(risk, 0, 0.0, 0.0)
    start = time.perf_counter()
    if callable(getattr(verifier, "load", None)):
        verifier.load()
    load_seconds = time.perf_counter() - start
    start = time.perf_counter()
    scores = np.asarray(verifier.score(rows), dtype=np.float64)
    ms = (time.perf_counter() - start) * 1000.0 / len(rows)
    if scores.shape != (len(rows),):
        raise ValueError(f"verifier returned {scores.shape} scores for {len(rows)} rows")
    risk[band] = scores
    return BandScores(risk, len(rows), ms, load_seconds)


def final_decisions(decision: np.ndarray, risk: np.ndarray, threshold: float) -> np.ndarray:
    """The gate's decision outside the verify band; review / accept by `threshold` inside."""
    decision = np.asarray(decision, dtype=object)
    out = decision.copy()
    band = decision == "verify"
    out[band] = np.where(np.asarray(risk)[band] >= threshold, "review", "accept")
    return out


def cascade_risk(gate_risk: np.ndarray, verifier_risk: np.ndarray, bands: np.ndarray) -> np.ndarray:
    """One score ranking rows as the cascade does: band first, then the band's own scorer.

    Each row gets ``band rank + (its rank within the band) / (band size + 1)``, so the
    bands never interleave and ties within a band stay ties (average ranks).
    """
    bands = np.asarray(bands, dtype=object)
    out = np.full(bands.shape[0], np.nan)
    for band, rank in BAND_ORDER.items():
        rows = np.flatnonzero(bands == band)
        if not rows.size:
            continue
        within = verifier_risk[rows] if band == "verify" else gate_risk[rows]
        if np.isnan(within).any():
            raise ValueError(f"cascade_risk: a {band} row has no score")
        out[rows] = rank + rankdata(within, method="average") / (rows.size + 1)
    return out
