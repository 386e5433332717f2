"""RQ1: how far do cheap local evidence signals go on RAGTruth triage?

Every configured zero-shot gate (uncovered-token fraction, ROUGE-L risk, token-F1 risk,
and the TF-IDF risks, whose vocabulary is fitted on the training fold only) scored on
every example, reported in the shape of RAGScope Table III: AUROC and AP per task, macro
average over tasks, and pooled (Combined), with 95 % context-group bootstrap intervals,
plus measured ms/example per gate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.errors import DataError
from runner.evaluation import BootstrapConf, gate_runtime, scopes, score_gates
from runner.features import with_lexical_features
from runner.frames import check_labels
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study, configured

TITLES = {
    "table3": "Table III (zero-shot gates): AUROC and AP per task, macro and combined",
}


@dataclass
class Params:
    """RQ1 parameters."""

    time_gates: bool = True  # measure ms/example per gate
    timing_rows: int = 540  # rows of the first test fold used for timing
    timing_repeats: int = 5  # timed passes (median reported) after one warm-up


@dataclass
class CheapSignals(Study, name="rq1_cheap_signals", titles=TITLES, paper="ragscope"):
    """RQ1: every configured zero-shot gate on every example (Table III, Figure 2)."""

    gates: dict[str, Any]
    split: Any
    bootstrap: BootstrapConf
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        configured(self.gates, "gates")

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score every zero-shot gate and build Table III's cells."""
        gates, splitter, params = self.gates, self.split, self.params
        frame = with_lexical_features(data.frame, run.cache_dir)
        check_labels(
            frame["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
        )
        scores = score_gates(gates, frame, splitter, progress=run.progress)
        stats = scopes.bootstrap_scopes(scores, list(gates), self.bootstrap)
        result = StudyResult(scores=scores, titles=dict(TITLES))
        scopes.add_scope_table(result, "table3", stats, list(gates))
        scopes.add_bootstrap_info(result, stats)
        if params.time_gates:
            timing = gate_runtime(
                gates, data.frame, splitter, params.timing_rows, params.timing_repeats
            )
            result.runtime["gates"] = timing
        return result

    @classmethod
    def figures(cls, cells):
        """Figure 2's layout for the zero-shot gates (bars per scope)."""
        from runner.reporting import scope_bars

        return {"fig2_zero_shot": scope_bars(cells, "table3")}
