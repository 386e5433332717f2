"""int8 recipes: the encoder's linear layers in int8, the head in float32, and the mixed recipe."""

import numpy as np
import pytest
import torch
from tests.verifiers.conftest import TINY_BERT
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    BertConfig,
    BertModel,
)

from runner.errors import ConfigError
from runner.verifiers import DebertaNLIVerifier
from runner.verifiers.quantization import (
    BFloat16Linear,
    cpu_has_vnni,
    linear_roles,
    quantize_int8,
)


def test_vnni_detection_reads_cpu_flags():
    assert cpu_has_vnni("flags\t\t: fpu avx2 avx512f avx512_vnni\n")
    assert not cpu_has_vnni("flags\t\t: fpu avx2 avx512f\n")


def _roles(folder, auto):
    roles = linear_roles(auto.from_pretrained(folder))
    return {role: sorted(n for n, r in roles.items() if r == role) for role in set(roles.values())}


def test_heads_and_down_projections_are_found_by_name_in_each_architecture(
    tiny_deberta, tiny_t5, tiny_modernbert
):
    deberta = _roles(tiny_deberta, AutoModelForSequenceClassification)
    assert deberta["head"] == ["classifier", "pooler.dense"]
    assert deberta["down_projection"] == [f"deberta.encoder.layer.{i}.output.dense" for i in (0, 1)]
    assert "deberta.encoder.layer.0.attention.output.dense" in deberta["body"]
    t5 = _roles(tiny_t5, AutoModelForTokenClassification)
    assert t5["head"] == ["classifier"]
    assert t5["down_projection"] == [
        f"transformer.encoder.block.{i}.layer.1.DenseReluDense.wo" for i in (0, 1)
    ]
    modernbert = _roles(tiny_modernbert, AutoModelForTokenClassification)
    assert modernbert["head"] == ["classifier", "head.dense"]
    assert modernbert["down_projection"] == [f"model.layers.{i}.mlp.Wo" for i in (0, 1, 2)]


def _kinds(model):
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            out[name] = "fp32"
        elif isinstance(module, BFloat16Linear):
            out[name] = "bf16"
        elif type(module).__name__.endswith("Linear") and "quantized" in type(module).__module__:
            out[name] = "int8"
        elif type(module).__name__ == "FullRangeDynamicLinear":
            out[name] = "int8"
    return out


@pytest.mark.parametrize("mixed", [False, True])
def test_the_head_stays_float32_and_the_original_is_untouched(tiny_deberta, mixed):
    model = AutoModelForSequenceClassification.from_pretrained(tiny_deberta).eval()
    kinds = _kinds(quantize_int8(model, mixed=mixed))
    roles = linear_roles(model)
    for name, role in roles.items():
        expected = {"head": "fp32", "body": "int8"}.get(role, "bf16" if mixed else "int8")
        assert kinds[name] == expected, name
    assert set(_kinds(model).values()) == {"fp32"}


def test_mixed_needs_a_down_projection():
    bare = BertModel(BertConfig(**TINY_BERT))
    renamed = torch.nn.Sequential(torch.nn.Linear(4, 4))
    assert linear_roles(bare)["encoder.layer.0.output.dense"] == "down_projection"
    with pytest.raises(ConfigError, match="int8_dynamic"):
        quantize_int8(renamed, mixed=True)
    assert _kinds(quantize_int8(renamed)) == {"0": "int8"}


def test_bfloat16_linear_computes_in_bfloat16_and_returns_the_input_dtype():
    torch.manual_seed(0)
    linear = torch.nn.Linear(8, 3)
    x = torch.randn(5, 8)
    out = BFloat16Linear(linear)(x)
    assert out.dtype == torch.float32
    expected = torch.nn.functional.linear(
        x.bfloat16(), linear.weight.bfloat16(), linear.bias.bfloat16()
    ).float()
    torch.testing.assert_close(out, expected, atol=0, rtol=0)


@pytest.mark.parametrize("quantize", ["int8_dynamic", "int8_mixed"])
@pytest.mark.parametrize("attention", ["fused", "stock"])
def test_int8_recipes_track_float32(tiny_deberta, frame, quantize, attention):
    fp32 = DebertaNLIVerifier(model=str(tiny_deberta), batch_size=2, attention="stock")
    int8 = fp32.derive(quantize=quantize, attention=attention)
    assert int8.precision_name == quantize.replace("_", "-")
    a, b = fp32.score(frame), int8.score(frame)
    assert np.ptp(a) > 0.05
    assert np.max(np.abs(a - b)) < 0.05
    assert np.corrcoef(a, b)[0, 1] > 0.95
