"""A verifier folder without its classification head, or without weights, is refused.

transformers would load the shipped all-MiniLM-L6-v2 encoder (no ``classifier.*`` in its
checkpoint) into a token classifier with a random head and only warn; the verifier must
refuse it with one line, in the pre-flight check and when loading. Tiny random models
saved WITH a head (the fixtures here) are complete checkpoints and keep loading.
"""

from __future__ import annotations

import shutil

import pytest
from tests.routing.detector import minilm_dir, save_tiny_detector

from runner.errors import ConfigError
from runner.verifiers import DebertaNLIVerifier, LettuceDetectVerifier

HEADLESS = "no trained classification head"


def test_the_plain_minilm_encoder_is_refused_before_and_at_loading():
    verifier = LettuceDetectVerifier(model=str(minilm_dir()))
    with pytest.raises(ConfigError, match=HEADLESS) as before:
        verifier.check_sources()
    assert "classifier.weight" in str(before.value) and "\n" not in str(before.value)
    with pytest.raises(ConfigError, match=HEADLESS) as loading:
        verifier.load()
    assert str(minilm_dir()) in str(loading.value)


def test_an_encoder_saved_without_a_head_is_refused(tmp_path):
    from transformers import AutoTokenizer, BertConfig, BertModel

    config = BertConfig(
        vocab_size=len(AutoTokenizer.from_pretrained(str(minilm_dir()))),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    BertModel(config).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(str(minilm_dir())).save_pretrained(tmp_path)
    with pytest.raises(ConfigError, match=HEADLESS):
        LettuceDetectVerifier(model=str(tmp_path)).check_sources()
    with pytest.raises(ConfigError, match=HEADLESS):
        LettuceDetectVerifier(model=str(tmp_path)).load()


def test_a_folder_holding_only_config_json_is_refused_in_one_line(tmp_path):
    shutil.copy(minilm_dir() / "config.json", tmp_path / "config.json")
    with pytest.raises(ConfigError, match="holds no model weights") as err:
        LettuceDetectVerifier(model=str(tmp_path)).check_sources()
    assert str(tmp_path) in str(err.value) and "\n" not in str(err.value)


def test_tiny_random_models_saved_with_a_head_still_load(tmp_path, tiny_modernbert, tiny_deberta):
    tiny = save_tiny_detector(tmp_path / "tiny")
    for verifier in (
        LettuceDetectVerifier(model=str(tiny), max_length=512),
        LettuceDetectVerifier(model=str(tiny_modernbert)),
        DebertaNLIVerifier(model=str(tiny_deberta)),
    ):
        verifier.check_sources()
        verifier.load()
