"""Per-token probabilities of one answer, and the spans and shares read from them.

Why here, below verifiers and claims: a token detector (`runner.verifiers.
LettuceDetectVerifier`) produces these and the claim study's span detector reads them,
also when they come back from its score cache rather than from the model, so the reading
(spans, shares at a threshold) is defined once for both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TokenScores:
    """Hallucination probability of each answer token.

    Attributes
    ----------
    offsets : list of (int, int)
        Character offsets of each answer token in the answer string.
    probs : ndarray of float64
        P(hallucinated) per token, same order.
    """

    offsets: list[tuple[int, int]]
    probs: np.ndarray

    def flagged(self, threshold: float) -> np.ndarray:
        """Boolean mask of tokens with probability strictly above `threshold`."""
        return self.probs > threshold

    def spans(self, threshold: float) -> list[tuple[int, int]]:
        """Character spans of runs of consecutive flagged tokens.

        Parameters
        ----------
        threshold : float
            A token is flagged when its probability is above it.

        Returns
        -------
        list of (start, end)
            Offsets into the answer; a run spans from its first token's start to its last
            token's end (whitespace between its tokens included).
        """
        spans: list[tuple[int, int]] = []
        current: list[int] | None = None
        for (start, end), hit in zip(self.offsets, self.flagged(threshold), strict=True):
            if hit:
                if current is None:
                    current = [start, end]
                else:
                    current[1] = end
            elif current is not None:
                spans.append((current[0], current[1]))
                current = None
        if current is not None:
            spans.append((current[0], current[1]))
        return spans

    def flagged_share(self, threshold: float) -> float:
        """Share of answer tokens flagged at `threshold`."""
        return float(self.flagged(threshold).mean())

    def max_prob(self) -> float:
        """Largest token probability."""
        return float(self.probs.max())
