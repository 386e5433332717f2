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

import re
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from runner.errors import ConfigError

HEAD = re.compile(r"^(pooler|classifier|head|score|qa_outputs|lm_head)(\.|$)")
"""Module names of task heads (kept in float32 by both recipes)."""

DOWN_PROJECTION = re.compile(
    r"((?<!attention)\.output\.dense|DenseReluDense\.wo|mlp\.Wo|mlp\.down_proj)$"
)
"""Module names of feed-forward down-projections (bfloat16 in ``int8_mixed``)."""


def cpu_has_vnni(cpuinfo: str | None = None) -> bool:
    """True when the CPU has 8-bit dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX).

    On those, fbgemm's int8 kernels accumulate u8 x s8 products in int32 without the int16
    saturation of older AVX2/AVX512 kernels, so activations may use the full 8-bit range.
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
    return bool(flags & {"avx512_vnni", "avx_vnni", "amx_int8"})


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
    8 bits on CPUs with VNNI/AMX (`cpu_has_vnni`), else to 7 bits (``reduce_range``, what
    PyTorch's default module does to avoid int16 saturation in pre-VNNI kernels). On RAGTruth
    inputs the full range halves the int8 error of a DeBERTa-v3-small forward pass.

    Parameters
    ----------
    model : torch.nn.Module
        Not modified.
    mixed : bool
        ``int8_mixed``: feed-forward down-projections in bfloat16 instead of int8.
    full_range : bool or None
        None: decide from the CPU.

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
    full = cpu_has_vnni() if full_range is None else full_range
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
