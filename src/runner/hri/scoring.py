"""The Hallucination Risk Index: claim-level scoring, safety floors, bands (seed 001).

Why: the seed proposes an *auditable* risk score. A response r is decomposed into atomic
claims c_i; each claim carries one or more rubric labels and a criticality v_i ≥ 1. Each
label has a contribution m and counts in one or more risk dimensions
K = {F, C, U, O, S, P, H}; then

    s_k(r)     = Σ_i v_i m_ik / Σ_i v_i                         (k ≠ H)
    s_H(r)     = min(1, Σ_j q_j e^{−λ Δt_j} / max(1, N_reviewed))  (validated feedback)
    HRI_add(r) = min(1, Σ_k w_k s_k(r))
    HRI*(r)    = max(HRI_add(r), max_i φ(c_i))                  (safety floors)

and HRI* on the 0–100 scale selects a risk band and its action (release, caution, review,
block). Every constant comes from `runner.hri.config` (``conf/hri/default.yaml``).

Conventions fixed here (the seed leaves them open):

- A label counts in its configured default dimensions; a claim may name other dimensions
  for it among the label's ``allowed_dimensions`` (e.g. CONTRADICTED in F *and* C when the
  retrieved context is contradicted, PARTIAL in C instead of U).
- When two labels of one claim count in the same dimension, m_ik is the larger
  contribution (a claim cannot exceed 1 in a dimension).
- The H dimension is fed only by validated feedback events. A claim labelled
  VALIDATED_NEGATIVE_FEEDBACK must carry at least one event, and a claim with events must
  carry that label, so the label list stays an honest summary. A claim's own H
  contribution (used by the ``max_claim`` aggregation) is min(1, Σ_{j ∈ claim} q_j e^{−λΔt_j}).
- A floor rule applies per claim; φ(c_i) is the largest matching floor.
- Bands: a score x (HRI* × scale, rounded to ``band_rounding`` decimals) falls in the first
  band whose inclusive ``upper`` bound is ≥ x: with the seed's bands, Low is x ≤ 20, Medium
  20 < x ≤ 50, High 50 < x ≤ 75, Critical x > 75.

`score_response` returns an `HRIResult` that explains itself: per dimension the claims
that fed it, per claim its share of HRI_add, every matching floor and the one that bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.data import Claim, LabelAssignment, Response, check_structure, source_of
from runner.errors import DataError
from runner.hri import aggregation
from runner.hri.config import BandConf, FloorConf, HRIConfig
from runner.hri.feedback import FeedbackScore
from runner.hri.feedback import feedback_score as _feedback_score


@dataclass(frozen=True)
class FloorHit:
    """A safety-floor rule that matched a claim."""

    claim_id: str
    rule: str
    label: str
    floor: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "claim_id": self.claim_id,
            "rule": self.rule,
            "label": self.label,
            "floor": self.floor,
        }


@dataclass(frozen=True)
class ClaimScore:
    """One claim's contributions m_ik, its floor and its share of HRI_add."""

    claim_id: str
    labels: tuple[str, ...]
    criticality: int
    contributions: Mapping[str, float]
    floor: float
    floor_hits: tuple[FloorHit, ...]
    share: float


@dataclass(frozen=True)
class HRIResult:
    """Every number of one response's HRI, and what produced it.

    Attributes
    ----------
    sum_criticality : float
        Σ_i v_i.
    numerators : dict
        Per dimension Σ_i v_i m_ik (for H: Σ_j q_j e^{−λΔt_j}).
    dimension_scores : dict
        s_k per dimension.
    weighted : dict
        w_k s_k per dimension.
    additive_uncapped, additive : float
        Σ_k w_k s_k and HRI_add = min(1, ·).
    floor : float
        max_i φ(c_i) (0 when no rule matched).
    binding_floor : FloorHit or None
        The floor that set HRI* (floor > HRI_add), else None.
    hri_star : float
        HRI*.
    band, action : str
        Risk band of HRI* and its recommended action; `band_ordinal` is its 1-based position.
    aggregations : dict
        Every variant of `runner.hri.aggregation.AGGREGATIONS`.
    """

    response_id: str
    sum_criticality: float
    numerators: Mapping[str, float]
    dimension_scores: Mapping[str, float]
    weights: Mapping[str, float]
    weighted: Mapping[str, float]
    additive_uncapped: float
    additive: float
    floor: float
    floor_hits: tuple[FloorHit, ...]
    binding_floor: FloorHit | None
    hri_star: float
    band: str
    band_ordinal: int
    action: str
    aggregations: Mapping[str, float]
    claims: tuple[ClaimScore, ...]
    feedback: FeedbackScore
    scale: float = 100.0
    dimension_claims: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    def score_columns(self) -> dict[str, Any]:
        """This response's columns in a study's ``scores.parquet``, in their fixed order.

        Every aggregation (in `runner.hri.aggregation.AGGREGATIONS` order), then band,
        action, the binding floor's rule ("" when none), the number of claims and Σ v_i.
        """
        return {
            **{agg: self.aggregations[agg] for agg in aggregation.AGGREGATIONS},
            "band": self.band,
            "action": self.action,
            "binding_floor": "" if self.binding_floor is None else self.binding_floor.rule,
            "n_claims": len(self.claims),
            "sum_criticality": self.sum_criticality,
        }

    def explanation(self, top: int = 5) -> dict[str, Any]:
        """A JSON-serialisable account of the score: drivers, floors, band.

        Parameters
        ----------
        top : int
            How many leading claims and dimensions to list as drivers.
        """
        drivers = sorted(
            (c for c in self.claims if c.share > 0), key=lambda c: (-c.share, c.claim_id)
        )
        dims = sorted(
            (k for k in self.weighted if self.weighted[k] > 0), key=lambda k: (-self.weighted[k], k)
        )
        if self.binding_floor is not None:
            b = self.binding_floor
            reason = (
                f"floor {b.rule} on claim {b.claim_id} ({b.label}) set HRI* to "
                f"{b.floor:g} above HRI_add {self.additive:.4f}"
            )
        else:
            reason = f"HRI* = HRI_add = {self.additive:.4f}; no floor above it"
        return {
            "response_id": self.response_id,
            "hri_star": self.hri_star,
            "hri_star_scaled": self.hri_star * self.scale,
            "band": self.band,
            "action": self.action,
            "reason": reason,
            "hri_add": self.additive,
            "hri_add_uncapped": self.additive_uncapped,
            "sum_criticality": self.sum_criticality,
            "driving_dimensions": [
                {
                    "dimension": k,
                    "score": self.dimension_scores[k],
                    "weight": self.weights[k],
                    "weighted": self.weighted[k],
                }
                for k in dims[:top]
            ],
            "driving_claims": [
                {
                    "claim_id": c.claim_id,
                    "labels": list(c.labels),
                    "criticality": c.criticality,
                    "share_of_hri_add": c.share,
                    "contributions": {k: v for k, v in c.contributions.items() if v > 0},
                }
                for c in drivers[:top]
            ],
            "dimensions": {
                k: {
                    "score": self.dimension_scores[k],
                    "numerator": self.numerators[k],
                    "weight": self.weights[k],
                    "weighted": self.weighted[k],
                    "claims": [
                        {"claim_id": cid, "part": part}
                        for cid, part in self.dimension_claims.get(k, ())
                    ],
                }
                for k in self.dimension_scores
            },
            "floors": [h.to_dict() for h in self.floor_hits],
            "binding_floor": None if self.binding_floor is None else self.binding_floor.to_dict(),
            "feedback": {
                "s_H": self.feedback.value,
                "uncapped": self.feedback.uncapped,
                "capped": self.feedback.capped,
                "denominator": self.feedback.denominator,
                "terms": [
                    {
                        "claim_id": t.claim_id,
                        "event": t.index,
                        "age": t.age,
                        "severity": t.severity,
                        "decay": t.decay,
                        "value": t.value,
                    }
                    for t in self.feedback.terms
                ],
            },
            "aggregations": dict(self.aggregations),
        }


def check_response(response: Response, config: HRIConfig) -> None:
    """All checks before scoring: `check_structure` plus labels and dimensions vs config.

    Raises
    ------
    DataError
        Unknown labels, dimensions a label may not count in, a feedback label without
        events or events without the feedback label; each names the claim id and file/row.
    """
    check_structure(response)
    fb_label = config.feedback.label
    for claim in response.claims:
        for j, assignment in enumerate(claim.labels):
            spec = config.labels.get(assignment.label)
            if spec is None:
                raise DataError(
                    f"claim {claim.claim_id!r}: unknown label {assignment.label!r}; "
                    f"known labels: {sorted(config.labels)}",
                    field=f"labels[{j}]",
                    **source_of(claim),
                )
            if assignment.dimensions is not None:
                bad = [d for d in assignment.dimensions if d not in spec.allowed_dimensions]
                if bad:
                    raise DataError(
                        f"claim {claim.claim_id!r}: label {assignment.label} cannot "
                        f"count in dimension(s) {bad}; allowed: "
                        f"{list(spec.allowed_dimensions)}",
                        field=f"labels[{j}]",
                        **source_of(claim),
                    )
        has_label = fb_label in claim.label_names()
        if has_label and not claim.feedback:
            raise DataError(
                f"claim {claim.claim_id!r}: label {fb_label} needs at least one "
                "validated feedback event (its H score comes from the events)",
                field="feedback",
                **source_of(claim),
            )
        if claim.feedback and not has_label:
            raise DataError(
                f"claim {claim.claim_id!r} has feedback events but not the label "
                f"{fb_label}; add it so the labels say what is scored",
                field="labels",
                **source_of(claim),
            )


def label_dimensions(assignment: LabelAssignment, config: HRIConfig) -> tuple[str, ...]:
    """The dimensions one label assignment counts in (its own or the label's default)."""
    if assignment.dimensions is not None:
        return assignment.dimensions
    return tuple(config.labels[assignment.label].dimensions)


def floor_matches(rule: FloorConf, claim: Claim) -> bool:
    """Whether a floor rule applies to a claim (see `runner.hri.config.FloorConf`)."""
    if rule.label not in claim.label_names():
        return False
    v = claim.criticality
    if rule.min_criticality is not None and v < rule.min_criticality:
        return False
    if rule.max_criticality is not None and v > rule.max_criticality:
        return False
    if rule.min_feedback_events is None and not rule.unresolved_feedback:
        return True
    repeated = (
        rule.min_feedback_events is not None and len(claim.feedback) >= rule.min_feedback_events
    )
    unresolved = rule.unresolved_feedback and any(not e.resolved for e in claim.feedback)
    return repeated or unresolved


def band_for(score: float, config: HRIConfig) -> tuple[BandConf, int]:
    """The band of a score in [0, 1] and its 1-based position.

    The score is multiplied by ``config.scale`` and rounded to ``band_rounding`` decimals
    (so 0.2 × 100 is 20, not 20.000000000000004), then the first band whose ``upper`` is
    ≥ it is chosen.
    """
    if not (math.isfinite(score) and 0 <= score <= 1):
        raise ValueError(f"HRI score must lie in [0, 1], got {score!r}")
    x = round(score * config.scale, config.band_rounding)
    for i, band in enumerate(config.bands):
        if x <= band.upper:
            return band, i + 1
    raise AssertionError("unreachable: the last band's upper bound equals the scale")


def score_response(response: Response, config: HRIConfig) -> HRIResult:
    """Score one response: dimensions, HRI_add, floors, HRI*, band and all aggregations.

    Parameters
    ----------
    response : Response
        Claims with labels, criticality and feedback.
    config : HRIConfig
        Validated constants (`runner.hri.config.load_hri_config`).

    Returns
    -------
    HRIResult

    Raises
    ------
    DataError
        Any problem found by `check_response`, naming the claim.
    """
    check_response(response, config)
    dims = config.dimensions
    h = config.feedback.dimension
    weights = config.weights
    sum_v = float(sum(c.criticality for c in response.claims))

    events = [(c.claim_id, e) for c in response.claims for e in c.feedback]
    try:
        fb = _feedback_score(
            events,
            response.as_of,
            config.feedback.decay_lambda,
            response.n_reviewed,
            config.default_severity(),
            config.feedback.time_unit_days,
        )
    except ValueError as exc:
        raise DataError(
            f"response {response.response_id!r}: {exc}", field="feedback", **source_of(response)
        ) from exc
    fb_by_claim: dict[str, float] = {}
    for term in fb.terms:
        fb_by_claim[term.claim_id] = fb_by_claim.get(term.claim_id, 0.0) + term.value

    per_claim: list[dict[str, float]] = []
    for claim in response.claims:
        m = dict.fromkeys(dims, 0.0)
        for assignment in claim.labels:
            if assignment.label == config.feedback.label:
                continue
            contribution = config.labels[assignment.label].contribution
            for k in label_dimensions(assignment, config):
                m[k] = max(m[k], contribution)
        m[h] = min(1.0, fb_by_claim.get(claim.claim_id, 0.0))
        per_claim.append(m)

    numerators: dict[str, float] = {}
    scores: dict[str, float] = {}
    parts: dict[str, list[tuple[str, float]]] = {k: [] for k in dims}
    for k in dims:
        if k == h:
            numerators[k] = fb.numerator
            scores[k] = fb.value
            for cid, value in fb_by_claim.items():
                parts[k].append((cid, value / fb.denominator))
            continue
        terms = [c.criticality * m[k] for c, m in zip(response.claims, per_claim, strict=True)]
        numerators[k] = math.fsum(terms)
        scores[k] = numerators[k] / sum_v
        for claim, t in zip(response.claims, terms, strict=True):
            if t > 0:
                parts[k].append((claim.claim_id, t / sum_v))

    weighted = {k: weights[k] * scores[k] for k in dims}
    additive_uncapped = math.fsum(weighted.values())
    hri_add = aggregation.additive(scores, weights)

    claim_scores = []
    all_hits: list[FloorHit] = []
    for claim, m in zip(response.claims, per_claim, strict=True):
        hits = tuple(
            FloorHit(claim.claim_id, rule.name, rule.label, float(rule.floor))
            for rule in config.floors
            if floor_matches(rule, claim)
        )
        all_hits.extend(hits)
        share = math.fsum(weights[k] * claim.criticality * m[k] / sum_v for k in dims if k != h)
        share += weights[h] * fb_by_claim.get(claim.claim_id, 0.0) / fb.denominator
        claim_scores.append(
            ClaimScore(
                claim_id=claim.claim_id,
                labels=claim.label_names(),
                criticality=claim.criticality,
                contributions=m,
                floor=max((x.floor for x in hits), default=0.0),
                floor_hits=hits,
                share=share,
            )
        )
    floor = max((x.floor for x in all_hits), default=0.0)
    hri_star = aggregation.with_floors(hri_add, [floor])
    binding = None
    if floor > hri_add:
        binding = max(all_hits, key=lambda x: x.floor)  # first of the largest, claim order
    band, ordinal = band_for(hri_star, config)
    aggs = {
        "additive": hri_add,
        "hri_star": hri_star,
        "multiplicative": aggregation.multiplicative(scores, weights),
        "max_dimension": aggregation.max_dimension(scores),
        "max_claim": aggregation.max_claim(per_claim),
    }
    return HRIResult(
        response_id=response.response_id,
        sum_criticality=sum_v,
        numerators=numerators,
        dimension_scores=scores,
        weights=dict(weights),
        weighted=weighted,
        additive_uncapped=additive_uncapped,
        additive=hri_add,
        floor=floor,
        floor_hits=tuple(all_hits),
        binding_floor=binding,
        hri_star=hri_star,
        band=band.name,
        band_ordinal=ordinal,
        action=band.action,
        aggregations=aggs,
        claims=tuple(claim_scores),
        feedback=fb,
        scale=config.scale,
        dimension_claims={k: tuple(v) for k, v in parts.items()},
    )
