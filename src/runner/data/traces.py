"""One MLflow trace as one canonical row: the mapping, apart from the store that holds traces.

Why its own module: the loader (`runner.data.mlflow_traces`), the route write-back and the
MLflow scorers (`runner.scorers`) must read a trace the same way, or a scorer's risk and a
routed risk would be computed from different text. Everything here works on
`mlflow.entities.Trace` objects already in memory, so it is tested without a store.

Mapping (see ``conf/dataset/mlflow_traces.yaml``):

- question = the root span's input under ``question_key`` (the input itself when it is a
  plain string);
- context = the ``page_content`` of every document of every ``RETRIEVER`` span, spans in
  start order, documents in their order, joined as the file format joins passages;
- answer = the root span's output (its ``answer_key`` when the output is a mapping);
- id = the trace id; group = a hash of the retrieved documents (answers over the same
  documents stay together in folds and the bootstrap);
- source / task = the trace tags ``source_tag`` / ``task_tag`` when present;
- label = the latest valid assessment named ``label`` (an expectation, else a human
  feedback), parsed like a file's label.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.data.hashing import group_key
from runner.data.rag_file import DEFAULT_SOURCE, DEFAULT_TASK, PASSAGE_JOIN, parse_label

RETRIEVER = "RETRIEVER"
HUMAN = "HUMAN"


@dataclass(frozen=True)
class TraceProblem:
    """Why a trace cannot be a row: the field at fault and a reason naming the trace."""

    field: str
    reason: str


@dataclass(frozen=True)
class TraceMapping:
    """Where the row's fields live in a trace (``dataset.*`` keys of the same names)."""

    question_key: str | None = "question"
    answer_key: str | None = None
    source_tag: str = "source"
    task_tag: str = "task"
    label: str | None = None


def root_span(trace: Any) -> Any | None:
    """The span without a parent (None for a trace that has no spans)."""
    for span in trace.data.spans:
        if span.parent_id is None:
            return span
    return None


def retrieved_documents(trace: Any) -> list[Any]:
    """Every document the trace's ``RETRIEVER`` spans returned, spans in start order."""
    spans = [s for s in trace.data.spans if str(s.span_type) == RETRIEVER]
    spans.sort(key=lambda s: (s.start_time_ns or 0, s.span_id))
    docs: list[Any] = []
    for span in spans:
        out = span.outputs
        docs.extend(out if isinstance(out, list) else [out])
    return docs


def _page_content(doc: Any) -> Any:
    if isinstance(doc, Mapping):
        return doc.get("page_content")
    return getattr(doc, "page_content", doc)


def _pick(value: Any, key: str | None, what: str, ident: str) -> Any:
    """`value[key]` from a span's inputs/outputs, or the value itself when it is text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if key is None:
            keys = sorted(map(str, value))
            return TraceProblem(
                what,
                f"trace {ident}: the root span's {what} is a mapping with keys {keys}; set "
                f"dataset.{what}_key to the one that holds the {what}",
            )
        if key not in value:
            return TraceProblem(
                what,
                f"trace {ident}: the root span's {what} has no key {key!r} (keys: "
                f"{sorted(map(str, value))}); set dataset.{what}_key",
            )
        return value[key]
    return TraceProblem(
        what, f"trace {ident}: the root span's {what} must be text or a mapping, got {value!r}"
    )


def latest_assessment(trace: Any, name: str, kinds: tuple[str, ...]) -> Any | None:
    """The most recent valid assessment `name` of the first kind in `kinds` that has one.

    `kinds`: ``"expectation"`` and/or ``"human_feedback"`` (a feedback whose source is a
    person, as the MLflow UI records a reviewer's judgement).
    """
    for kind in kinds:
        found = [a for a in trace.info.assessments or [] if _is(a, name, kind)]
        if found:
            return max(found, key=lambda a: a.last_update_time_ms or a.create_time_ms or 0)
    return None


def _is(assessment: Any, name: str, kind: str) -> bool:
    if assessment.name != name or assessment.valid is False:
        return False
    if kind == "expectation":
        return assessment.expectation is not None
    source = getattr(assessment.source, "source_type", None)
    return assessment.feedback is not None and str(source) == HUMAN


def assessment_label(trace: Any, name: str) -> int | TraceProblem | None:
    """1/0 from the latest expectation (else human feedback) `name`; None when none."""
    found = latest_assessment(trace, name, ("expectation", "human_feedback"))
    if found is None:
        return None
    label = parse_label(found.value)
    if label is None:
        return TraceProblem(
            "label",
            f"trace {trace.info.trace_id}: assessment {name!r} = {found.value!r} is no label "
            "(1/0, true/false, hallucinated/faithful, FAIL/PASS)",
        )
    return label


def trace_row(trace: Any, mapping: TraceMapping) -> dict[str, Any] | TraceProblem:
    """The canonical row of one trace, or the first problem that keeps it from being one."""
    ident = trace.info.trace_id
    state = str(trace.info.state)
    if state != "OK":
        return TraceProblem("state", f"trace {ident} ended in state {state}, not OK")
    root = root_span(trace)
    if root is None:
        return TraceProblem("spans", f"trace {ident} has no root span (no spans were logged)")
    docs = retrieved_documents(trace)
    if not docs:
        return TraceProblem(
            "retriever",
            f"trace {ident} has no RETRIEVER span with documents: the context of an answer "
            "is what a retriever span returned (span_type=SpanType.RETRIEVER)",
        )
    passages = []
    for k, doc in enumerate(docs):
        text = _page_content(doc)
        if not isinstance(text, str) or not text.strip():
            return TraceProblem(
                "retriever", f"trace {ident}: document {k + 1} has no page_content text"
            )
        passages.append(text)
    question = _pick(root.inputs, mapping.question_key, "question", ident)
    if isinstance(question, TraceProblem):
        return question
    if question is None:
        question = ""
    if not isinstance(question, str):
        return TraceProblem("question", f"trace {ident}: question must be text, got {question!r}")
    answer = _pick(root.outputs, mapping.answer_key, "answer", ident)
    if isinstance(answer, TraceProblem):
        return answer
    if not isinstance(answer, str) or not answer.strip():
        return TraceProblem("answer", f"trace {ident}: the answer is empty ({answer!r})")
    label = assessment_label(trace, mapping.label) if mapping.label else None
    if isinstance(label, TraceProblem):
        return label
    tags = trace.info.tags or {}
    return {
        "example_id": ident,
        "group_id": group_key("docs", "\x1f".join(passages)),
        "task": str(tags.get(mapping.task_tag) or DEFAULT_TASK),
        "source": str(tags.get(mapping.source_tag) or DEFAULT_SOURCE),
        "question": question,
        "context": PASSAGE_JOIN.join(passages),
        "answer": answer,
        "label": label,
    }
