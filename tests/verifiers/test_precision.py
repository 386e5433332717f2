"""Reduced precision: bf16 autocast and int8 dynamic quantisation stay close to float32."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from runner.errors import ConfigError
from runner.verifiers import DebertaNLIVerifier
from runner.verifiers.int8_setting import INT8_RANGE_ENV
from runner.verifiers.quantization import quantize_int8

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT)])


@pytest.fixture
def fp32(tiny_deberta):
    return DebertaNLIVerifier(model=str(tiny_deberta), batch_size=2).load()


def test_int8_quantises_the_encoder_of_a_copy(fp32):
    int8 = fp32.with_settings(quantize="int8_dynamic")
    assert int8.loaded.model is fp32.loaded.model  # float weights shared, not reloaded
    linears = [n for n, m in int8._prepared.named_modules() if isinstance(m, torch.nn.Linear)]
    assert linears == ["pooler.dense", "classifier"]  # the task head stays float32
    assert any(isinstance(m, torch.nn.Linear) for m in fp32._prepared.modules())
    assert int8.precision_name == "int8-dynamic"


def _int8_error(fp32, frame, full_range):
    int8 = fp32.with_settings()
    int8._prepared = quantize_int8(fp32.loaded.model, full_range=full_range)
    a, b = fp32.score(frame), int8.score(frame)
    return float(np.max(np.abs(a - b))), float(np.corrcoef(a, b)[0, 1])


# None: the range this machine's kernels take (full with VNNI, else reduced); False: the
# reduced range, the choice of CPUs without VNNI, checked here whatever this CPU has.
@pytest.mark.parametrize("full_range", [None, False], ids=["this_cpu", "reduced_range"])
def test_int8_scores_track_float32(fp32, frame, full_range):
    error, corr = _int8_error(fp32, frame, full_range)
    assert error < 0.05
    assert corr > 0.95


CI_KERNELS = """
import sys, numpy as np
from tests.verifiers.conftest import make_frame
from runner.verifiers import DebertaNLIVerifier
from runner.verifiers.quantization import int8_range
fp32 = DebertaNLIVerifier(model=sys.argv[1], batch_size=2).load()
int8 = fp32.with_settings(quantize="int8_dynamic")
frame = make_frame()
a, b = fp32.score(frame), int8.score(frame)
print(int8.runtime_info()["int8_range"]["activation_range"], float(np.max(np.abs(a - b))))
"""


@pytest.mark.parametrize("isa", ["AVX2", "AVX512"])
@pytest.mark.slow
def test_int8_on_pre_vnni_kernels_picks_the_reduced_range_and_tracks_float32(tiny_deberta, isa):
    # fbgemm runs its pre-VNNI kernels when told to (FBGEMM_ENABLE_INSTRUCTIONS), so this
    # machine takes the path of a CPU without AVX512-VNNI, where the full range saturates.
    env = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": isa, "PYTHONPATH": PYTHONPATH}
    env.pop(INT8_RANGE_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", CI_KERNELS, str(tiny_deberta)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    choice, error = done.stdout.split()
    assert choice == "reduced"
    assert float(error) < 0.05


def test_bf16_autocast_tracks_float32(fp32, frame):
    bf16 = fp32.with_settings(dtype="bfloat16")
    assert bf16.precision_name == "bf16-autocast"
    assert np.max(np.abs(fp32.score(frame) - bf16.score(frame))) < 0.05


@pytest.mark.parametrize(
    "settings",
    [
        {"dtype": "float16"},  # CPU has no float16 path
        {"quantize": "int8_dynamic", "dtype": "bfloat16"},  # one reduction at a time
        {"quantize": "int4"},
        {"device": "tpu"},
        {"batch_size": 0},
        {"threads": 0},
    ],
)
def test_impossible_settings_fail_before_loading(tiny_deberta, settings):
    with pytest.raises(ConfigError):
        DebertaNLIVerifier(model=str(tiny_deberta), **settings)


def test_derive_refuses_to_change_the_model(fp32):
    with pytest.raises(ConfigError, match="new verifier"):
        fp32.with_settings(model="other")


def test_set_params_never_leaves_a_stale_model(fp32, frame):
    reference = fp32.with_settings(quantize="int8_dynamic").score(frame)
    changed = fp32.with_settings().set_params(quantize="int8_dynamic")
    np.testing.assert_array_equal(changed.score(frame), reference)
    assert changed.loaded.model is fp32.loaded.model  # an inference setting: weights kept
    assert sum(isinstance(m, torch.nn.Linear) for m in changed._prepared.modules()) == 2
    changed.set_params(seed=7)  # not an inference setting: weights are reloaded on next use
    assert changed._base is None
