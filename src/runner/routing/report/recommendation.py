"""The operating report's last word: which gate (or cascade) to ship, at which thresholds.

Why its own module: the report's tables say how good each gate is; a team lead needs one
decision, its price and the command that ships it. The decision is computed by the code
that ships it: thresholds by `set_contract` (the function `fit_gate` calls) under the
run's `RoutingConf`, on the same out-of-fold scores and context groups, so `fit_gate` run
with the printed command registers exactly the recommended thresholds. Everything here is
a pure function of arrays and settings; the study only hands over what it already computed
(scores, AP, CI upper ends, timings).

Choosing: with a risk-controlled accept rule the gate that accepts the most rows at the
guaranteed accepted risk; with an accept budget (every gate accepts the same share) the
one whose accepted risk has the lowest bootstrap CI upper end. Then the review side (more
rows reviewed at the guaranteed precision, or a higher review precision), then AP, then
the cheaper gate. A gate whose targets cannot be certified ranks after every one that can.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from runner.evaluation import scopes
from runner.routing.contract import (
    BandVerifier,
    Scored,
    best_targets,
    contract_point,
    guarantee_hint,
    neighbours,
    rules,
)
from runner.routing.report.operating_tables import COMBINED, accept_col
from runner.routing.report.ship_command import fit_gate_command, setting


def scored_gates(
    names: Sequence[str],
    scores: pd.DataFrame,
    stats: scopes.ScopeStats,
    timing: Mapping[str, Any],
    accept_budgets: Sequence[float],
) -> list[Scored]:
    """Each gate as the recommendation reads it from the operating report: its out-of-fold
    risk, pooled AP, ms/row, the upper end of its accepted-risk interval at each accept
    budget, and the rows' context groups."""
    return [
        Scored(
            name=name,
            risk=scores[name].to_numpy(float),
            ap=stats.estimate(name, "AP", COMBINED).point,
            ms_per_row=timing[name]["median_ms_per_example"] if name in timing else None,
            accept_ci_high={
                a: stats.estimate(name, accept_col(a), COMBINED).high
                for a in accept_budgets
                if a > 0
            },
            groups=scores["group_id"].to_numpy(),
        )
        for name in names
    ]


def _key(point: dict, gate: Scored, routing) -> tuple:
    accept_c, review_c = rules(routing)
    if accept_c:
        primary = point.get("accept_share", 0.0)
    else:
        risk = point.get("accepted_risk_ci_high")
        risk = point.get("accepted_risk_oof") if risk is None else risk
        primary = -(1.0 if risk is None else risk)
    if review_c:
        secondary = point.get("review_share", 0.0)
    else:
        secondary = point.get("review_precision_oof") or 0.0
    ms = gate.ms_per_row
    return (
        bool(point["feasible"]),
        round(primary, 9),
        round(secondary, 9),
        round(gate.ap, 9),
        -(math.inf if ms is None else ms),
    )


def _why(best: Scored, other: Scored | None, points: Mapping[str, dict], routing) -> str:
    """One line: what sets the chosen gate above the runner-up."""
    if other is None:
        return f"`{best.name}` is the only configured gate"
    accept_c, review_c = rules(routing)
    p, q = points[best.name], points[other.name]
    kb, ko = _key(p, best, routing), _key(q, other, routing)
    vs = f"`{other.name}`"
    if kb[0] != ko[0]:
        return f"`{best.name}` meets the contract's targets on these rows; {vs} does not"
    tie = "" if kb[1] != ko[1] else "ties on the accept side; "
    if kb[1] != ko[1] and accept_c:
        return (
            f"`{best.name}` accepts the most rows at the guaranteed accepted risk <= "
            f"{routing.max_accepted_risk:g}: {p['accept_share']:.1%} vs "
            f"{q['accept_share']:.1%} for {vs}"
        )
    if kb[1] != ko[1]:
        return (
            f"at the accept budget {routing.accept_budget:.0%}, `{best.name}` has the lowest "
            f"accepted risk (95 % CI upper end {-kb[1]:.3f} vs {-ko[1]:.3f} for {vs})"
        )
    if kb[2] != ko[2] and review_c:
        return (
            f"{tie}`{best.name}` reviews more rows at the guaranteed precision: "
            f"{p['review_share']:.1%} vs {q['review_share']:.1%} for {vs}"
        )
    if kb[2] != ko[2]:
        return (
            f"{tie}`{best.name}` has the higher review precision at the review budget: "
            f"{kb[2]:.3f} vs {ko[2]:.3f} for {vs}"
        )
    if kb[3] != ko[3]:
        return (
            f"ties with {vs} at the contract; `{best.name}` has the higher AP "
            f"({best.ap:.3f} vs {other.ap:.3f})"
        )
    return f"ties with {vs} at the contract and on AP; `{best.name}` is the cheaper gate"


def choose(y: np.ndarray, gates: Sequence[Scored], routing) -> tuple[Scored, dict, str]:
    """The gate to ship, every gate's operating point, and why (one line)."""
    points = {g.name: contract_point(y, g, routing) for g in gates}
    ranked = sorted(gates, key=lambda g: _key(points[g.name], g, routing), reverse=True)
    runner_up = ranked[1] if len(ranked) > 1 else None
    return ranked[0], points, _why(ranked[0], runner_up, points, routing)


def _row(label: str, point: dict) -> dict:
    """One setting's row; ``sent_share`` only for a cascade (a gate's row stays as it was)."""
    keys = ("accept_share", "verify_share", "review_share", "accepted_risk_guaranteed",
            "review_precision_guaranteed", "accepted_risk_oof", "accepted_risk_ci_high",
            "review_precision_oof", "gate_s_per_1000", "verifier_s_per_1000",
            "reviews_per_1000", "review_at", "accept_at", "verifier_threshold")  # fmt: skip
    row = {"setting": label, "feasible": point["feasible"], **{k: point.get(k) for k in keys}}
    if point.get("sent_share") is not None:
        row["sent_share"] = point["sent_share"]
    return row


def recommend(
    y: np.ndarray,
    gates: Sequence[Scored],
    routing,
    *,
    review_budgets: Sequence[float],
    accept_budgets: Sequence[float],
    dataset_path: str | None,
    overrides: Sequence[str] = (),
    verifier: BandVerifier | None = None,
) -> dict:
    """The recommendation: what to ship, why, its thresholds and bounds, its cost, the
    next budgets, and the `fit_gate` command (``recommendation.json``).

    With `verifier` the cascade ``routing.gate -> verifier`` is what is recommended only
    where it accepts more rows than the gate alone at the same bound (the gate alone when
    the calibrated verifier accepts nothing or the cascade accepts no more, and `why` says
    so); without it, the best gate.
    """
    y = np.asarray(y, dtype=np.int64)
    best, points, why = choose(y, gates, routing)
    by_name = {g.name: g for g in gates}
    used = None
    if verifier is not None:
        best = by_name[routing.gate]
        point = contract_point(y, best, routing, verifier)
        alone = points[best.name]
        if point["path"] == "gate alone":
            why = (
                f"at this target the calibrated `{verifier.name}` accepts no verify-band row: "
                f"ship `{best.name}` alone"
            )
        elif not point["accept_share"] > alone["accept_share"]:
            # the joint calibration spends part of δ on the verifier's path, so a verifier
            # that certifies little can leave the cascade accepting fewer rows than the gate
            why = (
                f"at this target the cascade with `{verifier.name}` accepts "
                f"{point['accept_share']:.1%} of rows vs {alone['accept_share']:.1%} for "
                f"`{best.name}` alone at the same bound: the verifier does not pay its way, "
                f"ship `{best.name}` alone"
            )
        else:
            used = verifier
            why = (
                f"routing.verifier={verifier.name}: the cascade accepts "
                f"{point['accept_share']:.1%} of rows vs {alone['accept_share']:.1%} for "
                f"`{best.name}` alone (verify band undecided), for "
                f"{point['verifier_s_per_1000']:.2f} verifier CPU s per 1,000 rows"
            )
            points = {**points, f"{best.name} -> {verifier.name}": point}
    name = best.name if used is None else f"{best.name} -> {used.name}"
    point = points[name]
    rows = [_row("recommended", point)]
    for label, changed in neighbours(routing, review_budgets, accept_budgets):
        rows.append(_row(label, contract_point(y, best, changed, used)))
    accept_c, review_c = rules(routing)
    note = None
    ship = routing
    if used is None or not accept_c:
        ship = dataclasses.replace(routing, verifier=None, verifier_threshold=None)
    if used is not None and not accept_c:
        note = (
            "fit_gate calibrates a cascade only for a guaranteed accepted risk "
            "(routing.accept_rule=risk_controlled routing.max_accepted_risk=<α> "
            f"routing.verifier={used.name}); this command registers the gate alone"
        )
    best_at = {} if point["feasible"] else best_targets(y, best, routing, used)
    at_best = bool(best_at) and all(v is not None for v in best_at.values())
    if at_best:
        ship = dataclasses.replace(ship, **best_at)
        # what the command ships first (the expected shares are its), what was asked next
        shipped = contract_point(y, best, ship, used)
        rows[0] = _row("recommended (at the best achievable targets)", shipped)
        rows.insert(1, _row("as asked (target not met)", point))
    command = fit_gate_command(dataset_path, best.name, ship, overrides)
    return {
        "ship": name,
        "kind": "gate" if used is None else "cascade",
        "gate": best.name,
        "verifier": None if used is None else used.name,
        "why": why,
        "setting": setting(routing),
        "delta": routing.delta,
        "controlled": {"accept": accept_c, "review": review_c},
        "feasible": point["feasible"],
        "infeasible": point["infeasible"],
        "best_achievable": best_at,
        "hints": [] if accept_c and review_c else guarantee_hint(y, best, routing, used),
        "path": point.get("path"),
        "rows": rows,
        "command": command,
        "command_note": note,
        "command_at_best_achievable": at_best,
        "candidates": {k: _row(k, p) for k, p in points.items()},
    }


CELL_COLUMNS = {
    "accept_share": "accept share",
    "verify_share": "verify share",
    "review_share": "review share",
    "accepted_risk_guaranteed": "accepted risk <= (guaranteed)",
    "review_precision_guaranteed": "review precision >= (guaranteed)",
    "accepted_risk_oof": "accepted risk (OOF)",
    "accepted_risk_ci_high": "accepted risk 95 % CI high",
    "review_precision_oof": "review precision (OOF)",
    "reviews_per_1000": "human reviews / 1,000 rows",
    "review_at": "review_at",
    "accept_at": "accept_at",
    "verifier_threshold": "verifier threshold",
}
"""Column labels of the ``recommendation`` table (cells), in order (a cascade's add
`SENT_COLUMN`). The CPU seconds are measured, so they stay in ``recommendation.json`` and
the report: cells.csv of a rerun is byte-identical."""

SENT_COLUMN = ("sent_share", "sent to verifier")
"""A cascade's column after the review share: the share of rows sent to its verifier."""


def _columns(rec: Mapping) -> dict[str, str]:
    """The table's columns for `rec`: `CELL_COLUMNS`, and `SENT_COLUMN` for a cascade."""
    if not rec["verifier"]:
        return CELL_COLUMNS
    items = list(CELL_COLUMNS.items())
    at = list(CELL_COLUMNS).index("review_share") + 1
    return dict([*items[:at], SENT_COLUMN, *items[at:]])


def cells(rec: Mapping) -> list[tuple[str, str, float | None]]:
    """The recommendation as (row, column, value) cells: one row per setting shown, named
    ``<shipped> / <setting>``; thresholds only where the targets are met."""
    out = []
    for row in rec["rows"]:
        for key, column in _columns(rec).items():
            value = row.get(key)
            if key in ("review_at", "accept_at", "verifier_threshold") and not row["feasible"]:
                value = None
            out.append((f"{rec['ship']} / {row['setting']}", column, value))
    return out
