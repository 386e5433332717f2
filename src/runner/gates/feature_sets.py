"""Named feature lists of the RAGScope gates, so configs and studies cannot drift apart.

- `BASE_FEATURES`: the base family φ (RAGScope-C).
- `ENHANCED_FEATURES`: φ plus ROUGE-L and token-F1 risk; RAGScope-E is the logit on these
  with ``tfidf=True``, which adds the two fold-fitted TF-IDF risks.
- `COVERAGE_FEATURES`: the token-coverage logit. Coverage alone: the uncovered fraction is
  its exact complement (``coverage = 1 - uncovered_fraction``), so adding it would give the
  model a perfectly collinear copy and no information.
- `ZERO_SHOT_FEATURES`: the lexical features that are zero-shot monotone risks as they are.
"""

from __future__ import annotations

from runner.features import BASE_FEATURE_NAMES, LEXICAL_FEATURE_NAMES

BASE_FEATURES: tuple[str, ...] = BASE_FEATURE_NAMES
ENHANCED_FEATURES: tuple[str, ...] = LEXICAL_FEATURE_NAMES
COVERAGE_FEATURES: tuple[str, ...] = ("coverage",)
ZERO_SHOT_FEATURES: tuple[str, ...] = ("uncovered_fraction", "rouge_l_risk", "token_f1_risk")
