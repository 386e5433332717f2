"""RQ3: what review and automatic-acceptance operating points does a gate enable?

Operating points are fixed before evaluation (protocol control 4): review the top-risk
ρ of examples and report the share of positives among them (review precision); accept
the lowest-risk α and report the share of positives that slip through (accepted risk).
Scores are out of fold (grouped CV), intervals are context-group bootstrap percentiles.
Reports RAGScope Table VI (ρ = 10 %, α = 50 %, combined and per task) and Figure 4 (the
combined curves over ρ ∈ 5–30 % and α ∈ 50–90 %, with the base-rate line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from runner.errors import ConfigError, DataError
from runner.evaluation import (
    ACCEPT_BUDGET,
    REVIEW_BUDGET,
    BootstrapConf,
    accepted_risk_batched,
    review_precision_batched,
    scopes,
    score_gates,
)
from runner.features import with_lexical_features
from runner.frames import check_labels
from runner.results import StudyResult
from runner.studies.contract import RunContext, Study, check_named, configured

TITLES = {
    "table6": "Table VI: operating points with context-group bootstrap intervals",
    "base_rate": "Positive (unfaithful) rate per scope",
    "curve_review": "Figure 4 data: combined review precision by reviewed fraction (%)",
    "curve_accept": "Figure 4 data: combined accepted risk by accepted fraction (%)",
}


@dataclass
class Params:
    """RQ3 parameters: the table points, the curve grids and the gates to compare."""

    rho: float = REVIEW_BUDGET  # review budget of Table VI
    alpha: float = ACCEPT_BUDGET  # acceptance budget of Table VI
    rho_grid: list[float] = field(default_factory=lambda: [0.05, 0.10, 0.15, 0.20, 0.25, 0.30])
    alpha_grid: list[float] = field(
        default_factory=lambda: [0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90]
    )
    table_gates: list[str] = field(default_factory=lambda: ["ragscope_e", "rouge_l"])


def _check(params: Params, gates: dict[str, Any]) -> None:
    for value, name in [
        (params.rho, "rho"),
        (params.alpha, "alpha"),
        *[(r, "rho_grid") for r in params.rho_grid],
        *[(a, "alpha_grid") for a in params.alpha_grid],
    ]:
        if not 0.0 < value <= 1.0:
            raise ConfigError(f"study.params.{name}: {value} is not a fraction in (0, 1]")
    check_named(gates, params.table_gates, "study.params.table_gates", "gates")


def _pct(x: float) -> str:
    return f"{100 * x:g}"


@dataclass
class OperatingPoints(Study, name="rq3_operating_points", titles=TITLES, paper="ragscope"):
    """RQ3: fixed review / acceptance operating points out of fold (Table VI, Figure 4)."""

    gates: dict[str, Any]
    split: Any
    bootstrap: BootstrapConf
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """Budgets are fractions and every table gate is configured."""
        configured(self.gates, "gates")
        _check(self.params, self.gates)

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score gates out of fold and evaluate the fixed operating points with CIs."""
        gates, params = self.gates, self.params
        frame = with_lexical_features(data.frame, run.cache_dir)
        check_labels(
            frame["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
        )
        scores = score_gates(gates, frame, self.split, progress=run.progress)

        review_col = f"review precision@{_pct(params.rho)}%"
        accept_col = f"accepted risk@{_pct(params.alpha)}%"
        metrics = {
            "review": partial(review_precision_batched, rho=params.rho),
            "accept": partial(accepted_risk_batched, alpha=params.alpha),
        }
        for r in params.rho_grid:
            metrics[f"review@{r}"] = partial(review_precision_batched, rho=r)
        for a in params.alpha_grid:
            metrics[f"accept@{a}"] = partial(accepted_risk_batched, alpha=a)
        stats = scopes.bootstrap_scopes(scores, list(gates), self.bootstrap, metrics=metrics)

        result = StudyResult(scores=scores, titles=dict(TITLES))
        for scope in [scopes.COMBINED, *stats.tasks] if stats.by_task else [scopes.COMBINED]:
            for gate in params.table_gates:
                for key, col in (("review", review_col), ("accept", accept_col)):
                    est = stats.estimate(gate, key, scope)
                    result.add(
                        "table6", f"{scope} / {gate}", col, est.point, ci=(est.low, est.high)
                    )
        for scope in [scopes.COMBINED, *stats.tasks]:
            sub = scores if scope == scopes.COMBINED else scores[scores["task"] == scope]
            result.add("base_rate", scope, "positive rate", float(sub["label"].mean()))
        for gate in gates:
            for r in params.rho_grid:
                est = stats.estimate(gate, f"review@{r}", scopes.COMBINED)
                result.add("curve_review", gate, _pct(r), est.point, ci=(est.low, est.high))
            for a in params.alpha_grid:
                est = stats.estimate(gate, f"accept@{a}", scopes.COMBINED)
                result.add("curve_accept", gate, _pct(a), est.point, ci=(est.low, est.high))
        scopes.add_bootstrap_info(result, stats)
        return result

    @classmethod
    def figures(cls, cells):
        """Figure 4: both operating-curve panels with the combined base-rate line."""
        from runner.reporting import operating_curves

        base = cells[(cells["table"] == "base_rate") & (cells["row"] == scopes.COMBINED)]
        rate = float(base["value"].iloc[0]) if len(base) else None
        curves = operating_curves(cells, "curve_review", "curve_accept", rate)
        return {"fig4_operating_curves": curves}
