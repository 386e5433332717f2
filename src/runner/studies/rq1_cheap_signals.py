"""RQ1: how far do cheap local evidence signals go on RAGTruth triage?

Every configured zero-shot gate (uncovered-token fraction, ROUGE-L risk, token-F1 risk,
and the TF-IDF risks, whose vocabulary is fitted on the training fold only) scored on
every example, reported in the shape of RAGScope Table III: AUROC and AP per task, macro
average over tasks, and pooled (Combined), with 95 % context-group bootstrap intervals,
plus measured ms/example per gate.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydra.utils import instantiate
from omegaconf import DictConfig

from runner.results import StudyResult
from runner.studies import _ragscope as rs

PAPER = "ragscope"
TITLES = {
    "table3": "Table III (zero-shot gates): AUROC and AP per task, macro and combined",
}


@dataclass
class Params:
    """RQ1 parameters."""

    time_gates: bool = True  # measure ms/example per gate
    timing_rows: int = 540  # rows of the first test fold used for timing
    timing_repeats: int = 5  # timed passes (median reported) after one warm-up


def run(cfg: DictConfig, data, params: Params) -> StudyResult:
    """Score every zero-shot gate and build Table III's cells."""
    frame = rs.with_features(data.frame, cfg.paths.cache_dir)
    rs.check_binary_labels(frame, data.name)
    gates = rs.build_gates(cfg)
    splitter = instantiate(cfg.split)
    scores = rs.score_gates(gates, frame, splitter, progress=cfg.progress)
    stats = rs.bootstrap_scopes(scores, list(gates), cfg.bootstrap)
    result = StudyResult(scores=scores, titles=dict(TITLES))
    rs.add_scope_table(result, "table3", stats, list(gates))
    rs.add_bootstrap_info(result, stats)
    if params.time_gates:
        timing = rs.gate_runtime(
            gates, data.frame, splitter, params.timing_rows, params.timing_repeats
        )
        result.runtime["gates"] = timing
    return result


def figures(cells):
    """Figure 2's layout for the zero-shot gates (bars per scope)."""
    from runner.reporting.figures import scope_bars

    return {"fig2_zero_shot": scope_bars(cells, "table3")}
