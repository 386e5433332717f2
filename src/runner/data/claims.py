"""Claim-level data: WiCE, Factcheck-Bench stance pairs and a user's own claim file.

Why one module: the claim-verification study judges *claims against passages*, not whole
responses, so these loaders share their own canonical frame (`CLAIM_COLUMNS`) and one
validator, and a user's file fails with the same precise message as a public set would.

Canonical claim frame, one row per *verification unit*:

- ``claim_id`` str, ``response_id`` str (claims of one answer share it), ``question`` str
  (may be ""), ``claim`` str, ``passages`` list of str (at least one, none empty),
  ``label`` green / yellow / red, ``raw_label`` (the data's own label), ``category`` str
  ("" when uncategorised), ``source`` (dataset name); optional ``criticality`` (nullable
  Int64, only where the data has it).
- Usually one unit per claim. The WiCE oracle variant has several units per claim (one per
  oracle chunk): those rows share ``claim_id`` and carry ``unit_id`` (``<claim_id>#<k>``),
  ``chunk`` (k, 0-based) and ``chunk_label`` (that chunk's own label); ``label`` is the
  claim's label (see `load_wice_oracle`). A study scores units and combines them per claim.

The flag task: a claim is *flagged* by a system that says yellow or red; the positives are
the yellow + red claims (`runner.data.claim_labels`). The user format is documented in
``docs/claims_format.md``.
"""

from __future__ import annotations

import hashlib
import numbers
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from runner.data.base import (
    IssueLog,
    LoadedData,
    check_split_file,
    fingerprint_files,
    frame_fingerprint,
    read_jsonl,
    text_problem,
)
from runner.data.claim_labels import LABELS, SEVERITY, to_label
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.paths import data_dir as default_data_dir
from runner.settings import checked_by

# OmegaConf reads the config annotations at runtime and does not understand `X | None`.

LOADER_VERSION = 1
"""Bump when a mapping changes, so fingerprints (and caches keyed on them) change too."""

CLAIM_COLUMNS: tuple[str, ...] = (
    "claim_id",
    "response_id",
    "question",
    "claim",
    "passages",
    "label",
    "raw_label",
    "category",
    "source",
)
"""Columns every canonical claim frame has, in this order (then optional ones)."""

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
FACTCHECK_STANCE_FILE = "factcheck-bench/subtasks/subtask3_claim_evidence_stance.jsonl"
FACTCHECK_STANCES = {
    "completely-support": "green",
    "partially-support": "yellow",
    "refute": "red",
}
IRRELEVANT_POLICIES = ("exclude", "red", "yellow")

USER_REQUIRED = ("question", "claim", "passages", "label")
USER_OPTIONAL = ("claim_id", "response_id", "category", "criticality")
USER_LABELS = {
    "green": "green",
    "supported": "green",
    "yellow": "yellow",
    "partial": "yellow",
    "partially_supported": "yellow",
    "red": "red",
    "unsupported": "red",
    "not_supported": "red",
}
"""Labels the user format accepts (lower-case), and what they map to."""

_HOW_TO_WICE = (
    "WiCE is read from <data_dir>/wice/ (set RUNNER_DATA_DIR, or pass path=...). Get it from "
    "https://github.com/ryokamoi/wice (data/ and code_and_resources/, ODC-BY 1.0)."
)
_HOW_TO_FCB = (
    "Factcheck-Bench is read from <data_dir>/factcheck-bench/ (set RUNNER_DATA_DIR, or pass "
    "path=...). Get subtasks/subtask3_claim_evidence_stance.jsonl from "
    "https://github.com/yuxiaw/Factcheck-GPT (Apache-2.0)."
)


# --------------------------------------------------------------------------- validation


def validate_claim_frame(frame: pd.DataFrame, file: str) -> None:
    """Check a canonical claim frame; raise at the first problem.

    Parameters
    ----------
    frame : DataFrame
        Claim frame; its index holds the user-visible row numbers (1-based JSONL lines).
    file : str
        File named in messages.

    Raises
    ------
    DataError
        Naming file, row and field: a missing column (row ``"header"``), an id or claim
        that is not a non-empty string, a question that is not a string, passages that are
        not a non-empty list of non-empty strings, a label outside green / yellow / red, a
        category that is not a string, a criticality that is not a non-negative integer,
        a duplicate unit (``unit_id``, else ``claim_id``), or one claim with two labels.
    """
    for column in CLAIM_COLUMNS:
        if column not in frame.columns:
            raise DataError("required column missing", file=file, row="header", field=column)
    key = "unit_id" if "unit_id" in frame.columns else "claim_id"
    seen: dict[str, Any] = {}
    claim_label: dict[str, str] = {}
    has_crit = "criticality" in frame.columns
    for row, rec in zip(frame.index, frame.to_dict("records"), strict=True):
        for column in ("claim_id", "response_id", "claim", *([key] if key != "claim_id" else [])):
            problem = text_problem(rec[column], allow_empty=False)
            if problem:
                raise DataError(problem, file=file, row=row, field=column)
        for column in ("question", "category"):
            problem = text_problem(rec[column], allow_empty=True)
            if problem:
                raise DataError(problem, file=file, row=row, field=column)
        problem = _passages_problem(rec["passages"])
        if problem:
            raise DataError(problem, file=file, row=row, field="passages")
        if rec["label"] not in SEVERITY:
            raise DataError(
                f"label must be one of {LABELS}, got {rec['label']!r}",
                file=file,
                row=row,
                field="label",
            )
        if has_crit and not pd.isna(rec["criticality"]):
            problem = _criticality_problem(rec["criticality"])
            if problem:
                raise DataError(problem, file=file, row=row, field="criticality")
        unit = rec[key]
        if unit in seen:
            raise DataError(
                f"duplicate {key} {unit!r} (first at row {seen[unit]})",
                file=file,
                row=row,
                field=key,
            )
        seen[unit] = row
        previous = claim_label.setdefault(rec["claim_id"], rec["label"])
        if previous != rec["label"]:
            raise DataError(
                f"claim {rec['claim_id']!r} has two labels ({previous!r}, {rec['label']!r})",
                file=file,
                row=row,
                field="label",
            )


def _passages_problem(value: Any) -> str | None:
    if not isinstance(value, (list, tuple)):
        return f"passages must be a list of strings, got {type(value).__name__}"
    if len(value) == 0:
        return "passages is an empty list: a claim needs at least one passage"
    for k, passage in enumerate(value):  # numbered from 1, like the rows (JSONL lines)
        if not isinstance(passage, str):
            return f"passage {k + 1} must be a string, got {type(passage).__name__}"
        if not passage.strip():
            return f"passage {k + 1} is empty"
    return None


def _criticality_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return f"criticality must be a non-negative integer, got {type(value).__name__} {value!r}"
    if value < 0:
        return f"criticality must be a non-negative integer, got {value!r}"
    return None


# --------------------------------------------------------------------------- helpers


def _root(data_dir: str | None, how_to: str) -> Path:
    root = Path(data_dir).expanduser() if data_dir else default_data_dir()
    if root is None:
        raise DataNotFoundError(f"RUNNER_DATA_DIR is not set. {how_to}")
    return root


def _file(path: str | None, data_dir: str | None, relative: str, how_to: str) -> Path:
    file = Path(path).expanduser() if path else _root(data_dir, how_to) / relative
    if not file.is_file():
        raise DataNotFoundError(f"{file} not found. {how_to}")
    return file


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive integer or null, got {limit!r}")


def _field(record: dict, key: str, file: Path, line: int) -> Any:
    if key not in record:
        raise DataError("required field missing", file=str(file), row=line, field=key)
    return record[key]


def _str_list(value: Any, file: Path, line: int, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError("must be a list of strings", file=str(file), row=line, field=key)
    return list(value)


def _mapped(value: Any, table: dict[str, str], file: Path, line: int, key: str) -> str:
    try:
        return to_label(value, table)
    except ValueError as exc:
        raise DataError(str(exc), file=str(file), row=line, field=key) from None


def _finish(
    rows: list[dict], lines: list[int], file: Path, name: str, loader: str, params: dict, info: dict
) -> LoadedData:
    if not rows:
        raise DataError("no claims to load", file=str(file))
    frame = pd.DataFrame(rows, index=pd.Index(lines, name="line"))
    order = list(CLAIM_COLUMNS) + [c for c in frame.columns if c not in CLAIM_COLUMNS]
    frame = frame[order]
    validate_claim_frame(frame, str(file))
    frame = frame.reset_index(drop=True)
    claims = frame.drop_duplicates("claim_id")
    info = {
        "rows": len(frame),
        "claims": int(frame["claim_id"].nunique()),
        "responses": int(frame["response_id"].nunique()),
        "labels": _count(claims["label"]),
        "raw_labels": _count(claims["raw_label"]),
        "flagged_positives": int((claims["label"] != "green").sum()),
        "categories": _count(claims.loc[claims["category"] != "", "category"]),
        "origin": "local",
        "public_benchmark": False,  # a user's claim file; public loaders say True
        **info,
    }
    return LoadedData(
        name=name,
        frame=frame,
        files=[str(file)],
        fingerprint=frame_fingerprint(fingerprint_files([file]), loader, LOADER_VERSION, params),
        info=info,
    )


def _count(values: Any) -> dict[str, int]:
    return dict(sorted(Counter(str(v) for v in values).items()))


def _strict_records(file: Path) -> list[tuple[int, dict]]:
    records, _ = read_jsonl(file, IssueLog(skip_invalid=False))
    return records


# --------------------------------------------------------------------------- WiCE


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
    """WiCE claims with the full evidence of their cited web page.

    Mapping: ``claim_id`` = ``response_id`` = ``meta.id`` (each WiCE claim is one
    Wikipedia sentence); ``question`` = "" (WiCE has none; prompts then omit it);
    ``passages`` = one passage, the cited page's evidence sentences joined by newlines;
    ``label``: supported -> green, partially_supported -> yellow, not_supported -> red;
    ``category`` = "" (WiCE has no error categories). ``title`` (``meta.claim_title``)
    and ``supporting_sentences`` are kept as extra columns.

    Parameters
    ----------
    split : str
        ``dev`` (349 claims) or ``test`` (358).
    path : str, optional
        The claim JSONL file; default ``<data_dir>/wice/data/entailment_retrieval/claim/``.
    limit : int, optional
        Keep the first N claims in file order.
    data_dir : str, optional
        Root of the offline data sets; default ``$RUNNER_DATA_DIR``.
    name : str
        Dataset name recorded with the run.

    Returns
    -------
    LoadedData
    """
    file = _wice_file("wice", name, split, path, limit, data_dir)
    rows, lines = [], []
    for line, rec in _strict_records(file):
        if limit is not None and len(rows) >= limit:
            break
        meta = _field(rec, "meta", file, line)
        row = _wice_row(rec, _wice_id(meta, file, line), file, line, name)
        row["title"] = str(meta.get("claim_title", ""))
        row["supporting_sentences"] = rec.get("supporting_sentences", [])
        rows.append(row)
        lines.append(line)
    params = {"split": split, "limit": limit, "path": str(file)}
    return _finish(
        rows,
        lines,
        file,
        name,
        "runner.data.claims.load_wice",
        params,
        {"split": split, "evidence": "full cited page", "public_benchmark": True},
    )


@checked_by(check_wice_settings)
def load_wice_oracle(
    split: str = "test",
    path: str | None = None,
    limit: int | None = None,
    data_dir: str | None = None,
    name: str = "wice_oracle",
) -> LoadedData:
    """WiCE claims with oracle evidence chunks: several verification units per claim.

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
    mapping as in `load_wice`.

    Parameters
    ----------
    path : str, optional
        The oracle-chunk JSONL file; default
        ``<data_dir>/wice/code_and_resources/entailment_inputs/oracle_chunks/claim/``.
    limit : int, optional
        Keep the first N *claims* (with all their chunks) in file order.
    split, data_dir, name
        As in `load_wice`.

    Returns
    -------
    LoadedData
    """
    file = _wice_file("wice_oracle", name, split, path, limit, data_dir)
    rows, lines = [], []
    chunks: Counter = Counter()
    for line, rec in _strict_records(file):
        meta = _field(rec, "meta", file, line)
        claim_id = _wice_id(meta, file, line)
        if limit is not None and claim_id not in chunks and len(chunks) >= limit:
            continue
        row = _wice_row(rec, claim_id, file, line, name)
        k = chunks[claim_id]
        chunks[claim_id] += 1
        # The claim's label is set below, from its most supported chunk.
        row["unit_id"], row["chunk"], row["chunk_label"] = f"{claim_id}#{k}", k, row["label"]
        row["label"] = None
        row["title"] = str(meta.get("claim_title", ""))
        rows.append(row)
        lines.append(line)
    best: dict[str, tuple[int, str]] = {}
    for row in rows:
        code = SEVERITY[row["chunk_label"]]
        if row["claim_id"] not in best or code < best[row["claim_id"]][0]:
            best[row["claim_id"]] = (code, row["raw_label"])
    for row in rows:
        code, raw = best[row["claim_id"]]
        row["label"], row["raw_label"] = LABELS[code], raw
    params = {"split": split, "limit": limit, "path": str(file)}
    info = {
        "split": split,
        "evidence": "oracle chunks (claim label = most supported chunk)",
        "chunks_per_claim": _count(chunks.values()),
        "chunks_relabelled": sum(r["chunk_label"] != r["label"] for r in rows),
        "public_benchmark": True,
    }
    return _finish(rows, lines, file, name, "runner.data.claims.load_wice_oracle", params, info)


def _wice_file(
    kind: str, name: str, split: str, path: str | None, limit: int | None, data_dir: str | None
) -> Path:
    """Check a WiCE loader's settings and find its file (`kind`: a key of `WICE_FILES`)."""
    check_split_file(name, split, path, WICE_SPLITS)
    _check_limit(limit)
    return _file(path, data_dir, WICE_FILES[kind].format(split=split), _HOW_TO_WICE)


def _wice_row(rec: dict, claim_id: str, file: Path, line: int, name: str) -> dict:
    """The canonical columns of one WiCE record (claim file or oracle chunk)."""
    raw = _field(rec, "label", file, line)
    evidence = _str_list(_field(rec, "evidence", file, line), file, line, "evidence")
    return {
        "claim_id": claim_id,
        "response_id": claim_id,
        "question": "",
        "claim": _field(rec, "claim", file, line),
        "passages": ["\n".join(evidence)],
        "label": _mapped(raw, WICE_LABELS, file, line, "label"),
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


# --------------------------------------------------------------------------- Factcheck-Bench


def load_factcheck_stance(
    irrelevant: str = "exclude",
    path: str | None = None,
    limit: int | None = None,
    data_dir: str | None = None,
    name: str = "factcheck_stance",
) -> LoadedData:
    """Factcheck-Bench claim-evidence stance pairs (subtask 3) as claims.

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

    Parameters
    ----------
    irrelevant : str
        ``exclude``, ``red`` or ``yellow``.
    path : str, optional
        The subtask-3 JSONL; default
        ``<data_dir>/factcheck-bench/subtasks/subtask3_claim_evidence_stance.jsonl``.
    limit : int, optional
        Keep the first N kept pairs in file order.
    data_dir, name
        As in `load_wice`.

    Returns
    -------
    LoadedData
    """
    if irrelevant not in IRRELEVANT_POLICIES:
        raise ConfigError(f"irrelevant must be one of {IRRELEVANT_POLICIES}, got {irrelevant!r}")
    _check_limit(limit)
    file = _file(path, data_dir, FACTCHECK_STANCE_FILE, _HOW_TO_FCB)
    table = dict(FACTCHECK_STANCES)
    if irrelevant != "exclude":
        table["irrelevant"] = irrelevant
    rows, lines = [], []
    excluded = 0
    pairs: Counter = Counter()
    for line, rec in _strict_records(file):
        if limit is not None and len(rows) >= limit:
            break
        claim = _field(rec, "claim", file, line)
        evidence = _field(rec, "evidence", file, line)
        stance = _field(rec, "stance", file, line)
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
        digest = hashlib.sha1(claim.encode("utf-8")).hexdigest()[:16]
        rows.append(
            {
                "claim_id": f"fcb3-{line:05d}",
                "response_id": f"fcb3:{digest}",
                "question": "",
                "claim": claim,
                "passages": [evidence],
                "label": _mapped(stance, table, file, line, "stance"),
                "raw_label": stance,
                "category": "",
                "source": name,
            }
        )
        lines.append(line)
    params = {"irrelevant": irrelevant, "limit": limit, "path": str(file)}
    info = {
        "irrelevant": irrelevant,
        "excluded": {"irrelevant": excluded},
        "duplicate_pairs": sum(n - 1 for n in pairs.values()),
        "public_benchmark": True,
    }
    return _finish(
        rows, lines, file, name, "runner.data.claims.load_factcheck_stance", params, info
    )


# --------------------------------------------------------------------------- user format


def load_claims_jsonl(
    path: str, limit: int | None = None, skip_invalid: bool = False, name: str = "claims_jsonl"
) -> LoadedData:
    """A user's own claim file (format: ``docs/claims_format.md``).

    One JSON object per line with ``question`` (str, may be ""), ``claim`` (non-empty
    str), ``passages`` (non-empty list of non-empty str) and ``label`` (green / yellow /
    red, or supported / partial / partially_supported / unsupported / not_supported, any
    case), and optionally ``claim_id`` (unique, default ``<file stem>:<line>``),
    ``response_id`` (default: ``q:<sha1(question)[:16]>`` when the question is not empty,
    so claims of one answer group together, else the claim id), ``category`` (str) and
    ``criticality`` (non-negative int). Any other field is an error, so a misspelt field
    never goes unnoticed. Blank lines are ignored.

    Parameters
    ----------
    path : str
        The JSONL file.
    limit : int, optional
        Keep the first N valid claims.
    skip_invalid : bool
        False (default): the first bad line raises. True: bad lines are dropped, counted and
        listed in ``info["skipped"]``.
    name : str
        Dataset name recorded with the run.

    Returns
    -------
    LoadedData

    Raises
    ------
    DataError
        Naming the file, the 1-based line and the field at fault.
    """
    _check_limit(limit)
    file = Path(path).expanduser()
    if not file.is_file():
        raise DataNotFoundError(f"{file} not found: claims_jsonl needs path=<your .jsonl file>")
    issues = IssueLog(skip_invalid=skip_invalid)
    records, blank = read_jsonl(file, issues)
    rows, lines = [], []
    ids: dict[str, int] = {}
    for line, rec in records:
        if limit is not None and len(rows) >= limit:
            break
        row = _user_row(rec, file, line, issues)
        if row is None:
            continue
        if row["claim_id"] in ids:
            issues.add(
                str(file),
                line,
                "claim_id",
                f"duplicate claim_id {row['claim_id']!r} (first at line {ids[row['claim_id']]})",
            )
            continue
        ids[row["claim_id"]] = line
        row["source"] = name
        rows.append(row)
        lines.append(line)
    if any("criticality" in r for r in rows):
        for r in rows:
            r["criticality"] = r.get("criticality", pd.NA)
    params = {"limit": limit, "skip_invalid": skip_invalid, "path": str(file)}
    info = {
        "blank_lines": blank,
        "skipped_rows": issues.skipped_rows(),
        "skipped": issues.skipped(),
    }
    loaded = _finish(rows, lines, file, name, "runner.data.claims.load_claims_jsonl", params, info)
    if "criticality" in loaded.frame.columns:
        loaded.frame["criticality"] = loaded.frame["criticality"].astype("Int64")
    return loaded


def _user_row(rec: dict, file: Path, line: int, issues: IssueLog) -> dict | None:
    where = str(file)
    unknown = sorted(set(rec) - set(USER_REQUIRED) - set(USER_OPTIONAL))
    if unknown:
        allowed = ", ".join(USER_REQUIRED + USER_OPTIONAL)
        issues.add(where, line, unknown[0], f"unknown field (allowed: {allowed})")
        return None
    for key in USER_REQUIRED:
        if key not in rec:
            issues.add(where, line, key, "required field missing")
            return None
    checks = [
        ("question", text_problem(rec["question"], allow_empty=True)),
        ("claim", text_problem(rec["claim"], allow_empty=False)),
        ("passages", _passages_problem(rec["passages"])),
    ]
    for key in ("claim_id", "response_id"):
        if key in rec:
            checks.append((key, text_problem(rec[key], allow_empty=False)))
    if "category" in rec:
        checks.append(("category", text_problem(rec["category"], allow_empty=True)))
    if "criticality" in rec:
        checks.append(("criticality", _criticality_problem(rec["criticality"])))
    label = None
    try:
        label = to_label(rec["label"], USER_LABELS)
    except ValueError as exc:
        checks.append(("label", str(exc)))
    for key, problem in checks:
        if problem:
            issues.add(where, line, key, problem)
            return None
    question = rec["question"]
    claim_id = rec.get("claim_id", f"{file.stem}:{line}")
    if "response_id" in rec:
        response_id = rec["response_id"]
    elif question.strip():
        response_id = "q:" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:16]
    else:
        response_id = claim_id
    row = {
        "claim_id": claim_id,
        "response_id": response_id,
        "question": question,
        "claim": rec["claim"],
        "passages": list(rec["passages"]),
        "label": label,
        "raw_label": rec["label"],
        "category": rec.get("category", "").strip(),
    }
    if "criticality" in rec:
        row["criticality"] = int(rec["criticality"])
    return row
