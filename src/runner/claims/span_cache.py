"""A cache of the span detector's token probabilities, on disk across runs.

Why: S1's token probabilities do not depend on the label threshold, the red share, the
threshold sweep or any combination rule, yet a re-run that changes only those would spend
most of its time recomputing them (358 WiCE claims: about 7 minutes on 2 CPU cores). So
the probabilities of one `SpanDetector.score` call are kept under a key of everything they
depend on, and a later call with the same key reads them back.

The key covers the detector's verifier as it computes (``token_score_fingerprint``: a hash
of the loaded weights and tokenizer, every setting that reaches the token probabilities,
library versions), the detector's own
input settings (batch size, passage separator) and the *whole* ordered list of inputs of
the call. Whole-call keys are deliberate: the verifier pads length-sorted batches, and a
claim's probabilities differ in the last float bits with its batch neighbours, so a claim
scored within another set of claims is another computation. A hit therefore returns
exactly what a fresh computation of the same call returns, and the run's outputs stay
byte-identical with or without the cache.

Layout and integrity are `runner.claims.keyed_files`'s: one JSON record per call, written
atomically, read back only when its key fields match.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runner.claims.keyed_files import content_key, read_record, record_path, write_record
from runner.text import TokenScores

CACHE_VERSION = 1
"""Bump when the meaning of cached probabilities changes."""


def inputs_sha256(questions: Sequence[str], contexts: Sequence[str], claims: Sequence[str]) -> str:
    """sha256 of the ordered (question, context, claim) inputs of one call."""
    return content_key(
        {"questions": list(questions), "contexts": list(contexts), "claims": list(claims)}
    )


def score_fields(
    fingerprint: Mapping[str, Any], detector: Mapping[str, Any], inputs: str
) -> dict[str, Any]:
    """The fields one call's probabilities depend on (stored beside them)."""
    return {
        "cache_version": CACHE_VERSION,
        "verifier": json.loads(json.dumps(dict(fingerprint), sort_keys=True, default=str)),
        "detector": dict(detector),
        "inputs_sha256": inputs,
    }


def _valid(record: dict[str, Any]) -> bool:
    scores = record.get("scores")
    return isinstance(scores, list) and all(
        isinstance(s, dict) and len(s.get("offsets", ())) == len(s.get("probs", ())) > 0
        for s in scores
    )


@dataclass
class SpanScoreCache:
    """Token probabilities per `SpanDetector.score` call, in ``root`` on disk.

    Parameters
    ----------
    root : Path
        Folder of the cache (the studies use ``<paths.cache_dir>/span_detector``).
    """

    root: Path

    def get(self, fields: Mapping[str, Any]) -> tuple[list[TokenScores], float] | None:
        """The stored token scores and the seconds their computation took, or None."""
        record = read_record(
            record_path(self.root, content_key(fields)), fields, "span score cache", _valid
        )
        if record is None:
            return None
        scores = [
            TokenScores(
                [(int(a), int(b)) for a, b in s["offsets"]],
                np.asarray(s["probs"], dtype=np.float64),
            )
            for s in record["scores"]
        ]
        return scores, float(record.get("seconds", 0.0))

    def put(self, fields: Mapping[str, Any], scores: Sequence[TokenScores], seconds: float) -> Path:
        """Store one call's token scores (float64 probabilities round-trip exactly)."""
        path = record_path(self.root, content_key(fields))
        record = {
            "key_fields": dict(fields),
            "seconds": round(float(seconds), 3),
            "scores": [
                {
                    "offsets": [[int(a), int(b)] for a, b in s.offsets],
                    "probs": [float(p) for p in np.asarray(s.probs, dtype=np.float64)],
                }
                for s in scores
            ],
        }
        write_record(path, record)
        return path
