"""S1: the span detector as a claim verifier.

Why: the seed runs LettuceDetect (a ModernBERT token classifier trained on RAGTruth) over
the claim and its passages, and lets the share of the claim it marks as unsupported set the
label. Here the claim plays the answer and the passages, joined by a blank line, the
context (`runner.verifiers.LettuceDetectVerifier.token_scores`).

Label rule, at the token threshold ``threshold`` (0.3 by default, as in the seed): a token
is marked when P(hallucinated) > threshold; with ``share`` the fraction of the claim's
tokens marked,

- share == 0 -> green (no span: not flagged);
- 0 < share < ``red_share`` -> yellow;
- share >= ``red_share`` (0.5 by default) -> red.

So a claim is flagged exactly when the detector marks at least one of its tokens, which is
what the seed's sweep counts ("claims flagged at each threshold"). The threshold-free score
is the claim's largest token probability (``max_prob``): flagged at threshold t iff
max_prob > t, so its AUROC summarises the whole sweep.

Several units per claim (WiCE oracle chunks) combine as WiCE's "max entailment over
chunks": a claim's share and max_prob are the *minimum* over its units (the most supported
chunk), and its label follows from that share.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from runner.claims.span_cache import SpanScoreCache, inputs_sha256, score_fields
from runner.data import GREEN, RED, YELLOW, evaluated_part, overlapping
from runner.errors import ConfigError

DEFAULT_SWEEP: tuple[float, ...] = (0.001, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)
"""Token thresholds of the seed's sweep (appendix B)."""


@dataclass
class SpanScores:
    """Per-unit span-detector output.

    Attributes
    ----------
    max_prob : ndarray of float
        Largest token probability of each claim.
    shares : dict of float -> ndarray
        For each swept threshold, the share of each claim's tokens marked.
    spans : list of list of (int, int)
        Character spans (in the claim) marked at the main threshold.
    seconds : float
        Wall time of the scoring in this call (model loading excluded; a cache hit: the
        read).
    cached : bool
        The token probabilities came from the score cache (`runner.claims.span_cache`).
    computed_seconds : float
        Wall time of the computation that produced the probabilities (the earlier run's on
        a cache hit, else ``seconds``).
    """

    max_prob: np.ndarray
    shares: dict[float, np.ndarray]
    spans: list[list[tuple[int, int]]] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    computed_seconds: float = 0.0


class SpanDetector:
    """Claim labels from a token-level hallucination detector.

    Parameters
    ----------
    verifier : object
        Anything with ``token_scores(questions, contexts, answers) -> list[TokenScores]``
        (`runner.verifiers.LettuceDetectVerifier`), already configured (pretrained by path,
        or ``weights: random``).
    threshold : float or None
        Token threshold of the label rule (see the module docstring). None: the trained
        verifier's own threshold, chosen on its held-out training claims (``detector.json``
        ``threshold``; `LettuceDetectVerifier.example_threshold`), set when scoring starts.
    red_share : float
        Share of marked tokens from which the label is red rather than yellow.
    sweep : sequence of float
        Thresholds for the sweep table; ``threshold`` is always included.
    name : str
        Member name of S1 in combination tables.
    batch_size : int
        Claims per `token_scores` call (only for progress reporting; the verifier batches).
    passage_separator : str
        Joins a claim's passages into the detector's context.
    """

    def __init__(
        self,
        verifier: Any,
        threshold: float | None = 0.3,
        red_share: float = 0.5,
        sweep: Sequence[float] = DEFAULT_SWEEP,
        name: str = "S1",
        batch_size: int = 16,
        passage_separator: str = "\n\n",
    ) -> None:
        if not hasattr(verifier, "token_scores"):
            raise ConfigError(f"span detector: {type(verifier).__name__} has no token_scores")
        if threshold is not None and not 0.0 <= float(threshold) < 1.0:
            raise ConfigError(f"span detector: threshold must be in [0, 1), got {threshold}")
        if not 0.0 < float(red_share) <= 1.0:
            raise ConfigError(f"span detector: red_share must be in (0, 1], got {red_share}")
        bad = [t for t in sweep if not 0.0 <= float(t) < 1.0]
        if bad:
            raise ConfigError(f"span detector: sweep thresholds must be in [0, 1), got {bad}")
        if batch_size < 1:
            raise ConfigError(f"span detector: batch_size must be >= 1, got {batch_size}")
        self.verifier = verifier
        self.threshold = None if threshold is None else float(threshold)
        self.red_share = float(red_share)
        self.sweep = tuple(sorted({float(t) for t in sweep} | {self.threshold} - {None}))
        self.name = name
        self.batch_size = batch_size
        self.passage_separator = passage_separator

    def check_sources(self) -> None:
        """The wrapped verifier finds its model files (the pipeline asks before any work)."""
        check = getattr(self.verifier, "check_sources", None)
        if check is not None:
            check()

    def model_files(self) -> list[Path]:
        """The wrapped verifier's model files (none with random weights), for the manifest."""
        files = getattr(self.verifier, "model_files", None)
        return list(files()) if files is not None else []

    def weights_tag(self) -> str:
        """``random weights (<model>)`` or ``trained (<model>)``: what the S1 rows are."""
        weights = getattr(self.verifier, "weights", None)
        if hasattr(self.verifier, "runtime_info"):
            model = self.verifier.runtime_info()["model"]  # "random:<arch>" or path / Hub id
        else:
            model = getattr(self.verifier, "model", "unknown")
        if weights == "random":
            return f"random weights ({model})"
        if weights is None:
            return f"unknown weights ({model})"
        return f"trained ({model})"

    def score(
        self,
        questions: Sequence[str],
        claims: Sequence[str],
        passages: Sequence[Sequence[str]],
        progress: bool = False,
        cache: SpanScoreCache | None = None,
    ) -> SpanScores:
        """Token scores of every claim against its passages.

        Parameters
        ----------
        questions, claims : sequences of str
        passages : sequence of sequence of str
        progress : bool
            Show a progress bar.
        cache : SpanScoreCache, optional
            Read the token probabilities of exactly this call from it, or store them there
            (only for verifiers with ``token_score_fingerprint``; `runner.claims.span_cache`).

        Returns
        -------
        SpanScores
        """
        n = len(claims)
        if not (len(questions) == n == len(passages)):
            raise ValueError("span detector: questions, claims and passages differ in length")
        contexts = [self.passage_separator.join(p) for p in passages]
        if hasattr(self.verifier, "load"):
            self.verifier.load()  # loading is not part of the measured cost
        if self.threshold is None:
            self._adopt_trained_threshold()
        if not hasattr(self.verifier, "token_score_fingerprint"):
            cache = None  # nothing identifies its computation: never cached
        fields = None if cache is None else self._cache_fields(questions, contexts, claims)
        began = time.perf_counter()
        hit = cache.get(fields) if cache is not None else None
        if hit is not None:
            scores, computed = hit
        else:
            scores = self._compute(questions, contexts, claims, progress)
            computed = time.perf_counter() - began
        seconds = time.perf_counter() - began
        if len(scores) != n:
            raise RuntimeError(f"span detector returned {len(scores)} scores for {n} claims")
        if hit is None and cache is not None:
            cache.put(fields, scores, computed)
        return SpanScores(
            max_prob=np.array([float(np.max(s.probs)) for s in scores], dtype=np.float64),
            shares={
                t: np.array([s.flagged_share(t) for s in scores], dtype=np.float64)
                for t in self.sweep
            },
            spans=[[tuple(map(int, sp)) for sp in s.spans(self.threshold)] for s in scores],
            seconds=seconds,
            cached=hit is not None,
            computed_seconds=computed,
        )

    def _cache_fields(
        self, questions: Sequence[str], contexts: list[str], claims: Sequence[str]
    ) -> dict:
        """What identifies one call's token probabilities: the model's own fingerprint,
        the settings that change them and the inputs (`runner.claims.span_cache`)."""
        return score_fields(
            self.verifier.token_score_fingerprint(),
            {"batch_size": self.batch_size, "passage_separator": self.passage_separator},
            inputs_sha256(questions, contexts, claims),
        )

    def _adopt_trained_threshold(self) -> None:
        """``threshold: null``: the threshold the verifier's weights were validated with
        (its card's, chosen on held-out training claims), added to the sweep."""
        pick = getattr(self.verifier, "example_threshold", None)
        if pick is None:
            raise ConfigError(
                f"span detector: threshold null needs a trained verifier with a validated "
                f"threshold; {type(self.verifier).__name__} has none"
            )
        threshold = float(pick())
        if not 0.0 <= threshold < 1.0:
            raise ConfigError(
                f"span detector: the verifier's threshold {threshold} is not in [0, 1)"
            )
        self.threshold = threshold
        self.sweep = tuple(sorted({*self.sweep, threshold}))

    def _compute(
        self,
        questions: Sequence[str],
        contexts: list[str],
        claims: Sequence[str],
        progress: bool,
    ) -> list[Any]:
        """The verifier's token scores, ``batch_size`` claims per call."""
        starts = range(0, len(claims), self.batch_size)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc=f"span detector {self.name}", unit="batch")
        scores = []
        for start in starts:
            stop = start + self.batch_size
            scores.extend(
                self.verifier.token_scores(
                    list(questions[start:stop]), contexts[start:stop], list(claims[start:stop])
                )
            )
        return scores

    def labels(self, shares: np.ndarray) -> np.ndarray:
        """Claim labels from marked-token shares (see the module docstring)."""
        shares = np.asarray(shares, dtype=np.float64)
        out = np.full(len(shares), GREEN, dtype=object)
        out[shares > 0] = YELLOW
        out[shares >= self.red_share] = RED
        return out

    def trained_on(self) -> list[str] | None:
        """The data parts the wrapped verifier's weights learned from (its card's
        ``trained_on``); None when it states none (random weights, a card without it)."""
        card_of = getattr(self.verifier, "_trained_card", None)
        card = card_of() if card_of is not None else None
        if not card or card.get("trained_on") is None:
            return None
        return [str(p) for p in card["trained_on"]]

    def check_disjoint(self, study: str, dataset: str, info: dict[str, Any] | None) -> None:
        """Refuse weights trained on the data this study evaluates (one line, before any
        scoring): a WiCE-trained verifier never on the WiCE part it saw, one trained on
        Factcheck-Bench never on Factcheck-Bench (`runner.data.training_parts`)."""
        trained = self.trained_on()
        evaluated = evaluated_part(dataset, info)
        clash = overlapping(trained or [], evaluated)
        if clash:
            model = getattr(self.verifier, "model", "?")
            raise ConfigError(
                f"{study}: S1 weights {model} were trained on {', '.join(clash)}, which is the "
                f"data this run evaluates ({evaluated}); use a verifier trained on other data "
                f"(docs/detector.md, 'The claim verifier')"
            )

    def describe(self) -> dict[str, Any]:
        """Settings of this S1 run (logged with the study)."""
        return {
            "name": self.name,
            "weights": self.weights_tag(),
            "threshold": self.threshold,
            "red_share": self.red_share,
            "sweep": list(self.sweep),
            "label_rule": "green if no token > threshold; red if share >= red_share; else yellow",
            "trained_on": self.trained_on(),
        }
