"""RoutingConf: the routing contract checks its own values, wherever it is built."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from runner.errors import ConfigError
from runner.routing.config import RoutingConf


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"review_budget": 2.0}, r"routing.review_budget=2.0: a fraction in \(0, 1\]"),
        ({"review_budget": 0.6, "accept_budget": 0.5}, "exceed 1"),
        ({"accept_rule": "nosuch"}, "routing.accept_rule='nosuch'"),
        ({"accept_rule": "risk_controlled"}, "needs routing.max_accepted_risk"),
        ({"review_rule": "nosuch"}, "routing.review_rule='nosuch': one of"),
        ({"review_rule": "precision_controlled"}, "needs routing.min_review_precision"),
        (
            {"review_rule": "precision_controlled", "min_review_precision": 1.5},
            r"routing.min_review_precision=1.5: a fraction in \(0, 1\]",
        ),
        ({"delta": 1.0}, r"routing.delta=1.0: a probability in \(0, 1\)"),
        ({"batch_rows": 0}, "routing.batch_rows=0: a positive whole number"),
        ({"engine": "nosuch"}, "routing.engine='nosuch': one of"),
        ({"on_unseen_source": "ignore"}, "routing.on_unseen_source='ignore'"),
    ],
)
def test_a_contract_that_cannot_work_is_refused_when_built(settings, message):
    with pytest.raises(ConfigError, match=message):
        RoutingConf(**settings)


def test_the_composed_routing_node_is_checked_when_typed_before_any_data():
    # `schema_checks.check_schema_values` types every node that validates itself.
    node = OmegaConf.merge(OmegaConf.structured(RoutingConf), {"review_budget": 2.0})
    with pytest.raises(ConfigError, match=r"routing\.review_budget"):
        OmegaConf.to_object(node)


def test_the_defaults_make_a_contract():
    assert RoutingConf().gate == "ragscope_e"
