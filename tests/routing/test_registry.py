"""Loading a registered routing model (`runner.routing.route.registry`), as a specification.

Against a real MLflow store (SQLite in a temporary folder): a ``models:/`` URI names a
version by alias or number; loading returns the pyfunc model with the metadata it was
registered with, the version it resolved to and the run that logged it, so a `route` run
can say exactly which model decided. Registration itself is the tracking layer's
(`runner.tracking.register_model`), used here to put models into the store.
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest

from runner.errors import ConfigError
from runner.gates import FeatureGate
from runner.results import ModelSpec
from runner.routing.model import RoutingModel, signature
from runner.routing.route.registry import RoutedModel, load_routed_model, parse_model_uri
from runner.tracking import register_model

EXAMPLE = pd.DataFrame(
    {
        "question": ["When does the shop open?"],
        "context": ["The shop opens at nine and closes at five."],
        "answer": ["It opens at nine."],
    }
)


def register(uri: str, out: Path, review_at: float, tags: dict | None = None) -> str:
    """A zero-shot gate registered as a new version of ``gate`` @champion; its run id."""
    spec = ModelSpec(
        python_model=RoutingModel(
            FeatureGate("uncovered_fraction"), review_at, 0.1, training_sources=["docs"]
        ),
        name="gate",
        alias="champion",
        metadata={"thresholds": {"review_at": review_at, "accept_at": 0.1}},
        input_example=EXAMPLE,
        tags=tags or {},
        signature=signature(),
    )
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.create_experiment(
        f"fit-{review_at}", artifact_location=(out / "mlruns").as_uri()
    )
    run_id = client.create_run(experiment).info.run_id
    register_model(uri, spec, run_id, out)
    client.set_terminated(run_id)
    return run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Two versions of ``gate``: 1 (review at 0.9), then 2 (review at 0.7) as @champion."""
    folder = tmp_path_factory.mktemp("registry")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    before = mlflow.get_tracking_uri()
    try:
        first = register(uri, folder, 0.9, tags={"training_sources": "docs"})
        second = register(uri, folder, 0.7)
    finally:
        mlflow.set_tracking_uri(before)
    return uri, first, second


@pytest.mark.parametrize(
    ("uri", "parsed"),
    [
        ("models:/gate@champion", ("gate", "champion", None)),
        ("models:/gate/3", ("gate", None, "3")),
        ("models:/my-gate.v2@staging", ("my-gate.v2", "staging", None)),
    ],
)
def test_a_model_uri_names_a_version_by_alias_or_number(uri, parsed):
    assert parse_model_uri(uri) == parsed


@pytest.mark.parametrize(
    "uri", ["", "gate@champion", "models:/gate", "models:/gate/latest", "models:/a/b/1", None]
)
def test_anything_else_is_a_config_error_that_shows_both_forms(uri):
    with pytest.raises(ConfigError, match=r"routing\.model_uri=.*models:/<name>@<alias>"):
        parse_model_uri(uri)


def test_the_alias_resolves_to_the_version_it_points_at_with_its_run_and_metadata(store):
    uri, _, second = store
    model = load_routed_model(uri, "models:/gate@champion")
    assert isinstance(model, RoutedModel)
    assert (model.name, model.version, model.run_id) == ("gate", "2", second)
    assert model.uri == "models:/gate@champion"  # as asked for; the version says what it is
    assert model.metadata == {"thresholds": {"review_at": 0.7, "accept_at": 0.1}}
    routing = model.routing  # the RoutingModel behind the pyfunc
    assert isinstance(routing, RoutingModel) and routing.review_at == 0.7
    assert routing.training_sources == ["docs"]


def test_a_version_number_loads_that_version_even_when_the_alias_moved_on(store):
    uri, first, _ = store
    model = load_routed_model(uri, "models:/gate/1")
    assert (model.version, model.run_id, model.routing.review_at) == ("1", first, 0.9)
    scored = model.pyfunc.predict(EXAMPLE)
    assert list(scored.columns[:2]) == ["risk", "decision"]


def test_registration_tags_the_version_and_points_the_alias(store):
    uri, first, _ = store
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    assert client.get_model_version("gate", "1").tags == {"training_sources": "docs"}
    assert client.get_model_version("gate", "1").run_id == first
    assert str(client.get_model_version_by_alias("gate", "champion").version) == "2"


def test_a_model_the_store_does_not_hold_is_a_config_error_naming_the_store(store):
    uri, _, _ = store
    with pytest.raises(ConfigError, match=r"models:/gate@nope.*not in the registry at sqlite"):
        load_routed_model(uri, "models:/gate@nope")
    with pytest.raises(ConfigError, match="not in the registry"):
        load_routed_model(uri, "models:/other/1")


def test_without_a_store_the_error_says_how_to_name_one(tmp_path):
    with pytest.raises(ConfigError, match=r"no tracking URI.*tracking\.uri"):
        load_routed_model(None, "models:/gate@champion")
    # a SQLite store whose folder does not exist yet is created, then found empty
    fresh = tmp_path / "new" / "mlflow.db"
    with pytest.raises(ConfigError, match="not in the registry"):
        load_routed_model(f"sqlite:///{fresh}", "models:/gate@champion")
    assert fresh.parent.is_dir()
