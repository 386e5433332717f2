"""Building the study: a part that cannot be built is named by the key a user sets.

Hydra wraps a constructor's error in its own; the pipeline names the part without reading
that error's text (it builds each interpolated part alone, only on the error path).
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from runner.errors import ConfigError
from runner.pipeline import build_node

PARTS = {
    "good": {"_target_": "collections.OrderedDict"},
    "bad": {"_target_": "math.sqrt", "x": "nope"},  # sqrt takes no keyword: a TypeError
}


def test_the_part_whose_constructor_fails_is_named_at_its_own_key():
    cfg = OmegaConf.create(
        {"parts": PARTS, "study": {"_target_": "builtins.dict", "parts": "${parts}"}}
    )
    with pytest.raises(ConfigError, match=r"^parts\.bad: cannot build builtins\.dict"):
        build_node("study", cfg.study)


def test_a_single_interpolated_part_is_named_by_its_group():
    cfg = OmegaConf.create(
        {"split": PARTS["bad"], "study": {"_target_": "builtins.dict", "split": "${split}"}}
    )
    with pytest.raises(ConfigError, match=r"^split: cannot build"):
        build_node("study", cfg.study)


def test_when_every_part_builds_the_study_itself_is_named():
    cfg = OmegaConf.create(
        {"parts": {"good": PARTS["good"]}, "study": {"_target_": "math.sqrt", "parts": "${parts}"}}
    )
    with pytest.raises(ConfigError, match=r"^study: cannot build math\.sqrt"):
        build_node("study", cfg.study)


def test_parts_that_build_are_handed_to_the_study():
    cfg = OmegaConf.create(
        {
            "parts": {"good": PARTS["good"]},
            "study": {"_target_": "builtins.dict", "parts": "${parts}"},
        }
    )
    assert build_node("study", cfg.study) == {"parts": {"good": {}}}
