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

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from runner.data import Response, responses_from_frame
from runner.errors import ConfigError
from runner.hri import AGGREGATIONS, HRIConfig, HRIResult, load_hri_config, score_response
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study

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


@dataclass
class HriExample(Study, name="hri_example", titles=TITLES, paper=PAPER):
    """The seed's worked example of the HRI (seed 001, Table V), from the claims file."""

    hri: HRIConfig
    params: Params = field(default_factory=Params)
    config: HRIConfig = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """The `hri` group is configured and its constants are valid (validated here)."""
        self.config = load_hri_config(self.hri)

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score every response of the claims file and tabulate the selected one.

        `data` is the claim-level frame of `runner.data.hri_claims.load_hri_claims`;
        ``self.config`` the validated constants.
        """
        params = self.params
        if data is None:
            raise ConfigError("hri_example needs a dataset: set `override /dataset: hri_claims`")
        config = self.config
        responses = responses_from_frame(data.frame)
        chosen = _choose(responses, params.response_id)
        scored = {r.response_id: score_response(r, config) for r in responses}
        res = scored[chosen.response_id]

        result = StudyResult(titles=dict(TITLES))
        _add_tables(result, chosen, res, config)
        result.scores = _scores_frame(responses, scored)
        result.extra["hri_example_explanations.json"] = {
            rid: r.explanation(top=params.explanation_top) for rid, r in scored.items()
        }
        result.extra["hri_example_config.json"] = config.to_dict()
        result.tags["hri_band"] = res.band
        result.tags["hri_action"] = res.action
        return result


def _choose(responses: list[Response], response_id: str | None) -> Response:
    """The response the tables show: `response_id`, or the file's only response."""
    if response_id is None:
        if len(responses) != 1:
            raise ConfigError(
                f"study.params.response_id: the claims file holds {len(responses)} responses "
                f"({[r.response_id for r in responses][:5]}...); say which one to tabulate"
            )
        return responses[0]
    matches = [r for r in responses if r.response_id == response_id]
    if not matches:
        raise ConfigError(
            f"study.params.response_id={response_id!r} is not in the "
            f"claims file; responses: {[r.response_id for r in responses]}"
        )
    return matches[0]


def _add_tables(result: StudyResult, chosen: Response, res: HRIResult, config: HRIConfig) -> None:
    """Claim, dimension and summary tables of the chosen response."""
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


def _scores_frame(responses: list[Response], scored: dict[str, HRIResult]) -> pd.DataFrame:
    """One row per response: ids, outcome (nullable) and its HRI columns."""
    rows = [
        {
            "example_id": r.response_id,
            "group_id": r.source or r.response_id,
            "task": r.task,
            "label": r.outcome,
            **scored[r.response_id].score_columns(),
        }
        for r in responses
    ]
    frame = pd.DataFrame(rows)
    frame["label"] = pd.array(
        [pd.NA if v is None else int(v) for v in frame["label"]], dtype="Int64"
    )
    return frame
