"""HRI inputs from claim verifiers: predicted claim labels in place of annotated ones.

Why: in deployment nobody hands the HRI gold claim labels; a claim verifier (a span
detector, an LLM judge, a combination of them) labels each claim green / yellow / red
against the retrieved passages, and the HRI is computed from those predictions. Scoring
that index against human response outcomes answers the seed's practical question: which
verifier and which aggregation give the most useful risk index. This module holds the
pieces between a verifier's verdicts and `runner.hri.scoring.score_response`:

- `verdict_labels`: the green / yellow / red → HRI label map, checked against the HRI
  config. Default: green → SUPPORTED, yellow → PARTIAL, red → UNSUPPORTED. A red verdict
  means "absent from the passages or contradicted by them" (the judges' prompt); only the
  weaker reading, unsupported, holds in both cases, so red is not mapped to CONTRADICTED
  (whose safety floors would then fire on mere absence of evidence).
- `relabel`: the same responses with each claim's labels replaced by a predicted one
  (criticality, passages and outcome kept).
- `select_responses`: a seeded sample of whole responses, stratified by outcome, for
  verifiers too slow to run on every claim (a response's HRI needs all its claims);
  `plan_responses` draws S1's sample and, from it, the judges' sample.

The systems themselves (S1, S2, S3–S5, cross-judge combinations) are built by
`runner.claims.systems.system_labels`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from runner.data import CLAIM_CHECK, LABELS, LabelAssignment, Response
from runner.errors import ConfigError
from runner.frames import check_labels
from runner.hri.config import HRIConfig
from runner.hri.scoring import HRIResult, score_response

DEFAULT_VERDICT_LABELS: dict[str, str] = {
    "green": "SUPPORTED",
    "yellow": "PARTIAL",
    "red": "UNSUPPORTED",
}


def verdict_labels(mapping: Mapping[str, str] | None, config: HRIConfig) -> dict[str, str]:
    """The verdict → HRI label map, every verdict mapped to a label the config knows.

    Raises
    ------
    ConfigError
        A missing or unknown verdict, or an HRI label the config does not define.
    """
    out = dict(DEFAULT_VERDICT_LABELS if mapping is None else mapping)
    missing = [v for v in LABELS if v not in out]
    extra = [v for v in out if v not in LABELS]
    if missing or extra:
        raise ConfigError(
            f"study.params.verdict_labels must map exactly {list(LABELS)}; "
            f"missing {missing}, unknown {extra}"
        )
    unknown = {v: lab for v, lab in out.items() if lab not in config.labels}
    if unknown:
        raise ConfigError(
            f"study.params.verdict_labels: HRI labels {unknown} are not in hri.labels "
            f"({sorted(config.labels)})"
        )
    return out


def relabel(
    responses: Sequence[Response], labels: Sequence[str], mapping: Mapping[str, str]
) -> list[Response]:
    """`responses` with claim labels replaced by ``mapping[labels[i]]``, claims in order.

    Parameters
    ----------
    responses : sequence of Response
    labels : sequence of str
        One green / yellow / red label per claim, in response then claim order.
    mapping : mapping verdict -> HRI label

    Raises
    ------
    ValueError
        When the number of labels differs from the number of claims.
    """
    checked = check_labels(labels, **CLAIM_CHECK)
    n = sum(len(r.claims) for r in responses)
    if len(checked) != n:
        raise ValueError(f"{len(checked)} labels for {n} claims")
    out, i = [], 0
    for r in responses:
        claims = []
        for c in r.claims:
            claims.append(replace(c, labels=(LabelAssignment(mapping[checked[i]]),), feedback=()))
            i += 1
        out.append(replace(r, claims=tuple(claims)))
    return out


def select_responses(responses: Sequence[Response], limit: int | None, seed: int) -> list[int]:
    """Indices of a seeded sample of ``limit`` responses keeping the outcome shares.

    Each outcome gets its largest-remainder share of ``limit`` (at least one response per
    outcome when ``limit`` ≥ 2); None or a limit ≥ the number of responses keeps all.
    Indices are returned in data order.
    """
    n = len(responses)
    if limit is None or limit >= n:
        return list(range(n))
    if limit < 1:
        raise ConfigError(f"study.params.judge_responses must be >= 1 or null, got {limit}")
    y = np.array([int(r.outcome) for r in responses])
    classes = [c for c in (0, 1) if (y == c).any()]
    quota = {c: limit * float((y == c).mean()) for c in classes}
    take = {c: int(np.floor(q)) for c, q in quota.items()}
    if limit >= len(classes):
        for c in classes:
            take[c] = max(take[c], 1)
    while sum(take.values()) > limit:
        c = max(classes, key=lambda k: (take[k] - quota[k], k))
        take[c] -= 1
    while sum(take.values()) < limit:
        c = max(classes, key=lambda k: (quota[k] - take[k], -k))
        take[c] += 1
    rng = np.random.default_rng([seed, 17])
    keep: list[int] = []
    for c in classes:
        positions = np.flatnonzero(y == c)
        keep.extend(int(p) for p in rng.choice(positions, size=take[c], replace=False))
    return sorted(keep)


@dataclass
class ResponsePlan:
    """Which responses (and so which claims) each kind of verifier labels.

    A response's HRI needs every one of its claims, so verifiers are given whole responses:
    S1 those in ``s1``, the judges those in ``judged`` (drawn from ``s1``, so every
    combination of S1 and a judge has both members).

    Attributes
    ----------
    s1, judged : list of int
        Response indices, in data order.
    owner : ndarray of int
        The response index of every claim (claims in response order).
    """

    s1: list[int]
    judged: list[int]
    owner: np.ndarray

    @property
    def s1_claims(self) -> np.ndarray:
        """Positions of the claims S1 labels."""
        return np.flatnonzero(np.isin(self.owner, self.s1))

    @property
    def judged_claims(self) -> np.ndarray:
        """Positions of the claims the judges judge."""
        return np.flatnonzero(np.isin(self.owner, self.judged))


def plan_responses(
    responses: Sequence[Response],
    s1_limit: int | None,
    judge_limit: int | None,
    seed: int,
    has_s1: bool,
) -> ResponsePlan:
    """Seeded, outcome-stratified samples of responses for S1 and for the judges.

    Without S1, the judges' sample is drawn from every response. The judges' sample uses
    ``seed + 1`` so it is not the head of S1's.
    """
    s1 = select_responses(responses, s1_limit, seed) if has_s1 else list(range(len(responses)))
    inner = select_responses([responses[i] for i in s1], judge_limit, seed + 1)
    owner = np.concatenate([np.full(len(r.claims), i) for i, r in enumerate(responses)])
    return ResponsePlan(s1=s1, judged=[s1[i] for i in inner], owner=owner)


def score_systems(
    responses: Sequence[Response],
    references: Mapping[str, Sequence[Response]],
    systems: Mapping[str, tuple[np.ndarray, np.ndarray]],
    owner: np.ndarray,
    mapping: Mapping[str, str],
    config: HRIConfig,
) -> dict[str, dict[int, HRIResult]]:
    """Every response's HRI under each reference labelling and each system's labels.

    Parameters
    ----------
    responses : sequence of Response
        The responses of the study's collection.
    references : mapping collection -> responses
        Labellings of exactly these responses' claims (rows ``reference: <name> labels``).
    systems : mapping row -> (claim positions, verdicts)
        From `runner.claims.systems.system_labels`; a system scores only the responses
        whose claims it labelled (all of them).
    owner : ndarray of int
        The response index of every claim.
    mapping, config
        Verdict -> HRI label (`verdict_labels`) and the HRI configuration.

    Returns
    -------
    dict row -> {response index: score}
        References first, then the systems, in the order given.
    """
    rows: dict[str, tuple[list[int], list[Response]]] = {
        f"reference: {t} labels": (list(range(len(responses))), list(rs))
        for t, rs in references.items()
    }
    for row, (positions, labels) in systems.items():
        covered = sorted({int(owner[p]) for p in positions})
        rows[row] = (covered, relabel([responses[i] for i in covered], labels, mapping))
    return {
        row: {i: score_response(r, config) for i, r in zip(cov, rs, strict=True)}
        for row, (cov, rs) in rows.items()
    }
