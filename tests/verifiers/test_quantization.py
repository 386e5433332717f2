"""int8 recipes: the encoder's linear layers in int8, the head in float32, and the mixed recipe."""

import os
import subprocess
import sys
from pathlib import Path

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
from runner.verifiers.int8_setting import INT8_RANGE_ENV
from runner.verifiers.quantization import (
    BFloat16Linear,
    cpu_has_vnni,
    full_range_is_exact,
    int8_range,
    linear_roles,
    quantize_int8,
)

ROOT = Path(__file__).resolve().parents[2]


def test_vnni_detection_reads_cpu_flags():
    assert cpu_has_vnni("flags\t\t: fpu avx2 avx512f avx512_vnni\n")
    assert not cpu_has_vnni("flags\t\t: fpu avx2 avx512f\n")
    # AVX-VNNI (256-bit) has no fbgemm kernels: those CPUs run the saturating AVX2 ones
    assert not cpu_has_vnni("flags\t\t: fpu avx2 avx_vnni\n")


def test_the_range_follows_the_kernels_and_the_override(monkeypatch):
    monkeypatch.delenv(INT8_RANGE_ENV, raising=False)
    auto = int8_range()
    assert auto.full_range == full_range_is_exact()
    assert auto.reason.startswith("auto: ")
    assert int8_range("reduced").full_range is False
    monkeypatch.setenv(INT8_RANGE_ENV, "reduced")
    assert int8_range().to_dict()["activation_range"] == "reduced"
    assert int8_range().reason.startswith(f"{INT8_RANGE_ENV}=reduced")
    monkeypatch.setenv(INT8_RANGE_ENV, "fullest")
    with pytest.raises(ConfigError, match=INT8_RANGE_ENV):
        int8_range()


def test_a_bad_override_fails_when_the_verifier_is_built(tiny_deberta, monkeypatch):
    monkeypatch.setenv(INT8_RANGE_ENV, "7bit")
    with pytest.raises(ConfigError, match="auto"):
        DebertaNLIVerifier(model=str(tiny_deberta), quantize="int8_dynamic")
    DebertaNLIVerifier(model=str(tiny_deberta))  # float32 never reads it


PROBE = """
from runner.errors import ConfigError
from runner.verifiers.quantization import full_range_is_exact, int8_range
print(full_range_is_exact(), int8_range().full_range)
try:
    int8_range("full")
except ConfigError as err:
    print("refused:", err)
"""


@pytest.mark.slow
def test_pre_vnni_kernels_are_seen_to_saturate_and_full_range_is_refused():
    # fbgemm restricted to its AVX2 kernels: the path of a CPU without AVX512-VNNI
    env = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2", "PYTHONPATH": str(ROOT / "src")}
    env.pop(INT8_RANGE_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "False False"
    assert lines[1].startswith("refused:") and "saturate" in lines[1]


def test_runtime_info_records_the_range_of_an_int8_verifier(tiny_deberta, monkeypatch):
    monkeypatch.setenv(INT8_RANGE_ENV, "reduced")
    fp32 = DebertaNLIVerifier(model=str(tiny_deberta))
    assert fp32.runtime_info()["int8_range"] is None
    info = fp32.with_settings(quantize="int8_dynamic").runtime_info()["int8_range"]
    assert info["activation_range"] == "reduced"
    assert info["reason"].startswith(f"{INT8_RANGE_ENV}=reduced")
    assert isinstance(info["cpu_avx512_vnni"], bool)


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
    int8 = fp32.with_settings(quantize=quantize, attention=attention)
    assert int8.precision_name == quantize.replace("_", "-")
    a, b = fp32.score(frame), int8.score(frame)
    assert np.ptp(a) > 0.05
    assert np.max(np.abs(a - b)) < 0.05
    assert np.corrcoef(a, b)[0, 1] > 0.95


def test_a_pickled_int8_verifier_is_prepared_again_where_it_is_unpickled(
    tiny_deberta, frame, monkeypatch
):
    # The full-range layer (what a VNNI CPU gets) pickles by value and cannot; forced here,
    # so the check holds on every CPU. A registered gate carries its verifier in a pickle.
    import cloudpickle

    from runner.verifiers import quantization

    full = quantization.Int8Range(full_range=True, reason="test", cpu_avx512_vnni=True)
    monkeypatch.setattr(quantization, "int8_range", lambda *_: full)
    verifier = DebertaNLIVerifier(model=str(tiny_deberta), quantize="int8_dynamic")
    before = verifier.score(frame)
    assert "int8" in _kinds(verifier._prepared).values()
    copy = cloudpickle.loads(cloudpickle.dumps(verifier))
    np.testing.assert_array_equal(copy.score(frame), before)
    assert copy.runtime_info()["int8_range"]["reason"] == "test"  # chosen where it scores
