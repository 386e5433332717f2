"""HRI claims files, and the claim-level frame every HRI loader returns.

Why: the HRI is computed from claims someone has labelled — by hand (the seed's worked
example, a pilot annotation) or by mapping a public data set. Both arrive as the same
claim-level frame, so the studies never care where claims came from.

Claims-file format (YAML; JSON is valid YAML too)::

    responses:
      - response_id: supplier-contract       # required, unique in the file
        question: "..."                       # optional strings: question, answer,
        source: "..."                         #   source, task
        as_of: 2026-07-01                     # scoring time; required if any feedback
        n_reviewed: 0                         # N_reviewed of s_H (default 0)
        outcome: null                         # 0/1 known outcome (1 = hallucinated)
        claims:                               # required, non-empty
          - claim_id: "3"                     # required, unique in the response
            text: The SLA includes 24/7 support.
            labels:                           # one or several
              - label: CONTRADICTED
                dimensions: [F, C]            # optional: other allowed dimensions
            criticality: 3                    # integer >= 1 (default 1)
            feedback:                         # validated events only
              - at: 2026-06-01
                validated_by: reviewer-7
                severity: 1.0                 # default: the feedback label's contribution
                resolved: false

Unknown keys are errors (a typo such as ``critcality`` must not be ignored). Errors name
the file, the position (``responses[0].claims[2]``) and the field.

Claim-level frame (one row per claim): the project's canonical claim columns
``claim_id`` (``<response_id>/<claim_id>``, unique), ``response_id``, ``question``,
``claim``, ``passages``, ``label`` (green / yellow / red: SUPPORTED is green, PARTIAL
yellow, any other label red, the worst label of the claim wins), ``raw_label`` (the
labels joined by ``+``), ``criticality``, ``category``; then the HRI columns
``local_claim_id``, ``hri_labels`` (list of names), ``hri_dimensions`` (list, per label
a list of dimensions or None for the default), ``feedback`` (list of event dicts),
``file``, ``row``; and per response (repeated on its claims) ``response_row``,
``answer``, ``as_of`` (ISO string or None), ``n_reviewed``, ``response_label``
(nullable Int64: the outcome), ``source``, ``task``. `responses_from_frame` turns the frame
back into `Response` objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from runner.data.base import LoadedData
from runner.data.hashing import fingerprint_files, frame_fingerprint
from runner.data.hri_records import (
    Claim,
    LabelAssignment,
    Response,
    event_from_mapping,
    parse_time,
    response_from_mapping,
)
from runner.data.text_files import read_text
from runner.errors import DataError, DataNotFoundError
from runner.paths import PROJECT_ROOT

LOADER_VERSION = 1
"""Bump when the frame mapping changes (fingerprints change with it)."""

DEFAULT_CLAIMS_FILE = "experiments/hri/supplier_contract.yaml"
"""The seed's worked example (Table V), relative to the project root."""

COLOUR_OF_LABEL = {"SUPPORTED": "green", "PARTIAL": "yellow"}
"""Traffic-light view of HRI labels; every other label is red."""

_COLOUR_RANK = {"green": 0, "yellow": 1, "red": 2}

FRAME_COLUMNS = (
    "claim_id",
    "response_id",
    "question",
    "claim",
    "passages",
    "label",
    "raw_label",
    "criticality",
    "category",
    "local_claim_id",
    "hri_labels",
    "hri_dimensions",
    "feedback",
    "file",
    "row",
    "response_row",
    "answer",
    "as_of",
    "n_reviewed",
    "response_label",
    "source",
    "task",
)


def read_claims_file(path: str | Path) -> list[Response]:
    """Parse and check a claims file.

    Parameters
    ----------
    path : str or Path
        YAML (or JSON) claims file; see the module docstring for the format.

    Returns
    -------
    list of Response

    Raises
    ------
    DataNotFoundError
        When the file does not exist.
    DataError
        Naming file, position and field for any structural problem.
    """
    p = Path(path)
    if not p.is_file():
        raise DataNotFoundError(
            f"claims file {p} not found; see runner.data.hri_claims for the format"
        )
    try:
        doc = yaml.safe_load(read_text(p))
    except yaml.YAMLError as exc:
        raise DataError(f"not valid YAML: {exc}", file=str(p)) from exc
    if not isinstance(doc, dict) or set(doc) - {"responses", "description"}:
        raise DataError(
            "top level must be a mapping with 'responses' (and optional 'description')",
            file=str(p),
            row="<top>",
        )
    raw = doc.get("responses")
    if not isinstance(raw, list) or not raw:
        raise DataError(
            "'responses' must be a non-empty list", file=str(p), row="<top>", field="responses"
        )
    responses = [response_from_mapping(r, str(p), f"responses[{i}]") for i, r in enumerate(raw)]
    seen: dict[str, str] = {}
    for r in responses:
        if r.response_id in seen:
            raise DataError(
                f"duplicate response_id {r.response_id!r} (first at {seen[r.response_id]})",
                file=str(p),
                row=r.row,
                field="response_id",
            )
        seen[r.response_id] = str(r.row)
    return responses


def load_hri_claims(path: str = DEFAULT_CLAIMS_FILE, name: str = "hri_claims") -> LoadedData:
    """Load a claims file as the claim-level HRI frame.

    Parameters
    ----------
    path : str, optional
        Claims file; relative paths are taken from the project root. Default: the seed's
        worked example, `DEFAULT_CLAIMS_FILE`.
    name : str
        Dataset name for run records.

    Returns
    -------
    LoadedData
        ``frame`` as described in the module docstring; ``info`` has ``responses``,
        ``claims`` and ``rows``.
    """
    p = Path(path or DEFAULT_CLAIMS_FILE)
    if not p.is_absolute():
        p = PROJECT_ROOT / p
    responses = read_claims_file(p)
    frame = responses_to_frame(responses)
    files = [str(p)]
    digest = fingerprint_files(files)
    info = {
        "rows": len(frame),
        "responses": len(responses),
        "claims": len(frame),
        "files_sha256": {str(p): digest},
        "origin": "local",
    }
    return LoadedData(
        name=name,
        frame=frame,
        files=files,
        fingerprint=frame_fingerprint(
            digest, "runner.data.hri_claims", LOADER_VERSION, {"path": str(p)}
        ),
        info=info,
    )


def claim_colour(labels: Sequence[str]) -> str:
    """green / yellow / red view of a claim's HRI labels (the worst wins)."""
    colours = [COLOUR_OF_LABEL.get(label, "red") for label in labels]
    return max(colours, key=_COLOUR_RANK.__getitem__)


def responses_to_frame(responses: Sequence[Response]) -> pd.DataFrame:
    """The claim-level frame of `responses` (columns `FRAME_COLUMNS`)."""
    rows: list[dict[str, Any]] = []
    for r in responses:
        for c in r.claims:
            names = list(c.label_names())
            rows.append(
                {
                    "claim_id": f"{r.response_id}/{c.claim_id}",
                    "response_id": r.response_id,
                    "question": r.question,
                    "claim": c.text,
                    "passages": list(c.passages),
                    "label": claim_colour(names),
                    "raw_label": "+".join(names),
                    "criticality": int(c.criticality),
                    "category": c.category,
                    "local_claim_id": c.claim_id,
                    "hri_labels": names,
                    "hri_dimensions": [
                        None if a.dimensions is None else list(a.dimensions) for a in c.labels
                    ],
                    "feedback": [e.to_dict() for e in c.feedback],
                    "file": c.file,
                    "row": str(c.row),
                    "response_row": str(r.row),
                    "answer": r.answer,
                    "as_of": None if r.as_of is None else r.as_of.isoformat(),
                    "n_reviewed": int(r.n_reviewed),
                    "response_label": r.outcome,
                    "source": r.source,
                    "task": r.task,
                }
            )
    frame = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    frame["criticality"] = frame["criticality"].astype("int64")
    frame["n_reviewed"] = frame["n_reviewed"].astype("int64")
    frame["response_label"] = pd.array(
        [pd.NA if v is None else int(v) for v in frame["response_label"]], dtype="Int64"
    )
    dup = frame["claim_id"].duplicated()
    if dup.any():
        raise DataError(f"duplicate claim_id {frame.loc[dup, 'claim_id'].iloc[0]!r}")
    return frame


def responses_from_frame(frame: pd.DataFrame) -> list[Response]:
    """Rebuild `Response` objects from a claim-level frame, in first-appearance order.

    Raises
    ------
    DataError
        A missing column, or response-level fields that differ between claims of one
        response.
    """
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"claim frame lacks column(s) {missing}", row="header")
    claims: dict[str, list[Claim]] = {}  # in first-appearance order
    meta: dict[str, tuple] = {}
    for rec in frame.itertuples(index=False):
        rid = str(rec.response_id)
        key = _response_key(rec)
        if rid not in claims:
            claims[rid] = []
            meta[rid] = (key, rec.file, rec.response_row)
        elif meta[rid][0] != key:
            raise DataError(
                f"response {rid!r}: response-level fields differ between its "
                f"claims (claim {rec.claim_id!r})",
                file=rec.file or None,
                row=rec.row or None,
            )
        claims[rid].append(_claim_from_row(rec))
    return [_response_from_meta(rid, tuple(claims[rid]), *meta[rid]) for rid in claims]


def _response_key(rec: Any) -> tuple:
    """The response-level fields a claim row repeats; every claim of a response must agree."""
    outcome = None if pd.isna(rec.response_label) else int(rec.response_label)
    return (
        rec.question,
        rec.answer,
        rec.as_of,
        int(rec.n_reviewed),
        outcome,
        rec.source,
        rec.task,
    )


def _claim_from_row(rec: Any) -> Claim:
    """The `Claim` of one frame row; its feedback events are checked again on the way."""
    dims = list(rec.hri_dimensions)
    labels = tuple(
        LabelAssignment(str(name), None if d is None else tuple(str(x) for x in d))
        for name, d in zip(rec.hri_labels, dims, strict=True)
    )
    events = tuple(event_from_mapping(dict(e), f"{rec.claim_id}.feedback") for e in rec.feedback)
    return Claim(
        claim_id=str(rec.local_claim_id),
        labels=labels,
        criticality=int(rec.criticality),
        feedback=events,
        text=str(rec.claim),
        passages=tuple(rec.passages),
        category=str(rec.category),
        file=str(rec.file),
        row=str(rec.row),
    )


def _response_from_meta(
    rid: str, claims: tuple[Claim, ...], key: tuple, file: Any, row: Any
) -> Response:
    """The `Response` of `rid` from its claims and the fields its first claim row carried."""
    question, answer, as_of, n_rev, outcome, source, task = key
    return Response(
        response_id=rid,
        claims=claims,
        question=question,
        answer=answer,
        as_of=None if as_of is None else parse_time(as_of, f"{rid}.as_of"),
        n_reviewed=n_rev,
        outcome=outcome,
        source=source,
        task=task,
        file=str(file),
        row=str(row),
    )
