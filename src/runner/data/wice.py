"""WiCE (Wikipedia citation entailment) claims, with the cited page or with oracle chunks.

Two loaders over one data set: `load_wice` (one unit per claim, the full cited evidence)
and `load_wice_oracle` (one unit per oracle chunk). Both build the canonical claim frame
of `runner.data.claim_frame`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from runner.data.base import LoadedData
from runner.data.claim_frame import (
    check_limit,
    count_values,
    data_file,
    finish,
    mapped_label,
    record_field,
    str_list,
    strict_records,
)
from runner.data.claim_labels import LABELS, SEVERITY
from runner.data.split_files import check_split_file
from runner.errors import DataError
from runner.settings import checked_by

WICE_FILES = {
    "wice": "wice/data/entailment_retrieval/claim/{split}.jsonl",
    "wice_oracle": "wice/code_and_resources/entailment_inputs/oracle_chunks/claim/{split}.jsonl",
}
WICE_SPLITS = ("dev", "test")
WICE_LABELS = {
    "supported": "green",
    "partially_supported": "yellow",
    "not_supported": "red",
}
_HOW_TO_WICE = (
    "WiCE is read from <data_dir>/wice/ (set RUNNER_DATA_DIR, or pass path=...). Get it from "
    "https://github.com/ryokamoi/wice (data/ and code_and_resources/, ODC-BY 1.0)."
)


def check_wice_settings(name: str, split: str, path: Any, **_: Any) -> None:
    """Refuse a WiCE split that does not exist, before any file is read (run by the schema)."""
    check_split_file(name, split, path, WICE_SPLITS)


@checked_by(check_wice_settings)
def load_wice(
    split: str = "test",
    path: str | None = None,
    limit: int | None = None,
    data_dir: str | None = None,
    name: str = "wice",
) -> LoadedData:
    """WiCE claims with the full evidence of their cited web page (`runner.data.base`).

    Reads ``path`` (the claim JSONL), else
    ``<data_dir>/wice/data/entailment_retrieval/claim/{split}.jsonl``. ``split`` is ``dev``
    (349 claims) or ``test`` (358); ``limit`` keeps the first claims in file order.

    Mapping: ``claim_id`` = ``response_id`` = ``meta.id`` (each WiCE claim is one
    Wikipedia sentence); ``question`` = "" (WiCE has none; prompts then omit it);
    ``passages`` = one passage, the cited page's evidence sentences joined by newlines;
    ``label``: supported -> green, partially_supported -> yellow, not_supported -> red;
    ``category`` = "" (WiCE has no error categories). ``title`` (``meta.claim_title``)
    and ``supporting_sentences`` are kept as extra columns. The first bad line raises a
    `DataError` naming file, line and field. ``info`` adds ``split`` and ``evidence``.
    """
    _check_settings(name, split, path, limit)
    file = _locate("wice", split, path, data_dir)
    rows, lines = _claim_rows(strict_records(file), file, limit, name)
    params = {"split": split, "limit": limit, "path": str(file)}
    info = {"split": split, "evidence": "full cited page", "public_benchmark": True}
    # fingerprinted under its former name, runner.data.claims.*: see `finish`
    return finish(rows, lines, file, name, "runner.data.claims.load_wice", params, info)


@checked_by(check_wice_settings)
def load_wice_oracle(
    split: str = "test",
    path: str | None = None,
    limit: int | None = None,
    data_dir: str | None = None,
    name: str = "wice_oracle",
) -> LoadedData:
    """WiCE claims with oracle evidence chunks: several verification units per claim.

    Reads ``path`` (the oracle-chunk JSONL), else ``{split}.jsonl`` in
    ``<data_dir>/wice/code_and_resources/entailment_inputs/oracle_chunks/claim/``; ``limit``
    keeps the first *claims* (with all their chunks) in file order. Other settings as in
    `load_wice`.

    Each JSONL row is one chunk (gold supporting sentences plus distractors; 3 per claim
    for most claims). Units: ``unit_id`` = ``<meta.id>#<k>``, ``chunk`` = k (0-based, file
    order), ``passages`` = the chunk's sentences joined by newlines, ``chunk_label`` = the
    chunk's own mapped label. WiCE scores a claim as the *maximum entailment over its
    chunks*, so a study takes the most supported verdict over a claim's units (for a
    hallucination score: the minimum). The claim's ``label`` is likewise its most supported
    chunk label; in the released files every chunk of a claim carries the same label, so
    this is the oracle file's own claim label (``info["chunks_relabelled"]`` counts chunks
    where it differs). The oracle file and the claim file (`load_wice`) disagree on one
    claim per split (dev02254, test02178: supported in the claim file, partially_supported
    in all of its chunks); this loader keeps the oracle file's label, so test has 110
    green / 216 yellow / 32 red claims here against 111 / 215 / 32 in `load_wice`. Other
    mapping as in `load_wice`. ``info`` adds ``split``, ``evidence``, ``chunks_per_claim``
    and ``chunks_relabelled``.
    """
    _check_settings(name, split, path, limit)
    file = _locate("wice_oracle", split, path, data_dir)
    rows, lines, chunks = _chunk_rows(strict_records(file), file, limit, name)
    _label_claims(rows)
    params = {"split": split, "limit": limit, "path": str(file)}
    info = {
        "split": split,
        "evidence": "oracle chunks (claim label = most supported chunk)",
        "chunks_per_claim": count_values(chunks.values()),
        "chunks_relabelled": sum(r["chunk_label"] != r["label"] for r in rows),
        "public_benchmark": True,
    }
    # fingerprinted under its former name, runner.data.claims.*: see `finish`
    return finish(rows, lines, file, name, "runner.data.claims.load_wice_oracle", params, info)


def _check_settings(name: str, split: str, path: str | None, limit: int | None) -> None:
    """Refuse a split WiCE lacks (or a ``path`` named after the other one) and a bad limit."""
    check_split_file(name, split, path, WICE_SPLITS)
    check_limit(limit)


def _locate(kind: str, split: str, path: str | None, data_dir: str | None) -> Path:
    """The file to read (`kind`: a key of `WICE_FILES`), or a `DataNotFoundError` saying how
    to get it."""
    return data_file(path, data_dir, WICE_FILES[kind].format(split=split), _HOW_TO_WICE)


def _claim_rows(
    records: list[tuple[int, dict]], file: Path, limit: int | None, name: str
) -> tuple[list[dict], list[int]]:
    """The claim file's records (up to ``limit``) as canonical rows, with their lines."""
    rows, lines = [], []
    for line, rec in records:
        if limit is not None and len(rows) >= limit:
            break
        meta = record_field(rec, "meta", file, line)
        row = _wice_row(rec, _wice_id(meta, file, line), file, line, name)
        row["title"] = str(meta.get("claim_title", ""))
        row["supporting_sentences"] = rec.get("supporting_sentences", [])
        rows.append(row)
        lines.append(line)
    return rows, lines


def _chunk_rows(
    records: list[tuple[int, dict]], file: Path, limit: int | None, name: str
) -> tuple[list[dict], list[int], Counter]:
    """The oracle file's chunks of the first ``limit`` claims as canonical rows (claim
    ``label`` still unset), their lines, and the chunks per claim."""
    rows, lines = [], []
    chunks: Counter = Counter()
    for line, rec in records:
        meta = record_field(rec, "meta", file, line)
        claim_id = _wice_id(meta, file, line)
        if limit is not None and claim_id not in chunks and len(chunks) >= limit:
            continue
        row = _wice_row(rec, claim_id, file, line, name)
        k = chunks[claim_id]
        chunks[claim_id] += 1
        # The claim's label is set by `_label_claims`, from its most supported chunk.
        row["unit_id"], row["chunk"], row["chunk_label"] = f"{claim_id}#{k}", k, row["label"]
        row["label"] = None
        row["title"] = str(meta.get("claim_title", ""))
        rows.append(row)
        lines.append(line)
    return rows, lines, chunks


def _label_claims(rows: list[dict]) -> None:
    """Give every chunk row its claim's label: the most supported chunk label of the claim
    (and that chunk's raw label)."""
    best: dict[str, tuple[int, str]] = {}
    for row in rows:
        code = SEVERITY[row["chunk_label"]]
        if row["claim_id"] not in best or code < best[row["claim_id"]][0]:
            best[row["claim_id"]] = (code, row["raw_label"])
    for row in rows:
        code, raw = best[row["claim_id"]]
        row["label"], row["raw_label"] = LABELS[code], raw


def _wice_row(rec: dict, claim_id: str, file: Path, line: int, name: str) -> dict:
    """The canonical columns of one WiCE record (claim file or oracle chunk)."""
    raw = record_field(rec, "label", file, line)
    evidence = str_list(record_field(rec, "evidence", file, line), file, line, "evidence")
    return {
        "claim_id": claim_id,
        "response_id": claim_id,
        "question": "",
        "claim": record_field(rec, "claim", file, line),
        "passages": ["\n".join(evidence)],
        "label": mapped_label(raw, WICE_LABELS, file, line, "label"),
        "raw_label": raw,
        "category": "",
        "source": name,
    }


def _wice_id(meta: Any, file: Path, line: int) -> str:
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str) or not meta["id"]:
        raise DataError(
            "meta must be an object with a non-empty string id",
            file=str(file),
            row=line,
            field="meta.id",
        )
    return meta["id"]
