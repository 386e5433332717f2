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
ROUTE_SOURCE = "ragscope:"
"""Source id prefix of the assessments `route` writes (``ragscope:<model>/<version>``)."""
RUN_KEY = "routing_run_id"
"""Metadata key naming the routing run that wrote a `route` assessment."""


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


def is_routed(assessment: Any) -> bool:
    """An assessment `route` logged (source ``ragscope:<model>/<version>``)."""
    return str(getattr(assessment.source, "source_id", "") or "").startswith(ROUTE_SOURCE)


def newest(assessments: Any) -> Any | None:
    """The most recently created of `assessments` (None when there are none)."""
    found = list(assessments)
    if not found:
        return None
    return max(found, key=lambda a: (a.create_time_ms or 0, a.last_update_time_ms or 0))


def route_answer(trace: Any, name: str) -> Any | None:
    """The trace's current `route` answer `name`: the newest valid one, any model version.

    Why one rule for everyone: `route` supersedes its earlier answer when a rerun changes
    it (`runner.routing.audit.trace_feedback`) and the audit reads it back
    (`runner.data.trace_audit`); both must agree on which answer is the current one.
    """
    return newest(
        a
        for a in trace.info.assessments or []
        if a.name == name and a.valid is not False and is_routed(a)
    )


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


def evaluated_row(
    trace: Any, inputs: Any, outputs: Any, mapping: TraceMapping, context_key: str = "context"
) -> dict[str, Any] | TraceProblem:
    """The row a scorer scores in `mlflow.genai.evaluate`: from the trace, else its inputs.

    A trace whose ``RETRIEVER`` span returned documents is read as `route` reads it
    (`trace_row`). Without one, ``inputs[context_key]`` is the context (`inputs_row`; a
    DataFrame of ``inputs``/``outputs`` is handed over this way). A stored trace that has
    neither gets `trace_row`'s problem naming its id; a trace `evaluate` made itself for a
    DataFrame row (tag ``mlflow.eval.requestId``) is not named: its id means nothing to
    the user, who is told what to provide instead.
    """
    if trace is not None and retrieved_documents(trace):
        return trace_row(trace, mapping)
    given = isinstance(inputs, Mapping) and context_key in inputs
    if trace is not None and not given and not made_by_evaluate(trace):
        return trace_row(trace, mapping)
    tags = None
    if trace is not None:
        tags = trace.info.tags
        root = root_span(trace)
        if inputs is None and root is not None:
            inputs, outputs = root.inputs, root.outputs
    row = inputs_row(inputs, outputs, mapping, context_key, tags)
    if isinstance(row, dict) and trace is not None:
        row["example_id"] = trace.info.trace_id
    return row


def made_by_evaluate(trace: Any) -> bool:
    """True for a trace `mlflow.genai.evaluate` created while it ran (not a stored one)."""
    from mlflow.tracing.constant import TraceTagKey

    return TraceTagKey.EVAL_REQUEST_ID in (trace.info.tags or {})


def inputs_row(
    inputs: Any, outputs: Any, mapping: TraceMapping, context_key: str, tags: Any = None
) -> dict[str, Any] | TraceProblem:
    """The canonical row of one evaluation row given as ``inputs``/``outputs`` (no trace).

    Why: `mlflow.genai.evaluate` on a DataFrame of ``inputs`` and ``outputs`` hands a
    scorer a trace it made itself, with a single span and no retriever; the context is
    then ``inputs[context_key]`` (text, or a list of passages / documents, joined as the
    file format joins passages). A problem names the field to provide, no trace id.
    """
    what = "the evaluated row"
    if not isinstance(inputs, Mapping) or context_key not in inputs:
        keys = sorted(map(str, inputs)) if isinstance(inputs, Mapping) else None
        return TraceProblem(
            "context",
            f"{what} has no context to score against: its inputs have no {context_key!r} "
            f"key (inputs: {keys if keys is not None else repr(inputs)}) and it has no "
            "RETRIEVER span; give inputs={'question': ..., "
            f"{context_key!r}: <the retrieved text, or a list of passages>}} and "
            "outputs=<the answer>, or evaluate traces whose RETRIEVER span returned the "
            "documents",
        )
    value = inputs[context_key]
    docs = value if isinstance(value, list | tuple) else [value]
    passages = []
    for k, doc in enumerate(docs):
        text = _page_content(doc)
        if not isinstance(text, str) or not text.strip():
            return TraceProblem(
                "context",
                f"{what}: inputs[{context_key!r}]"
                + (f" passage {k + 1}" if len(docs) > 1 else "")
                + f" must be non-empty text (or a document with page_content), got {doc!r}",
            )
        passages.append(text)
    if not passages:
        return TraceProblem("context", f"{what}: inputs[{context_key!r}] is an empty list")
    key = mapping.question_key
    if key is None or key not in inputs:
        return TraceProblem(
            "question",
            f"{what}: its inputs have no question key {key!r} (inputs: "
            f"{sorted(map(str, inputs))}); name it with TraceMapping(question_key=...)",
        )
    question = inputs[key] if inputs[key] is not None else ""
    if not isinstance(question, str):
        return TraceProblem("question", f"{what}: inputs[{key!r}] must be text, got {question!r}")
    answer = outputs
    if isinstance(outputs, Mapping):
        if mapping.answer_key is None or mapping.answer_key not in outputs:
            return TraceProblem(
                "answer",
                f"{what}: its outputs are a mapping with keys {sorted(map(str, outputs))}; "
                "name the answer's with TraceMapping(answer_key=...)",
            )
        answer = outputs[mapping.answer_key]
    if not isinstance(answer, str) or not answer.strip():
        return TraceProblem("answer", f"{what}: the answer (outputs) is empty ({answer!r})")
    return _row("", passages, question, answer, None, tags, mapping)


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
    return _row(ident, passages, question, answer, label, trace.info.tags, mapping)


def _row(
    ident: str,
    passages: list[str],
    question: str,
    answer: str,
    label: Any,
    tags: Mapping | None,
    mapping: TraceMapping,
) -> dict[str, Any]:
    """The canonical row (`runner.frames` columns) of a trace or an evaluated row."""
    tags = tags or {}
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
