"""guarantee_check's tables, laid out from its per-split outcomes.

Why apart from the study: which numbers make the verdict — the violation rate with its
exact interval, the established violations, the share against the oracle, the flags under
shift, and the goals — is the part a reader checks; the study only runs the splits
(`runner.routing.guarantee.guarantee_check`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from runner.results import StudyResult

IN_DISTRIBUTION = "in distribution"
METHOD_LABELS = {
    "gate": "gate (risk-controlled)",
    "cascade": "cascade (calibrated)",
    "mapie": "gate, MAPIE's controller (reference)",
    "betting": "gate, grouped betting test (valid by construction; reference)",
}


def _rate(flags: pd.Series) -> tuple[float, tuple[float, float]]:
    """A share of splits and its exact (Clopper-Pearson) 95 % interval."""
    k, n = int(flags.sum()), len(flags)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return k / n, (float(ci.low), float(ci.high))


def add_tables(
    result: StudyResult,
    table: pd.DataFrame,
    oracle: dict,
    hindsight: float,
    routing: Any,
    max_share_gap: float,
    violation_goal: bool = True,
) -> None:
    """The ``guarantee`` table (one row per scenario and method, the references) and the
    ``goals`` table (each goal's value, target and whether it is met) of `guarantee_check`.

    `table` holds one row per split outcome (`outcomes_frame`); `oracle` is
    `oracle_fixed`'s result, `hindsight` the mean per-split hindsight share.
    `violation_goal`: the in-distribution violation rate (realised on held-out rows) is a
    goal; False when the population check judges the bound on the quantity it bounds
    (`add_population`), the held-out rate reading high.
    """
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
        if routing.review_rule == "precision_controlled":
            rrate, rci = _rate(sub["review_violated"].astype(bool))
            result.add("guarantee", row, "review violation rate", rrate, rci)
        result.add("guarantee", row, "verify share", float(sub["verify_share"].mean()))
        result.add("guarantee", row, "sent to verifier", float(sub["sent_to_verifier"].mean()))
        if method == "cascade":
            auroc = sub["band_auroc"].dropna()
            result.add("guarantee", row, "verifier AUROC in the verify band",
                       float(auroc.mean()) if len(auroc) else None,
                       _spread(auroc))  # fmt: skip
        result.add("guarantee", row, "KS shift flag rate", float(sub["ks_flag"].mean()))
        result.add("guarantee", row, "unseen-source flag rate", float(sub["unseen_flag"].mean()))
        # a violation of either bound: accepted risk > alpha, or (controlled) review
        # precision < beta
        broken = sub["violated"] | sub["review_violated"].fillna(False).astype(bool)
        violated = sub[broken]
        no_ks = int((~violated["ks_flag"]).sum())
        no_flag = int((~violated["ks_flag"] & ~violated["unseen_flag"]).sum())
        result.add("guarantee", row, "violations without the KS flag", no_ks)
        result.add("guarantee", row, "violations without any flag", no_flag)
        if scenario == IN_DISTRIBUTION:
            share = float(sub["accepted_share"].mean())
            result.add("guarantee", row, "share gap to the oracle (points)",
                       100 * (oracle["accepted_share"] - share))  # fmt: skip
        if scenario == IN_DISTRIBUTION and method != "mapie":
            if violation_goal:
                goals[f"{method}: violation rate <= delta"] = (rate, delta, rate <= delta)
            gap = oracle["accepted_share"] - share
            goals[f"{method}: accepted share within {100 * max_share_gap:g} points of "
                  "the oracle fixed threshold"] = (100 * gap, 100 * max_share_gap,
                                                   gap <= max_share_gap)  # fmt: skip
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
        paired = inside.pivot(index="split", columns="method", values="accepted_share")
        gain = 100 * (paired["cascade"] - paired["gate"])
        result.add("guarantee", f"{IN_DISTRIBUTION} / cascade - gate alone",
                   "accepted share (points)", float(gain.mean()), _spread(gain))  # fmt: skip
        goals["cascade accepts at least as many rows as the gate alone"] = (
            100 * (means["cascade"] - means["gate"]),
            0.0,
            bool(means["cascade"] >= means["gate"]),
        )
        goals[f"cascade accepts at least {CASCADE_GAIN_GOAL:g} points more than the gate alone"] = (
            float(gain.mean()),
            CASCADE_GAIN_GOAL,
            bool(gain.mean() >= CASCADE_GAIN_GOAL),
        )
    for name, (value, target, met) in goals.items():
        result.add("goals", name, "value", value)
        result.add("goals", name, "target", target)
        result.add("goals", name, "met", None if met is None else int(met))


CASCADE_GAIN_GOAL = 3.0
"""Issue 43's goal: the cascade's mean accepted share over the gate alone's, in points."""


def _spread(values: pd.Series) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles over splits (None for fewer than two)."""
    if len(values) < 2:
        return None
    low, high = np.percentile(values.to_numpy(float), [2.5, 97.5])
    return float(low), float(high)


POPULATION_TITLE = (
    "The bound on the population it is about: calibrate on N rows drawn by context group, "
    "the population accepted risk of the chosen threshold computed exactly (violation rate "
    "with exact 95 % CI, must stay <= δ); the held-out complement's rate beside it reads "
    "high (the complement mirrors the calibration sample's deviation)"
)


def population_row(rows: int, alpha: float, method: str) -> str:
    """The ``population`` table's row of one calibration size, target and method."""
    return f"population N={rows:,}, α={alpha:g} / {METHOD_LABELS[method]}"


def add_population(
    result: StudyResult,
    table: pd.DataFrame,
    hindsight: dict[float, float],
    floor: dict[tuple[float, int], float],
    delta: float,
    max_share_gap: float,
    share_goals: list[tuple[float, int]],
) -> None:
    """The ``population`` table and its goals (`runner.routing.guarantee.population_check`).

    `table` holds one row per (N, α, method, split) (`population_check.population_frame`);
    `hindsight` maps α to the population's best fixed share, `floor` (α, N) to the
    noise floor's share (`Population.noise_floor_share`); `share_goals` lists the (α, N)
    whose gate share must be within `max_share_gap` of the hindsight share.
    """
    result.titles["population"] = POPULATION_TITLE
    worst, every_ok = 0.0, True
    shares = {}
    for (rows, alpha, method), sub in table.groupby(["rows", "alpha", "method"], sort=False):
        row = population_row(int(rows), float(alpha), str(method))
        rate, ci = _rate(sub["violated"])
        result.add("population", row, "violation rate", rate, ci)
        comp, comp_ci = _rate(sub["complement_violated"])
        result.add("population", row, "violation rate on the held-out complement", comp, comp_ci)
        share = float(sub["accepted_share"].mean())
        result.add("population", row, "accepted share", share)
        risks = sub["accepted_risk"].dropna()
        result.add("population", row, "population accepted risk",
                   float(risks.mean()) if len(risks) else None)  # fmt: skip
        result.add("population", row, "splits accepting nothing", float((~sub["feasible"]).mean()))
        result.add("population", row, "share gap to the hindsight threshold (points)",
                   100 * (hindsight[float(alpha)] - share))  # fmt: skip
        result.add("population", row, "calibration rows", float(sub["calibration_rows"].mean()))
        result.add("population", row, "splits", len(sub))
        if method == "gate":
            worst = max(worst, rate)
            every_ok &= ci[0] <= delta
            shares[(float(alpha), int(rows))] = share
    for (alpha, rows), share in floor.items():
        row = f"population N={rows:,}, α={alpha:g} / noise floor (an idealised valid rule)"
        result.add("population", row, "accepted share", share)
        result.add("population", row, "share gap to the hindsight threshold (points)",
                   100 * (hindsight[alpha] - share))  # fmt: skip
    for alpha, share in hindsight.items():
        row = f"population α={alpha:g} / best fixed threshold (hindsight, no guarantee)"
        result.add("population", row, "accepted share", share)
    goals = {
        "population: gate violation rate <= delta within its exact 95 % interval, every N and α": (
            worst,
            delta,
            every_ok,
        )
    }
    for alpha, rows in share_goals:
        if (alpha, rows) in shares:
            gap = hindsight[alpha] - shares[(alpha, rows)]
            goals[f"population N={rows:,}, α={alpha:g}: gate share within "
                  f"{100 * max_share_gap:g} points of the hindsight threshold"] = (
                100 * gap, 100 * max_share_gap, gap <= max_share_gap)  # fmt: skip
    for name, (value, target, met) in goals.items():
        result.add("goals", name, "value", value)
        result.add("goals", name, "target", target)
        result.add("goals", name, "met", int(met))
