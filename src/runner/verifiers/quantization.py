"""int8 dynamic quantisation of a verifier's linear layers, and the int8/bf16 mixed recipe.

Why: on CPU the matrix products of the linear layers are most of a verifier's cost, and
int8 dot products (VNNI) run about 4x the float32 rate. Two recipes:

- ``int8_dynamic``: every ``nn.Linear`` of the encoder in int8 (weights per output
  channel, activations quantised per call). The task head (pooler and classifier) stays
  float32: it runs on one token or a few, so int8 gains nothing there, while its
  quantisation error goes straight into the score (on DeBERTa-v3-small it is a third of
  the whole model's int8 error).
- ``int8_mixed``: as ``int8_dynamic``, except the feed-forward down-projections
  (3072 -> 768 in a base-sized model), whose post-GELU inputs quantise worst, run in
  bfloat16 (about 2x float32 on CPUs with AVX512-BF16). It gives up some of int8's speed
  for about two thirds of its error.

Which layers are the head and which are down-projections is read from the module names of
the architectures the verifiers use (BERT-style ``layer.N.output.dense``, T5
``DenseReluDense.wo``, ModernBERT ``mlp.Wo``, Llama-style ``mlp.down_proj``); a model
where ``int8_mixed`` finds no down-projection is an error, not a silent int8 model.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from runner.errors import ConfigError
from runner.verifiers.int8_setting import INT8_RANGE_ENV, int8_range_setting

HEAD = re.compile(r"^(pooler|classifier|head|score|qa_outputs|lm_head)(\.|$)")
"""Module names of task heads (kept in float32 by both recipes)."""

DOWN_PROJECTION = re.compile(
    r"((?<!attention)\.output\.dense|DenseReluDense\.wo|mlp\.Wo|mlp\.down_proj)$"
)
"""Module names of feed-forward down-projections (bfloat16 in ``int8_mixed``)."""


@dataclass(frozen=True)
class Int8Range:
    """The activation range int8 layers use, and why (recorded in ``runtime.json``)."""

    full_range: bool
    reason: str
    cpu_avx512_vnni: bool

    def to_dict(self) -> dict[str, Any]:
        """``activation_range`` (``full`` / ``reduced``), ``reason``, ``cpu_avx512_vnni``."""
        return {
            "activation_range": "full" if self.full_range else "reduced",
            "reason": self.reason,
            "cpu_avx512_vnni": self.cpu_avx512_vnni,
        }


def cpu_has_vnni(cpuinfo: str | None = None) -> bool:
    """True when the CPU has AVX512-VNNI, the 8-bit dot product fbgemm's kernels use.

    AVX-VNNI alone (256-bit, some client CPUs) does not count: fbgemm has no kernels for it
    and runs its AVX2 ones there. Recorded beside the choice; `int8_range` decides by
    probing the kernels themselves.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    return "avx512_vnni" in flags


def full_range_is_exact() -> bool:
    """Whether this process's int8 kernels multiply full-range activations without saturating.

    Pre-VNNI x86 kernels (fbgemm on AVX2 / AVX512) add pairs of u8 x s8 products in int16
    (``vpmaddubsw``), which saturates once activations use all 8 bits; VNNI kernels add in
    int32. The probe multiplies activations at the top of the 8-bit range by weights at the
    top of theirs, where every pair overflows int16, and checks the exact answer. It asks
    the kernels rather than the CPU flags, so it also follows what limits the kernels
    (``FBGEMM_ENABLE_INSTRUCTIONS``, another quantized engine, a CPU torch does not know).
    """
    return _probe()


@functools.lru_cache(maxsize=1)
def _probe() -> bool:
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    k = 64
    x = torch.ones(8, k)  # range [0, 1]: every activation quantises to 255
    with warnings.catch_warnings():  # quantized-tensor deprecation notices
        warnings.simplefilter("ignore")
        probe = DynamicLinear(k, 4, dtype=torch.qint8)
        scales = torch.full((4,), 1.0 / 127)
        zero = torch.zeros(4, dtype=torch.long)
        qweight = torch.quantize_per_channel(torch.ones(4, k), scales, zero, 0, torch.qint8)
        probe.set_weight_bias(qweight, torch.zeros(4))
        packed = probe._packed_params._packed_params
        try:
            out = torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False)
        except RuntimeError:  # an engine without this op: keep PyTorch's default
            return False
    return bool(torch.allclose(out, torch.full_like(out, float(k)), rtol=1e-3, atol=1e-3))


def int8_range(setting: str | None = None) -> Int8Range:
    """Which activation range `quantize_int8` uses here: full 8 bits where exact, else 7.

    Parameters
    ----------
    setting : {"auto", "full", "reduced"} or None
        None: the ``RUNNER_INT8_RANGE`` environment variable, default ``auto`` (probe the
        kernels with `full_range_is_exact`). ``full`` on kernels that saturate is refused.

    Returns
    -------
    Int8Range

    Raises
    ------
    ConfigError
        An unknown setting, or ``full`` where the kernels saturate.
    """
    source = "setting" if setting is not None else INT8_RANGE_ENV
    setting = int8_range_setting(setting)
    engine = torch.backends.quantized.engine
    exact = full_range_is_exact()
    kernels = (
        f"{engine} int8 kernels add 8-bit products in int32 (VNNI)"
        if exact
        else f"{engine} int8 kernels saturate full-range products in int16 (no VNNI)"
    )
    if setting == "full" and not exact:
        raise ConfigError(f"{source}=full: {kernels}; use auto or reduced")
    flag = cpu_has_vnni()
    if setting == "auto":
        return Int8Range(exact, f"auto: {kernels}", flag)
    return Int8Range(setting == "full", f"{source}={setting} ({kernels})", flag)


def _dynamic_linear_class(full_range: bool) -> type:
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    if not full_range:
        return DynamicLinear

    class FullRangeDynamicLinear(DynamicLinear):
        """Dynamic int8 linear quantising activations to the full 8 bits (VNNI CPUs)."""

        def forward(self, x):
            packed = self._packed_params._packed_params
            return torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False).to(x.dtype)

    return FullRangeDynamicLinear


class BFloat16Linear(nn.Module):
    """A linear layer computed in bfloat16 inside a float32 model (float32 in and out)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        self.register_buffer("weight", linear.weight.detach().to(torch.bfloat16))
        bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``linear(x)`` with bfloat16 products, returned in `x`'s dtype."""
        return nn.functional.linear(x.to(torch.bfloat16), self.weight, self.bias).to(x.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bf16"


def linear_roles(model: nn.Module) -> dict[str, str]:
    """Role of every ``nn.Linear`` by module name: ``head``, ``down_projection`` or ``body``."""
    roles = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            if HEAD.search(name):
                roles[name] = "head"
            elif DOWN_PROJECTION.search(name):
                roles[name] = "down_projection"
            else:
                roles[name] = "body"
    return roles


def quantize_int8(model: nn.Module, mixed: bool = False, full_range: bool | None = None) -> Any:
    """A copy of `model` with its encoder's linear layers in int8 (head kept in float32).

    Weights: int8, one scale per output channel (per-channel symmetric), which keeps small
    rows precise. Activations: quantised per call from their observed range; to the full
    8 bits where the kernels add products in int32 (VNNI: `int8_range`), else to 7 bits
    (``reduce_range``, what PyTorch's default module does to avoid the int16 saturation of
    pre-VNNI kernels). On RAGTruth inputs the full range halves the int8 error of a
    DeBERTa-v3-small forward pass; on pre-VNNI kernels it would saturate instead.

    Parameters
    ----------
    model : torch.nn.Module
        Not modified.
    mixed : bool
        ``int8_mixed``: feed-forward down-projections in bfloat16 instead of int8.
    full_range : bool or None
        None: `int8_range` (the kernels' capability, or ``RUNNER_INT8_RANGE``).

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    ConfigError
        `mixed` and the model has no module named like a down-projection.
    """
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    roles = linear_roles(model)
    bf16 = [name for name, role in roles.items() if mixed and role == "down_projection"]
    if mixed and not bf16:
        raise ConfigError(
            f"quantize int8_mixed: {type(model).__name__} has no feed-forward down-projection "
            f"named like {DOWN_PROJECTION.pattern!r}; use quantize int8_dynamic"
        )
    spec = {
        name: per_channel_dynamic_qconfig
        for name, role in roles.items()
        if role == "body" or (role == "down_projection" and not mixed)
    }
    full = int8_range().full_range if full_range is None else full_range
    with warnings.catch_warnings():  # torch.ao.quantization's migration notice to torchao
        warnings.simplefilter("ignore", category=DeprecationWarning)
        warnings.simplefilter("ignore", category=FutureWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        quantized = quantize_dynamic(
            model,
            spec,
            dtype=torch.qint8,
            mapping={nn.Linear: _dynamic_linear_class(full)},
        )
    for name in bf16:
        parent, _, child = name.rpartition(".")
        owner = quantized.get_submodule(parent) if parent else quantized
        setattr(owner, child, BFloat16Linear(getattr(owner, child)))
    return quantized
