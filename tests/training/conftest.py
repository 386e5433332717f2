"""Detector training tests: tiny models trained for a few steps on a 2-core machine."""

import torch

# Toy models gain nothing from intra-op threads, and on a shared 2-core machine the
# threads' spin-waits dominate (as in tests/verifiers).
torch.set_num_threads(1)
