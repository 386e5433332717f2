"""The `fit_gate` command that ships a recommendation, with the overrides that matter.

Why its own module: which of a run's overrides `fit_gate` must repeat to reproduce the
scores (data set, split, seed, the chosen gate's and verifier's settings) is a question
of configuration, apart from choosing what to ship (`runner.routing.report.recommendation`); a
test runs the printed command and compares the registered thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence


def setting(routing) -> list[str]:
    """The contract's overrides as `fit_gate` takes them (rules, targets or budgets, δ)."""
    accept_c = routing.accept_rule == "risk_controlled"
    review_c = routing.review_rule == "precision_controlled"
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
