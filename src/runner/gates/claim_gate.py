"""S1 of the claim studies as a gate: a claim against its evidence, scored by the lexical
features of RAGScope in a logistic regression fitted on labelled claims the study never sees.

Why: S1 must carry skill on claims. Neither model trained here does on WiCE test (the
sentence-pair claim verifier, the RAGTruth detector); the lexical features the RAGScope gates
use (coverage, ROUGE-L, best-sentence support, ...), fitted on the WiCE dev claims, do
(measured in docs/detector.md, "S1 as a claim gate"). They fit in seconds on a CPU, from
data a fresh checkout has, so a claim study can run them at once.

The claim studies' S1 is a span detector (`runner.claims.span_detector.SpanDetector`), which
reads token scores. A claim-level risk is handed over as a span that is the whole claim
(`WholeClaimScores`): the claim's largest token probability is its risk, it is flagged at a
threshold t exactly when its risk exceeds t, and a flagged claim has all of its text marked
(red, under the span detector's label rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from runner.data import (
    GREEN,
    load_ragtruth,
    load_wice,
    load_wice_claim_training,
    ragtruth_sentence_claims,
)
from runner.errors import ConfigError
from runner.features import LEXICAL_FEATURE_NAMES
from runner.gates.logit import LogitGate
from runner.settings import SEED

TRAINING_PARTS = {
    "wice:dev": "the 349 WiCE dev claims against their cited passages",
    "wice:dev_oracle": "the 1,043 WiCE dev oracle chunks (wice_training's dev_oracle)",
    "wice:non_supported_tokens/train": "the 374 WiCE train sub-claims",
    "ragtruth:train": "a seeded sample of RAGTruth train answer sentences against their "
    "context, 1 when a sentence overlaps a gold span (runner.data.ragtruth_sentences)",
}
"""Labelled claim sets a claim gate can be fitted on; ``trained_on`` names one, or several
joined by ``+`` (``wice:dev+ragtruth:train``). None shares a claim with WiCE test or
Factcheck-Bench, the parts the claim studies evaluate; the card names each part by the data
it read (``wice:dev_oracle`` is WiCE dev), so the claim studies refuse a gate on the part it
saw."""
CARD_PARTS = {"wice:dev_oracle": "wice:dev"}


@dataclass(frozen=True)
class WholeClaimScores:
    """A claim-level risk seen as token scores: every character of the claim carries it."""

    risk: float
    length: int

    @property
    def probs(self) -> np.ndarray:
        """The claim's token probabilities: its risk (one value stands for every token)."""
        return np.array([self.risk], dtype=np.float64)

    def flagged_share(self, threshold: float) -> float:
        """1.0 when the risk exceeds `threshold` (the whole claim marked), else 0.0."""
        return 1.0 if self.risk > threshold else 0.0

    def spans(self, threshold: float) -> list[tuple[int, int]]:
        """The whole claim as one span when flagged at `threshold`."""
        return [(0, self.length)] if self.risk > threshold else []


class ClaimGate(BaseEstimator):
    """Claim risk from a logistic gate over lexical claim-vs-evidence features.

    Parameters
    ----------
    trained_on : str, default "wice:dev"
        The labelled claims it is fitted on (`TRAINING_PARTS`); a claim not fully supported
        (partially supported or not supported) is the positive class. The claim studies
        refuse it on the part it was fitted on (`SpanDetector.check_disjoint`).
    features : sequence of str, default every lexical feature
        `runner.features.LEXICAL_FEATURE_NAMES` computed with the claim as the answer and
        its passages as the context.
    C : float, default 1.0
        Inverse L2 strength of the logistic regression (balanced class weights).
    random_state : int, default `runner.settings.SEED`
    threshold : float, default 0.5
        The flag threshold on the risk, used when S1's ``threshold`` is null: with balanced
        class weights, 0.5 is the fitted decision boundary.
    ragtruth_sentences : int, default 5000
        RAGTruth train sentences drawn (seeded) when ``trained_on`` names ``ragtruth:train``.
    data_dir : str, optional
        Root of the offline data sets (default ``$RUNNER_DATA_DIR``).

    Attributes
    ----------
    gate_ : LogitGate
        Fitted on the training claims by `load` (the first scoring fits it).
    """

    weights = "fitted"  # what S1's rows say it ran with (`SpanDetector.weights_tag`)

    def __init__(
        self,
        trained_on: str = "wice:dev",
        features: Sequence[str] = LEXICAL_FEATURE_NAMES,
        C: float = 1.0,
        random_state: int = SEED,
        threshold: float = 0.5,
        ragtruth_sentences: int = 5000,
        data_dir: str | None = None,
    ):
        self.trained_on = trained_on
        self.features = features
        self.C = C
        self.random_state = random_state
        self.threshold = threshold
        self.ragtruth_sentences = ragtruth_sentences
        self.data_dir = data_dir

    @classmethod
    def check_settings(cls, **settings: object) -> None:
        """The training part, the features and the threshold, before any data."""
        gate = cls(**settings)
        parts = gate.parts()
        unknown = [p for p in parts if p not in TRAINING_PARTS]
        if unknown or not parts or len(set(parts)) != len(parts):
            raise ConfigError(
                f"trained_on={gate.trained_on!r}: one or more of {list(TRAINING_PARTS)}, "
                "joined by '+', each once"
            )
        if int(gate.ragtruth_sentences) < 1:
            raise ConfigError(f"ragtruth_sentences must be >= 1, got {gate.ragtruth_sentences!r}")
        if not 0.0 <= float(gate.threshold) < 1.0:
            raise ConfigError(f"threshold must be in [0, 1), got {gate.threshold!r}")
        LogitGate.check_settings(features=list(gate.features), tfidf=False)

    @property
    def model(self) -> str:
        """What the S1 rows name as its model."""
        return f"lexical claim gate fitted on {self.trained_on}"

    def parts(self) -> list[str]:
        """The training parts ``trained_on`` names."""
        return [p.strip() for p in str(self.trained_on).split("+") if p.strip()]

    def check_sources(self) -> None:
        """The training claims exist (the pre-flight check, before the study's data)."""
        for part in self.parts():
            if part == "wice:dev":
                load_wice(split="dev", data_dir=self.data_dir, limit=1)
            elif part == "ragtruth:train":
                load_ragtruth(split="train", data_dir=self.data_dir, limit=1)
        if self._wice_sources():
            load_wice_claim_training(sources=self._wice_sources(), data_dir=self.data_dir)

    def _wice_sources(self) -> list[str]:
        named = {"wice:dev_oracle": "dev_oracle", "wice:non_supported_tokens/train":
                 "non_supported_tokens_train"}  # fmt: skip
        return [named[p] for p in self.parts() if p in named]

    def training_rows(self) -> tuple[pd.DataFrame, np.ndarray]:
        """The claims of every training part as rows (claim = answer) and their labels."""
        frames, labels = [], []
        for part in self.parts():
            if part == "wice:dev":
                frame = load_wice(split="dev", data_dir=self.data_dir).frame
                contexts = ["\n\n".join(p) for p in frame["passages"]]
                frames.append(_rows(frame["question"].tolist(), contexts, frame["claim"].tolist()))
                labels.append((frame["label"] != GREEN).astype(int).to_numpy())
            elif part == "ragtruth:train":
                rows, y = ragtruth_sentence_claims(
                    int(self.ragtruth_sentences), int(self.random_state), self.data_dir
                )
                frames.append(rows)
                labels.append(y)
        if self._wice_sources():
            frame = load_wice_claim_training(self._wice_sources(), self.data_dir).frame
            frames.append(frame[["question", "context", "answer"]])
            labels.append(frame["label"].to_numpy(dtype=np.int64))
        return pd.concat(frames, ignore_index=True), np.concatenate(labels)

    def load(self) -> ClaimGate:
        """Fit on the training claims (once; deterministic for a given seed and data)."""
        if getattr(self, "gate_", None) is not None:
            return self
        rows, y = self.training_rows()
        self.gate_ = LogitGate(
            features=list(self.features), tfidf=False, C=self.C, random_state=self.random_state
        ).fit(rows, y)
        return self

    def token_scores(
        self, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str]
    ) -> list[WholeClaimScores]:
        """Each claim's risk, as a span that is the whole claim."""
        self.load()
        risk = self.gate_.score(_rows(questions, contexts, answers))
        return [WholeClaimScores(float(r), len(a)) for r, a in zip(risk, answers, strict=True)]

    def example_threshold(self) -> float:
        """The flag threshold S1 adopts when its own ``threshold`` is null."""
        return float(self.threshold)

    def _trained_card(self) -> dict[str, list[str]]:
        """What it learned from, as a trained verifier's card says it (S1's disjointness
        check reads it)."""
        return {"trained_on": sorted({CARD_PARTS.get(p, p) for p in self.parts()})}


def _rows(questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str]):
    return pd.DataFrame(
        {"question": list(questions), "context": list(contexts), "answer": list(answers)}
    )
