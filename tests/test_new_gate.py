"""Adding a gate needs one class and one YAML: nothing else in the project changes.

The class lives in a package made here (a temporary folder on ``sys.path``), the YAML in a
conf folder of its own that only names the class; a real rq1 run composes and scores it
through the same path as every gate (`register_configs` with the extra folder, Hydra's
search path, `runner.pipeline.run`).
"""

from __future__ import annotations

import sys
import textwrap

import pandas as pd
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runner.config import register_configs
from runner.paths import PROJECT_ROOT
from runner.pipeline import run

GATE = '''
"""A new gate: risk = share of answer characters that are digits, times `weight`."""

import numpy as np
from sklearn.base import BaseEstimator


class DigitShareGate(BaseEstimator):
    needs_fit = False

    def __init__(self, weight: float = 1.0, minimum_length: int = 1):
        self.weight = weight
        self.minimum_length = minimum_length

    def fit(self, frame, y=None):
        return self

    def score(self, frame):
        answers = frame["answer"].astype(str)
        share = [sum(c.isdigit() for c in a) / max(len(a), self.minimum_length) for a in answers]
        return self.weight * np.asarray(share, dtype=np.float64)
'''

YAML = """\
# A gate from outside the project: every setting not below is the class's default.
defaults:
  - newgates.digits.DigitShareGate
  - _self_

weight: 2.0  # differs from the class's 1.0
"""


def test_a_gate_in_a_new_package_runs_with_one_class_and_one_yaml(tmp_path, monkeypatch, data_dir):
    package = tmp_path / "code" / "newgates"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "digits.py").write_text(textwrap.dedent(GATE))
    conf = tmp_path / "conf" / "gate"
    conf.mkdir(parents=True)
    (conf / "digit_share.yaml").write_text(YAML)
    monkeypatch.syspath_prepend(str(tmp_path / "code"))

    register_configs(conf_dirs=[tmp_path / "conf"])
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
                "experiment=rq1_cheap_signals",
                "+gate@gates.digit_share=digit_share",
                "dataset.limit=120",
                "bootstrap=fast",
                "bootstrap.n_resamples=20",
                "study.params.time_gates=false",
                "progress=false",
                "tracking=off",
                f"paths.artifacts_dir={tmp_path / 'artifacts'}",
            ],
        )
    gate = OmegaConf.to_container(cfg.gates.digit_share)
    assert gate == {
        "_target_": "newgates.digits.DigitShareGate",
        "weight": 2.0,  # the YAML's
        "minimum_length": 1,  # the class's
    }
    outcome = run(cfg)
    cells = pd.read_csv(outcome.output_dir / "cells.csv")
    mine = cells[cells.column.str.startswith("digit_share/")]
    assert len(mine) > 0 and mine.value.notna().all()
    assert sys.modules["newgates"].__file__.startswith(str(tmp_path))


def test_the_cli_scans_the_conf_folders_it_adds_to_the_search_path():
    from runner.config import searchpath_dirs

    argv = ["experiment=rq1_cheap_signals", "hydra.searchpath=[file:///my/conf,pkg://x.conf]"]
    assert searchpath_dirs(argv) == ["/my/conf"]
    assert searchpath_dirs(["+hydra.searchpath=[file://rel/conf]"]) == ["rel/conf"]
