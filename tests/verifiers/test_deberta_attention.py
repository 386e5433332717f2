"""Fused DeBERTa attention: the stock transformers numbers, for every configuration it covers."""

import numpy as np
import pytest
import torch
from tests.verifiers.conftest import TINY_BERT
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    DebertaV2Config,
    DebertaV2ForSequenceClassification,
)

from runner.errors import ConfigError
from runner.verifiers import DebertaNLIVerifier
from runner.verifiers.deberta_attention import FusedDisentangledAttention, fused_copy

BASE = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "vocab_size": 300,
    "max_position_embeddings": 512,
    "type_vocab_size": 0,
    "num_labels": 3,
    "initializer_range": 0.3,  # large weights: outputs differ clearly between inputs
}

VARIANTS = {
    "v3 shared keys, buckets": {
        "relative_attention": True,
        "position_buckets": 16,
        "share_att_key": True,
        "pos_att_type": ["p2c", "c2p"],
        "norm_rel_ebd": "layer_norm",
        "position_biased_input": False,
    },
    "own position projections": {
        "relative_attention": True,
        "position_buckets": 16,
        "share_att_key": False,
        "pos_att_type": ["p2c", "c2p"],
    },
    "c2p only, no buckets": {
        "relative_attention": True,
        "position_buckets": -1,
        "max_relative_positions": 24,
        "share_att_key": True,
        "pos_att_type": ["c2p"],
    },
    "p2c only": {
        "relative_attention": True,
        "position_buckets": 8,
        "share_att_key": True,
        "pos_att_type": ["p2c"],
    },
    "no relative attention": {"relative_attention": False, "position_biased_input": True},
}


def model_for(variant: str) -> DebertaV2ForSequenceClassification:
    torch.manual_seed(0)
    return DebertaV2ForSequenceClassification(DebertaV2Config(**BASE, **VARIANTS[variant])).eval()


def padded_batch(lengths=(40, 23, 7, 31)):
    g = torch.Generator().manual_seed(1)
    ids = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(1, 300, (n,), generator=g)
        mask[row, :n] = 1
    return ids, mask


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fused_attention_equals_stock_with_padding(variant):
    model = model_for(variant)
    fused = fused_copy(model)
    ids, mask = padded_batch()
    with torch.inference_mode():
        stock = model(input_ids=ids, attention_mask=mask).logits
        ours = fused(input_ids=ids, attention_mask=mask).logits
        single = torch.cat(
            [fused(input_ids=ids[i : i + 1, : int(mask[i].sum())]).logits for i in range(4)]
        )
    assert stock.std(0).min() > 1e-3  # the model separates inputs: equality is not vacuous
    torch.testing.assert_close(ours, stock, atol=1e-5, rtol=0)
    torch.testing.assert_close(single, stock, atol=1e-5, rtol=0)


def test_fused_copy_shares_weights_and_leaves_the_original_alone():
    model = model_for("v3 shared keys, buckets")
    fused = fused_copy(model)
    ours = dict(fused.named_parameters())
    for name, param in model.named_parameters():
        fused_name = name.replace("attention.self.", "attention.self.inner.")
        assert ours[fused_name].data_ptr() == param.data_ptr(), name
    assert not any(isinstance(m, FusedDisentangledAttention) for m in model.modules())
    assert sum(isinstance(m, FusedDisentangledAttention) for m in fused.modules()) == 2


def test_calls_the_fused_path_does_not_cover_run_the_stock_module():
    model = model_for("v3 shared keys, buckets")
    fused = fused_copy(model)
    ids, mask = padded_batch((12, 9))
    with torch.inference_mode():
        stock = model(input_ids=ids, attention_mask=mask, output_attentions=True)
        ours = fused(input_ids=ids, attention_mask=mask, output_attentions=True)
    assert ours.attentions is not None and len(ours.attentions) == 2
    torch.testing.assert_close(ours.attentions[1], stock.attentions[1])
    torch.testing.assert_close(ours.logits, stock.logits)


def test_bfloat16_autocast_runs_through_the_fused_path():
    model = model_for("v3 shared keys, buckets")
    fused = fused_copy(model)
    ids, mask = padded_batch()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        stock = model(input_ids=ids, attention_mask=mask).logits.float()
        ours = fused(input_ids=ids, attention_mask=mask).logits.float()
    assert torch.max(torch.abs(ours - stock)) < 0.1


def test_a_model_without_disentangled_attention_is_refused():
    bert = BertForSequenceClassification(BertConfig(**TINY_BERT))
    with pytest.raises(ValueError, match="DisentangledSelfAttention"):
        fused_copy(bert)


def test_the_verifier_scores_the_same_with_either_attention(tiny_deberta, frame):
    fused = DebertaNLIVerifier(model=str(tiny_deberta), batch_size=3)
    stock = fused.with_settings(attention="stock")
    assert any(isinstance(m, FusedDisentangledAttention) for m in fused._prepared.modules())
    assert not any(isinstance(m, FusedDisentangledAttention) for m in stock._prepared.modules())
    a, b = fused.score(frame), stock.score(frame)
    assert (fused.runtime_info()["attention"], stock.runtime_info()["attention"]) == (
        "fused",
        "stock",
    )
    assert np.ptp(b) > 0.05
    np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)


def test_an_unknown_attention_is_a_config_error(tiny_deberta):
    with pytest.raises(ConfigError, match="attention"):
        DebertaNLIVerifier(model=str(tiny_deberta), attention="flash")


def test_fused_attention_on_a_model_without_it_says_how_to_fix():
    from runner.verifiers.loading import prepare

    bert = BertForSequenceClassification(BertConfig(**TINY_BERT))
    with pytest.raises(ConfigError, match="attention to stock"):
        prepare(bert, "cpu", None, fused_attention=True)
    assert prepare(bert, "cpu", None, fused_attention=False) is bert
