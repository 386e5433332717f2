"""Enhanced support features of RAGScope-E that need no fitting: ROUGE-L and token-F1 risk.

Both compare the answer's content tokens (stop words removed, `runner.text.STOPWORDS`) with
the context's, and both are risks: 1 = no support. An answer with no content token fails
closed (risk 1), as in `runner.features.base`.
"""

from __future__ import annotations

import numpy as np

from runner.features.views import ExampleView
from runner.text import lcs_length_masks


def rouge_l_risk(x: ExampleView) -> float:
    """One minus ROUGE-L recall of the answer against the context, on content tokens.

    Parameters
    ----------
    x : ExampleView
        The example; the answer is the ROUGE "target" (recall is over its tokens).

    Returns
    -------
    float
        ``1 - LCS(answer content, context content) / len(answer content)``; 1.0 when either
        side has no content token (``rouge_score`` scores empty texts 0).
    """
    n = len(x.answer.content)
    if n == 0:
        return 1.0
    return 1.0 - lcs_length_masks(x.answer.content, x.context.content_masks) / n


def token_f1_risk(x: ExampleView) -> float:
    """One minus the bag-of-tokens F1 overlap of answer and context, on content tokens.

    Parameters
    ----------
    x : ExampleView
        The example.

    Returns
    -------
    float
        ``1 - 2PR / (P + R)`` with ``common = Σ_t min(count_a(t), count_c(t))``,
        ``P = common / |a|`` and ``R = common / |c|`` (SQuAD token F1), which equals
        ``1 - 2·common / (|a| + |c|)``; 1.0 when nothing is shared (including when either
        side has no content token).
    """
    if not x.covered_columns:
        return 1.0
    common = float(np.minimum(x.covered_weights, x.context.content_counts).sum())
    return 1.0 - 2.0 * common / (len(x.answer.content) + len(x.context.content))
