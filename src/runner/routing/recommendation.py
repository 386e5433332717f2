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
from dataclasses import dataclass

import numpy as np

from runner.routing.risk_control import best_achievable
from runner.routing.thresholds import Guarantee, decide, infeasible_message, set_contract

ALPHA_GRID = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)
"""Accepted-risk targets the "next budgets" rows and the no-guarantee hint step through."""

BETA_GRID = (0.5, 0.6, 0.7, 0.8, 0.9)
"""Review-precision targets, likewise."""


@dataclass(frozen=True)
class Scored:
    """One gate's out-of-fold evidence, as the report computed it.

    ``accept_ci_high`` maps an accept budget to the 95 % bootstrap CI upper end of the
    accepted risk there (the report's ``operating`` table); ``ms_per_row`` is None when the
    gates were not timed.
    """

    name: str
    risk: np.ndarray
    ap: float
    ms_per_row: float | None
    accept_ci_high: Mapping[float, float | None]
    groups: np.ndarray | None = None  # the rows' context groups, as `fit_gate` counts them


@dataclass(frozen=True)
class Verifier:
    """The cascade's verifier: its risk on every row, ms per verified row, its threshold
    (used when the accept side is a budget: nothing calibrates it then)."""

    name: str
    risk: np.ndarray
    ms_per_row: float
    threshold: float


def _rules(routing) -> tuple[bool, bool]:
    return routing.accept_rule == "risk_controlled", routing.review_rule == "precision_controlled"


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def operating_point(y: np.ndarray, gate: Scored, routing, verifier: Verifier | None = None) -> dict:
    """What shipping `gate` (with `verifier`: the cascade) under `routing` gives on the rows.

    Thresholds as `fit_gate` sets them; shares of accept / verify (sent to the verifier) /
    review; the guaranteed bounds where a side is controlled and certified; the OOF
    accepted risk and review precision; cost per 1,000 rows (CPU seconds of the gate and
    the verifier, human reviews). ``feasible`` is False, with ``infeasible`` saying why, when
    a controlled target cannot be certified or the two sides overlap.
    """
    y = np.asarray(y, dtype=np.int64)
    g = np.asarray(gate.risk, dtype=np.float64)
    accept_c, review_c = _rules(routing)
    point: dict = {"feasible": True, "infeasible": None, "verifier_threshold": None, "path": None}
    try:
        contract = set_contract(y, g, routing, gate.groups)
        if verifier is not None and accept_c:
            contract = set_contract(y, g, routing, gate.groups, verifier.risk)
    except ValueError as err:
        return {**point, "feasible": False, "infeasible": str(err)}
    thresholds, guarantee = contract.thresholds, contract.guarantee
    review_at, accept_at = thresholds.review_at, thresholds.accept_at
    accept_ok = guarantee is None or guarantee.accept is None or guarantee.accept.feasible
    review_ok = guarantee is None or guarantee.review is None or guarantee.review.feasible
    sent = np.zeros(g.shape, dtype=bool)
    if verifier is None:
        bands = decide(g, review_at, accept_at)
        accepted, reviewed = bands == "accept", bands == "review"
        verify = bands == "verify"
    else:
        vt = verifier.threshold
        if contract.cascade is not None:  # calibrated as fit_gate calibrates it
            cal = contract.cascade
            vt, accept_ok, point["path"] = cal.verifier_threshold, cal.feasible, cal.path
        bands = decide(g, review_at, accept_at)
        sent = bands == "verify"
        accepted = (bands == "accept") | (sent & (verifier.risk < vt))
        reviewed, verify = ~accepted, sent
        point["verifier_threshold"] = _finite(vt)
    if not (accept_ok and review_ok):
        point["feasible"] = False
        point["infeasible"] = _why_infeasible(
            y, g, gate.groups, routing, guarantee, accept_ok, verifier
        )
    ms = gate.ms_per_row
    point.update(
        review_at=_finite(review_at),
        accept_at=_finite(accept_at),
        accept_share=float(accepted.mean()),
        verify_share=float(verify.mean()),
        review_share=float(reviewed.mean()),
        accepted_risk_guaranteed=routing.max_accepted_risk if accept_c and accept_ok else None,
        review_precision_guaranteed=routing.min_review_precision
        if review_c and review_ok
        else None,
        accepted_risk_oof=float(y[accepted].mean()) if accepted.any() else None,
        review_precision_oof=float(y[reviewed].mean()) if reviewed.any() else None,
        accepted_risk_ci_high=None
        if accept_c or verifier is not None
        else gate.accept_ci_high.get(routing.accept_budget),
        # s per 1,000 rows = ms per row: 1,000 rows x ms/row / 1,000 ms/s
        gate_s_per_1000=ms,
        verifier_s_per_1000=None if verifier is None else float(sent.mean()) * verifier.ms_per_row,
        reviews_per_1000=1000.0 * float(reviewed.mean()),
    )
    return point


def _why_infeasible(
    y: np.ndarray,
    g: np.ndarray,
    groups: np.ndarray | None,
    routing,
    guarantee: Guarantee | None,
    accept_ok: bool,
    verifier: Verifier | None,
) -> str | None:
    if verifier is None:
        return infeasible_message(guarantee, y, g, groups) if guarantee is not None else None
    parts = []
    if guarantee is not None and guarantee.review is not None:
        line = infeasible_message(Guarantee(guarantee.delta, None, guarantee.review), y, g, groups)
        parts += [line] if line else []
    if not accept_ok:
        parts.append(
            f"routing.max_accepted_risk={routing.max_accepted_risk:g} cannot be guaranteed "
            f"for the cascade {verifier.name} with probability {1 - routing.delta:g} on "
            f"these {len(y):,} labelled rows"
        )
    return "; ".join(parts) or None


def best_targets(y: np.ndarray, gate: Scored, routing, verifier: Verifier | None = None) -> dict:
    """The tightest targets these rows can certify, per controlled side that cannot.

    The gate's sides by `best_achievable` (at each side's share of δ, as certified); the
    cascade's accept side on `ALPHA_GRID` (a cascade calibration per target is costly).
    """
    accept_c, review_c = _rules(routing)
    delta = routing.delta / (2 if accept_c and review_c else 1)
    out: dict = {}
    point = operating_point(y, gate, routing, verifier)
    if point["feasible"]:
        return out
    if accept_c and point.get("accepted_risk_guaranteed") is None:
        if verifier is None:
            out["max_accepted_risk"] = best_achievable(
                "accept", y, gate.risk, delta, groups=gate.groups
            )
        else:
            out["max_accepted_risk"] = next(
                (a for a in ALPHA_GRID if _feasible_at(y, gate, routing, verifier, a)), None
            )
    if review_c and point.get("review_precision_guaranteed") is None:
        out["min_review_precision"] = best_achievable(
            "review", y, gate.risk, delta, groups=gate.groups
        )
    return out


def _feasible_at(y, gate, routing, verifier, alpha: float) -> bool:
    changed = dataclasses.replace(routing, max_accepted_risk=alpha)
    return operating_point(y, gate, changed, verifier)["feasible"]


def setting(routing) -> list[str]:
    """The contract's overrides as `fit_gate` takes them (rules, targets or budgets, δ)."""
    accept_c, review_c = _rules(routing)
    out = [f"routing.accept_rule={routing.accept_rule}"]
    out.append(
        f"routing.max_accepted_risk={routing.max_accepted_risk:g}"
        if accept_c
        else f"routing.accept_budget={routing.accept_budget:g}"
    )
    out.append(f"routing.review_rule={routing.review_rule}")
    out.append(
        f"routing.min_review_precision={routing.min_review_precision:g}"
        if review_c
        else f"routing.review_budget={routing.review_budget:g}"
    )
    if accept_c or review_c:
        out.append(f"routing.delta={routing.delta:g}")
    return out


def _steps(value: float, grid: Sequence[float]) -> list[float]:
    """The grid value just below and just above `value` (those that exist)."""
    below = [v for v in grid if v < value - 1e-12]
    above = [v for v in grid if v > value + 1e-12]
    return ([max(below)] if below else []) + ([min(above)] if above else [])


def neighbours(
    routing, review_budgets: Sequence[float], accept_budgets: Sequence[float]
) -> list[tuple[str, object]]:
    """(label, routing) one step tighter and looser on each side: α / β on their grids, a
    budget among the report's budgets. Settings the contract refuses are left out."""
    accept_c, review_c = _rules(routing)
    changes = []
    if accept_c:
        changes += [("max_accepted_risk", a) for a in _steps(routing.max_accepted_risk, ALPHA_GRID)]
    else:
        changes += [("accept_budget", a) for a in _steps(routing.accept_budget, accept_budgets)]
    if review_c:
        changes += [
            ("min_review_precision", b) for b in _steps(routing.min_review_precision, BETA_GRID)
        ]
    else:
        changes += [("review_budget", r) for r in _steps(routing.review_budget, review_budgets)]
    out = []
    for key, value in changes:
        try:
            out.append((f"routing.{key}={value:g}", dataclasses.replace(routing, **{key: value})))
        except ValueError:  # ConfigError: e.g. budgets summing past 1
            continue
    return out


def guarantee_hint(y: np.ndarray, gate: Scored, routing, verifier: Verifier | None) -> list[str]:
    """For each budget side: the controlled setting that would carry a guarantee here.

    Accept: the smallest α of `ALPHA_GRID` certified on these rows; review: the largest β
    of `BETA_GRID`; each with what it would accept or review.
    """
    accept_c, review_c = _rules(routing)
    hints = []
    if not accept_c:
        for alpha in ALPHA_GRID:
            changed = dataclasses.replace(
                routing, accept_rule="risk_controlled", max_accepted_risk=alpha
            )
            p = operating_point(y, gate, changed, verifier)
            if p["feasible"]:
                hints.append(
                    f"routing.accept_rule=risk_controlled routing.max_accepted_risk={alpha:g} "
                    f"would guarantee accepted risk <= {alpha:g} w.p. {1 - routing.delta:g} "
                    f"and accept {p['accept_share']:.1%} of rows"
                )
                break
        else:
            hints.append(
                f"no accepted-risk target up to {ALPHA_GRID[-1]:g} can be guaranteed on these "
                f"{len(y):,} rows (label more rows or raise routing.delta)"
            )
    if not review_c:
        for beta in sorted(BETA_GRID, reverse=True):
            changed = dataclasses.replace(
                routing, review_rule="precision_controlled", min_review_precision=beta
            )
            p = operating_point(y, gate, changed, verifier)
            if p["feasible"]:
                hints.append(
                    f"routing.review_rule=precision_controlled "
                    f"routing.min_review_precision={beta:g} would guarantee review precision "
                    f">= {beta:g} w.p. {1 - routing.delta:g} and review "
                    f"{p['review_share']:.1%} of rows"
                )
                break
        else:
            hints.append(
                f"no review-precision target from {BETA_GRID[0]:g} up can be guaranteed on "
                f"these {len(y):,} rows without overlapping the accepted rows (label more "
                "rows or raise routing.delta)"
            )
    return hints


def _key(point: dict, gate: Scored, routing) -> tuple:
    accept_c, review_c = _rules(routing)
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
    accept_c, review_c = _rules(routing)
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
    points = {g.name: operating_point(y, g, routing) for g in gates}
    ranked = sorted(gates, key=lambda g: _key(points[g.name], g, routing), reverse=True)
    runner_up = ranked[1] if len(ranked) > 1 else None
    return ranked[0], points, _why(ranked[0], runner_up, points, routing)


FIT_GATE_GATES = ("ragscope_e",)
"""Gates `conf/experiment/fit_gate.yaml` configures: any other needs ``+gate@gates.<g>=<g>``
(the gate YAML the operating report names it after)."""

CONTRACT_KEYS = frozenset(
    {"gate", "accept_rule", "max_accepted_risk", "review_rule", "min_review_precision",
     "delta", "review_budget", "accept_budget", "verifier", "verifier_threshold"}
)  # fmt: skip
"""``routing.*`` keys the command sets itself; the user's other routing overrides are kept."""


def _parts(override: str) -> tuple[str, str]:
    """(the key it sets, its value): ``+gate@gates.x=y`` -> (``gates.x``, ``y``)."""
    key, _, value = override.lstrip("+~").partition("=")
    return key.split("@", 1)[-1], value


def _under(key: str, node: str) -> bool:
    return key == node or key.startswith(node + ".")


def carried(overrides: Sequence[str], gate: str, verifier: str | None) -> tuple[list, list]:
    """The run's overrides `fit_gate` needs to reproduce the scores: (gate's, verifier's).

    Kept: the data set, the split and the seed (the OOF scores depend on them), the chosen
    gate's settings, routing keys the contract does not set (model name, alias),
    tracking (unless off: fit_gate registers) and ``hydra.searchpath``; the verifier's
    settings go to the second list. Dropped: other gates, bootstrap, study params, paths.
    """
    main, cascade = [], []
    for o in overrides:
        key, value = _parts(o)
        off = (key == "tracking" and value == "off") or (
            key == "tracking.enabled" and value.lower() == "false"
        )
        if verifier and _under(key, f"verifiers.{verifier}"):
            cascade.append(o)
        elif (
            _under(key, "dataset")
            or _under(key, "split")
            or key == "seed"
            or _under(key, f"gates.{gate}")
            or (key.startswith("routing.") and key.split(".", 1)[1] not in CONTRACT_KEYS)
            or (_under(key, "tracking") and not off)
            or key == "hydra.searchpath"
        ):
            main.append(o)
    return main, cascade


def fit_gate_command(
    dataset_path: str | None,
    gate: str,
    routing,
    overrides: Sequence[str],
) -> str:
    """The `fit_gate` command that registers `gate` (and ``routing.verifier``) at `routing`,
    with the run's `carried` overrides, each shell-quoted."""
    import shlex

    verifier = routing.verifier or None
    main, cascade = carried(overrides, gate, verifier)
    keys = {_parts(o)[0] for o in main}
    args = ["python", "-m", "runner", "experiment=fit_gate"]
    if dataset_path and "dataset.path" not in keys:
        args.append(f"dataset.path={dataset_path}")
    added = any(o.startswith("+") and _under(_parts(o)[0], f"gates.{gate}") for o in main)
    if gate not in FIT_GATE_GATES and not added:  # a gate of the report's YAML, not fit_gate's
        args.append(f"+gate@gates.{gate}={gate}")
    args += [*main, f"routing.gate={gate}", *setting(routing)]
    if verifier:
        args += [*cascade, f"routing.verifier={verifier}"]
    return " ".join(shlex.quote(a) for a in args)


def _row(label: str, point: dict) -> dict:
    keys = ("accept_share", "verify_share", "review_share", "accepted_risk_guaranteed",
            "review_precision_guaranteed", "accepted_risk_oof", "accepted_risk_ci_high",
            "review_precision_oof", "gate_s_per_1000", "verifier_s_per_1000",
            "reviews_per_1000", "review_at", "accept_at", "verifier_threshold")  # fmt: skip
    return {"setting": label, "feasible": point["feasible"], **{k: point.get(k) for k in keys}}


def recommend(
    y: np.ndarray,
    gates: Sequence[Scored],
    routing,
    *,
    review_budgets: Sequence[float],
    accept_budgets: Sequence[float],
    dataset_path: str | None,
    overrides: Sequence[str] = (),
    verifier: Verifier | None = None,
) -> dict:
    """The recommendation: what to ship, why, its thresholds and bounds, its cost, the
    next budgets, and the `fit_gate` command (``recommendation.json``).

    With `verifier` the cascade ``routing.gate -> verifier`` is what is recommended (the
    gate alone when the calibrated verifier accepts nothing); without it, the best gate.
    """
    y = np.asarray(y, dtype=np.int64)
    best, points, why = choose(y, gates, routing)
    by_name = {g.name: g for g in gates}
    used = None
    if verifier is not None:
        best = by_name[routing.gate]
        point = operating_point(y, best, routing, verifier)
        alone = points[best.name]
        if point["path"] == "gate alone":
            why = (
                f"at this target the calibrated `{verifier.name}` accepts no verify-band row: "
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
        rows.append(_row(label, operating_point(y, best, changed, used)))
    accept_c, review_c = _rules(routing)
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
"""Column labels of the ``recommendation`` table (cells), in order. The CPU seconds are
measured, so they stay in ``recommendation.json`` and the report: cells.csv of a rerun is
byte-identical."""


def cells(rec: Mapping) -> list[tuple[str, str, float | None]]:
    """The recommendation as (row, column, value) cells: one row per setting shown, named
    ``<shipped> / <setting>``; thresholds only where the targets are met."""
    out = []
    for row in rec["rows"]:
        for key, column in CELL_COLUMNS.items():
            value = row.get(key)
            if key in ("review_at", "accept_at", "verifier_threshold") and not row["feasible"]:
                value = None
            out.append((f"{rec['ship']} / {row['setting']}", column, value))
    return out
