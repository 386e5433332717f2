"""The `routing` config group: budgets, the accept rule and how routed traffic is handled.

Why one schema for the four routing experiments: a team sets the contract once
(`routing.review_budget`, `routing.accept_budget`, ...) and every step reads the same keys,
so a typo (`routing.reveiw_budget`) fails at compose time, naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from runner.errors import ConfigError
from runner.evaluation import ACCEPT_BUDGET, REVIEW_BUDGET

# OmegaConf reads these annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045

ACCEPT_RULES = ("budget", "risk_controlled")
REVIEW_RULES = ("budget", "precision_controlled")
UNSEEN_SOURCE_POLICIES = ("warn", "error", "review")
ENGINES = ("local", "ray")


@dataclass
class RoutingConf:
    """The routing contract and its deployment settings."""

    gate: str = "ragscope_e"
    review_budget: float = REVIEW_BUDGET
    accept_budget: float = ACCEPT_BUDGET
    accept_rule: str = "budget"
    max_accepted_risk: Optional[float] = None
    review_rule: str = "budget"
    min_review_precision: Optional[float] = None
    delta: float = 0.1
    model_name: Optional[str] = None
    alias: str = "champion"
    model_uri: Optional[str] = None
    audit_fraction: float = 0.0
    on_unseen_source: str = "warn"
    verifier: Optional[str] = None
    verifier_threshold: Optional[float] = None
    batch_rows: int = 10_000
    engine: str = "local"
    ray_address: Optional[str] = None
    ray_workers: int = 1
    # engine=local: processes routing batches side by side (forked, each with the loaded
    # model; runner.routing.route.engines.local_workers); None = one per core this process may use
    workers: Optional[int] = None
    work_dir: Optional[str] = None

    def __post_init__(self) -> None:
        # The one check of these values: run when the pre-flight check types the composed
        # `routing` node (before any data) and whenever code builds a contract.
        _check(self)


def _check(routing: RoutingConf) -> None:
    """Fail on settings that cannot make a contract, naming the key (`RoutingConf` runs it)."""

    def fraction(value: float | None, key: str, *, zero_ok: bool = False) -> None:
        low_ok = value is not None and (value >= 0.0 if zero_ok else value > 0.0)
        if not (low_ok and value <= 1.0):
            interval = "[0, 1]" if zero_ok else "(0, 1]"
            raise ConfigError(f"routing.{key}={value!r}: a fraction in {interval}")

    fraction(routing.review_budget, "review_budget")
    fraction(routing.accept_budget, "accept_budget", zero_ok=True)
    fraction(routing.audit_fraction, "audit_fraction", zero_ok=True)
    if routing.review_budget + routing.accept_budget > 1.0:
        raise ConfigError(
            f"routing.review_budget={routing.review_budget} + routing.accept_budget="
            f"{routing.accept_budget} exceed 1: a row cannot be both reviewed and accepted"
        )
    if routing.accept_rule not in ACCEPT_RULES:
        raise ConfigError(f"routing.accept_rule={routing.accept_rule!r}: one of {ACCEPT_RULES}")
    if routing.review_rule not in REVIEW_RULES:
        raise ConfigError(f"routing.review_rule={routing.review_rule!r}: one of {REVIEW_RULES}")
    if routing.accept_rule == "risk_controlled":
        if routing.max_accepted_risk is None:
            raise ConfigError(
                "routing.accept_rule=risk_controlled needs routing.max_accepted_risk "
                "(the accepted risk to guarantee, e.g. 0.15)"
            )
        fraction(routing.max_accepted_risk, "max_accepted_risk")
    if routing.review_rule == "precision_controlled":
        if routing.min_review_precision is None:
            raise ConfigError(
                "routing.review_rule=precision_controlled needs routing.min_review_precision "
                "(the share of reviewed rows that must be hallucinated, e.g. 0.6)"
            )
        fraction(routing.min_review_precision, "min_review_precision")
    if not 0.0 < routing.delta < 1.0:
        raise ConfigError(f"routing.delta={routing.delta!r}: a probability in (0, 1)")
    for key in ("batch_rows", "ray_workers", "workers"):
        value = getattr(routing, key)
        if key == "workers" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"routing.{key}={value!r}: a positive whole number")
    if routing.engine not in ENGINES:
        raise ConfigError(f"routing.engine={routing.engine!r}: one of {ENGINES}")
    if routing.on_unseen_source not in UNSEEN_SOURCE_POLICIES:
        raise ConfigError(
            f"routing.on_unseen_source={routing.on_unseen_source!r}: one of "
            f"{UNSEEN_SOURCE_POLICIES}"
        )
