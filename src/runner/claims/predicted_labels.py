"""HRI inputs from claim verifiers: predicted claim labels in place of annotated ones.

Why: in deployment nobody hands the HRI gold claim labels; a claim verifier (a span
detector, an LLM judge, a combination of them) labels each claim green / yellow / red
against the retrieved passages, and the HRI is computed from those predictions. Scoring
that index against human response outcomes answers the seed's practical question: which
verifier and which aggregation give the most useful risk index. This module holds the
pieces between a verifier's verdicts and `runner.claims.hri.score_response`:

- `verdict_labels`: the green / yellow / red → HRI label map, checked against the HRI
  config. Default: green → SUPPORTED, yellow → PARTIAL, red → UNSUPPORTED. A red verdict
  means "absent from the passages or contradicted by them" (the judges' prompt); only the
  weaker reading, unsupported, holds in both cases, so red is not mapped to CONTRADICTED
  (whose safety floors would then fire on mere absence of evidence).
- `relabel`: the same responses with each claim's labels replaced by a predicted one
  (criticality, passages and outcome kept).
- `select_responses`: a seeded sample of whole responses, stratified by outcome, for
  verifiers too slow to run on every claim (a response's HRI needs all its claims).
- `system_labels`: every system's claim labels from the S1 and judge verdicts — S1, each
  judge (S2), S3 AND, S4 vote and S5 cascade of S1 with each judge, and the cross-judge
  combinations of `runner.claims.ensembles` with two or more members (a single member is
  S1 or S2 already, and the union of one judge with S1 is S3 AND) — the systems of the
  claim study.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from runner.claims.ensembles import and_rule, cascade_rule, enumerate_combinations, vote_rule
from runner.claims.hri import LabelAssignment, Response
from runner.claims.hri_config import HRIConfig
from runner.claims.labels import LABELS, check_labels
from runner.errors import ConfigError

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
    checked = check_labels(labels)
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


def system_labels(
    s1: tuple[str, str, np.ndarray, np.ndarray] | None,
    judges: Mapping[str, np.ndarray],
    judged: np.ndarray,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Claim labels of every system, with the claims each one labelled.

    Parameters
    ----------
    s1 : (member name, row tag, claim positions, labels) or None
        The span detector's member name in combinations, the tag every row involving it
        carries (e.g. ``random weights (...)``), the positions (in the full claim list) of
        the claims it labelled and its labels for them. With judges, ``judged`` must be
        among those positions.
    judges : mapping judge name -> labels
        Each judge's labels for the claims in ``judged`` (in that order).
    judged : array of int
        Positions (in the full claim list) of the claims the judges labelled.

    Returns
    -------
    dict row name -> (claim positions, labels)
        S1 covers its positions; every system with a judge covers ``judged``.
    """
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    labels: dict[str, np.ndarray] = {}
    tag = ""
    if s1 is not None:
        name, s1_tag, s1_positions, s1_labels = s1
        tag = f" [S1 {s1_tag}]"
        s1_labels = check_labels(s1_labels)
        out[f"S1 span detector [{s1_tag}]"] = (np.asarray(s1_positions), s1_labels)
        if judges:
            where = {int(p): k for k, p in enumerate(s1_positions)}
            missing = [int(p) for p in judged if int(p) not in where]
            if missing:
                raise ValueError(f"judged claims {missing[:5]} have no S1 label")
            labels[name] = s1_labels[[where[int(p)] for p in judged]]
    for j, lab in judges.items():
        lab = check_labels(lab)
        if len(lab) != len(judged):
            raise ValueError(f"judge {j!r}: {len(lab)} labels for {len(judged)} claims")
        labels[j] = lab
        out[f"S2 LLM judge / {j}"] = (judged, lab)
        if s1 is not None:
            s1l = labels[s1[0]]
            out[f"S3 AND / {j}{tag}"] = (judged, and_rule(s1l, lab))
            out[f"S4 vote / {j}{tag}"] = (judged, vote_rule(s1l, lab))
            out[f"S5 cascade / {j}{tag}"] = (judged, cascade_rule(s1l, lab))
    if judges:
        for combo in enumerate_combinations(list(judges), s1[0] if s1 is not None else None):
            n = len(combo.members)
            if n == 1 or (n == 2 and s1 is not None and s1[0] in combo.members and combo.k == 1):
                continue  # a system above already (alone = S1 / S2; union with S1 = S3 AND)
            suffix = tag if s1 is not None and s1[0] in combo.members else ""
            out[f"{combo.name}{suffix}"] = (judged, combo.apply(labels))
    return out
