"""Evaluation protocol: metrics, operating points, group bootstrap, splits, out-of-fold loop.

Why one package: these pieces together are the leakage-controlled protocol (grouped
splits, fold-scoped fitting, group bootstrap, fixed operating points, timing), and each
rule is decided in exactly one module so that every study applies the same one.
"""

from runner.evaluation.agreement import cohen_kappa, krippendorff_alpha
from runner.evaluation.bootstrap import (
    BootstrapResult,
    Estimate,
    group_bootstrap,
    resample_weights,
    standard_metrics,
)
from runner.evaluation.config import BootstrapConf
from runner.evaluation.intervals import confidence_text, percentile_interval, wilson_interval
from runner.evaluation.metrics import (
    auroc,
    auroc_batched,
    average_precision,
    average_precision_batched,
    indices_to_weights,
)
from runner.evaluation.oof import out_of_fold, score_gates
from runner.evaluation.operating import (
    ACCEPT_BUDGET,
    ALPHA_GRID,
    REVIEW_BUDGET,
    RHO_GRID,
    accepted_risk,
    accepted_risk_batched,
    accepted_risk_grid,
    accepted_risk_grid_batched,
    review_precision,
    review_precision_batched,
    review_precision_grid,
    review_precision_grid_batched,
)
from runner.evaluation.source_shift import NOT_COMPUTABLE
from runner.evaluation.splits import (
    Fold,
    GroupedKFold,
    GroupLeakError,
    KFold,
    LeaveSourceOut,
    TargetAdaptation,
    TargetRecord,
    assert_no_group_leak,
)
from runner.evaluation.timing import gate_runtime, measure_ms_per_example

__all__ = [
    "ACCEPT_BUDGET",
    "ALPHA_GRID",
    "NOT_COMPUTABLE",
    "REVIEW_BUDGET",
    "RHO_GRID",
    "BootstrapConf",
    "BootstrapResult",
    "Estimate",
    "Fold",
    "GroupLeakError",
    "GroupedKFold",
    "KFold",
    "LeaveSourceOut",
    "TargetAdaptation",
    "TargetRecord",
    "accepted_risk",
    "accepted_risk_batched",
    "accepted_risk_grid",
    "accepted_risk_grid_batched",
    "assert_no_group_leak",
    "auroc",
    "auroc_batched",
    "average_precision",
    "average_precision_batched",
    "cohen_kappa",
    "confidence_text",
    "gate_runtime",
    "group_bootstrap",
    "indices_to_weights",
    "krippendorff_alpha",
    "measure_ms_per_example",
    "out_of_fold",
    "percentile_interval",
    "resample_weights",
    "review_precision",
    "review_precision_batched",
    "review_precision_grid",
    "review_precision_grid_batched",
    "score_gates",
    "standard_metrics",
    "wilson_interval",
]
