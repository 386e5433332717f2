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

import pandas as pd

from runner.claims import answer_cache, judge_units, span_cache, system_labels
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
        seed, progress, params = run.seed, run.progress, self.params
        if data is None:
            raise ConfigError("hri_predicted needs a dataset: set `override /dataset: factbench`")
        if self.span_detector is not None:  # before any verifier call
            self.span_detector.check_disjoint("hri_predicted", data.name, data.info)
        config = self.config
        mapping = predicted_labels.verdict_labels(params.verdict_labels, config)
        boot = self.bootstrap
        responses, references = predicted_tables.collection_responses(data, params.collection)
        det, judges = self.span_detector, self.judges
        plan = predicted_labels.plan_responses(
            responses, params.s1_responses, params.judge_responses, seed, det is not None
        )
        s1_resp, judged_resp, owner = plan.s1, plan.judged, plan.owner
        s1_pos, judged = plan.s1_claims, plan.judged_claims
        claims = [c for r in responses for c in r.claims]
        questions = [r.question for r in responses for _ in r.claims]
        result = StudyResult(titles=dict(TITLES))
        runtime: dict[str, Any] = {
            "claims": len(claims),
            "s1_claims": len(s1_pos) if det is not None else 0,
            "judged_claims": len(judged) if judges else 0,
        }

        s1 = None
        if det is not None:
            s1_cache, _ = span_cache(True, run.cache_dir)  # shared with the claim study
            out = det.score(
                [questions[i] for i in s1_pos],
                [claims[i].text for i in s1_pos],
                [list(claims[i].passages) for i in s1_pos],
                progress,
                cache=s1_cache,
            )
            s1 = (det.name, det.weights_tag(), s1_pos, det.labels(out.shares[det.threshold]))
            runtime["span_detector"] = {
                **det.describe(),
                "seconds": round(out.seconds, 3),
                "cached": out.cached,
                "computed_seconds": round(out.computed_seconds, 3),
            }
            result.tags["s1_weights"] = det.weights_tag()
        # The claim study's answer cache: answers keyed by model hash, prompt and decoding are
        # shared with it (and with earlier runs of this study); memory only without a cache dir.
        # The judges take turns claim by claim (`judge_units`), so setups of one model share
        # each first answer and a repair starts from the model's kept keys/values.
        cache, _ = answer_cache(True, run.cache_dir)
        units = pd.DataFrame(
            {
                "question": [questions[i] for i in judged],
                "claim": [claims[i].text for i in judged],
                "passages": [list(claims[i].passages) for i in judged],
            }
        )
        answers = judge_units(judges, units, progress, cache)
        judge_labels, verdicts, judge_runtime = predicted_tables.judge_records(
            judges, answers, responses, owner, judged
        )
        if judge_runtime:
            runtime["judges"] = judge_runtime
        systems = system_labels(s1, judge_labels, judged)
        log.info(
            "hri_predicted: %d responses (%d judged), %d claims (%d judged), %d systems",
            *(len(responses), len(judged_resp), len(claims), len(judged), len(systems)),
        )

        ref_name = f"reference: {params.collection} labels"
        scored = predicted_labels.score_systems(
            responses, references, systems, owner, mapping, config
        )
        scopes = [("", list(range(len(responses))))]
        if det is not None and len(s1_resp) < len(responses):
            scopes.append(("_s1", s1_resp))
        if judge_labels and len(judged_resp) < len(scopes[-1][1]):
            scopes.append(("_judged", judged_resp))
        by_scope = predicted_tables.ranking_scopes(
            result, scopes, scored, responses, ref_name, params.aggregations, boot
        )
        predicted_tables.label_table(result, systems, responses, params.collection, references)
        result.scores = predicted_tables.scores_frame(responses, scored, params.aggregations)
        result.runtime["hri_predicted"] = runtime
        s1_shown = s1_resp if det is not None else []
        judged_shown = judged_resp if judge_labels else []
        result.extra["hri_predicted_summary.json"] = predicted_tables.summary_json(
            by_scope, mapping, params.collection, responses, len(claims), s1_shown,
            judged_shown, runtime, boot, data,
        )  # fmt: skip
        result.extra["hri_predicted_claims.json"] = predicted_tables.claims_json(
            responses, owner, systems
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
