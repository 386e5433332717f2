"""A verifier names the files its scores depend on, so the manifest can hash them."""

from __future__ import annotations

from runner.verifiers import DebertaNLIVerifier


def test_a_pretrained_verifier_lists_every_file_of_its_model_folder(tiny_deberta):
    files = DebertaNLIVerifier(model=str(tiny_deberta)).model_files()
    names = {f.name for f in files}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= names
    assert {f.name for f in tiny_deberta.iterdir() if f.is_file()} == names
    assert all(f.is_absolute() for f in files)


def test_random_weights_depend_on_no_model_file():
    verifier = DebertaNLIVerifier(weights="random", architecture={"model_type": "deberta-v2"})
    assert verifier.model_files() == []
