"""Operating report on a team's own labelled file: is this gate good enough at our budgets?

The seed paper's deployment summary, computed on the team's data: out-of-fold AUROC/AP,
review precision and accepted risk at configurable budgets with 95 % context-group
bootstrap intervals (Combined, and per ``task`` when the file has several), ms per example
from raw text, and, when ``source`` has two or more values, leave-source-out and
target-label rows. With ``routing.verifier=<name>`` (a configured verifier), the report
adds that verifier on every row and the cascade (``routing.gate`` on every row, the
verifier on its verify band at the contract's budgets) to every table, and a ``cascade``
table with their ms/example (`runner.routing.report.cascade_report`). It closes with a
recommendation (`runner.routing.report.recommendation`): what to ship at the run's contract, its
thresholds as `fit_gate` sets them, the bounds, the cost per 1,000 rows, the next budgets
and the `fit_gate` command. Writes ``report.md`` / ``report.html`` with the figures inline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from runner.data import require_labels
from runner.errors import ConfigError
from runner.evaluation import (
    BootstrapConf,
    gate_runtime,
    scopes,
    score_gates,
)
from runner.features import with_lexical_features
from runner.results import StudyResult
from runner.routing import RoutingConf
from runner.routing.contract import cascade
from runner.routing.report import cascade_report, operating_tables, recommendation
from runner.studies.contract import RunContext, Study, check_named, configured

TITLES = {
    **operating_tables.TITLES,
    "curve_review": "Review precision by reviewed share (%)",
    "curve_accept": "Accepted risk by accepted share (%)",
    "cascade": cascade_report.TITLE,
    "recommendation": "Recommendation: what to ship, at the contract and the next budgets",
}


@dataclass
class Params:
    """Budgets of the report, and the source-shift settings."""

    review_budgets: list[float] = field(default_factory=lambda: [0.05, 0.10, 0.20])
    accept_budgets: list[float] = field(default_factory=lambda: [0.30, 0.50, 0.70])
    target_ks: list[int] = field(default_factory=lambda: [25, 50, 100])
    target_seeds: int = 5
    time_gates: bool = True
    timing_rows: int = 200
    timing_repeats: int = 3


@dataclass
class OperatingReport(Study, name="operating_report", titles=TITLES):
    """Operating points of every configured gate on a team's own labelled file."""

    gates: dict[str, Any]
    split: Any
    bootstrap: BootstrapConf
    routing: RoutingConf
    verifiers: dict[str, Any] = field(default_factory=dict)  # the cascade's (routing.verifier)
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """Budgets are fractions; at least one gate is configured."""
        for key in ("review_budgets", "accept_budgets"):
            for value in getattr(self.params, key):
                if not 0.0 < value <= 1.0:
                    raise ConfigError(f"study.params.{key}: {value} is not a fraction in (0, 1]")
        configured(self.gates, "gates")
        _check_cascade(self.routing, self.verifiers, self.gates)

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score every gate out of fold and report the operating points with intervals."""
        params = self.params
        data = require_labels(data, "operating_report")
        gates, boot = self.gates, self.bootstrap
        frame = with_lexical_features(data.frame, run.cache_dir).reset_index(drop=True)
        splitter = self.split
        scores = score_gates(gates, frame, splitter, progress=run.progress)
        cascade_run = _run_cascade(self.routing, self.verifiers, scores, frame)
        names = list(gates)
        if cascade_run is not None:
            scores[cascade_run.verifier] = cascade_run.verifier_alone
            scores[cascade_run.name] = cascade_run.cascade
            names += [cascade_run.verifier, cascade_run.name]
        result = StudyResult(scores=scores, titles=dict(TITLES))
        # the contract's own budgets are always columns: the recommendation reads their CIs
        review_budgets = sorted({*params.review_budgets, self.routing.review_budget})
        accept_budgets = sorted({*params.accept_budgets, self.routing.accept_budget})
        stats = operating_tables.add_operating_table(
            result, scores, names, boot, review_budgets, accept_budgets
        )
        operating_tables.add_curves(result, scores, names)
        sources = sorted(frame["source"].astype(str).unique())
        not_computable: dict[str, str] = {}
        if len(sources) >= 2:
            not_computable = operating_tables.add_source_shift(
                result, frame, gates, boot, params.review_budgets[0], params.accept_budgets[0],
                params.target_ks, params.target_seeds, run.seed, run.progress,
            )  # fmt: skip
        if params.time_gates:
            result.runtime["gates"] = gate_runtime(
                gates, frame, splitter, params.timing_rows, params.timing_repeats
            )
        if cascade_run is not None:
            timed = result.runtime.get("gates", {}).get(cascade_run.gate)
            gate_ms = timed["median_ms_per_example"] if timed else None
            cascade_report.add_cascade_table(
                result, stats, cascade_run, scores["label"].to_numpy(), params.review_budgets,
                params.accept_budgets, gate_ms,
            )  # fmt: skip
            result.runtime["cascade"] = cascade_run.runtime()
        rec = _recommend(self, data, run, result, stats, scores, cascade_run, accept_budgets)
        for row, column, value in recommendation.cells(rec):
            result.add("recommendation", row, column, value)
        result.extra["recommendation.json"] = rec
        result.extra["data.json"] = {
            "name": data.name,
            "fingerprint": data.fingerprint,
            "sources": sources,
            "tasks": sorted(frame["task"].astype(str).unique()),
            "rows": len(frame),
            "not_computable": not_computable,
        }
        return result

    @classmethod
    def figures(cls, cells):
        """Review precision and accepted risk curves of every gate, with the base-rate line."""
        from runner.reporting import operating_curves

        base = cells[(cells["table"] == "base_rate") & (cells["column"] == "hallucinated share")]
        base = base[base["row"] == scopes.COMBINED]
        rate = float(base["value"].iloc[0]) if len(base) else None
        curves = operating_curves(cells, "curve_review", "curve_accept", rate)
        return {"operating_curves": curves}

    def documents(self, result: StudyResult, out_dir: Path) -> dict[str, str]:
        """``report.md`` and ``report.html`` (`runner.reporting.operating_report_doc`)."""
        from runner.reporting import documents

        return documents(result, out_dir)


def _check_cascade(routing: RoutingConf, verifiers: dict[str, Any], gates: dict[str, Any]) -> None:
    """A named verifier is configured, has a threshold and no gate's name; none is unused."""
    if not routing.verifier:
        if verifiers:
            raise ConfigError(
                f"operating_report: verifiers {sorted(verifiers)} are configured but "
                "routing.verifier is unset; name the one the cascade uses "
                "(routing.verifier=<name>) or remove them"
            )
        return
    check_named(verifiers, [routing.verifier], "routing.verifier", "verifiers")
    verifier = verifiers[routing.verifier]
    cascade.verifier_threshold(verifier, routing.verifier_threshold, routing.verifier)
    check_named(gates, [routing.gate], "routing.gate", "gates")
    if routing.verifier in gates:
        raise ConfigError(
            f"routing.verifier={routing.verifier!r} is also a gate's name; rename the verifier"
        )


def _run_cascade(
    routing: RoutingConf, verifiers: dict[str, Any], scores: pd.DataFrame, frame: pd.DataFrame
) -> cascade_report.CascadeRun | None:
    """The cascade of ``routing.gate`` and ``routing.verifier`` (None when no verifier)."""
    if not routing.verifier:
        return None
    verifier = verifiers[routing.verifier]
    return cascade_report.run_cascade(
        scores,
        frame,
        routing.gate,
        routing.verifier,
        verifier,
        routing.review_budget,
        routing.accept_budget,
        cascade.verifier_threshold(verifier, routing.verifier_threshold, routing.verifier),
    )


def _recommend(
    study: OperatingReport,
    data: Any,
    run: RunContext,
    result: StudyResult,
    stats: Any,
    scores: pd.DataFrame,
    cascade_run: cascade_report.CascadeRun | None,
    accept_budgets: list[float],
) -> dict:
    """Hand the recommendation what the report computed: OOF risks, AP, the accepted-risk CI
    upper ends, ms/row, and the cascade's verifier scores."""
    timing = result.runtime.get("gates") or {}
    gates = recommendation.scored_gates(list(study.gates), scores, stats, timing, accept_budgets)
    verifier = None
    if cascade_run is not None:
        verifier = recommendation.BandVerifier(
            name=cascade_run.verifier,
            risk=cascade_run.verifier_alone,
            ms_per_row=cascade_run.ms_band,
            threshold=cascade_run.threshold,
        )
    return recommendation.recommend(
        scores["label"].to_numpy(),
        gates,
        study.routing,
        review_budgets=study.params.review_budgets,
        accept_budgets=study.params.accept_budgets,
        dataset_path=data.files[0] if len(data.files) == 1 else None,
        overrides=run.overrides,
        verifier=verifier,
    )
