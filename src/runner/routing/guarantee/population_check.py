"""The accept bound checked on the quantity it bounds: the population's accepted risk.

Why: the accept rule promises that, with probability at least 1 - δ over the calibration
rows, the *population* accepted risk (the hallucinated share of every row the threshold
accepts, now and later) is <= α (`runner.routing.contract.risk_control`). Judging it on held-out
rows instead adds their own sampling noise (about ±0.017 at 280 accepted rows), and a
held-out complement of a finite file is no neutral judge: it mirrors the calibration
sample's deviation (a calibration sample that looks safe by chance leaves a complement
that looks risky), so its violation rate reads high.

Here a labelled file *is* the population: each split draws calibration rows from it by
context group (whole groups in a random order until at least N rows), sets the contract
on them exactly as `fit_gate` does (`contract_thresholds`), and computes the population
accepted risk of the chosen threshold exactly, from every row's out-of-fold risk and
label. A violation is a population accepted risk above α; over many splits its rate,
with its exact interval, must stay <= δ. The same splits give the held-out complement's
rate (a second column, for comparison), MAPIE's controller as a reference row, and the
best fixed threshold on the population chosen in hindsight (the largest share whose
population accepted risk is <= α), which no calibrated rule can beat on average.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError, DataError
from runner.routing.contract import contract_thresholds
from runner.routing.guarantee.grouped_betting import betting_accept_threshold
from runner.routing.guarantee.mapie_reference import mapie_accept_threshold


@dataclass(frozen=True)
class PopulationOutcome:
    """What one calibration draw's accept threshold gives on the whole population."""

    rows: int  # N asked for
    alpha: float
    method: str
    split: int
    calibration_rows: int  # whole groups: at least N
    feasible: bool  # a set was certified (else nothing is accepted)
    accept_at: float  # accept when risk <= accept_at (-inf: nothing)
    accepted_share: float  # of the population
    accepted_risk: float | None  # population accepted risk
    violated: bool  # population accepted risk > alpha
    complement_risk: float | None  # accepted risk on the rows not drawn
    complement_violated: bool


class Population:
    """Labelled rows with out-of-fold risks: accepted share and risk of any threshold, exactly.

    Parameters
    ----------
    y, risk : arrays
        Labels (1 = hallucinated) and the gate's out-of-fold risks of every row.
    groups : array
        Context groups; calibration draws take whole groups.
    """

    def __init__(self, y: np.ndarray, risk: np.ndarray, groups: np.ndarray) -> None:
        self.y = np.asarray(y, dtype=np.int64)
        self.risk = np.asarray(risk, dtype=np.float64)
        self.groups = np.asarray(groups).astype(str)
        if not (self.y.shape == self.risk.shape == self.groups.shape) or not self.y.size:
            raise ValueError("y, risk and groups must be equal-length, non-empty arrays")
        if not np.isfinite(self.risk).all():
            raise ValueError("every population row needs a finite risk")
        self.codes = np.unique(self.groups, return_inverse=True)[1]
        self.members = pd.Series(np.arange(self.y.size)).groupby(self.codes).agg(list).tolist()
        order = np.argsort(self.risk, kind="stable")
        self._sorted = self.risk[order]
        self._errors = np.cumsum(self.y[order])

    @property
    def rows(self) -> int:
        return int(self.y.size)

    def accepted(self, threshold: float) -> tuple[float, float | None]:
        """(share, accepted risk) of the rows with risk <= `threshold` (risk None: none)."""
        m = int(np.searchsorted(self._sorted, threshold, side="right"))
        if m == 0:
            return 0.0, None
        return m / self.rows, float(self._errors[m - 1] / m)

    def hindsight_share(self, alpha: float) -> float:
        """The largest share (cut at a threshold, ties whole) with accepted risk <= α."""
        ends = np.flatnonzero(np.append(self._sorted[1:] != self._sorted[:-1], True))
        ok = ends[self._errors[ends] / (ends + 1) <= alpha]
        return float((ok.max() + 1) / self.rows) if ok.size else 0.0

    def noise_floor_share(self, rows: int, alpha: float, delta: float) -> float:
        """The share an idealised valid rule would certify from `rows` calibration rows.

        The largest share s whose population accepted risk R(s) still clears a one-sided
        normal bound at level δ on the s·`rows` rows it would be certified on:
        ``R(s) + z_{1-δ} sqrt(R(s) (1 - R(s)) / (s rows)) <= α``. The rule knows each set's
        true risk, counts rows as independent and pays no step of a sequence, so a rule
        that is valid at δ cannot do much better on average: the gap from here to the
        hindsight share is the price of calibrating on `rows` rows, not of a procedure.
        """
        from scipy.stats import norm

        m = np.arange(1, self.rows + 1)
        risk = self._errors / m
        share = m / self.rows
        ok = risk + norm.ppf(1 - delta) * np.sqrt(risk * (1 - risk) / (rows * share)) <= alpha
        ends = np.append(self._sorted[1:] != self._sorted[:-1], True)  # ties kept whole
        ok &= ends
        return float(share[ok].max()) if ok.any() else 0.0

    def draw(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """A row mask: whole context groups, in a random order, until at least `rows` rows."""
        if not 0 < rows < self.rows:
            raise ValueError(f"{rows} calibration rows: between 1 and {self.rows - 1}")
        chosen, total = [], 0
        for g in rng.permutation(len(self.members)):
            chosen.extend(self.members[g])
            total += len(self.members[g])
            if total >= rows:
                break
        mask = np.zeros(self.rows, dtype=bool)
        mask[chosen] = True
        return mask


def _outcome(
    pop: Population, cal: np.ndarray, at: float, feasible: bool, alpha: float, **key: Any
) -> PopulationOutcome:
    share, risk = pop.accepted(at)
    rest = ~cal & (pop.risk <= at)
    complement = float(pop.y[rest].mean()) if rest.any() else None
    return PopulationOutcome(
        **key,
        alpha=alpha,
        calibration_rows=int(cal.sum()),
        feasible=feasible,
        accept_at=float(at),
        accepted_share=share,
        accepted_risk=risk,
        violated=risk is not None and risk > alpha,
        complement_risk=complement,
        complement_violated=complement is not None and complement > alpha,
    )


def draw_outcomes(
    pop: Population,
    rows: list[int],
    alphas: list[float],
    splits: int,
    routing: Any,
    rng: np.random.Generator,
    reference: bool = True,
) -> list[PopulationOutcome]:
    """`splits` calibration draws of each size in `rows`, the contract set at each α.

    Each draw is shared by every α and method, so their rates compare on the same rows.
    `routing` gives the rules and δ (its ``max_accepted_risk`` is replaced by each α);
    `reference` adds, at the accept side's δ, MAPIE's controller and the grouped betting
    test (`runner.routing.guarantee.grouped_betting`, valid by construction for grouped rows).
    """
    out = []
    for n in rows:
        for split in range(splits):
            cal = pop.draw(n, rng)
            y, risk, groups = pop.y[cal], pop.risk[cal], pop.groups[cal]
            for alpha in alphas:
                at_alpha = dataclasses.replace(routing, max_accepted_risk=float(alpha))
                thresholds, guarantee = contract_thresholds(y, risk, at_alpha, groups)
                accept = guarantee.accept if guarantee is not None else None
                key = {"rows": n, "split": split}
                out.append(
                    _outcome(pop, cal, thresholds.accept_at, bool(accept and accept.feasible),
                             float(alpha), method="gate", **key)
                )  # fmt: skip
                if not reference:
                    continue
                delta = accept.delta if accept is not None else float(routing.delta)
                below = float(np.nextafter(thresholds.review_at, -np.inf))
                for method, at in (
                    ("mapie", mapie_accept_threshold(y, risk, float(alpha), delta)),
                    ("betting", betting_accept_threshold(y, risk, groups, float(alpha), delta)),
                ):
                    at = min(at, below)
                    out.append(
                        _outcome(pop, cal, at, bool(np.isfinite(at)), float(alpha),
                                 method=method, **key)
                    )  # fmt: skip
    return out


def population_frame(outcomes: list[PopulationOutcome]) -> pd.DataFrame:
    """One row per (N, α, method, split)."""
    return pd.DataFrame([asdict(o) for o in outcomes])


@dataclass(frozen=True)
class Checked:
    """What `check_population` gives: one row per draw and method, the references per α."""

    table: pd.DataFrame
    hindsight: dict[float, float]  # α -> the population's best fixed share
    floor: dict[tuple[float, int], float]  # (α, N) -> the noise floor's share
    summary: dict[str, Any]


def check_population(
    pop: Population,
    rows: list[int],
    alphas: list[float],
    splits: int,
    routing: Any,
    seed: int,
    reference: bool = True,
) -> Checked:
    """The population check: `splits` draws of each size in `rows`, each α, the references.

    The draws come from their own random stream (``[seed, 1]``), so adding the check moves
    no other draw of the run.

    Raises
    ------
    DataError
        A calibration size that leaves no population row out.
    """
    too_many = [n for n in rows if n >= pop.rows]
    if too_many:
        raise DataError(
            f"study.params.population_rows={too_many}: the population has {pop.rows:,} rows; "
            "calibration draws must leave rows out"
        )
    rng = np.random.default_rng([seed, 1])
    table = population_frame(draw_outcomes(pop, rows, alphas, splits, routing, rng, reference))
    alphas = [float(a) for a in alphas]
    delta = float(routing.delta)
    hindsight = {a: pop.hindsight_share(a) for a in alphas}
    floor = {(a, int(n)): pop.noise_floor_share(int(n), a, delta) for n in rows for a in alphas}
    summary = {
        "rows": pop.rows,
        "groups": len(pop.members),
        "calibration_rows": list(rows),
        "alphas": alphas,
        "splits": splits,
        "hindsight_share": {str(a): s for a, s in hindsight.items()},
    }
    return Checked(table, hindsight, floor, summary)


def check_population_settings(
    rows: list[int], alphas: list[float], splits: int, share_goals: list[list[Any]]
) -> None:
    """Population sizes, targets and share goals that make sense, before any data (named as
    `runner.studies.guarantee_check`'s ``study.params`` keys)."""
    if any(isinstance(n, bool) or int(n) != n or n < 1 for n in rows):
        raise ConfigError(f"study.params.population_rows={list(rows)}: positive row counts")
    if not rows:
        return
    if splits < 1:
        raise ConfigError(f"study.params.population_splits={splits}: >= 1")
    if not alphas or not all(0 < a < 1 for a in alphas):
        raise ConfigError(f"study.params.population_alphas={list(alphas)}: targets in (0, 1)")
    for goal in share_goals:
        if len(goal) != 2 or goal[0] not in alphas or goal[1] < 1:
            raise ConfigError(
                f"study.params.population_share_goals: {list(goal)} is not [α, N] with α in "
                f"study.params.population_alphas={list(alphas)}"
            )
