"""Factcheck-Bench claim-evidence stance pairs (subtask 3) as canonical claim frames."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from runner.data.base import LoadedData
from runner.data.claim_frame import (
    check_limit,
    data_file,
    finish,
    mapped_label,
    record_field,
    strict_records,
)
from runner.errors import ConfigError, DataError

FACTCHECK_STANCE_FILE = "factcheck-bench/subtasks/subtask3_claim_evidence_stance.jsonl"
FACTCHECK_STANCES = {
    "completely-support": "green",
    "partially-support": "yellow",
    "refute": "red",
}
IRRELEVANT_POLICIES = ("exclude", "red", "yellow")

_HOW_TO_FCB = (
    "Factcheck-Bench is read from <data_dir>/factcheck-bench/ (set RUNNER_DATA_DIR, or pass "
    "path=...). Get subtasks/subtask3_claim_evidence_stance.jsonl from "
    "https://github.com/yuxiaw/Factcheck-GPT (Apache-2.0)."
)


def load_factcheck_stance(
    irrelevant: str = "exclude",
    path: str | None = None,
    limit: int | None = None,
    data_dir: str | None = None,
    name: str = "factcheck_stance",
) -> LoadedData:
    """Factcheck-Bench claim-evidence stance pairs (subtask 3) as claims (`runner.data.base`).

    Reads ``path`` (the subtask-3 JSONL), else
    ``<data_dir>/factcheck-bench/subtasks/subtask3_claim_evidence_stance.jsonl``; ``limit``
    keeps the first kept pairs in file order.

    Each line is one (claim, evidence, stance) pair: 3,305 pairs over 661 claims, 5
    evidence snippets each. Every pair is one claim row: ``claim_id`` = ``fcb3-<line>``,
    ``response_id`` = ``fcb3:<sha1(claim)[:16]>`` (the pairs of one claim share it),
    ``question`` = "", ``passages`` = [evidence], ``raw_label`` = stance. Stance mapping:
    completely-support -> green, partially-support -> yellow, refute -> red.

    ``irrelevant`` evidence (2,057 pairs) neither supports nor refutes the claim; what it
    means here is a choice:

    - ``exclude`` (default): the pairs are left out and counted in ``info["excluded"]``;
      the study is then the stance task on on-topic evidence.
    - ``red``: a claim absent from its passage is unsupported, the seed's definition of
      red ("absent from the passages, or contradicted by them").
    - ``yellow``: routed to review.

    ``info`` adds ``irrelevant``, ``excluded`` and ``duplicate_pairs`` (pairs repeated
    with the same claim and evidence).
    """
    _check_settings(irrelevant, limit)
    file = data_file(path, data_dir, FACTCHECK_STANCE_FILE, _HOW_TO_FCB)
    rows, lines, excluded, pairs = _map(strict_records(file), file, irrelevant, limit, name)
    params = {"irrelevant": irrelevant, "limit": limit, "path": str(file)}
    info = {
        "irrelevant": irrelevant,
        "excluded": {"irrelevant": excluded},
        "duplicate_pairs": sum(n - 1 for n in pairs.values()),
        "public_benchmark": True,
    }
    # fingerprinted under its former name, runner.data.claims.*: see `finish`
    return finish(rows, lines, file, name, "runner.data.claims.load_factcheck_stance", params, info)


def _check_settings(irrelevant: str, limit: int | None) -> None:
    """Refuse an unknown ``irrelevant`` policy or a bad ``limit``."""
    if irrelevant not in IRRELEVANT_POLICIES:
        raise ConfigError(f"irrelevant must be one of {IRRELEVANT_POLICIES}, got {irrelevant!r}")
    check_limit(limit)


def _map(
    records: list[tuple[int, dict]], file: Path, irrelevant: str, limit: int | None, name: str
) -> tuple[list[dict], list[int], int, Counter]:
    """The kept pairs (up to ``limit``) as claim rows, their lines, the irrelevant pairs
    excluded, and how often each (claim, evidence) pair occurs."""
    table = dict(FACTCHECK_STANCES)
    if irrelevant != "exclude":
        table["irrelevant"] = irrelevant
    rows, lines = [], []
    excluded = 0
    pairs: Counter = Counter()
    for line, rec in records:
        if limit is not None and len(rows) >= limit:
            break
        claim = record_field(rec, "claim", file, line)
        evidence = record_field(rec, "evidence", file, line)
        stance = record_field(rec, "stance", file, line)
        if irrelevant == "exclude" and isinstance(stance, str) and stance.strip() == "irrelevant":
            excluded += 1
            continue
        if not isinstance(claim, str) or not isinstance(evidence, str):
            raise DataError(
                "claim and evidence must be strings",
                file=str(file),
                row=line,
                field="claim" if not isinstance(claim, str) else "evidence",
            )
        pairs[(claim, evidence)] += 1
        rows.append(_row(claim, evidence, stance, table, file, line, name))
        lines.append(line)
    return rows, lines, excluded, pairs


def _row(
    claim: str, evidence: str, stance: Any, table: dict[str, str], file: Path, line: int, name: str
) -> dict[str, Any]:
    """One pair as a claim row (the stance mapped by ``table``)."""
    digest = hashlib.sha1(claim.encode("utf-8")).hexdigest()[:16]
    return {
        "claim_id": f"fcb3-{line:05d}",
        "response_id": f"fcb3:{digest}",
        "question": "",
        "claim": claim,
        "passages": [evidence],
        "label": mapped_label(stance, table, file, line, "stance"),
        "raw_label": stance,
        "category": "",
        "source": name,
    }
