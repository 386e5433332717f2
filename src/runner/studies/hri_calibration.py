"""Study: calibrate the HRI against labelled outcomes and compare aggregations.

Why: seed 001 marks its bands and constants as provisional and names the way to test them
— score responses whose outcome is known, then use ROC and precision-recall analysis and
cost-sensitive threshold selection (section VIII), and compare additive, max-based and
multiplicative aggregation (section VI, XVI). This study does that for every collection
of the loaded claim frame (``task`` column; Factcheck-Bench: ``factbench``,
``factcheckgpt_gold``, ``factcheckgpt_stance``, see `runner.data.factbench`; any claims
file whose responses carry ``outcome`` works too). Collections are never pooled.

Measured vs true by construction. A ranking only says something about the index when the
outcome was not itself defined from the claim labels the index reads. Every scope (a
collection, and each source within it) is tested with `runner.hri.construction`: when
its outcome is a function of its claim labels that a severity-threshold label rule reproduces ("any
claim not true", ...), its AUROC / AP are 1 by construction. Such scopes go to the
sanity table ``hri_sanity_ranking`` only; the headline tables (ranking, deltas, bands,
operating points, suggested cut-offs, cost sweep, curves, figures) hold only scopes whose
outcome is independent of the index's inputs. A collection that pools a by-construction
source is itself put in the sanity table and gets no band tables.

Tables (per scope ``<collection>`` and ``<collection>:<source>`` when a collection has
several sources, each with both classes; band tables per ``<collection>/<aggregation>``):

- ``hri_calibration_data``: responses, positives (outcome 1), claims, responses whose HRI*
  a safety floor set — for every scope.
- ``hri_outcome_construction``: the by-construction test per scope (label multisets,
  conflicting ones, agreement of the best simple label rule, determined 1/0).
- ``hri_ranking`` / ``hri_ranking_delta``: AUROC and AP per aggregation with bootstrap
  CIs, and each minus the baseline (paired) — independent scopes only.
- ``hri_sanity_ranking``: the same AUROC / AP for by-construction scopes.
- ``hri_band_rates``, ``hri_operating_points``, ``hri_suggested_cutoffs``,
  ``hri_cost_sweep``, ``hri_roc_curve``, ``hri_pr_curve``: see
  `runner.hri.calibration_tables` — independent collections only, so band cut-offs
  are suggested only from rows whose outcome the index did not read.
- ``hri_label_agreement``: where two collections label the same claims (gold vs
  evidence-stance labels), kappa, alpha, agreement (`runner.hri.label_agreement`).

Bootstrap: ``bootstrap.n_resamples`` / ``level`` / ``seed`` (the seed follows ``${seed}``),
threshold rules in `runner.evaluation.operating`. Thresholds are chosen in-sample (there is
no held-out split); read them as what the data suggests, not as validated cut-offs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from runner.data import Response, responses_from_frame
from runner.errors import ConfigError, DataError
from runner.evaluation import BootstrapConf
from runner.hri import (
    AGGREGATIONS,
    HRIConfig,
    HRIResult,
    calibrate_collection,
    calibration_tables,
    collection_agreement,
    load_hri_config,
    score_response,
)
from runner.reporting import roc_pr_figures
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study

SANITY = "SANITY CHECK, not a measurement"
TITLES = {
    "hri_calibration_data": "HRI calibration data: responses, positives (wrong responses), "
    "claims, responses whose HRI* a safety floor set",
    "hri_outcome_construction": "Is the outcome defined from the claim labels the HRI reads? "
    "(label multisets, conflicts, agreement of the best severity-threshold label rule; "
    "determined = 1: true by construction)",
    "hri_ranking": "HRI calibration: AUROC and AP per aggregation (bootstrap 95% CI; only "
    "outcomes independent of the claim labels)",
    "hri_ranking_delta": "HRI calibration: paired difference to the baseline aggregation",
    "hri_sanity_ranking": f"{SANITY}: AUROC and AP where the outcome is defined from the same "
    "claim labels the HRI reads (true by construction; says nothing about the index)",
    "hri_band_rates": "HRI calibration: outcomes per provisional band (rate = share of wrong "
    "responses, Wilson CI)",
    "hri_operating_points": "HRI calibration: provisional band cut-offs vs the cost-optimal "
    "threshold (cut-off on the 0-100 axis; cost per response)",
    "hri_suggested_cutoffs": "HRI calibration: band cut-offs suggested by the data (0-100 axis; "
    "band = provisional band the cut-off falls in, 1 = Low)",
    "hri_cost_sweep": "HRI calibration: cost-optimal cut-off (0-100) per cost ratio missed:review",
    "hri_roc_curve": "HRI calibration: ROC curve points (for figures)",
    "hri_pr_curve": "HRI calibration: precision-recall curve points (for figures)",
    "hri_label_agreement": "HRI claim labels: agreement between labelling sources",
}


@dataclass
class Params:
    """Parameters of the calibration study.

    Attributes
    ----------
    aggregations : list of str
        Aggregations to compare (`runner.hri.aggregation.AGGREGATIONS`).
    baseline : str
        Aggregation the deltas are taken against.
    cost_missed, cost_review : float
        Cost of a wrong response that is released unflagged, and of flagging a correct
        response for review (not given by the seed: an assumption to set per deployment).
    cost_ratios : list of float
        cost_missed / cost_review ratios for the sweep.
    caution_recall : float
        Recall the suggested caution cut-off must keep.
    block_precision : float
        Precision the suggested block cut-off must reach.
    explanation_top : int
        Drivers listed per response explanation.
    """

    aggregations: list[str] = field(default_factory=lambda: list(AGGREGATIONS))
    baseline: str = "additive"
    cost_missed: float = 5.0
    cost_review: float = 1.0
    cost_ratios: list[float] = field(default_factory=lambda: [1.0, 2.0, 5.0, 10.0, 20.0])
    caution_recall: float = 0.95
    block_precision: float = 0.95
    explanation_top: int = 5


def check_params(p: Params) -> calibration_tables.Targets:
    """Check the aggregations and costs; return the cut-off targets (ConfigError if bad)."""
    calibration_tables.check_aggregations(p.aggregations, p.baseline)
    targets = calibration_tables.Targets(
        float(p.cost_missed),
        float(p.cost_review),
        tuple(float(r) for r in p.cost_ratios),
        float(p.caution_recall),
        float(p.block_precision),
    )
    targets.check()
    return targets


@dataclass
class HriCalibration(Study, name="hri_calibration", titles=TITLES):
    """Calibrate the HRI against labelled outcomes; compare aggregations per collection."""

    hri: HRIConfig
    bootstrap: BootstrapConf
    params: Params = field(default_factory=Params)
    config: HRIConfig = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Aggregations, costs and cut-off targets, the `hri` group and bootstrap settings."""
        check_params(self.params)
        self.config = load_hri_config(self.hri)
        if self.bootstrap is None:
            raise ConfigError(
                "hri_calibration needs bootstrap settings: add `bootstrap: default` (or "
                "`bootstrap=<option>`) to the experiment"
            )

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score every labelled response and measure how well each aggregation ranks them.

        `data`: claim-level frame whose responses all have an outcome (``response_label``);
        ``self.config`` (the validated `hri` group), ``self.bootstrap`` as configured.
        """
        params = self.params
        targets = check_params(params)
        if data is None:
            raise ConfigError("hri_calibration needs a dataset: set `override /dataset: factbench`")
        config = self.config
        boot = self.bootstrap
        responses = _with_outcomes(responses_from_frame(data.frame))
        scored = [score_response(r, config) for r in responses]

        result = StudyResult()
        result.titles.update(TITLES)
        summary: dict[str, Any] = {"collections": {}, "best": {}, "sanity_scopes": []}
        collections = list(dict.fromkeys(_collection(r) for r in responses))
        for ci, coll in enumerate(collections):
            idx = [i for i, r in enumerate(responses) if _collection(r) == coll]
            summary["collections"][coll] = calibrate_collection(
                result, coll, [responses[i] for i in idx], [scored[i] for i in idx], config,
                params.aggregations, params.baseline, targets, boot, seed=[boot.seed, ci],
                summary=summary,
            )  # fmt: skip
        summary["headline_collections"] = [
            c for c, s in summary["collections"].items() if s["headline"]
        ]
        summary["agreement"] = collection_agreement(
            result, data.frame, boot.n_resamples, boot.level, boot.seed
        )
        summary["params"] = {k: getattr(params, k) for k in params.__dataclass_fields__}
        summary["bootstrap"] = {
            "n_resamples": boot.n_resamples,
            "level": boot.level,
            "seed": boot.seed,
        }
        summary["hri"] = config.to_dict()
        summary["data"] = {
            "name": data.name,
            "fingerprint": data.fingerprint,
            "excluded": data.info.get("excluded", {}),
        }
        result.scores = _scores_frame(responses, scored, summary["collections"])
        result.extra["hri_explanations.json"] = {
            s.response_id: s.explanation(top=params.explanation_top) for s in scored
        }
        result.extra["hri_calibration_summary.json"] = summary
        return result

    @classmethod
    def figures(cls, cells: pd.DataFrame) -> dict[str, Any]:
        """ROC and PR curves per aggregation, one figure per headline collection, from cells.

        ``hri_roc_pr_<collection>`` from the ``hri_roc_curve`` / ``hri_pr_curve`` tables (and
        ``hri_ranking`` for legends); by-construction collections have no curve cells.
        """
        return roc_pr_figures(cells)


def _with_outcomes(responses: list[Any]) -> list[Any]:
    """The responses, once each is known to have its outcome (0/1): calibration needs it."""
    for r in responses:
        if r.outcome is None:
            raise DataError(
                f"response {r.response_id!r} has no outcome; calibration needs the "
                "known outcome (0/1) of every response",
                file=r.file or None,
                row=r.row if r.row != "" else None,
                field="outcome",
            )
    return responses


def _collection(r: Response) -> str:
    return r.task or "all"


def _scores_frame(
    responses: list[Response], scored: list[HRIResult], collections: dict[str, Any]
) -> pd.DataFrame:
    rows = []
    for r, s in zip(responses, scored, strict=True):
        coll = _collection(r)
        rows.append(
            {
                "example_id": r.response_id,
                "group_id": r.source or coll,
                "task": coll,
                "label": int(r.outcome),
                "outcome_by_construction": not collections[coll]["headline"],
                **s.score_columns(),
            }
        )
    return pd.DataFrame(rows)
