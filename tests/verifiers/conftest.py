"""Tiny verifier models built from configs, saved to disk and loaded back by path.

Each model is the verifier's real class (DebertaV2ForSequenceClassification,
T5ForTokenClassification, ModernBertForTokenClassification) at a toy size with seeded
random weights, saved with ``save_pretrained`` together with a tokenizer trained here by
the project's own `train_tokenizer`; tests load them through the same code path a user's
``model=/path`` takes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

# Toy models gain nothing from intra-op threads, and on a shared 2-core machine the
# threads' spin-waits dominate; one thread keeps this directory well under a minute.
torch.set_num_threads(1)

WORDS = (
    "the river city council approved a new budget of 12 million dollars for roads "
    "and schools while the mayor said taxes would not rise this year according to "
    "officials who spoke on monday about the plan and its effects on local business "
    "owners residents parks water police hospital"
).split()


def corpus(n: int = 300) -> list[str]:
    """Deterministic toy sentences over a small vocabulary."""
    out = []
    for i in range(n):
        k = 4 + (i * 7) % 11
        out.append(" ".join(WORDS[(i * 3 + j * 5) % len(WORDS)] for j in range(k)) + ".")
    return out


def make_frame(n: int = 7) -> pd.DataFrame:
    """A canonical response frame with answers and contexts of varied lengths."""
    texts = corpus(200)
    rows = []
    for i in range(n):
        context = " ".join(texts[i * 5 : i * 5 + 3 + (i * 4) % 9])
        answer = " ".join(texts[100 + i : 101 + i + i % 3])
        rows.append(
            {
                "example_id": f"e{i}",
                "group_id": f"g{i // 2}",
                "task": "QA",
                "source": "toy",
                "question": "what did the council approve?" if i % 2 else "",
                "context": context,
                "answer": answer,
                "label": i % 2,
            }
        )
    return pd.DataFrame(rows)


SPECS = {
    "unigram_pair": {
        "algorithm": "unigram",
        "vocab_size": 200,
        "normalizer": "nfkc",
        "special_tokens": {
            "pad": "[PAD]",
            "cls": "[CLS]",
            "sep": "[SEP]",
            "unk": "[UNK]",
            "mask": "[MASK]",
        },
        "single": "[CLS] $A [SEP]",
        "pair": "[CLS] $A [SEP] $B:1 [SEP]:1",
    },
    "t5": {
        "algorithm": "unigram",
        "vocab_size": 200,
        "normalizer": "nfkc",
        "special_tokens": {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
        "single": "$A </s>",
        "pair": "$A </s> $B </s>",
    },
    # Byte-level BPE trains deterministically (tokenizers' Unigram trainer does not), so the
    # toy models below see the same token ids in every test run.
    "bpe_deberta": {
        "algorithm": "bpe",
        "vocab_size": 800,
        "normalizer": "none",
        "special_tokens": {
            "pad": "[PAD]",
            "cls": "[CLS]",
            "sep": "[SEP]",
            "unk": "[UNK]",
            "mask": "[MASK]",
        },
        "single": "[CLS] $A [SEP]",
        "pair": "[CLS] $A [SEP] $B:1 [SEP]:1",
    },
    "bpe_t5": {
        "algorithm": "bpe",
        "vocab_size": 800,
        "normalizer": "none",
        "special_tokens": {"pad": "<pad>", "eos": "</s>", "unk": "<unk>"},
        "single": "$A </s>",
        "pair": "$A </s> $B </s>",
    },
    "bpe_pair": {
        "algorithm": "bpe",
        "vocab_size": 400,
        "normalizer": "none",
        "special_tokens": {
            "cls": "[CLS]",
            "sep": "[SEP]",
            "pad": "[PAD]",
            "unk": "[UNK]",
            "mask": "[MASK]",
        },
        "single": "[CLS] $A [SEP]",
        "pair": "[CLS] $A [SEP] $B:1 [SEP]:1",
    },
}

TINY_BERT = {
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "vocab_size": 50,
}
"""A toy BertConfig: a model with neither disentangled attention nor a verifier head."""

TINY_ARCH = {
    "deberta": {
        "name": "tiny_deberta",
        "model_type": "deberta-v2",
        "tokenizer": SPECS["bpe_deberta"],
        "config": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "vocab_size": 1024,
            "relative_attention": True,
            "position_buckets": 16,
            "max_relative_positions": -1,
            "norm_rel_ebd": "layer_norm",
            "share_att_key": True,
            "pos_att_type": ["p2c", "c2p"],
            "position_biased_input": False,
            "type_vocab_size": 0,
            "max_position_embeddings": 512,
            "pad_token_id": 0,
            "num_labels": 3,
            "id2label": {0: "contradiction", 1: "entailment", 2: "neutral"},
            "initializer_range": 0.3,
        },
    },
    "t5": {
        "name": "tiny_t5",
        "model_type": "t5",
        "tokenizer": SPECS["bpe_t5"],
        "config": {
            "d_model": 32,
            "d_kv": 16,
            "d_ff": 64,
            "num_layers": 2,
            "num_decoder_layers": 2,
            "num_heads": 2,
            "feed_forward_proj": "gated-gelu",
            "vocab_size": 1024,
            "relative_attention_num_buckets": 8,
            "relative_attention_max_distance": 32,
            "pad_token_id": 0,
            "eos_token_id": 1,
            "num_labels": 2,
            "classifier_dropout": 0.0,
            "tie_word_embeddings": False,
            "initializer_factor": 1.5,
        },
    },
    "modernbert": {
        "name": "tiny_modernbert",
        "model_type": "modernbert",
        "tokenizer": SPECS["bpe_pair"],
        "config": {
            "hidden_size": 32,
            "num_hidden_layers": 3,
            "num_attention_heads": 2,
            "intermediate_size": 48,
            "vocab_size": 512,
            "max_position_embeddings": 4096,
            "local_attention": 16,
            "pad_token_id": 2,
            "cls_token_id": 0,
            "sep_token_id": 1,
            "bos_token_id": 0,
            "eos_token_id": 1,
            "num_labels": 2,
            "initializer_range": 0.3,
        },
    },
}


def _save(model_class, arch: dict, folder: Path, seed: int = 3):
    from runner.verifiers.architecture import build_config, build_random_model
    from runner.verifiers.tokenizer_training import train_tokenizer

    tokenizer = train_tokenizer(corpus(), arch["tokenizer"])
    config = build_config(arch, tokenizer)
    model = build_random_model(model_class, config, seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_deberta(tmp_path_factory) -> Path:
    """Directory of a toy DeBERTa-v2 NLI cross-encoder (3 labels, relative attention)."""
    from transformers import DebertaV2ForSequenceClassification

    return _save(
        DebertaV2ForSequenceClassification, TINY_ARCH["deberta"], tmp_path_factory.mktemp("deberta")
    )


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    """Directory of a toy stock T5ForTokenClassification with 2 labels."""
    from transformers import T5ForTokenClassification

    return _save(T5ForTokenClassification, TINY_ARCH["t5"], tmp_path_factory.mktemp("t5"))


@pytest.fixture(scope="session")
def tiny_modernbert(tmp_path_factory) -> Path:
    """Directory of a toy ModernBertForTokenClassification with 2 labels."""
    from transformers import ModernBertForTokenClassification

    return _save(
        ModernBertForTokenClassification,
        TINY_ARCH["modernbert"],
        tmp_path_factory.mktemp("modernbert"),
    )


@pytest.fixture
def frame() -> pd.DataFrame:
    """Seven toy examples of different lengths."""
    return make_frame()
