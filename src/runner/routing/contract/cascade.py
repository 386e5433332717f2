"""The verifier cascade: the gate routes every row, a verifier decides the verify band.

Why a part of its own: `route` applies the cascade to traffic and `operating_report` shows
what it buys on labelled rows, so both must send the same rows to the verifier and turn
its risk into the same decision. The rules, in one place:

- only rows the gate puts in the ``verify`` band reach the verifier (`score_band`, which
  counts the rows it sent and times them, loading the model first so loading is not
  counted as cost);
- a model `fit_gate` calibrated as a cascade is routed as calibrated (`routed_cascade`):
  with the verifier it was calibrated with (none or another is a configuration error, before
  any row is routed), at its calibrated threshold; a verified row is ``accept`` below it
  and otherwise stays ``verify`` (the calibration certifies only the verifier's accepts,
  `runner.routing.contract.risk_control.CascadeCalibration`), and a threshold of -inf (the
  gate-alone path: the verifier accepts nothing) sends the verifier nothing;
- otherwise (an uncalibrated cascade) a verified row is ``review`` when the verifier's risk
  >= the verifier threshold, else ``accept`` (`final_decisions`); the threshold is
  ``routing.verifier_threshold``, or the verifier's own: a trained detector's
  validation-chosen example threshold (``detector.json``), else its flag threshold
  (LettuceDetect's ``threshold``: a token at or above it flags the answer); a verifier
  with neither is a configuration error;
- as one ranking (`cascade_risk`), the gate's review band ranks above the verify band and
  the verify band above the accept band; inside the verify band rows rank by the
  verifier's risk, inside the other two by the gate's. A larger review budget then reviews
  the verifier's riskiest rows of the band next, which is how a team would spend it.
"""

from __future__ import annotations

import math
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
    # any number but NaN: -inf is a calibrated cascade's "the verifier accepts nothing"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or np.isnan(value):
        raise ConfigError(f"routing.verifier_threshold={value!r}: a number")
    return float(value)


@dataclass(frozen=True)
class RoutedCascade:
    """The cascade `route` applies: the verifier, its threshold, and what a row it does not
    accept becomes.

    ``calibrated``: the threshold is the model's calibrated cascade's (`fit_gate`). Its
    calibration certifies only what the verifier accepts, so a band row the verifier does
    not accept keeps the gate's ``verify`` (neither certified safe nor reviewed at the
    review side's precision), and a threshold of -inf (the verifier accepts nothing) sends
    it no row: it is not even loaded. Otherwise a verified row is reviewed at or above the
    threshold and accepted below it.
    """

    verifier: Any
    name: str
    threshold: float
    source: str
    calibrated: bool

    @property
    def sends(self) -> bool:
        """Whether the verify band reaches the verifier at all."""
        return not (self.calibrated and self.threshold == -math.inf)

    @property
    def not_accepted(self) -> str:
        """The final decision of a band row the verifier does not accept."""
        return "verify" if self.calibrated else "review"

    def decide(self, decision: np.ndarray, risk: np.ndarray) -> np.ndarray:
        """Final decisions from the gate's and the verifier's risk on the rows it was sent
        (NaN elsewhere)."""
        return final_decisions(decision, risk, self.threshold, self.not_accepted)


def routed_cascade(
    verifiers: dict[str, Any], routing: Any, metadata: dict[str, Any], model: str
) -> RoutedCascade | None:
    """The cascade `route` applies to `model` (None: the gate alone decides).

    ``routing.verifier_threshold`` when set (an uncalibrated cascade, even on a calibrated
    model: the user's threshold); else the model's calibrated cascade (its metadata's
    ``cascade``), which needs the verifier it was calibrated with; else the verifier's own
    threshold (`verifier_threshold`).

    Raises
    ------
    ConfigError
        A calibrated cascade routed without ``routing.verifier``, or with another verifier
        and no threshold of the user's: its thresholds assume that verifier's scores.
    """
    registered = metadata.get("cascade")
    name, setting = routing.verifier, routing.verifier_threshold
    if registered and not name:
        raise ConfigError(
            f"{model} is a cascade calibrated with verifier {registered.get('verifier')!r}, "
            f"which decides its verify band, and routing.verifier is unset: "
            f"{_configure(registered)}"
        )
    if not name:
        return None
    verifier = verifiers[name]
    if setting is not None:
        value = verifier_threshold(verifier, setting, name)
        return RoutedCascade(verifier, name, value, "routing.verifier_threshold", False)
    if not registered:
        value = verifier_threshold(verifier, None, name)
        return RoutedCascade(verifier, name, value, "the verifier's own", False)
    if registered.get("verifier") != name:
        raise ConfigError(
            f"routing.verifier={name!r}: {model} is a cascade calibrated with verifier "
            f"{registered.get('verifier')!r}, its thresholds assume that verifier's scores: "
            f"{_configure(registered)} (or set routing.verifier_threshold to route an "
            "uncalibrated cascade)"
        )
    value = verifier_threshold(verifier, float(registered["verifier_threshold"]), name)
    return RoutedCascade(verifier, name, value, "the model's calibrated cascade", True)


def _configure(registered: dict[str, Any]) -> str:
    """How to configure the verifier a cascade was calibrated with (as `fit_gate` had it)."""
    name = registered.get("verifier")
    kind = registered.get("verifier_class") or "<its class>"
    weights = registered.get("verifier_model") or "<its weights>"
    return (
        f"configure it as fit_gate had it ({kind}, model {weights}) and name it, e.g. "
        f"+verifier@verifiers.{name}=<its config, e.g. lettucedetect> "
        f"verifiers.{name}.model={weights} routing.verifier={name}"
    )


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


def final_decisions(
    decision: np.ndarray, risk: np.ndarray, threshold: float, not_accepted: str = "review"
) -> np.ndarray:
    """The gate's decision outside the verify band; inside it ``accept`` where the
    verifier's risk < `threshold`, else `not_accepted` (``review`` for an uncalibrated
    cascade, ``verify`` for a calibrated one: `RoutedCascade`). A band row without a
    verifier risk (NaN: not sent) is not accepted."""
    decision = np.asarray(decision, dtype=object)
    out = decision.copy()
    band = decision == "verify"
    with np.errstate(invalid="ignore"):
        accepted = np.asarray(risk, dtype=np.float64)[band] < threshold
    out[band] = np.where(accepted, "accept", not_accepted)
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
