"""A small RAG app instrumented with MLflow Tracing, over RAGTruth test contexts.

Why: `dataset=mlflow_traces`, the decisions written back onto traces and the runner's
MLflow scorers must be tested against traces a real traced app logs, not hand-built ones.
This app is what a team's app looks like to MLflow: a root ``rag`` span (input
``question``, output the answer), a ``RETRIEVER`` span returning documents and an ``LLM``
span. The retriever is TF-IDF over the passages of RAGTruth's QA test contexts; the
generator answers with the answer RAGTruth logged for that question (one of the six
models' responses, seeded), so every trace has a known label, logged as the expectation
``hallucinated`` (``--label-name``) the way a team records ground truth.

    python scripts/traced_rag_demo.py --tracking-uri sqlite:///artifacts/mlflow.db \\
        --experiment rag_demo --traces 200

Prints (and with ``--out`` writes) a JSON summary: experiment id, trace ids, seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

PASSAGE_SPLIT = "\n\n"
SOURCE = "QA"


class TfidfRetriever:
    """Top-k passages by TF-IDF cosine similarity to the query."""

    def __init__(self, passages: list[str], top_k: int = 3) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.passages = passages
        self.top_k = top_k
        self.vectorizer = TfidfVectorizer(sublinear_tf=True)
        self.matrix = self.vectorizer.fit_transform(passages)

    def __call__(self, query: str) -> list[int]:
        scores = (self.matrix @ self.vectorizer.transform([query]).T).toarray().ravel()
        order = np.lexsort((np.arange(len(scores)), -scores))  # ties: corpus order
        return [int(i) for i in order[: self.top_k]]


class TracedRag:
    """The app: retrieve, then generate; each step a span, the call one trace."""

    def __init__(self, retriever: TfidfRetriever) -> None:
        self.retriever = retriever
        self.planned: str = ""

    def retrieve(self, query: str) -> list[Any]:
        import mlflow
        from mlflow.entities import Document, SpanType

        with mlflow.start_span(name="retrieve", span_type=SpanType.RETRIEVER) as span:
            span.set_inputs({"query": query})
            docs = [
                Document(page_content=self.retriever.passages[i], id=f"passage-{i}")
                for i in self.retriever(query)
            ]
            span.set_outputs(docs)
        return docs

    def generate(self, question: str, docs: list[Any]) -> str:
        import mlflow
        from mlflow.entities import SpanType

        with mlflow.start_span(name="generate", span_type=SpanType.LLM) as span:
            span.set_inputs({"question": question, "documents": len(docs)})
            span.set_outputs(self.planned)  # the answer RAGTruth logged for this question
        return self.planned

    def __call__(self, question: str, answer: str, tags: dict[str, str]) -> str:
        import mlflow
        from mlflow.entities import SpanType

        self.planned = answer
        with mlflow.start_span(name="rag", span_type=SpanType.CHAIN) as root:
            root.set_inputs({"question": question})
            mlflow.update_current_trace(tags=tags)
            out = self.generate(question, self.retrieve(question))
            root.set_outputs(out)
        return out


def qa_rows(data_dir: str | None) -> pd.DataFrame:
    """RAGTruth's QA test rows in the canonical frame (the runner's own loader)."""
    from runner.data import load_ragtruth

    frame = load_ragtruth(split="test", data_dir=data_dir).frame
    return frame[frame["task"] == "QA"].reset_index(drop=True)


def corpus(rows: pd.DataFrame) -> list[str]:
    """Every distinct passage of the QA contexts, in first-seen order."""
    seen: dict[str, None] = {}
    for context in rows["context"]:
        for passage in context.split(PASSAGE_SPLIT):
            if passage.strip():
                seen.setdefault(passage.strip(), None)
    return list(seen)


def experiment_id(uri: str, name: str, artifact_root: str | None) -> str:
    """The app's experiment, created with an explicit artifact root (SQLite needs one)."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    kwargs = {}
    if artifact_root:
        Path(artifact_root).mkdir(parents=True, exist_ok=True)
        kwargs["artifact_location"] = Path(artifact_root).resolve().as_uri()
    exp_id = client.create_experiment(name, **kwargs)
    client.set_experiment_tag(exp_id, "mlflow.experimentKind", "genai_development")
    return exp_id


def log_traces(
    uri: str,
    experiment: str,
    traces: int,
    seed: int = 13,
    top_k: int = 3,
    label_name: str | None = "hallucinated",
    artifact_root: str | None = None,
    data_dir: str | None = None,
) -> dict[str, Any]:
    """Run the app on `traces` seeded RAGTruth QA rows; returns the summary."""
    import mlflow

    rows = qa_rows(data_dir)
    picked = rows.iloc[np.random.default_rng(seed).permutation(len(rows))[:traces]]
    app = TracedRag(TfidfRetriever(corpus(rows), top_k=top_k))
    exp_id = experiment_id(uri, experiment, artifact_root)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment_id=exp_id)
    start = time.perf_counter()
    ids = []
    for row in picked.itertuples(index=False):
        tags = {"source": SOURCE, "task": str(row.task), "ragtruth_id": str(row.example_id)}
        app(str(row.question), str(row.answer), tags)
        ids.append(mlflow.get_last_active_trace_id())
    mlflow.flush_trace_async_logging(terminate=False)
    if label_name:
        for trace_id, label in zip(ids, picked["label"], strict=True):
            mlflow.log_expectation(trace_id=trace_id, name=label_name, value=bool(label))
    return {
        "tracking_uri": uri,
        "experiment": experiment,
        "experiment_id": exp_id,
        "traces": len(ids),
        "trace_ids": ids,
        "ragtruth_ids": picked["example_id"].astype(str).tolist(),
        "labels": [bool(x) for x in picked["label"]],
        "hallucinated": int(picked["label"].sum()),
        "seconds": round(time.perf_counter() - start, 3),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tracking-uri", required=True, help="e.g. sqlite:///artifacts/mlflow.db")
    parser.add_argument("--experiment", default="rag_demo")
    parser.add_argument("--traces", type=int, default=200)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--label-name", default="hallucinated", help="'' to log no labels")
    parser.add_argument("--artifact-root", default=None, help="the experiment's artifact root")
    parser.add_argument("--data-dir", default=os.environ.get("RUNNER_DATA_DIR"))
    parser.add_argument("--out", default=None, help="write the JSON summary here")
    args = parser.parse_args(argv)
    summary = log_traces(
        args.tracking_uri,
        args.experiment,
        args.traces,
        seed=args.seed,
        top_k=args.top_k,
        label_name=args.label_name or None,
        artifact_root=args.artifact_root,
        data_dir=args.data_dir,
    )
    text = json.dumps(summary, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    lists = ("trace_ids", "ragtruth_ids", "labels")
    print(json.dumps({k: v for k, v in summary.items() if k not in lists}))
    return summary


if __name__ == "__main__":
    main()
