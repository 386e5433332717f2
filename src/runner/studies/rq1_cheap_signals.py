"""RQ1: how far do cheap local evidence signals go on RAGTruth triage?

Every configured zero-shot gate (uncovered-token fraction, ROUGE-L risk, token-F1 risk,
and the TF-IDF risks, whose vocabulary is fitted on the training fold only) scored on
every example, reported in the shape of RAGScope Table III: AUROC and AP per task, macro
average over tasks, and pooled (Combined), with 95 % context-group bootstrap intervals,
plus measured ms/example per gate.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.errors import DataError
from runner.evaluation import gate_runtime, scopes, score_gates
from runner.features import with_lexical_features
from runner.frames import check_labels
from runner.results import StudyResult
from runner.studies.contract import Inputs, Study

TITLES = {
    "table3": "Table III (zero-shot gates): AUROC and AP per task, macro and combined",
}


@dataclass
class Params:
    """RQ1 parameters."""

    time_gates: bool = True  # measure ms/example per gate
    timing_rows: int = 540  # rows of the first test fold used for timing
    timing_repeats: int = 5  # timed passes (median reported) after one warm-up


class CheapSignals(Study, name="rq1_cheap_signals", params=Params, titles=TITLES, paper="ragscope"):
    """RQ1: every configured zero-shot gate on every example (Table III, Figure 2)."""

    def run(self, inputs: Inputs, params: Params) -> StudyResult:
        """Score every zero-shot gate and build Table III's cells."""
        data, gates = inputs.data, inputs.require("gates")
        frame = with_lexical_features(data.frame, inputs.cache_dir)
        check_labels(
            frame["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
        )
        splitter = inputs.require("split")
        scores = score_gates(gates, frame, splitter, progress=inputs.progress)
        stats = scopes.bootstrap_scopes(scores, list(gates), inputs.require("bootstrap"))
        result = StudyResult(scores=scores, titles=dict(TITLES))
        scopes.add_scope_table(result, "table3", stats, list(gates))
        scopes.add_bootstrap_info(result, stats)
        if params.time_gates:
            timing = gate_runtime(
                gates, data.frame, splitter, params.timing_rows, params.timing_repeats
            )
            result.runtime["gates"] = timing
        return result

    def figures(self, cells):
        """Figure 2's layout for the zero-shot gates (bars per scope)."""
        from runner.reporting import scope_bars

        return {"fig2_zero_shot": scope_bars(cells, "table3")}
