"""Every claim-verification system's labels from the span detector's and judges' verdicts.

Why one function: the claim study and the predicted-label HRI study compare the same
systems — S1, each judge (S2), S3 AND, S4 vote and S5 cascade of S1 with each judge, and
the cross-judge combinations of `runner.claims.ensembles` with two or more members (a
single member is S1 or S2 already, and the union of one judge with S1 is S3 AND) — so
both name and build them here, one way.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from runner.claims.ensembles import and_rule, cascade_rule, enumerate_combinations, vote_rule
from runner.data import CLAIM_CHECK
from runner.frames import check_labels


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
        s1_labels = check_labels(s1_labels, **CLAIM_CHECK)
        out[f"S1 span detector [{s1_tag}]"] = (np.asarray(s1_positions), s1_labels)
        if judges:
            where = {int(p): k for k, p in enumerate(s1_positions)}
            missing = [int(p) for p in judged if int(p) not in where]
            if missing:
                raise ValueError(f"judged claims {missing[:5]} have no S1 label")
            labels[name] = s1_labels[[where[int(p)] for p in judged]]
    for j, lab in judges.items():
        lab = check_labels(lab, **CLAIM_CHECK)
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
