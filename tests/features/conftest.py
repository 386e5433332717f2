"""A tiny random sentence encoder: a BERT built from a config, saved with a word-piece
tokenizer, loaded back by path through the same code a user's ``encoder=/path`` takes."""

from __future__ import annotations

from pathlib import Path

import pytest

ENCODER_WORDS = (
    "the sky is blue grass green cats bark dogs sleep river flows north city council "
    "approved budget of 12 million mayor said taxes rise"
).split()


def build_tiny_encoder(folder: Path, seed: int = 0) -> Path:
    """Save a 1-layer BERT (hidden 16, weights seeded by `seed`) and its tokenizer."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join([*special, *ENCODER_WORDS, ".", ","]) + "\n")
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(special) + len(ENCODER_WORDS) + 2,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    BertModel(config).eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    return str(build_tiny_encoder(tmp_path_factory.mktemp("tiny_encoder")))
