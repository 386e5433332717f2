"""The claim records an HRI is computed from: responses, claims, labels, feedback events.

Why in `data/`: these are the schema of every HRI data set. A claims file
(`runner.data.hri_claims`), Factcheck-Bench (`runner.data.factbench`) and predicted labels
(`runner.hri.predicted_labels`) all arrive as `Response` objects, and the checks here need
no HRI configuration, so a loader builds and validates them without knowing the index.
Scoring them is `runner.hri.scoring`; checks against the configured labels and dimensions
are `runner.hri.scoring.check_response`.

Feedback events: only validated events are records at all (seed 001, V.A). An event
without a validator (``validated_by``) is rejected, as is one dated after ``as_of`` or
validated before it happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from runner.errors import DataError


@dataclass(frozen=True)
class FeedbackEvent:
    """One validated negative feedback event on a claim.

    Attributes
    ----------
    at : datetime
        When the feedback was given (timezone-aware, UTC).
    validated_by : str
        Who or what validated it (reviewer, source check, adjudication); required.
    severity : float or None
        q_j in [0, 1]; None means the configured default severity.
    resolved : bool
        Whether the issue was fixed. Unresolved events can trigger a safety floor.
    validated_at : datetime or None
        When it was validated (must not precede `at`).
    note : str
        Free text.
    """

    at: datetime
    validated_by: str
    severity: float | None = None
    resolved: bool = False
    validated_at: datetime | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (ISO 8601 times)."""
        return {
            "at": self.at.isoformat(),
            "validated_by": self.validated_by,
            "severity": self.severity,
            "resolved": self.resolved,
            "validated_at": None if self.validated_at is None else self.validated_at.isoformat(),
            "note": self.note,
        }


def parse_time(value: Any, where: str) -> datetime:
    """Read an ISO 8601 date or datetime (str, date or datetime) as an aware UTC datetime.

    Naive times are taken to be UTC; a bare date means midnight UTC.

    Raises
    ------
    ValueError
        Naming `where` when the value is not a date or time.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"{where}: not an ISO 8601 date or time: {value!r}") from exc
    else:
        raise ValueError(f"{where}: expected an ISO 8601 date or time, got {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


EVENT_KEYS = ("at", "validated_by", "validated", "severity", "resolved", "validated_at", "note")


def event_from_mapping(raw: Any, where: str) -> FeedbackEvent:
    """Read one feedback event from a mapping (a claims-file entry).

    Keys: ``at`` (required), ``validated_by`` (required, non-empty), ``validated`` (if
    present must be true), ``severity`` (0–1), ``resolved`` (bool, default false: an event
    is unresolved until someone says otherwise), ``validated_at``, ``note``.

    Raises
    ------
    ValueError
        Naming `where` and the field: unknown keys, a missing or empty validator, an event
        marked not validated, a bad time or severity, validation before the event.
    """
    _check_event_keys(raw, where)
    who = _event_validator(raw, where)
    at, validated_at = _event_times(raw, where)
    severity = _event_severity(raw, where)
    resolved = raw.get("resolved", False)
    if not isinstance(resolved, bool):
        raise ValueError(f"{where}.resolved: must be true or false, got {resolved!r}")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise ValueError(f"{where}.note: must be a string, got {note!r}")
    return FeedbackEvent(
        at=at,
        validated_by=who.strip(),
        severity=severity,
        resolved=resolved,
        validated_at=validated_at,
        note=note,
    )


def _check_event_keys(raw: Any, where: str) -> None:
    """An event is a mapping of known keys: a typo must not silently drop a field."""
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a feedback event must be a mapping, got {raw!r}")
    unknown = sorted(set(raw) - set(EVENT_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {list(EVENT_KEYS)}")


def _event_validator(raw: dict, where: str) -> str:
    """Who validated the event (unstripped): only validated feedback is scored (seed 001, V.A)."""
    if "validated" in raw and raw["validated"] is not True:
        raise ValueError(
            f"{where}.validated: only validated feedback may be scored (seed 001, "
            f"V.A), got validated={raw['validated']!r}"
        )
    who = raw.get("validated_by")
    if not isinstance(who, str) or not who.strip():
        raise ValueError(
            f"{where}.validated_by: feedback without validation is not scored; "
            "name the reviewer, source check or adjudication that confirmed it"
        )
    return who


def _event_times(raw: dict, where: str) -> tuple[datetime, datetime | None]:
    """The event time and validation time; a validation cannot precede its event."""
    if "at" not in raw:
        raise ValueError(f"{where}.at: missing event time")
    at = parse_time(raw["at"], f"{where}.at")
    validated_at = None
    if raw.get("validated_at") is not None:
        validated_at = parse_time(raw["validated_at"], f"{where}.validated_at")
        if validated_at < at:
            raise ValueError(
                f"{where}.validated_at: validated ({validated_at.isoformat()}) "
                f"before the event happened ({at.isoformat()})"
            )
    return at, validated_at


def _event_severity(raw: dict, where: str) -> float | None:
    """q_j as a float in [0, 1], or None for the configured default severity."""
    severity = raw.get("severity")
    if severity is not None:
        if (
            isinstance(severity, bool)
            or not isinstance(severity, (int, float))
            or not (0 <= severity <= 1)
        ):
            raise ValueError(f"{where}.severity: must be a number in [0, 1], got {severity!r}")
        severity = float(severity)
    return severity


@dataclass(frozen=True)
class LabelAssignment:
    """One label on one claim; `dimensions` None means the label's default dimensions."""

    label: str
    dimensions: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "label": self.label,
            "dimensions": None if self.dimensions is None else list(self.dimensions),
        }


@dataclass(frozen=True)
class Claim:
    """An atomic claim with its labels, criticality and validated feedback.

    `file` and `row` say where the claim was read, for error messages.
    """

    claim_id: str
    labels: tuple[LabelAssignment, ...]
    criticality: int = 1
    feedback: tuple[FeedbackEvent, ...] = ()
    text: str = ""
    passages: tuple[str, ...] = ()
    category: str = ""
    file: str = ""
    row: int | str = ""

    def label_names(self) -> tuple[str, ...]:
        """The claim's label names, in file order."""
        return tuple(a.label for a in self.labels)


@dataclass(frozen=True)
class Response:
    """A response decomposed into claims, with what is needed to score its feedback.

    Attributes
    ----------
    as_of : datetime or None
        Scoring time for feedback ages; required when any claim has feedback.
    n_reviewed : int
        N_reviewed of the s_H formula (0 and 1 are equivalent).
    outcome : int or None
        Known outcome for calibration: 1 = the response was unfaithful / hallucinated.
    """

    response_id: str
    claims: tuple[Claim, ...]
    question: str = ""
    answer: str = ""
    as_of: datetime | None = None
    n_reviewed: int = 0
    outcome: int | None = None
    source: str = ""
    task: str = ""
    file: str = ""
    row: int | str = ""


CLAIM_KEYS = ("claim_id", "text", "labels", "criticality", "feedback", "passages", "category")


RESPONSE_KEYS = (
    "response_id",
    "question",
    "answer",
    "as_of",
    "n_reviewed",
    "outcome",
    "source",
    "task",
    "claims",
)


def claim_from_mapping(raw: Any, file: str, row: str) -> Claim:
    """Read one claim from a claims-file mapping.

    Keys: ``claim_id`` (required), ``labels`` (required: a non-empty list of label names
    or ``{label: NAME, dimensions: [..]}`` mappings), ``criticality`` (integer ≥ 1,
    default 1), ``feedback`` (list of events, see `runner.hri.feedback`), ``text``,
    ``passages``, ``category``. Label names are matched case-insensitively and stored
    upper-case; whether they are known is checked against the config by `check_response`.

    Raises
    ------
    DataError
        Naming `file`, `row` and the field.
    """
    _check_keys(raw, "claim", CLAIM_KEYS, file, row)
    cid = _record_id(raw, "claim_id", file, row)
    labels = _labels_from_raw(raw.get("labels"), cid, file, row)
    crit = raw.get("criticality", 1)
    _check_criticality(crit, cid, file, row)
    events = _claim_feedback(raw, cid, file, row)
    text = raw.get("text", "")
    if not isinstance(text, str):
        raise DataError(f"claim {cid!r}: text must be a string", file=file, row=row, field="text")
    passages = _claim_passages(raw, cid, file, row)
    category = raw.get("category", "") or ""
    if not isinstance(category, str):
        raise DataError(
            f"claim {cid!r}: category must be a string", file=file, row=row, field="category"
        )
    return Claim(
        claim_id=cid,
        labels=labels,
        criticality=int(crit),
        feedback=events,
        text=text,
        passages=tuple(passages),
        category=category,
        file=file,
        row=row,
    )


def _check_keys(raw: Any, kind: str, allowed: tuple[str, ...], file: str, row: str) -> None:
    """A `kind` entry is a mapping of `allowed` keys: a typo must not be ignored."""
    if not isinstance(raw, dict):
        raise DataError(f"a {kind} must be a mapping, got {raw!r}", file=file, row=row)
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise DataError(f"unknown key(s) {unknown}; allowed: {list(allowed)}", file=file, row=row)


def _record_id(raw: dict, key: str, file: str, row: str) -> str:
    """``raw[key]`` as a stripped string id; YAML may read an id as an integer."""
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise DataError(
            f"{key} must be a non-empty string or integer, got {value!r}",
            file=file,
            row=row,
            field=key,
        )
    return str(value).strip()


def _claim_feedback(raw: dict, cid: str, file: str, row: str) -> tuple[FeedbackEvent, ...]:
    """The claim's feedback events, each bad one named by its position in the list."""
    events_raw = raw.get("feedback", []) or []
    if not isinstance(events_raw, list):
        raise DataError(
            f"claim {cid!r}: feedback must be a list of events, got {events_raw!r}",
            file=file,
            row=row,
            field="feedback",
        )
    events = []
    for j, ev in enumerate(events_raw):
        try:
            events.append(event_from_mapping(ev, f"feedback[{j}]"))
        except ValueError as exc:
            raise DataError(
                f"claim {cid!r}: {exc}", file=file, row=row, field=f"feedback[{j}]"
            ) from exc
    return tuple(events)


def _claim_passages(raw: dict, cid: str, file: str, row: str) -> list[str]:
    """The claim's passages (default none): a list of strings."""
    passages = raw.get("passages", []) or []
    if not isinstance(passages, list) or not all(isinstance(p, str) for p in passages):
        raise DataError(
            f"claim {cid!r}: passages must be a list of strings",
            file=file,
            row=row,
            field="passages",
        )
    return passages


def response_from_mapping(raw: Any, file: str, row: str) -> Response:
    """Read one response (with its claims) from a claims-file mapping.

    Keys: ``response_id`` and ``claims`` (required, non-empty); ``question``, ``answer``,
    ``source``, ``task`` (strings); ``as_of`` (ISO date/time, required when any claim has
    feedback); ``n_reviewed`` (integer ≥ 0); ``outcome`` (0/1 or null: the known outcome,
    1 = hallucinated, used by calibration).

    Raises
    ------
    DataError
        Naming `file`, `row` (e.g. ``responses[0].claims[2]``) and the field.
    """
    _check_keys(raw, "response", RESPONSE_KEYS, file, row)
    rid = _record_id(raw, "response_id", file, row)
    texts = _response_texts(raw, rid, file, row)
    as_of = _response_as_of(raw, rid, file, row)
    n_rev = _response_n_reviewed(raw, rid, file, row)
    outcome = _response_outcome(raw, rid, file, row)
    claims = _response_claims(raw, rid, file, row)
    response = Response(
        response_id=rid,
        claims=claims,
        question=texts["question"],
        answer=texts["answer"],
        as_of=as_of,
        n_reviewed=n_rev,
        outcome=None if outcome is None else int(outcome),
        source=texts["source"],
        task=texts["task"],
        file=file,
        row=row,
    )
    check_structure(response)
    return response


def _response_texts(raw: dict, rid: str, file: str, row: str) -> dict[str, str]:
    """The optional text fields (question, answer, source, task), "" when absent or null."""
    texts = {}
    for key in ("question", "answer", "source", "task"):
        value = raw.get(key, "") or ""
        if not isinstance(value, str):
            raise DataError(
                f"response {rid!r}: {key} must be a string, got {value!r}",
                file=file,
                row=row,
                field=key,
            )
        texts[key] = value
    return texts


def _response_as_of(raw: dict, rid: str, file: str, row: str) -> datetime | None:
    """The scoring time feedback ages are measured against, or None."""
    if raw.get("as_of") is None:
        return None
    try:
        return parse_time(raw["as_of"], "as_of")
    except ValueError as exc:
        raise DataError(f"response {rid!r}: {exc}", file=file, row=row, field="as_of") from exc


def _response_n_reviewed(raw: dict, rid: str, file: str, row: str) -> int:
    """N_reviewed of the s_H formula: an integer >= 0 (default 0)."""
    n_rev = raw.get("n_reviewed", 0)
    if isinstance(n_rev, bool) or not isinstance(n_rev, int) or n_rev < 0:
        raise DataError(
            f"response {rid!r}: n_reviewed must be an integer >= 0, got {n_rev!r}",
            file=file,
            row=row,
            field="n_reviewed",
        )
    return n_rev


def _response_outcome(raw: dict, rid: str, file: str, row: str) -> Any:
    """The known outcome as given (0, 1 or None); a bool is refused, not read as 0/1."""
    outcome = raw.get("outcome")
    if outcome is not None and (isinstance(outcome, bool) or outcome not in (0, 1)):
        raise DataError(
            f"response {rid!r}: outcome must be 0, 1 or null (1 = hallucinated), got {outcome!r}",
            file=file,
            row=row,
            field="outcome",
        )
    return outcome


def _response_claims(raw: dict, rid: str, file: str, row: str) -> tuple[Claim, ...]:
    """The response's claims, each named by its position (``<row>.claims[i]``)."""
    claims_raw = raw.get("claims")
    if not isinstance(claims_raw, list) or not claims_raw:
        raise DataError(
            f"response {rid!r}: claims must be a non-empty list (a response "
            "without claims has no HRI)",
            file=file,
            row=row,
            field="claims",
        )
    return tuple(
        claim_from_mapping(c, file, f"{row}.claims[{i}]") for i, c in enumerate(claims_raw)
    )


def _labels_from_raw(raw: Any, cid: str, file: str, row: str) -> tuple[LabelAssignment, ...]:
    """The claim's labels (a single name is a list of one), each label at most once."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise DataError(
            f"claim {cid!r}: labels must be a non-empty list, got {raw!r}",
            file=file,
            row=row,
            field="labels",
        )
    out = [_label_from_item(item, f"labels[{j}]", cid, file, row) for j, item in enumerate(raw)]
    names = [a.label for a in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(
            f"claim {cid!r}: label(s) {dup} given more than once",
            file=file,
            row=row,
            field="labels",
        )
    return tuple(out)


def _label_from_item(item: Any, where: str, cid: str, file: str, row: str) -> LabelAssignment:
    """One label: a name, or a ``{label, dimensions}`` mapping; the name upper-cased."""
    if isinstance(item, str):
        name, dims = item, None
    elif isinstance(item, dict):
        extra = sorted(set(item) - {"label", "dimensions"})
        if extra or "label" not in item:
            raise DataError(
                f"claim {cid!r}: a label mapping has keys 'label' and optional "
                f"'dimensions', got {sorted(item)}",
                file=file,
                row=row,
                field=where,
            )
        name = item["label"]
        dims = _label_dimensions(item.get("dimensions"), where, cid, file, row)
    else:
        raise DataError(
            f"claim {cid!r}: a label is a name or a mapping, got {item!r}",
            file=file,
            row=row,
            field=where,
        )
    if not isinstance(name, str) or not name.strip():
        raise DataError(f"claim {cid!r}: empty label name", file=file, row=row, field=where)
    return LabelAssignment(name.strip().upper(), dims)


def _label_dimensions(
    dims: Any, where: str, cid: str, file: str, row: str
) -> tuple[str, ...] | None:
    """A label's dimensions upper-cased (a single name is a list of one), or None."""
    if dims is None:
        return None
    if isinstance(dims, str):
        dims = [dims]
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise DataError(
            f"claim {cid!r}: dimensions must be a non-empty list of dimension names, got {dims!r}",
            file=file,
            row=row,
            field=where,
        )
    return tuple(d.strip().upper() for d in dims)


def _check_criticality(crit: Any, cid: str, file: str, row: int | str) -> None:
    if isinstance(crit, bool) or not isinstance(crit, int) or crit < 1:
        raise DataError(
            f"claim {cid!r}: criticality must be an integer >= 1 (seed: v_i = 1 by "
            f"default, higher for consequential claims), got {crit!r}",
            file=file or None,
            row=row if row != "" else None,
            field="criticality",
        )


def source_of(obj: Claim | Response) -> dict[str, Any]:
    return {"file": obj.file or None, "row": obj.row if obj.row != "" else None}


def check_structure(response: Response) -> None:
    """Checks that need no config: ids, criticality, feedback times against ``as_of``.

    Raises
    ------
    DataError
        Naming the claim id and where it was read.
    """
    if not response.claims:
        raise DataError(
            f"response {response.response_id!r} has no claims: no HRI",
            field="claims",
            **source_of(response),
        )
    seen: set[str] = set()
    for claim in response.claims:
        if claim.claim_id in seen:
            raise DataError(
                f"response {response.response_id!r}: duplicate claim_id {claim.claim_id!r}",
                field="claim_id",
                **source_of(claim),
            )
        seen.add(claim.claim_id)
        _check_criticality(claim.criticality, claim.claim_id, claim.file, claim.row)
        for j, event in enumerate(claim.feedback):
            if not event.validated_by or not event.validated_by.strip():
                raise DataError(
                    f"claim {claim.claim_id!r}: feedback[{j}] has no validator; "
                    "only validated feedback is scored",
                    field=f"feedback[{j}]",
                    **source_of(claim),
                )
            if response.as_of is None:
                raise DataError(
                    f"claim {claim.claim_id!r} has feedback but response "
                    f"{response.response_id!r} has no as_of time to age it against",
                    field="as_of",
                    **source_of(response),
                )
            if event.at > response.as_of:
                raise DataError(
                    f"claim {claim.claim_id!r}: feedback[{j}] at "
                    f"{event.at.isoformat()} lies in the future of as_of "
                    f"{response.as_of.isoformat()}",
                    field=f"feedback[{j}].at",
                    **source_of(claim),
                )
            if event.validated_at is not None and event.validated_at > response.as_of:
                raise DataError(
                    f"claim {claim.claim_id!r}: feedback[{j}] validated at "
                    f"{event.validated_at.isoformat()}, after as_of "
                    f"{response.as_of.isoformat()}",
                    field=f"feedback[{j}].validated_at",
                    **source_of(claim),
                )
