"""Fit the routing gate on every labelled row and hand it to the registry as a pyfunc model.

Thresholds come from out-of-fold scores (grouped CV) at ``routing.review_budget`` and
``routing.accept_budget`` (or, with ``routing.accept_rule=risk_controlled``, MAPIE's
Learn-Then-Test threshold for ``routing.max_accepted_risk`` at 1 - ``routing.delta``);
the gate itself is then fitted on all rows. The model's metadata carries the thresholds,
budgets, the OOF promise with intervals, the training data fingerprint and sources; the
pipeline logs it into this run, registers it and sets the alias.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from sklearn.base import clone

from runner.errors import ConfigError
from runner.evaluation import scopes as rs
from runner.evaluation.oof import score_gates
from runner.features import with_lexical_features
from runner.results import StudyResult
from runner.routing import report as rp
from runner.routing.config import RoutingConf, check_routing
from runner.routing.model import INPUT_FIELDS, RoutingModel
from runner.routing.registry import ModelSpec
from runner.routing.thresholds import contract_thresholds
from runner.studies.operating_report import require_labels

log = logging.getLogger(__name__)

TITLES = {
    "contract": "The routing contract on the out-of-fold scores",
    **rp.TITLES,
}


@dataclass
class Params:
    """Nothing beyond the routing group; kept for the study contract."""

    input_example_rows: int = 2


def routing_conf(cfg: DictConfig) -> RoutingConf:
    """The typed routing group (defaults when an experiment has none)."""
    merged = OmegaConf.merge(OmegaConf.structured(RoutingConf), cfg.get("routing") or {})
    return OmegaConf.to_object(merged)


def check(cfg: DictConfig, params: Params) -> None:
    """The contract's settings, the gate and tracking, before any data is read."""
    routing = routing_conf(cfg)
    check_routing(routing)
    if routing.gate not in (cfg.get("gates") or {}):
        raise ConfigError(
            f"routing.gate={routing.gate!r} is not a configured gate "
            f"(configured: {sorted(cfg.get('gates') or {})})"
        )
    if not cfg.tracking.enabled:
        raise ConfigError("fit_gate registers the model in MLflow: it cannot run with tracking=off")


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def run(cfg: DictConfig, data, params: Params) -> StudyResult:
    """OOF scores -> thresholds -> fit on all rows -> a `ModelSpec` for the registry."""
    routing = routing_conf(cfg)
    require_labels(data, "fit_gate")
    name = routing.gate
    gate = rs.build_gates(cfg)[name]
    frame = with_lexical_features(data.frame, cfg.paths.cache_dir).reset_index(drop=True)
    scores = score_gates({name: gate}, frame, instantiate(cfg.split), progress=cfg.progress)
    y, risk = scores["label"].to_numpy(), scores[name].to_numpy(float)
    thresholds, rc = contract_thresholds(
        y,
        risk,
        routing.review_budget,
        routing.accept_budget,
        routing.accept_rule,
        routing.max_accepted_risk,
        routing.delta,
    )
    if rc is not None and rc.valid_candidates == 0:
        log.warning(
            "risk control: no accepted share has accepted risk <= %s with probability %s on "
            "%d labelled rows; nothing will be accepted (more labelled rows, or a larger "
            "routing.delta, give the guarantee room)",
            routing.max_accepted_risk,
            1 - routing.delta,
            len(frame),
        )
    result = StudyResult(scores=scores, titles=dict(TITLES))
    accept_budget = thresholds.accept_share if rc is not None else routing.accept_budget
    stats = rp.add_operating_table(
        result,
        scores,
        [name],
        cfg.bootstrap,
        [routing.review_budget],
        [b for b in {routing.accept_budget, round(accept_budget, 6)} if b > 0],
    )
    review = risk >= thresholds.review_at
    accept = risk <= thresholds.accept_at
    for label, value in (
        ("review share", thresholds.review_share),
        ("accept share", thresholds.accept_share),
        ("verify share", 1.0 - thresholds.review_share - thresholds.accept_share),
        ("review precision", float(y[review].mean()) if review.any() else None),
        ("accepted risk", float(y[accept].mean()) if accept.any() else None),
    ):
        result.add("contract", "OOF", label, value)
    fitted = clone(gate).fit(frame, y) if getattr(gate, "needs_fit", False) else gate
    sources = sorted(frame["source"].astype(str).unique())
    promised = rp.promise(stats, name, routing.review_budget, routing.accept_budget)
    target = routing.max_accepted_risk
    if target is None and routing.accept_budget > 0:
        target = promised[rp.accept_col(routing.accept_budget)]["ci_high"]
    metadata = {
        "gate": name,
        "thresholds": thresholds.to_dict(),
        "review_budget": routing.review_budget,
        "accept_budget": routing.accept_budget,
        "accept_rule": routing.accept_rule,
        "accepted_risk_target": target,
        "risk_control": None if rc is None else {k: v for k, v in vars(rc).items()},
        "oof_report": promised,
        "oof_realised": {
            "review_precision": float(y[review].mean()) if review.any() else None,
            "accepted_risk": float(y[accept].mean()) if accept.any() else None,
        },
        "training_data": {
            "name": data.name,
            "fingerprint": data.fingerprint,
            "rows": len(frame),
            "positives": int(y.sum()),
        },
        "training_sources": sources,
        "runner_commit": _commit(),
    }
    if rc is not None and not np.isfinite(rc.threshold):
        metadata["risk_control"]["threshold"] = "-inf"
    example = data.frame[list(INPUT_FIELDS)].head(params.input_example_rows).reset_index(drop=True)
    result.model = ModelSpec(
        python_model=RoutingModel(fitted, thresholds.review_at, thresholds.accept_at),
        name=routing.model_name or name,
        alias=routing.alias,
        metadata=metadata,
        input_example=example,
        tags={"training_data_fingerprint": data.fingerprint, "training_sources": ",".join(sources)},
    )
    result.extra["contract.json"] = metadata
    return result
