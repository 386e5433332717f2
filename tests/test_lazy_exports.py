"""Package names that import MLflow load on first use, so the package itself stays fast."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.lazy_exports import on_first_use

PROBE = """
import sys
import runner.routing, runner.verifiers
print('mlflow' in sys.modules)
runner.routing.RoutingModel, runner.verifiers.DetectorModel
print('mlflow' in sys.modules)
"""


@pytest.mark.slow
def test_importing_the_packages_does_not_import_mlflow_until_a_pyfunc_name_is_used():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_a_listed_name_comes_from_its_module_and_an_unknown_one_is_an_attribute_error():
    import runner.verifiers.evidence as evidence

    modules = {"top_k_sentences": "runner.verifiers.evidence"}
    assert on_first_use("pkg", modules, "top_k_sentences") is evidence.top_k_sentences
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'nope'"):
        on_first_use("pkg", modules, "nope")
