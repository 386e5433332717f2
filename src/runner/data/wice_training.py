"""WiCE claims as training rows for the claim verifier (`experiment=train_claim_verifier`).

Why its own loader: `experiment=train_detector` learns from a response-level frame with
answer spans (RAGTruth's shape). A claim checked against its evidence is the same task with
the claim as the answer, so this loader writes WiCE's non-test parts in that shape and the
sentence recipe trains on them unchanged (`runner.verifiers.sentence_pairs`: the claim is
the "sentence", the evidence its context, best units first within the window).

Sources (``sources``), never WiCE test (the claim study evaluates it):

- ``dev``: the 349 dev claims with the full evidence of their cited page;
- ``dev_oracle``: the 1,043 dev oracle chunks (gold sentences plus distractors), one row per
  chunk, labelled with the chunk's own label;
- ``non_supported_tokens_train``: the 374 sub-claims of WiCE's train split with token masks
  of their unsupported part, against the cited page.

Mapping: ``answer`` = the claim, ``context`` = the evidence sentences joined by newlines,
``question`` = "" (WiCE has none); ``label`` = 1 when the claim is not fully supported
(partially_supported / not_supported); ``spans`` = the whole claim for a positive WiCE dev
row, the characters of the marked tokens for a sub-claim (a positive exactly when a token is
marked). ``group_id`` = the WiCE claim id (a sub-claim ``train31212-2``: ``train31212``), so
the validation split holds out whole claims with every view of them. ``info["trained_on"]``
names the parts read (``wice:dev``, ``wice:non_supported_tokens/train``): the claim studies
refuse a verifier trained on the part they evaluate (`runner.claims.disjointness`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from runner.data.base import LoadedData
from runner.data.claim_frame import data_file, record_field, str_list, strict_records
from runner.data.hashing import fingerprint_files, frame_fingerprint, sha256_file
from runner.data.response_frame import summarise
from runner.errors import ConfigError, DataError

SOURCES = {
    "dev": ("wice/data/entailment_retrieval/claim/dev.jsonl", "wice:dev"),
    "dev_oracle": (
        "wice/code_and_resources/entailment_inputs/oracle_chunks/claim/dev.jsonl",
        "wice:dev",
    ),
    "non_supported_tokens_train": (
        "wice/data/non_supported_tokens/train.jsonl",
        "wice:non_supported_tokens/train",
    ),
}
"""Source name -> (file under the data root, the WiCE part it belongs to)."""
POSITIVE = ("partially_supported", "not_supported")
NEGATIVE = ("supported",)
LOADER_VERSION = 1
_HOW_TO = (
    "WiCE is read from <data_dir>/wice/ (set RUNNER_DATA_DIR). Get it from "
    "https://github.com/ryokamoi/wice (data/ and code_and_resources/, ODC-BY 1.0)."
)


def load_wice_claim_training(
    sources: list[str] | None = None,
    data_dir: str | None = None,
    name: str = "wice_claim_train",
) -> LoadedData:
    """WiCE's non-test parts as labelled training rows (settings: `runner.data.base`).

    ``sources`` are keys of `SOURCES` (default all three: dev claims, dev oracle chunks,
    train sub-claims), each read from its file under ``<data_dir>``; an unknown or empty
    list is a `ConfigError`. A row without a known label, or a sub-claim whose tokens are
    not found in its claim or whose mask disagrees with its tokens, is a `DataError` naming
    file, line and field. ``info["split"]`` is ``train`` (no row of WiCE test); ``info``
    adds ``sources`` and ``trained_on`` (the WiCE parts read).
    """
    sources = _check_settings(sources)
    rows: list[dict[str, Any]] = []
    files: list[Path] = []
    for source in sources:
        # Located and read source by source: a bad row of one is reported before a later
        # source's missing file.
        file = data_file(None, data_dir, SOURCES[source][0], _HOW_TO)
        files.append(file)
        rows.extend(_source_rows(source, file))
    return _record(pd.DataFrame(rows), files, sources, name)


def _check_settings(sources: list[str] | None) -> list[str]:
    """The sources to read (default all), after refusing an unknown or empty list."""
    sources = list(sources) if sources is not None else list(SOURCES)
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise ConfigError(
            f"dataset.sources must be a non-empty subset of {sorted(SOURCES)}, got {sources!r}"
        )
    return sources


def _source_rows(source: str, file: Path) -> list[dict[str, Any]]:
    """One source's file as training rows, in file order."""
    seen: dict[str, int] = {}
    return [_row(source, rec, file, line, seen) for line, rec in strict_records(file)]


def _record(frame: pd.DataFrame, files: list[Path], sources: list[str], name: str) -> LoadedData:
    """The result: ``info``, and a fingerprint of the files, the loader and ``sources``."""
    params = {"sources": sources}
    info = summarise(frame)
    info.update(
        origin="local",
        split="train",
        sources=sources,
        trained_on=sorted({SOURCES[s][1] for s in sources}),
        files_sha256={str(f): sha256_file(f) for f in files},
    )
    fingerprint = frame_fingerprint(
        fingerprint_files(files), "runner.data.wice_training", LOADER_VERSION, params
    )
    return LoadedData(
        name=name, frame=frame, files=[str(f) for f in files], fingerprint=fingerprint, info=info
    )


def _row(source: str, rec: dict, file: Path, line: int, seen: dict[str, int]) -> dict[str, Any]:
    """One record as a training row; ``seen`` counts the rows of each claim so far (an
    oracle chunk's id is ``dev_oracle:<claim>#<k>``)."""
    meta = record_field(rec, "meta", file, line)
    claim_id = meta.get("id") if isinstance(meta, dict) else None
    if not isinstance(claim_id, str) or not claim_id:
        raise DataError("meta.id must be a non-empty string", file=str(file), row=line)
    claim = record_field(rec, "claim", file, line)
    evidence = str_list(record_field(rec, "evidence", file, line), file, line, "evidence")
    raw = record_field(rec, "label", file, line)
    if raw not in POSITIVE + NEGATIVE:
        raise DataError(
            f"label {raw!r} not in {POSITIVE + NEGATIVE}", file=str(file), row=line, field="label"
        )
    label, spans, group = _target(source, raw, claim, claim_id, rec, file, line)
    k = seen.get(claim_id, 0)
    seen[claim_id] = k + 1
    example_id = f"{source}:{claim_id}" + (f"#{k}" if source == "dev_oracle" else "")
    return {
        "example_id": example_id,
        "group_id": group,
        "task": source,
        "source": "wice",
        "question": "",
        "context": "\n".join(evidence),
        "answer": claim,
        "label": label,
        "spans": spans,
        "raw_label": raw,
    }


def _target(
    source: str, raw: str, claim: str, claim_id: str, rec: dict, file: Path, line: int
) -> tuple[int, list[tuple[int, int]], str]:
    """A row's label, spans and group (see the module docstring)."""
    if source == "non_supported_tokens_train":
        spans = token_spans(claim, rec, file, line)
        group = claim_id.split("-")[0]  # sub-claims of one WiCE claim stay together
        return int(bool(spans)), spans, group
    label = int(raw in POSITIVE)
    return label, ([(0, len(claim))] if label else []), claim_id


def token_spans(claim: str, rec: dict, file: Path, line: int) -> list[tuple[int, int]]:
    """Character spans of a sub-claim's marked tokens (adjacent marked tokens merged).

    Each of ``claim_tokens`` is found in the claim after the previous one; a token that is
    not there, or a mask of another length, is a `DataError` (never a guessed span).
    """
    tokens = record_field(rec, "claim_tokens", file, line)
    mask = record_field(rec, "non_supported_spans", file, line)
    if not isinstance(tokens, list) or not isinstance(mask, list) or len(tokens) != len(mask):
        raise DataError(
            "claim_tokens and non_supported_spans must be lists of one length",
            file=str(file),
            row=line,
            field="non_supported_spans",
        )
    spans: list[tuple[int, int]] = []
    pos = 0
    for token, marked in zip(tokens, mask, strict=True):
        start = claim.find(str(token), pos)
        if start < 0 or not str(token):
            raise DataError(
                f"token {token!r} not found in the claim after character {pos}",
                file=str(file),
                row=line,
                field="claim_tokens",
            )
        end = start + len(str(token))
        pos = end
        if marked is True:
            if spans and claim[spans[-1][1] : start].strip() == "":
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        elif marked is not False:
            raise DataError(
                f"mask value {marked!r} is not true/false",
                file=str(file),
                row=line,
                field="non_supported_spans",
            )
    return spans
