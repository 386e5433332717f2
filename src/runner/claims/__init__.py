"""Claim verification: which systems label a claim green / yellow / red, and what that costs.

- the span detector as a claim verifier (S1, `span_detector`) and the LLM judges (S2,
  `judges`), run over claim units (`units`, `verifier_runs`) on a seeded sample
  (`sampling`);
- how their verdicts combine (S3 AND, S4 vote, S5 cascade, k-of-n: `ensembles`, `systems`),
  meta-claims found by their wording (`meta`), the flag task's metrics (`flag_metrics`)
  and the study's tables (`tables`);
- the content-keyed caches of model outputs: judge answers (`judges.cache`) and S1 token
  probabilities (`span_cache`), both written through `keyed_files`.

Claim labels and the claim frame are `runner.data` (`claim_labels`, `claim_frame`); the
Hallucination Risk Index is `runner.hri`; agreement statistics are
`runner.evaluation.agreement`.
"""

from runner.claims.ensembles import enumerate_combinations
from runner.claims.flag_metrics import MARK_COLUMN, MOSTLY_ABSTAINED
from runner.claims.meta import MetaClaimDetector
from runner.claims.sampling import resolve_limit, sampling_note, select_claims
from runner.claims.systems import system_labels
from runner.claims.units import claim_units, unit_frame
from runner.claims.verifier_runs import (
    answer_cache,
    claim_labels_s1,
    judge_claims,
    judge_units,
    run_judges,
    run_span_detector,
    span_cache,
)

__all__ = [
    "MARK_COLUMN",
    "MOSTLY_ABSTAINED",
    "MetaClaimDetector",
    "answer_cache",
    "claim_labels_s1",
    "claim_units",
    "enumerate_combinations",
    "judge_claims",
    "judge_units",
    "resolve_limit",
    "run_judges",
    "run_span_detector",
    "sampling_note",
    "select_claims",
    "span_cache",
    "system_labels",
    "unit_frame",
]
