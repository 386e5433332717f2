"""Study: the HRI from *predicted* claim labels, scored against human response outcomes.

Why: seed 001 describes a deployment where claims are labelled by a verifier, not by
annotators. This study runs the claim-verification systems of seed 004 (S1 span
detector, each LLM judge, S3 AND / S4 vote / S5 cascade, cross-judge combinations; see
`runner.hri.predicted_labels`) on the Factcheck-Bench claims that have a response-level
human outcome and retrieved evidence (the factcheck-GPT tree: 92 responses, 661
check-worthy claims; Factbench.jsonl's claims come without passages, so no verifier can
judge them), maps each verdict to an HRI label (``verdict_labels``), scores every
response with every aggregation and ranks the responses against the human outcome. The
outcome is the annotators' response judgement and the labels come from a machine, so no
row here is true by construction.

Cost: S1 runs on every claim. LLM judges run on the claims of ``judge_responses``
responses (a seeded sample keeping the outcome shares; null = all), because a response's
HRI needs every one of its claims. Two scopes, each its own table:

- ``hri_predicted_ranking``: every response — S1 and the reference labellings.
- ``hri_predicted_ranking_judged``: the responses the judges saw — every system.

Rows are systems; columns ``<aggregation>/AUROC`` and ``/AP`` with response-cluster
bootstrap CIs (a response is one resampling unit with all its claims). Reference rows
``reference: <collection> labels`` compute the HRI from the data set's own claim labels
(gold annotators, evidence stances) on the same responses. ``hri_predicted_delta[_judged]``:
each system minus the reference labels of the judged collection, same aggregation,
paired. ``hri_predicted_labels``: per system the claims it labelled, its label counts and
agreement with the reference labels on the flagged view. ``hri_predicted_data``:
responses, positives and claims per scope.

S1 rows say which weights it ran with (`SpanDetector.weights_tag`): with ``weights:
random`` its verdicts carry no information. Judges are what ``judges`` configures
(the shipped config: SmolLM2-135M under two repair setups, one model family).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional

from runner.claims import claim_labels_s1, judge_claims, system_labels
from runner.errors import ConfigError
from runner.evaluation import BootstrapConf
from runner.hri import (
    AGGREGATIONS,
    HRIConfig,
    calibration_tables,
    load_hri_config,
    predicted_labels,
    predicted_tables,
)
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study

# OmegaConf reads the Params annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045

log = logging.getLogger(__name__)

SCOPES = (
    ("", "every response"),
    ("_s1", "the responses S1 labelled"),
    ("_judged", "the responses the judges judged"),
)
TITLES = {
    "hri_predicted_data": "Predicted-label HRI: responses, wrong responses and claims per scope",
    "hri_predicted_labels": "Predicted claim labels per system (agreement = share of claims "
    "whose flag, not green, matches the reference labels)",
    "hri_predicted_ranking": "HRI from predicted claim labels vs human response outcomes: "
    "AUROC / AP per system and aggregation, every response (response-cluster bootstrap 95% CI)",
    "hri_predicted_delta": "Predicted-label HRI minus the HRI from the reference claim labels "
    "(same aggregation, paired bootstrap), every response",
}
for _suffix, _what in (("_s1", "responses S1 labelled"), ("_judged", "responses judged")):
    for _base in ("hri_predicted_ranking", "hri_predicted_delta"):
        TITLES[_base + _suffix] = TITLES[_base].replace("every response", _what)


@dataclass
class Params:
    """Parameters of the predicted-label study.

    Attributes
    ----------
    collection : str
        The collection (``task``) whose claims, passages, criticalities and outcomes are
        used; its own labels are the reference the deltas are taken against.
    verdict_labels : dict
        green / yellow / red → HRI label (`runner.hri.predicted_labels`).
    s1_responses : int or None
        Responses whose claims S1 labels (None = all; a seeded, outcome-stratified
        sample otherwise, for machines where even S1 is slow).
    judge_responses : int or None
        Responses whose claims every judge judges (None = all S1 responses), drawn from
        the S1 responses so every combination has both members.
    aggregations : list of str
    baseline : str
        Aggregation the summary's best-pair search reports deltas against.
    keep_outputs : bool
        Write every judge answer to ``hri_predicted_verdicts.json``.
    """

    collection: str = "factcheckgpt_gold"
    verdict_labels: dict[str, str] = field(
        default_factory=lambda: dict(predicted_labels.DEFAULT_VERDICT_LABELS)
    )
    s1_responses: Optional[int] = None
    judge_responses: Optional[int] = 4
    aggregations: list[str] = field(default_factory=lambda: list(AGGREGATIONS))
    baseline: str = "additive"
    keep_outputs: bool = True


@dataclass
class HriPredicted(Study, name="hri_predicted", titles=TITLES, paper="claims"):
    """Seeds 001 + 004: the HRI from predicted claim labels against human response outcomes."""

    hri: HRIConfig
    bootstrap: BootstrapConf
    span_detector: Any = None
    judges: dict[str, Any] = field(default_factory=dict)
    params: Params = field(default_factory=Params)
    config: HRIConfig = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Aggregations, a verifier, no name clash and the verdict mapping, before any data."""
        params = self.params
        calibration_tables.check_aggregations(params.aggregations, params.baseline)
        s1, judges = self.span_detector, self.judges
        if s1 is None and not judges:
            raise ConfigError("hri_predicted needs span_detector and/or judges configured")
        if s1 is not None and s1.name in judges:
            raise ConfigError(f"judge name {s1.name!r} clashes with the span detector's name")
        self.config = load_hri_config(self.hri)
        predicted_labels.verdict_labels(params.verdict_labels, self.config)
        if self.bootstrap is None:
            raise ConfigError(
                "hri_predicted needs bootstrap settings: add `bootstrap: default` (or "
                "`bootstrap=<option>`) to the experiment"
            )

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Label every claim with each system, score the HRI, rank against human outcomes."""
        params, det, boot = self.params, self.span_detector, self.bootstrap
        if data is None:
            raise ConfigError("hri_predicted needs a dataset: set `override /dataset: factbench`")
        if det is not None:  # before any verifier call
            det.check_disjoint("hri_predicted", data.name, data.info)
        mapping = predicted_labels.verdict_labels(params.verdict_labels, self.config)
        responses, references = predicted_tables.collection_responses(data, params.collection)
        plan = predicted_labels.plan_responses(
            responses, params.s1_responses, params.judge_responses, run.seed, det is not None
        )
        result = StudyResult(titles=dict(TITLES))
        systems, judge_labels, verdicts, runtime = self._label(responses, plan, run, result)

        ref_name = f"reference: {params.collection} labels"
        scored = predicted_labels.score_systems(
            responses, references, systems, plan.owner, mapping, self.config
        )
        s1_run = plan.s1 if det is not None else None
        judged_run = plan.judged if judge_labels else None
        scopes = predicted_tables.response_scopes(len(responses), s1_run, judged_run)
        by_scope = predicted_tables.ranking_scopes(
            result, scopes, scored, responses, ref_name, params.aggregations, boot
        )
        predicted_tables.label_table(result, systems, responses, params.collection, references)
        result.scores = predicted_tables.scores_frame(responses, scored, params.aggregations)
        result.runtime["hri_predicted"] = runtime
        result.extra["hri_predicted_summary.json"] = predicted_tables.summary_json(
            by_scope, mapping, params.collection, responses, runtime["claims"], s1_run or [],
            judged_run or [], runtime, boot, data,
        )  # fmt: skip
        result.extra["hri_predicted_claims.json"] = predicted_tables.claims_json(
            responses, plan.owner, systems
        )
        if params.keep_outputs and verdicts:
            result.extra["hri_predicted_verdicts.json"] = verdicts
        result.tags.update(
            {
                "collection": params.collection,
                "judges": ",".join(judge_labels),
                "s1_claims": str(runtime["s1_claims"]),
                "judged_claims": str(runtime["judged_claims"]),
            }
        )
        return result

    def _label(self, responses: list, plan: Any, run: RunContext, result: StudyResult) -> tuple:
        """Each system's labels of the claims it sees (S1 on ``plan.s1_claims``, the judges
        on ``plan.judged_claims``): the systems, the judges' rows, their verdicts, runtime."""
        det, judges = self.span_detector, self.judges
        s1_pos, judged = plan.s1_claims, plan.judged_claims
        claims = [c for r in responses for c in r.claims]
        questions = [r.question for r in responses for _ in r.claims]
        runtime: dict[str, Any] = {
            "claims": len(claims),
            "s1_claims": len(s1_pos) if det is not None else 0,
            "judged_claims": len(judged) if judges else 0,
        }
        s1 = None
        if det is not None:
            s1_labels, runtime["span_detector"] = claim_labels_s1(
                det, *self._inputs(questions, claims, s1_pos), run.progress, run.cache_dir
            )
            s1 = (det.name, det.weights_tag(), s1_pos, s1_labels)
            result.tags["s1_weights"] = det.weights_tag()
        answers = judge_claims(
            judges, *self._inputs(questions, claims, judged), run.progress, run.cache_dir
        )
        judge_labels, verdicts, judge_runtime = predicted_tables.judge_records(
            judges, answers, responses, plan.owner, judged
        )
        if judge_runtime:
            runtime["judges"] = judge_runtime
        systems = system_labels(s1, judge_labels, judged)
        log.info(
            "hri_predicted: %d responses (%d judged), %d claims (%d judged), %d systems",
            *(len(responses), len(plan.judged), len(claims), len(judged), len(systems)),
        )
        return systems, judge_labels, verdicts, runtime

    @staticmethod
    def _inputs(questions: list[str], claims: list[Any], positions: list[int]) -> tuple:
        """The questions, texts and passages of the claims at ``positions``."""
        texts = [claims[i].text for i in positions]
        return (
            [questions[i] for i in positions],
            texts,
            [list(claims[i].passages) for i in positions],
        )

    @classmethod
    def figures(cls, cells):
        """AUROC with intervals per (system x aggregation), one figure per scope, from cells."""
        from runner.reporting import metric_grid_figure

        out = {}
        for suffix, what in SCOPES:
            table = f"hri_predicted_ranking{suffix}"
            if (cells["table"] == table).any():
                out[f"hri_predicted_auroc{suffix}"] = metric_grid_figure(
                    cells, table, "AUROC", f"HRI from predicted claim labels: AUROC, {what}"
                )
        return out
