"""Factcheck-Bench (Factcheck-GPT) responses as claim-level HRI frames, for calibration.

Why: seed 001 leaves calibration of the HRI "against datasets with known outcomes" to
future work. Factcheck-Bench is the public set with both a response-level outcome and
per-claim labels, so HRI scores of a response can be ranked against whether it was in
fact wrong. Three *collections* can be loaded (the frame's ``task`` column says which);
each is an independent calibration set, never pooled with the others.

``factbench`` — ``Factbench.jsonl`` (4,835 responses; fields ``prompt``, ``response``,
``response_label``, ``claims``, ``claim_labels``, ``ability_to_test``, ``source``,
``hallucination_spans``). Only responses with a non-empty ``claims`` list can be scored:
326 of them (180 non-factual), from the sources ``factcheckgpt`` (92), ``felm-wk`` (184)
and ``factool-qa`` (50). The 4,507 ``halueval-dolly15k`` rows and the two ``factcheckgpt``
rows with ``response_label`` ``"NA"`` have no claims; they are excluded and counted in
``info["excluded"]``. Mapping:

- ``response_label``: ``false`` → outcome 1 (the response is non-factual, the positive
  class), ``true`` → 0, ``"NA"`` → excluded.
- ``claim_labels``: ``true`` → SUPPORTED, ``false`` → CONTRADICTED (counts in F: the
  claim contradicts world knowledge; there is no retrieved context), ``"unknown"`` →
  UNSUPPORTED (U: not enough evidence to decide). Criticality 1 for every claim (the file
  has no importance information).
- Caveat, visible in the data: in ``felm-wk`` and ``factool-qa`` the response label is
  exactly "no claim is false", so those sources test only that an aggregation preserves
  that order; ``factcheckgpt`` has 7 false responses with no false claim.

``factcheckgpt_gold`` and ``factcheckgpt_stance`` — ``factcheck-GPT-benchmark.jsonl``
(94 responses with the full sentence → claim → evidence tree; 92 with a true/false
``response_factuality``). Claims are taken sentence by sentence in file order; only
``claim_checkworthiness == "factual"`` claims are scored (16 opinion claims and 1
"not_a_claim" are excluded and counted). Criticality comes from the annotators' claim
importance ``if_most_important_claim``: yes → 3, intermediate → 2, no → 1 (configurable),
so this collection exercises the criticality weights and the safety floors.

- gold: ``claims_factuality_label`` mapped as above (true / false / unknown).
- stance: labels derived *only* from the stances of the five automatically retrieved
  passages (``stance_claim_autoEvid``), as an evidence-based labeller would: any
  ``refute`` → CONTRADICTED; else any ``completely-support`` → SUPPORTED; else any
  ``partially-support`` → PARTIAL (counts in U); else (all ``irrelevant``) →
  UNSUPPORTED. This is the non-trivial calibration: the outcome is the humans'
  response-level judgement, the labels come from retrieved evidence.

``passages`` are the claim's retrieved evidence passages (``auto_evidence``) in the tree
collections and empty for ``factbench``. Claim ids are ``<collection>:<line>/<claim>``
(tree claims ``s<sentence>c<k>``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from runner.data.base import LoadedData
from runner.data.hashing import fingerprint_files, frame_fingerprint, sha256_file
from runner.data.hri_claims import responses_to_frame
from runner.data.hri_records import Claim, LabelAssignment, Response
from runner.data.text_files import text_lines
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.paths import data_dir as default_data_dir

LOADER_VERSION = 1
"""Bump when a mapping changes, so fingerprints (and caches keyed on them) change too."""

FOLDER = "factcheck-bench"
FACTBENCH_FILE = "Factbench.jsonl"
TREE_FILE = "factcheck-GPT-benchmark.jsonl"
COLLECTIONS = ("factbench", "factcheckgpt_gold", "factcheckgpt_stance")

#: Factcheck-Bench claim labels → HRI labels.
CLAIM_LABEL_MAP: dict[Any, str] = {
    True: "SUPPORTED",
    False: "CONTRADICTED",
    "unknown": "UNSUPPORTED",
}
#: Response labels → outcome (1 = non-factual response); None = excluded.
RESPONSE_LABEL_MAP: dict[Any, int | None] = {True: 0, False: 1, "NA": None}
STANCES = ("completely-support", "partially-support", "refute", "irrelevant")
DEFAULT_IMPORTANCE: Mapping[str, int] = MappingProxyType({"yes": 3, "intermediate": 2, "no": 1})

_HOW_TO = (
    "Factcheck-Bench is read from <data_dir>/factcheck-bench/ (set RUNNER_DATA_DIR, or pass "
    "path=...). Get Factbench.jsonl and factcheck-GPT-benchmark.jsonl from "
    "https://github.com/yuxiaw/Factcheck-GPT (Apache-2.0)."
)


def load_factbench(
    path: str | None = None,
    collections: Sequence[str] = COLLECTIONS,
    importance_criticality: Mapping[str, int] = DEFAULT_IMPORTANCE,
    name: str = "factbench",
) -> LoadedData:
    """Load Factcheck-Bench collections as one claim-level HRI frame (`runner.data.base`).

    Reads ``path``, a folder holding ``Factbench.jsonl`` and
    ``factcheck-GPT-benchmark.jsonl``, else ``<RUNNER_DATA_DIR>/factcheck-bench``; a
    missing folder or needed file is a `DataNotFoundError` saying how to get it.
    ``collections`` are any of `COLLECTIONS` (see the module docstring);
    ``importance_criticality`` maps claim importance (yes / intermediate / no) to a
    criticality (an integer >= 1) for the tree collections. A record that does not fit the
    documented fields is a `DataError` naming file, line and field. The frame is as in
    `runner.data.hri_claims` (``task`` = collection, ``source`` = Factbench source);
    ``info`` holds per-collection counts and ``excluded`` reasons.
    """
    chosen, importance = _check_settings(collections, importance_criticality)
    folder, needed = _locate(path, chosen)
    responses, excluded = _read(folder, chosen, importance)
    frame = responses_to_frame(responses)
    return _record(frame, responses, excluded, needed, chosen, importance, name)


def _check_settings(
    collections: Sequence[str], importance_criticality: Mapping[str, int]
) -> tuple[list[str], dict[str, int]]:
    """The collections (first mention kept) and the importance table, after refusing an
    unknown collection, none, or a criticality that is not an integer >= 1."""
    chosen = list(dict.fromkeys(collections))
    bad = [c for c in chosen if c not in COLLECTIONS]
    if bad or not chosen:
        raise ConfigError(f"dataset.collections: unknown {bad}; choose from {list(COLLECTIONS)}")
    importance = dict(importance_criticality or DEFAULT_IMPORTANCE)
    for key, value in importance.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"dataset.importance_criticality.{key}: criticality must be an "
                f"integer >= 1, got {value!r}"
            )
    return chosen, importance


def _locate(path: str | None, chosen: list[str]) -> tuple[Path, list[Path]]:
    """The folder and the files the chosen collections need, each checked to exist."""
    folder = _folder(path)
    needed = []
    if "factbench" in chosen:
        needed.append(folder / FACTBENCH_FILE)
    if any(c.startswith("factcheckgpt_") for c in chosen):
        needed.append(folder / TREE_FILE)
    for f in needed:
        if not f.is_file():
            raise DataNotFoundError(f"{f} not found. {_HOW_TO}")
    return folder, needed


def _read(
    folder: Path, chosen: list[str], importance: dict[str, int]
) -> tuple[list[Response], dict[str, dict[str, int]]]:
    """Each collection's responses, in order, and the rows it excluded by reason."""
    responses: list[Response] = []
    excluded: dict[str, dict[str, int]] = {}
    for collection in chosen:
        if collection == "factbench":
            got, skipped = _read_factbench(folder / FACTBENCH_FILE)
        else:
            got, skipped = _read_tree(folder / TREE_FILE, collection, importance)
        responses.extend(got)
        excluded[collection] = dict(sorted(skipped.items()))
    return responses, excluded


def _record(
    frame: pd.DataFrame,
    responses: list[Response],
    excluded: dict[str, dict[str, int]],
    needed: list[Path],
    chosen: list[str],
    importance: dict[str, int],
    name: str,
) -> LoadedData:
    """The result: ``info``, and a fingerprint of the files, the loader and its settings."""
    files = [str(f) for f in needed]
    params = {"collections": chosen, "importance_criticality": importance}
    info: dict[str, Any] = {
        "rows": len(frame),
        "origin": "local",
        "public_benchmark": True,
        "files_sha256": {f: sha256_file(f) for f in files},
        "collections": chosen,
        "responses_per_collection": _count(r.task for r in responses),
        "positives_per_collection": _count(r.task for r in responses if r.outcome == 1),
        "claims_per_collection": _count(frame["task"]),
        "responses_per_source": {
            c: _count(r.source for r in responses if r.task == c) for c in chosen
        },
        "excluded": excluded,
        "claim_label_map": {str(k).lower(): v for k, v in CLAIM_LABEL_MAP.items()},
        "importance_criticality": importance,
    }
    return LoadedData(
        name=name,
        frame=frame,
        files=files,
        fingerprint=frame_fingerprint(
            fingerprint_files(files), "runner.data.factbench", LOADER_VERSION, params
        ),
        info=info,
    )


def _folder(path: str | None) -> Path:
    """``path``, else ``<RUNNER_DATA_DIR>/factcheck-bench``: a folder, or a
    `DataNotFoundError` saying how to get it."""
    if path is not None:
        folder = Path(path).expanduser()
    else:
        root = default_data_dir()
        if root is None:
            raise DataNotFoundError(f"RUNNER_DATA_DIR is not set. {_HOW_TO}")
        folder = root / FOLDER
    if not folder.is_dir():
        raise DataNotFoundError(f"{folder} is not a folder. {_HOW_TO}")
    return folder


def _count(values: Any) -> dict[str, int]:
    return dict(sorted(Counter(str(v) for v in values).items()))


def _read_records(path: Path) -> list[tuple[int, dict]]:
    records = []
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"not valid JSON: {exc}", file=str(path), row=number) from exc
        if not isinstance(record, dict):
            raise DataError("line must be a JSON object", file=str(path), row=number)
        records.append((number, record))
    return records


def _field(record: dict, key: str, path: Path, line: int) -> Any:
    if key not in record:
        raise DataError("missing field", file=str(path), row=line, field=key)
    return record[key]


def _lookup(value: Any, mapping: dict, what: str, path: Path, line: int, key: str) -> Any:
    """Map a raw label exactly (type and value: `True` is not `1`), or fail naming the row."""
    for known, mapped in mapping.items():
        if type(value) is type(known) and value == known:
            return mapped
    expected = ", ".join(repr(k) if isinstance(k, str) else str(k).lower() for k in mapping)
    raise DataError(
        f"unexpected {what} {value!r}; expected {expected}", file=str(path), row=line, field=key
    )


def _outcome(value: Any, path: Path, line: int, key: str) -> int | None:
    return _lookup(value, RESPONSE_LABEL_MAP, "response label", path, line, key)


def _hri_label(value: Any, path: Path, line: int, key: str) -> str:
    return _lookup(value, CLAIM_LABEL_MAP, "claim label", path, line, key)


def _read_factbench(path: Path) -> tuple[list[Response], Counter]:
    """``Factbench.jsonl``'s scorable responses, and the rows excluded by reason."""
    out: list[Response] = []
    skipped: Counter = Counter()
    for line, rec in _read_records(path):
        response = _factbench_response(rec, path, line, skipped)
        if response is not None:
            out.append(response)
    return out, skipped


def _factbench_response(rec: dict, path: Path, line: int, skipped: Counter) -> Response | None:
    """One ``Factbench.jsonl`` record as a response; None (counted in ``skipped``) when it
    has no claims or its response label is NA."""
    source = _field(rec, "source", path, line)
    claims = _field(rec, "claims", path, line)
    labels = _field(rec, "claim_labels", path, line)
    if not isinstance(claims, list) or not isinstance(labels, list):
        raise DataError(
            "claims and claim_labels must be lists", file=str(path), row=line, field="claims"
        )
    if len(claims) != len(labels):
        raise DataError(
            f"{len(claims)} claims but {len(labels)} claim_labels",
            file=str(path),
            row=line,
            field="claim_labels",
        )
    outcome = _outcome(_field(rec, "response_label", path, line), path, line, "response_label")
    if not claims:
        skipped[f"no claims ({source})"] += 1
        return None
    if outcome is None:
        skipped[f"response_label NA ({source})"] += 1
        return None
    built = _factbench_claims(claims, labels, path, line)
    return _response(rec, path, line, built, outcome, str(source), "factbench")


def _factbench_claims(claims: list, labels: list, path: Path, line: int) -> list[Claim]:
    """A ``Factbench.jsonl`` record's claims with their mapped labels (criticality 1)."""
    built = []
    for k, (text, value) in enumerate(zip(claims, labels, strict=True)):
        if not isinstance(text, str):
            raise DataError(
                f"claim {k} must be a string", file=str(path), row=line, field=f"claims[{k}]"
            )
        label = _hri_label(value, path, line, f"claim_labels[{k}]")
        built.append(
            Claim(
                claim_id=f"c{k}",
                labels=(LabelAssignment(label),),
                text=text,
                file=str(path),
                row=f"{line} claims[{k}]",
            )
        )
    return built


def _response(
    rec: dict, path: Path, line: int, claims: list, outcome: Any, source: str, task: str
) -> Response:
    """One response of either Factcheck-Bench file, id ``<task>:<line>``, with its claims."""
    return Response(
        response_id=f"{task}:{line}",
        claims=tuple(claims),
        question=str(_field(rec, "prompt", path, line)),
        answer=str(_field(rec, "response", path, line)),
        outcome=outcome,
        source=source,
        task=task,
        file=str(path),
        row=line,
    )


_TREE_LISTS = (
    "claims",
    "claim_checkworthiness",
    "claims_factuality_label",
    "if_most_important_claim",
    "stance_claim_autoEvid",
    "auto_evidence",
)


def _read_tree(
    path: Path, collection: str, importance: Mapping[str, int]
) -> tuple[list[Response], Counter]:
    """The tree file's responses for ``collection`` (gold or stance labels), and the rows
    and claims excluded by reason."""
    out: list[Response] = []
    skipped: Counter = Counter()
    for line, rec in _read_records(path):
        response = _tree_response(rec, path, line, collection, importance, skipped)
        if response is not None:
            out.append(response)
    return out, skipped


def _tree_response(
    rec: dict,
    path: Path,
    line: int,
    collection: str,
    importance: Mapping[str, int],
    skipped: Counter,
) -> Response | None:
    """One tree record as a response, its claims taken sentence by sentence; None (counted
    in ``skipped``) when its factuality is NA or it has no check-worthy claim."""
    outcome = _outcome(
        _field(rec, "response_factuality", path, line), path, line, "response_factuality"
    )
    if outcome is None:
        skipped["response_factuality NA"] += 1
        return None
    sentences = _field(rec, "sentences", path, line)
    if not isinstance(sentences, dict):
        raise DataError("sentences must be a mapping", file=str(path), row=line, field="sentences")
    built: list[Claim] = []
    for skey in sorted(sentences, key=lambda s: _sentence_number(s, path, line)):
        sent = sentences[skey]
        built.extend(_sentence_claims(skey, sent, path, line, collection, importance, skipped))
    if not built:
        skipped["no check-worthy claims"] += 1
        return None
    return _response(rec, path, line, built, outcome, "factcheckgpt", collection)


def _sentence_claims(
    skey: str,
    sent: dict,
    path: Path,
    line: int,
    collection: str,
    importance: Mapping[str, int],
    skipped: Counter,
) -> list[Claim]:
    """A sentence's check-worthy claims; the others are counted in ``skipped``."""
    lists = _sentence_lists(skey, sent, path, line)
    snum = _sentence_number(skey, path, line)
    built: list[Claim] = []
    for k in range(len(lists["claims"])):
        if lists["claim_checkworthiness"][k] != "factual":
            skipped[f"claim not check-worthy ({lists['claim_checkworthiness'][k]})"] += 1
            continue
        where = f"sentences.{skey}"
        built.append(_tree_claim(lists, k, snum, where, path, line, collection, importance))
    return built


def _sentence_lists(skey: str, sent: dict, path: Path, line: int) -> dict[str, list]:
    """A sentence's per-claim lists (`_TREE_LISTS`), each checked to have one entry per
    claim."""
    lists = {k: _field(sent, k, path, line) for k in _TREE_LISTS}
    n = len(lists["claims"])
    for k, v in lists.items():
        if not isinstance(v, list) or len(v) != n:
            raise DataError(
                f"{skey}.{k} must be a list with one entry per claim ({n})",
                file=str(path),
                row=line,
                field=f"sentences.{skey}.{k}",
            )
    return lists


def _tree_claim(
    lists: dict[str, list],
    k: int,
    snum: int,
    where: str,
    path: Path,
    line: int,
    collection: str,
    importance: Mapping[str, int],
) -> Claim:
    """Claim ``k`` of a sentence (``where``): its criticality from its importance, its
    label gold or from the evidence stances (by ``collection``), its evidence passages."""
    imp = lists["if_most_important_claim"][k]
    if imp not in importance:
        raise DataError(
            f"claim importance {imp!r} has no criticality; known: {sorted(importance)}",
            file=str(path),
            row=line,
            field=f"{where}.if_most_important_claim[{k}]",
        )
    gold = lists["claims_factuality_label"][k]
    if collection == "factcheckgpt_gold":
        label = _hri_label(gold, path, line, f"{where}.claims_factuality_label[{k}]")
    else:
        label = _stance_label(
            lists["stance_claim_autoEvid"][k],
            path,
            line,
            f"{where}.stance_claim_autoEvid[{k}]",
        )
    passages = lists["auto_evidence"][k]
    if not isinstance(passages, list) or not all(isinstance(p, str) for p in passages):
        raise DataError(
            "evidence must be a list of strings",
            file=str(path),
            row=line,
            field=f"{where}.auto_evidence[{k}]",
        )
    return Claim(
        claim_id=f"s{snum}c{k}",
        labels=(LabelAssignment(label),),
        criticality=int(importance[imp]),
        text=str(lists["claims"][k]),
        passages=tuple(passages),
        file=str(path),
        row=f"{line} {where}.claims[{k}]",
    )


def _sentence_number(key: str, path: Path, line: int) -> int:
    if not key.startswith("sentence") or not key[len("sentence") :].isdigit():
        raise DataError(
            f"unexpected sentence key {key!r} (expected sentence<N>)",
            file=str(path),
            row=line,
            field="sentences",
        )
    return int(key[len("sentence") :])


def _stance_label(stances: Any, path: Path, line: int, where: str) -> str:
    if not isinstance(stances, list) or not stances:
        raise DataError(
            f"a check-worthy claim needs evidence stances, got {stances!r}",
            file=str(path),
            row=line,
            field=where,
        )
    unknown = sorted({s for s in stances if s not in STANCES}, key=repr)
    if unknown:
        raise DataError(
            f"unknown stance(s) {unknown}; known: {list(STANCES)}",
            file=str(path),
            row=line,
            field=where,
        )
    if "refute" in stances:
        return "CONTRADICTED"
    if "completely-support" in stances:
        return "SUPPORTED"
    if "partially-support" in stances:
        return "PARTIAL"
    return "UNSUPPORTED"
