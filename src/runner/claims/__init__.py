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
