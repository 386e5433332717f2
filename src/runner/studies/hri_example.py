"""Study: the seed's supplier-contract worked example of the HRI (seed 001, Table V).

Why: the worked example is the one published set of HRI numbers — six claims, Σv = 11,
s_F = s_C = 3/11, s_U = s_O = 1.5/11, s_P = 1.2/11, s_S = 0.75/11, s_H = 0,
HRI_add = 0.175 and, because claim 3 is a high-criticality contradiction, HRI* = 0.70
(band High). Reproducing it from the claims file (``experiments/hri/supplier_contract.yaml``,
loaded by `runner.data.hri_claims.load_hri_claims`) with the constants of
``conf/hri/default.yaml`` shows that data, config and scorer agree with the paper; the
published values to compare with are in ``experiments/hri/published.csv``.

Tables (cells):

- ``hri_example_claims``: per claim, contribution (largest m_ik), criticality v_i,
  v_i × contribution, its safety floor φ and its share of HRI_add.
- ``hri_example_dimensions``: per dimension, Σ v_i m_ik, s_k, w_k and w_k s_k.
- ``hri_example_summary``: Σv, HRI_add (and × scale), the floor, HRI* (and × scale), the
  band's position (1 = Low … 4 = Critical) and the other aggregation variants.

Every response of the claims file is scored (``result.scores``) and explained
(``hri_example_explanations.json``); the tables show the selected one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from omegaconf import DictConfig

from runner.data.base import LoadedData
from runner.data.hri_claims import responses_from_frame
from runner.errors import ConfigError
from runner.hri.aggregation import AGGREGATIONS
from runner.hri.config import load_hri_config
from runner.hri.scoring import score_response
from runner.results import StudyResult

PAPER = "hri"
TITLES = {
    "hri_example_claims": "HRI worked example (seed 001, Table V): claim-level scoring",
    "hri_example_dimensions": "HRI worked example: dimension scores s_k = Σ v_i m_ik / Σ v_i",
    "hri_example_summary": "HRI worked example: additive index, safety floor, HRI* and band "
    "(band_ordinal 1 = Low, 2 = Medium, 3 = High, 4 = Critical)",
}


@dataclass
class Params:
    """Parameters of the worked-example study.

    Attributes
    ----------
    response_id : str or None
        Which response of the claims file the tables show; None = the file's only one.
    explanation_top : int
        Drivers listed per explanation.
    """

    response_id: str | None = None
    explanation_top: int = 5


def run(cfg: DictConfig, data: LoadedData, params: Params) -> StudyResult:
    """Score the claims file and tabulate the selected response.

    Parameters
    ----------
    cfg : DictConfig
        Composed config; uses ``cfg.hri``.
    data : LoadedData
        Claim-level frame from `runner.data.hri_claims.load_hri_claims`.
    params : Params

    Returns
    -------
    StudyResult
    """
    if data is None:
        raise ConfigError("hri_example needs a dataset: set `override /dataset: hri_claims`")
    config = load_hri_config(cfg.get("hri"))
    responses = responses_from_frame(data.frame)
    if params.response_id is None:
        if len(responses) != 1:
            raise ConfigError(
                f"study.params.response_id: the claims file holds {len(responses)} responses "
                f"({[r.response_id for r in responses][:5]}...); say which one to tabulate"
            )
        chosen = responses[0]
    else:
        matches = [r for r in responses if r.response_id == params.response_id]
        if not matches:
            raise ConfigError(
                f"study.params.response_id={params.response_id!r} is not in the "
                f"claims file; responses: {[r.response_id for r in responses]}"
            )
        chosen = matches[0]
    scored = {r.response_id: score_response(r, config) for r in responses}
    res = scored[chosen.response_id]

    result = StudyResult()
    result.titles.update(TITLES)
    for claim, cs in zip(chosen.claims, res.claims, strict=True):
        contribution = max(cs.contributions.values(), default=0.0)
        result.add("hri_example_claims", claim.claim_id, "contribution", contribution)
        result.add("hri_example_claims", claim.claim_id, "criticality", cs.criticality)
        result.add(
            "hri_example_claims",
            claim.claim_id,
            "weighted_contribution",
            cs.criticality * contribution,
        )
        result.add("hri_example_claims", claim.claim_id, "floor", cs.floor)
        result.add("hri_example_claims", claim.claim_id, "share_of_hri_add", cs.share)
    for k in config.dimensions:
        result.add("hri_example_dimensions", k, "numerator", res.numerators[k])
        result.add("hri_example_dimensions", k, "score", res.dimension_scores[k])
        result.add("hri_example_dimensions", k, "weight", res.weights[k])
        result.add("hri_example_dimensions", k, "weighted", res.weighted[k])
    row = chosen.response_id
    summary = {
        "sum_criticality": res.sum_criticality,
        "hri_add": res.additive,
        "hri_add_scaled": res.additive * config.scale,
        "floor": res.floor,
        "hri_star": res.hri_star,
        "hri_star_scaled": res.hri_star * config.scale,
        "band_ordinal": float(res.band_ordinal),
    }
    for agg in AGGREGATIONS:
        if agg not in ("additive", "hri_star"):
            summary[agg] = res.aggregations[agg]
    for column, value in summary.items():
        result.add("hri_example_summary", row, column, value)

    result.scores = _scores_frame(responses, scored)
    result.extra["hri_example_explanations.json"] = {
        rid: r.explanation(top=params.explanation_top) for rid, r in scored.items()
    }
    result.extra["hri_example_config.json"] = config.to_dict()
    result.tags["hri_band"] = res.band
    result.tags["hri_action"] = res.action
    return result


def _scores_frame(responses: list, scored: dict) -> pd.DataFrame:
    rows = []
    for r in responses:
        s = scored[r.response_id]
        row = {
            "example_id": r.response_id,
            "group_id": r.source or r.response_id,
            "task": r.task,
            "label": r.outcome,
        }
        row.update({agg: s.aggregations[agg] for agg in AGGREGATIONS})
        row.update(
            {
                "band": s.band,
                "action": s.action,
                "binding_floor": "" if s.binding_floor is None else s.binding_floor.rule,
                "n_claims": len(r.claims),
                "sum_criticality": s.sum_criticality,
            }
        )
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["label"] = pd.array(
        [pd.NA if v is None else int(v) for v in frame["label"]], dtype="Int64"
    )
    return frame
