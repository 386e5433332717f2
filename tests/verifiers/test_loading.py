"""Where models come from: local paths, the Hub cache, or the exact architecture at random."""

import socket

import pytest
import torch
from sklearn.base import clone
from tests.verifiers.conftest import TINY_ARCH, corpus

from runner.errors import ConfigError
from runner.verifiers import (
    DebertaNLIVerifier,
    HHEMVerifier,
    LettuceDetectVerifier,
    ModelNotAvailableError,
)
from runner.verifiers.architecture import build_config, load_architecture


def test_missing_local_path_fails_the_source_check_saying_how_to_provide_it(tmp_path):
    verifier = DebertaNLIVerifier(model=str(tmp_path / "nowhere"))  # settings only: no disk
    with pytest.raises(ModelNotAvailableError, match=r"does not exist.*model=DIR"):
        verifier.check_sources()  # the pipeline's pre-flight asks it once
    with pytest.raises(ModelNotAvailableError, match=r"does not exist.*model=DIR"):
        verifier.load()  # and loading finds the same


def test_a_clone_does_not_touch_the_disk(tmp_path, monkeypatch):
    import runner.verifiers.base as base

    verifier = DebertaNLIVerifier(model=str(tmp_path / "nowhere"))
    asked = []
    monkeypatch.setattr(base, "resolve_source", lambda *a: asked.append(a))
    clone(verifier).set_params(batch_size=4)
    assert asked == []


def test_directory_without_config_is_refused(tmp_path):
    with pytest.raises(ModelNotAvailableError, match=r"no config\.json"):
        HHEMVerifier(model=str(tmp_path)).check_sources()


@pytest.mark.parametrize("cls", [DebertaNLIVerifier, HHEMVerifier, LettuceDetectVerifier])
def test_hub_id_while_offline_fails_immediately(cls, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty cache
    connects = []
    monkeypatch.setattr(socket.socket, "connect", lambda sock, addr: connects.append(addr))
    with pytest.raises(ModelNotAvailableError) as err:
        cls(model="some-org/some-verifier-model").check_sources()
    assert connects == []  # answered from the (empty) cache: no network, no retry loop
    message = str(err.value)
    assert "offline" in message and "huggingface-cli download" in message
    assert "weights=random" in message


def _corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus()))
    return str(path)


def test_random_weights_are_the_architecture_seeded(tmp_path, monkeypatch, frame):
    monkeypatch.setenv("RUNNER_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    kwargs = {
        "weights": "random",
        "architecture": TINY_ARCH["deberta"],
        "tokenizer_corpus": _corpus_file(tmp_path),
    }
    a = DebertaNLIVerifier(seed=1, **kwargs)
    same = DebertaNLIVerifier(seed=1, **kwargs)
    other = DebertaNLIVerifier(seed=2, **kwargs)
    assert (a.score(frame) == same.score(frame)).all()
    assert (a.score(frame) != other.score(frame)).any()
    info = a.runtime_info()
    assert info["model"] == "random:tiny_deberta" and info["weights"] == "random"
    assert info["n_parameters"] == sum(p.numel() for p in a.loaded.model.parameters())
    assert a.loaded.model.config.hidden_size == 32
    assert info["tokenizer"]["vocab_size_requested"] == 800


def test_random_weights_need_an_architecture():
    with pytest.raises(ConfigError, match="architecture"):
        DebertaNLIVerifier(weights="random", architecture=None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "deberta_v3_small",
            {
                "hidden_size": 768,
                "num_hidden_layers": 6,
                "num_attention_heads": 12,
                "intermediate_size": 3072,
                "vocab_size": 128100,
                "relative_attention": True,
                "position_buckets": 256,
                "pos_att_type": ["p2c", "c2p"],
                "num_labels": 3,
            },
        ),
        (
            "flan_t5_base_encoder",
            {
                "d_model": 768,
                "num_layers": 12,
                "num_decoder_layers": 12,
                "num_heads": 12,
                "d_ff": 2048,
                "vocab_size": 32128,
                "is_gated_act": True,
                "num_labels": 2,
            },
        ),
        (
            "modernbert_base",
            {
                "hidden_size": 768,
                "num_hidden_layers": 22,
                "num_attention_heads": 12,
                "intermediate_size": 1152,
                "vocab_size": 50368,
                "max_position_embeddings": 8192,
                "num_labels": 2,
            },
        ),
    ],
)
def test_architecture_files_hold_the_published_shapes(name, expected):
    config = build_config(load_architecture(name))
    for key, value in expected.items():
        assert getattr(config, key) == value, key


def test_deberta_nli_labels_follow_the_cross_encoder():
    config = build_config(load_architecture("deberta_v3_small"))
    assert config.id2label == {0: "contradiction", 1: "entailment", 2: "neutral"}


def test_unknown_architecture_lists_the_known_ones():
    with pytest.raises(ConfigError, match="deberta_v3_small"):
        load_architecture("deberta_v9")


def test_threads_setting_is_restored_after_scoring(tiny_deberta, frame):
    before = torch.get_num_threads()
    DebertaNLIVerifier(model=str(tiny_deberta), threads=1).score(frame)
    assert torch.get_num_threads() == before


def test_release_drops_the_model_and_the_next_use_reloads_it(tiny_deberta, frame):
    verifier = DebertaNLIVerifier(model=str(tiny_deberta))
    before = verifier.score(frame)
    assert verifier.release()._base is None
    assert (verifier.score(frame) == before).all()
