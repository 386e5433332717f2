"""RQ4: how does the local gate compare with local verifiers in accuracy and CPU cost?

RAGScope Table VII and Figure 5. Rows: the cheap gates (uncovered fraction, ROUGE-L and
RAGScope-E, the learned one scored out of fold under the grouped split, as in RQ2) and the
configured verifiers (DeBERTa-NLI on the top-3 sentences, HHEM on the full context cut
to 512 tokens, the HHEM top-3 ablation, LettuceDetect). Columns: combined AUROC and AP
with 95 % context-group bootstrap intervals, and ms/example of complete local inference.

Cost. Gates are timed by `runner.evaluation.timing.gate_runtime` (features from raw text +
scoring, on the first test fold); verifiers by `runner.verifiers.runtime.time_scoring`
(evidence selection + tokenisation + forward passes, model loading excluded) on one
seeded, task-stratified sample of ``timing_sample`` rows, the same rows for every
verifier; both report the median of timed passes after a warm-up.

Weights. A verifier with ``weights: random`` is the exact architecture with seeded random
weights: its ms/example is real, its accuracy is meaningless, so its AUROC and AP cells
are written as not available (``None``), never as numbers, and only the timing sample is
scored. With real weights every row is scored and AUROC/AP are computed on all rows.
Verifier rows are labelled with their numeric path and weights, e.g.
``deberta_nli_top3 [fp32, random weights]``; table ``table7_runtime`` holds the numeric
details (parameters, batch size, threads, tokens per example, truncation, peak memory),
and the MLflow tags name the weights and precision of every verifier.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from runner.errors import ConfigError, DataError
from runner.evaluation import BootstrapConf, gate_runtime, scopes, score_gates
from runner.features import with_lexical_features
from runner.frames import check_labels
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study, check_named, configured
from runner.verifiers import score_in_chunks, time_scoring, timing_sample

log = logging.getLogger(__name__)

PAPER = "ragscope"
TABLE = "table7"
RUNTIME_TABLE = "table7_runtime"
METRICS = (("auroc", "AUROC"), ("ap", "AP"))
TITLES = {
    TABLE: "Table VII: accuracy-cost on RAGTruth combined (AUROC / AP with 95 % context-group "
    "CIs; local CPU ms/example). Verifier rows name their numeric path; rows marked "
    "'random weights' are the exact architectures with random weights: cost only, "
    "accuracy n/a",
    RUNTIME_TABLE: "Table VII runtime details of the verifiers (timing sample)",
}


@dataclass
class Params:
    """RQ4 parameters: which configured parts fill Table VII and how cost is measured."""

    gates: list[str] = field(default_factory=lambda: ["uncovered", "rouge_l", "ragscope_e"])
    verifiers: list[str] = field(
        default_factory=lambda: ["deberta_nli_top3", "hhem_full", "hhem_top3", "lettucedetect"]
    )
    timing_sample: int = 64  # rows (task-stratified, seeded) each verifier is timed on
    timing_repeats: int = 3  # timed passes over the sample; the median is reported
    timing_warmup: int = 1  # untimed passes first
    gate_timing_rows: int = 540  # rows of the first test fold the gates are timed on
    gate_timing_repeats: int = 5  # timed passes per gate
    score_chunk: int = 64  # rows per scoring call for real-weight verifiers (progress bar)
    labels: dict[str, str] = field(default_factory=dict)  # verifier -> row label (default: name)


def _check(params: Params, parts: dict[str, dict[str, Any]]) -> None:
    for group in ("gates", "verifiers"):
        check_named(parts[group], getattr(params, group), f"study.params.{group}", group)
    for name in (
        "timing_sample",
        "timing_repeats",
        "gate_timing_rows",
        "gate_timing_repeats",
        "score_chunk",
    ):
        if getattr(params, name) < 1:
            raise ConfigError(f"study.params.{name} must be >= 1")
    if params.timing_warmup < 0:
        raise ConfigError("study.params.timing_warmup must be >= 0")


def row_label(name: str, verifier: Any, label: str | None = None) -> str:
    """Table row of a verifier: its name (or label), numeric path and, if random, the weights."""
    tags = [verifier.precision_name]
    if verifier.weights == "random":
        tags.append("random weights")
    return f"{label or name} [{', '.join(tags)}]"


@dataclass
class VerifierCost(Study, name="rq4_verifier_cost", titles=TITLES, paper=PAPER):
    """RQ4: cheap gates against local verifiers, accuracy and CPU cost (Table VII, Figure 5)."""

    gates: dict[str, Any]
    verifiers: dict[str, Any]
    split: Any
    bootstrap: BootstrapConf
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """Every row the table names is a configured gate or verifier; sizes are positive."""
        configured(self.gates, "gates")
        _check(self.params, {"gates": self.gates, "verifiers": self.verifiers})

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score gates out of fold and verifiers on every row (real weights), time them all."""
        params = self.params
        gates = {g: self.gates[g] for g in params.gates}
        verifiers = {name: self.verifiers[name] for name in params.verifiers}
        splitter = self.split
        frame = with_lexical_features(data.frame, run.cache_dir)
        check_labels(
            frame["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
        )
        scores = score_gates(gates, frame, splitter, progress=run.progress)

        sample = timing_sample(data.frame, params.timing_sample, run.seed)
        runtime: dict[str, Any] = {
            "verifiers": {},
            "timing_sample": {
                "rows": len(sample),
                "seed": run.seed,
                "tasks": sample["task"].value_counts().to_dict(),
                "example_ids": sample["example_id"].tolist(),
            },
        }
        accurate = self._score_verifiers(verifiers, data, scores, sample, runtime, run)

        stats = scopes.bootstrap_scopes(scores, [*params.gates, *accurate], self.bootstrap)
        result = StudyResult(scores=scores, titles=dict(TITLES), runtime=runtime)
        gate_cost = gate_runtime(
            gates, data.frame, splitter, params.gate_timing_rows, params.gate_timing_repeats
        )
        runtime["gates"] = gate_cost
        for gate in params.gates:
            for metric, column in METRICS:
                est = stats.estimate(gate, metric, scopes.COMBINED)
                result.add(TABLE, gate, column, est.point, ci=(est.low, est.high))
            result.add(TABLE, gate, "ms/example", gate_cost[gate]["median_ms_per_example"])
        for name, verifier in verifiers.items():
            row = row_label(name, verifier, params.labels.get(name))
            info = runtime["verifiers"][name]
            for metric, column in METRICS:
                if name in accurate:
                    est = stats.estimate(name, metric, scopes.COMBINED)
                    result.add(TABLE, row, column, est.point, ci=(est.low, est.high))
                else:
                    result.add(TABLE, row, column, None)
            result.add(TABLE, row, "ms/example", info["ms_per_example"])
            _runtime_cells(result, row, info)
        scopes.add_bootstrap_info(result, stats)
        result.tags.update(_tags(verifiers))
        return result

    def _score_verifiers(
        self, verifiers: dict, data: Any, scores: Any, sample: Any, runtime: dict, run: Any
    ) -> list[str]:
        """Time every verifier on the sample; score every row with those that have their
        pretrained weights (their columns go into ``scores``). Returns their names."""
        params, accurate = self.params, []
        for name, verifier in verifiers.items():
            log.info("verifier %s: %s weights, %s", name, verifier.weights, verifier.precision_name)
            info, _ = time_scoring(
                verifier, sample, repeats=params.timing_repeats, warmup=params.timing_warmup
            )
            if verifier.weights == "pretrained":
                risk, stats = score_in_chunks(
                    verifier, data.frame, params.score_chunk, run.progress
                )
                by_id = pd.Series(risk, index=data.frame["example_id"].to_numpy())
                scores[name] = by_id.reindex(scores["example_id"].to_numpy()).to_numpy()
                info["all_rows_truncation"] = stats.to_dict()
                accurate.append(name)
            runtime["verifiers"][name] = info
            verifier.release()  # the next verifier's peak memory does not include this one
        return accurate

    @classmethod
    def figures(cls, cells: pd.DataFrame) -> dict[str, Any]:
        """Figure 5: combined AP against ms/example (log axis), from Table VII's cells only.

        Rows whose AP is not available (random weights) appear as cost-only markers on the
        x axis, never at a made-up AP.
        """
        from runner.reporting import cost_frontier

        return {"fig5_cost_quality": cost_frontier(cells, TABLE)}


def _runtime_cells(result: StudyResult, row: str, info: dict[str, Any]) -> None:
    trunc = info["truncation"]
    values = {
        "parameters (M)": info["n_parameters"] / 1e6,
        "batch size": info["batch_size"],
        "threads": info["threads"],
        "max length": info["max_length"],
        "tokens/example": info["mean_tokens_per_example"],
        "truncated examples": trunc["n_truncated"],
        "tokens cut": trunc["tokens_cut"],
        "peak RSS (MiB)": info["peak_rss_mb"],
        "timed examples": info["n_timed_examples"],
    }
    for column, value in values.items():
        result.add(RUNTIME_TABLE, row, column, float(value))


def _tags(verifiers: dict[str, Any]) -> dict[str, str]:
    weights = {v.weights for v in verifiers.values()}
    tags = {"weights": weights.pop() if len(weights) == 1 else "mixed"}
    for name, verifier in verifiers.items():
        tags[f"verifier.{name}.weights"] = verifier.weights
        tags[f"verifier.{name}.precision"] = verifier.precision_name
        tags[f"verifier.{name}.model"] = (
            f"random:{_arch_name(verifier)}" if verifier.weights == "random" else verifier.model
        )
    return tags


def _arch_name(verifier: Any) -> str:
    arch = verifier.architecture  # a name, a mapping or an `ArchitectureConf` record
    if isinstance(arch, str):
        return arch
    if isinstance(arch, Mapping):
        return str(arch.get("name", "?"))
    return str(getattr(arch, "name", "?"))
