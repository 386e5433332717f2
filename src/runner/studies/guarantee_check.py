"""Is the routing contract's bound true on held-out rows, and does it say when it breaks?

The guarantee of a risk-controlled contract (accepted risk <= α with probability 1 - δ,
`runner.routing.contract.risk_control`) is a theorem under exchangeability. This study shows it on
labelled data the way a team would meet it (`runner.routing.guarantee.guarantee_check`):

- **in distribution**: ``study.params.splits`` grouped calibration/test splits of the whole
  file; the gate's out-of-fold risks (grouped CV, ``split``) are calibrated on one side and
  routed on the other. Reported: the violation rate (realised accepted risk > α) with its
  exact 95 % interval, which must stay <= δ; the accepted share against the oracle fixed
  threshold and the per-split hindsight share; with ``routing.verifier``, the calibrated
  cascade beside the gate alone.
- **under shift**: for every value of the shift column (``task`` when the file has several,
  else ``source``): the gate fitted and calibrated on the other values (out of fold there),
  and rows of the held-out value routed, over the same number of splits. The guarantee's
  assumption fails here; the report says how often a bound broke and whether each
  violation (of either bound) came with the shift flag (`runner.routing.audit.shift`: the KS
  test of routed against calibration risks at p < 0.01, and rows from a source
  calibration never had).

- **on the population**: the file *is* the population (by default RAGTruth train and test
  pooled, `dataset=ragtruth_pooled`): ``study.params.population_splits`` calibration draws
  of each size in ``population_rows`` (whole context groups), the contract set at each α of
  ``population_alphas``, and the population accepted risk of each threshold computed
  exactly (`runner.routing.guarantee.population_check`). The violation rate with its exact interval
  must stay <= δ; beside it the held-out complement's rate (which reads high), MAPIE's
  controller, and the share against the population's best fixed threshold (hindsight).

``dataset=halubench`` runs the source shift on HaluBench (one source calibrated, another
routed: `conf/experiment/guarantee_check_halubench.yaml`). Per-split outcomes are in
``splits.parquet``; the ``goals`` table states each goal, its value and whether it is met.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from runner.data import require_labels
from runner.errors import ConfigError
from runner.evaluation import score_gates
from runner.features import with_lexical_features
from runner.results import StudyResult
from runner.routing import RoutingConf
from runner.routing.audit import shift
from runner.routing.contract import cascade
from runner.routing.guarantee import guarantee_check, guarantee_tables, population_check
from runner.studies.contract import RunContext, Study, check_named

IN_DISTRIBUTION = guarantee_tables.IN_DISTRIBUTION
TITLES = {
    "guarantee": "Calibrate, then route held-out rows: how often the realised rate breaks the "
    "bound, and what it accepts (means over splits; violation rate with exact 95 % CI). In "
    "distribution the held-out rate reads high (it adds its own sampling noise, and a "
    "finite file's complement mirrors the calibration sample): the population table judges "
    "the bound",
    "goals": "The guarantee's goals: value, target, met (1) or not (0)",
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
    # the population check (`runner.routing.guarantee.population_check`); no sizes: not run
    population_rows: list[int] = field(default_factory=lambda: [500, 1350, 3000])
    population_alphas: list[float] = field(default_factory=lambda: [0.1, 0.2])
    population_splits: int = 500
    # [α, N] pairs whose accepted share must be within max_share_gap of the hindsight share
    population_share_goals: list[list[Any]] = field(
        default_factory=lambda: [[0.2, 1350], [0.1, 3000]]
    )


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
        population_check.check_population_settings(
            params.population_rows, params.population_alphas, params.population_splits,
            params.population_share_goals,
        )  # fmt: skip

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Score once, then calibrate and route over every split and every shift."""
        routing, params = self.routing, self.params
        data = require_labels(data, "guarantee_check")
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
        guarantee_tables.add_tables(
            result, table, oracle, float(np.mean(hindsight)), routing, params.max_share_gap,
            violation_goal=not params.population_rows,
        )  # fmt: skip
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
        if params.population_rows:
            self._population(result, rows, run)
        return result

    def _population(self, result: StudyResult, rows: dict, run: RunContext) -> None:
        """The population check (`population_check.check_population`): table, goals, files."""
        params = self.params
        checked = population_check.check_population(
            population_check.Population(rows["y"], rows["risk"], rows["group"]),
            list(params.population_rows), list(params.population_alphas),
            params.population_splits, self.routing, run.seed, params.mapie_reference,
        )  # fmt: skip
        goals = [(float(a), int(n)) for a, n in params.population_share_goals]
        guarantee_tables.add_population(
            result, checked.table, checked.hindsight, checked.floor,
            float(self.routing.delta), params.max_share_gap, goals,
        )  # fmt: skip
        result.files["population_splits.parquet"] = checked.table
        result.extra["guarantee_check.json"]["population"] = checked.summary

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
        from runner.reporting import guarantee_figure, population_figure

        figures = {"guarantee_check": guarantee_figure(cells)}
        population = population_figure(cells)
        if population is not None:
            figures["guarantee_population"] = population
        return figures


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
