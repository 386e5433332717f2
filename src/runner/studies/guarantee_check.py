"""Is the routing contract's bound true on held-out rows, and does it say when it breaks?

The guarantee of a risk-controlled contract (accepted risk <= α with probability 1 - δ,
`runner.routing.risk_control`) is a theorem under exchangeability. This study shows it on
labelled data the way a team would meet it (`runner.routing.guarantee_check`):

- **in distribution**: ``study.params.splits`` grouped calibration/test splits of the whole
  file; the gate's out-of-fold risks (grouped CV, ``split``) are calibrated on one side and
  routed on the other. Reported: the violation rate (realised accepted risk > α) with its
  exact 95 % interval, which must stay <= δ; the accepted share against the oracle fixed
  threshold and the per-split hindsight share; with ``routing.verifier``, the calibrated
  cascade beside the gate alone.
- **under shift**: for every value of the shift column (``task`` when the file has several,
  else ``source``): the gate fitted and calibrated on the other values (out of fold there),
  and rows of the held-out value routed, over the same number of splits. The guarantee's
  assumption fails here; the report says how often the bound broke and whether each
  violation came with the shift flag (`runner.routing.shift`: the KS test of routed
  against calibration risks at p < 0.01, and rows from a source calibration never had).

``dataset=halubench`` runs the source shift on HaluBench (one source calibrated, another
routed: `conf/experiment/guarantee_check_halubench.yaml`). Per-split outcomes are in
``splits.parquet``; the ``goals`` table states each goal, its value and whether it is met.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest
from sklearn.base import clone

from runner.errors import ConfigError
from runner.evaluation import score_gates
from runner.features import with_lexical_features
from runner.results import StudyResult
from runner.routing import RoutingConf, cascade, guarantee_check, report, shift
from runner.studies.contract import RunContext, Study, check_named

IN_DISTRIBUTION = "in distribution"
TITLES = {
    "guarantee": "Calibrate, then route held-out rows: how often the bound breaks, and what "
    "it accepts (means over splits; violation rate with exact 95 % CI)",
    "goals": "The guarantee's goals: value, target, met (1) or not (0)",
}
METHOD_LABELS = {
    "gate": "gate (risk-controlled)",
    "cascade": "cascade (calibrated)",
    "mapie": "gate, MAPIE's controller (reference)",
}


@dataclass
class Params:
    """How many splits, how much calibration, what shifts."""

    splits: int = 200
    calibration_fraction: float = 0.5
    shift_column: str | None = None  # None: `task` when the file has several, else `source`
    shift: bool = True
    max_share_gap: float = 0.05  # goal: accepted share within this of the oracle's
    mapie_reference: bool = True  # MAPIE's controller on the same splits, in distribution


@dataclass
class GuaranteeCheck(Study, name="guarantee_check", titles=TITLES):
    """Repeated calibrate-then-route on labelled rows, in distribution and under shift."""

    gates: dict[str, Any]
    split: Any
    routing: RoutingConf
    verifiers: dict[str, Any] = field(default_factory=dict)
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """A risk-controlled contract, a configured gate, sane split settings."""
        routing, params = self.routing, self.params
        check_named(self.gates, [routing.gate], "routing.gate", "gates")
        if routing.accept_rule != "risk_controlled":
            raise ConfigError(
                "guarantee_check checks a bound: set routing.accept_rule=risk_controlled and "
                "routing.max_accepted_risk"
            )
        if routing.verifier:
            check_named(self.verifiers, [routing.verifier], "routing.verifier", "verifiers")
        if params.splits < 1:
            raise ConfigError(f"study.params.splits={params.splits}: at least 1")
        if not 0.0 < params.calibration_fraction < 1.0:
            raise ConfigError(
                f"study.params.calibration_fraction={params.calibration_fraction}: in (0, 1)"
            )

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score once, then calibrate and route over every split and every shift."""
        routing, params = self.routing, self.params
        data = report.require_labels(data, "guarantee_check")
        frame = with_lexical_features(data.frame, run.cache_dir).reset_index(drop=True)
        gate = self.gates[routing.gate]
        scores = score_gates({routing.gate: gate}, frame, self.split, progress=run.progress)
        verifier = self._verifier_risk(frame)
        rows = _rows(frame, scores[routing.gate].to_numpy(float), verifier)
        rng = np.random.default_rng(run.seed)
        outcomes, tests = [], []
        for i in range(params.splits):
            cal = guarantee_check.group_split(rows["group"], params.calibration_fraction, rng)
            tests.append((rows["y"][~cal], rows["risk"][~cal]))
            outcomes += guarantee_check.route_split(
                IN_DISTRIBUTION, i, _take(rows, cal), _take(rows, ~cal), routing,
                params.mapie_reference,
            )  # fmt: skip
        alpha, delta = float(routing.max_accepted_risk), float(routing.delta)
        oracle = guarantee_check.oracle_fixed(tests, rows["risk"], alpha, delta)
        hindsight = [guarantee_check.hindsight_share(y, r, alpha) for y, r in tests]
        column = params.shift_column or ("task" if frame["task"].nunique() > 1 else "source")
        if params.shift:
            outcomes += self._shifted(frame, column, verifier, rng, run.progress)
        table = guarantee_check.outcomes_frame(outcomes)
        result = StudyResult(titles=dict(TITLES))
        _add_tables(result, table, oracle, float(np.mean(hindsight)), routing, params)
        result.files["splits.parquet"] = table
        result.extra["guarantee_check.json"] = {
            "alpha": alpha,
            "delta": delta,
            "splits": params.splits,
            "calibration_fraction": params.calibration_fraction,
            "shift_column": column,
            "shift_test": f"two-sample KS of gate risks, flagged at p < {shift.SHIFT_P}",
            "oracle_fixed_threshold": oracle,
            "per_split_hindsight_share": float(np.mean(hindsight)),
            "rows": len(frame),
            "groups": int(frame["group_id"].nunique()),
            "data": {"name": data.name, "fingerprint": data.fingerprint},
        }
        return result

    def _verifier_risk(self, frame: pd.DataFrame) -> np.ndarray | None:
        """The verifier's risk on every row (None without ``routing.verifier``)."""
        if not self.routing.verifier:
            return None
        verifier = self.verifiers[self.routing.verifier]
        return cascade.score_band(verifier, frame, np.ones(len(frame), dtype=bool)).risk

    def _shifted(
        self,
        frame: pd.DataFrame,
        column: str,
        verifier: np.ndarray | None,
        rng: np.random.Generator,
        progress: bool,
    ) -> list:
        """Calibrate on the other values of `column`, route the held-out one, every split."""
        routing, params = self.routing, self.params
        gate = self.gates[routing.gate]
        values = sorted(frame[column].astype(str).unique())
        outcomes: list = []
        for held in values:
            target = (frame[column].astype(str) == held).to_numpy()
            other = frame[~target].reset_index(drop=True)
            if other["group_id"].nunique() < 2 or frame[target]["group_id"].nunique() < 2:
                continue
            oof = score_gates({routing.gate: gate}, other, self.split, progress=progress)
            fitted = clone(gate).fit(other, other["label"].to_numpy()) if gate.needs_fit else gate
            held_risk = np.asarray(fitted.score(frame[target].reset_index(drop=True)), float)
            v_other = None if verifier is None else verifier[~target]
            v_held = None if verifier is None else verifier[target]
            cal_rows = _rows(other, oof[routing.gate].to_numpy(float), v_other)
            held_rows = _rows(frame[target].reset_index(drop=True), held_risk, v_held)
            scenario = (
                f"calibrated on {' + '.join(v for v in values if v != held)}, routed on {held}"
            )
            for i in range(params.splits):
                cal = guarantee_check.group_split(
                    cal_rows["group"], params.calibration_fraction, rng
                )
                test = ~guarantee_check.group_split(
                    held_rows["group"], params.calibration_fraction, rng
                )
                outcomes += guarantee_check.route_split(
                    scenario, i, _take(cal_rows, cal), _take(held_rows, test), routing
                )  # fmt: skip
        return outcomes

    @classmethod
    def figures(cls, cells: pd.DataFrame) -> dict[str, Any]:
        """Violation rate (with CI, against δ) and accepted share per scenario."""
        from runner.reporting import guarantee_figure

        return {"guarantee_check": guarantee_figure(cells)}


def _rows(frame: pd.DataFrame, risk: np.ndarray, verifier: np.ndarray | None) -> dict:
    out = {
        "y": frame["label"].to_numpy(np.int64),
        "risk": np.asarray(risk, dtype=np.float64),
        "group": frame["group_id"].astype(str).to_numpy(),
        "source": frame["source"].astype(str).to_numpy(),
    }
    if verifier is not None:
        out["verifier"] = np.asarray(verifier, dtype=np.float64)
    return out


def _take(rows: dict, mask: np.ndarray) -> dict:
    return {k: v[mask] for k, v in rows.items()}


def _rate(flags: pd.Series) -> tuple[float, tuple[float, float]]:
    """A share of splits and its exact (Clopper-Pearson) 95 % interval."""
    k, n = int(flags.sum()), len(flags)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return k / n, (float(ci.low), float(ci.high))


def _add_tables(
    result: StudyResult,
    table: pd.DataFrame,
    oracle: dict,
    hindsight: float,
    routing: RoutingConf,
    params: Params,
) -> None:
    delta = float(routing.delta)
    goals: dict[str, tuple[float | None, float, bool | None]] = {}
    for (scenario, method), sub in table.groupby(["scenario", "method"], sort=False):
        row = f"{scenario} / {METHOD_LABELS[method]}"
        rate, ci = _rate(sub["violated"])
        result.add("guarantee", row, "violation rate", rate, ci)
        est, est_ci = _rate(sub["violation_established"])
        result.add("guarantee", row, "established violation rate", est, est_ci)
        result.add("guarantee", row, "accepted share", float(sub["accepted_share"].mean()))
        risks = sub["accepted_risk"].dropna()
        result.add("guarantee", row, "realised accepted risk",
                   float(risks.mean()) if len(risks) else None)  # fmt: skip
        result.add("guarantee", row, "splits accepting nothing (no set certified)",
                   float((~sub["feasible"]).mean()))  # fmt: skip
        result.add("guarantee", row, "review share", float(sub["review_share"].mean()))
        precision = sub["review_precision"].dropna()
        result.add("guarantee", row, "review precision",
                   float(precision.mean()) if len(precision) else None)  # fmt: skip
        if routing.review_rule == "precision_controlled" and method != "cascade":
            rrate, rci = _rate(sub["review_violated"].astype(bool))
            result.add("guarantee", row, "review violation rate", rrate, rci)
        result.add("guarantee", row, "verify share", float(sub["verify_share"].mean()))
        result.add("guarantee", row, "sent to verifier", float(sub["sent_to_verifier"].mean()))
        result.add("guarantee", row, "KS shift flag rate", float(sub["ks_flag"].mean()))
        result.add("guarantee", row, "unseen-source flag rate", float(sub["unseen_flag"].mean()))
        violated = sub[sub["violated"]]
        no_ks = int((~violated["ks_flag"]).sum())
        no_flag = int((~violated["ks_flag"] & ~violated["unseen_flag"]).sum())
        result.add("guarantee", row, "violations without the KS flag", no_ks)
        result.add("guarantee", row, "violations without any flag", no_flag)
        if scenario == IN_DISTRIBUTION:
            share = float(sub["accepted_share"].mean())
            result.add("guarantee", row, "share gap to the oracle (points)",
                       100 * (oracle["accepted_share"] - share))  # fmt: skip
        if scenario == IN_DISTRIBUTION and method != "mapie":
            goals[f"{method}: violation rate <= delta"] = (rate, delta, rate <= delta)
            gap = oracle["accepted_share"] - share
            goals[f"{method}: accepted share within {100 * params.max_share_gap:g} points of "
                  "the oracle fixed threshold"] = (100 * gap, 100 * params.max_share_gap,
                                                   gap <= params.max_share_gap)  # fmt: skip
        elif scenario != IN_DISTRIBUTION:
            goals.setdefault("shift: violations without any flag", (0.0, 0.0, True))
            goals.setdefault("shift: violations without the KS flag", (0.0, 0.0, True))
            for key, count in (("any", no_flag), ("the KS", no_ks)):
                name = f"shift: violations without {key} flag"
                value = goals[name][0] + count
                goals[name] = (value, 0.0, value == 0)
    oracle_row = f"{IN_DISTRIBUTION} / oracle fixed threshold (hindsight)"
    result.add("guarantee", oracle_row, "violation rate", oracle["violation_rate"])
    result.add("guarantee", oracle_row, "accepted share", oracle["accepted_share"])
    result.add("guarantee", f"{IN_DISTRIBUTION} / per-split hindsight (no guarantee)",
               "accepted share", hindsight)  # fmt: skip
    inside = table[table["scenario"] == IN_DISTRIBUTION]
    if (inside["method"] == "cascade").any():
        means = inside.groupby("method")["accepted_share"].mean()
        goals["cascade accepts at least as many rows as the gate alone"] = (
            100 * (means["cascade"] - means["gate"]),
            0.0,
            bool(means["cascade"] >= means["gate"]),
        )
    for name, (value, target, met) in goals.items():
        result.add("goals", name, "value", value)
        result.add("goals", name, "target", target)
        result.add("goals", name, "met", None if met is None else int(met))
