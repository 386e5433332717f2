"""Named feature lists of the RAGScope gates, so configs and studies cannot drift apart.

- `BASE_FEATURES`: the base family φ (RAGScope-C).
- `ENHANCED_FEATURES`: φ plus ROUGE-L and token-F1 risk; RAGScope-E is the logit on these
  with ``tfidf=True``, which adds the two fold-fitted TF-IDF risks.
- `COVERAGE_FEATURES`: the token-coverage logit: the base family's two token-coverage
  features, answer coverage and rare-token coverage (tokens of length ≥ 6). The paper names
  the model only "token-coverage logistic model"; its Table V AUROC (0.782) differs from
  its uncovered-fraction AUROC (0.779), which a logit on coverage alone (a monotone copy of
  the uncovered score, its exact complement) could not do, so it had more than one input.
  Of the sets tried (docs/protocol.md lists them with their numbers) this is the one the
  name describes; sets with answer length land nearer the published numbers but are not
  "token coverage", and picking by nearness to the paper would tune on the evaluated data.
- `ZERO_SHOT_FEATURES`: the lexical features that are zero-shot monotone risks as they are.
"""

from __future__ import annotations

from runner.features import BASE_FEATURE_NAMES, LEXICAL_FEATURE_NAMES

BASE_FEATURES: tuple[str, ...] = BASE_FEATURE_NAMES
ENHANCED_FEATURES: tuple[str, ...] = LEXICAL_FEATURE_NAMES
COVERAGE_FEATURES: tuple[str, ...] = ("coverage", "rare_token_coverage")
ZERO_SHOT_FEATURES: tuple[str, ...] = ("uncovered_fraction", "rouge_l_risk", "token_f1_risk")
