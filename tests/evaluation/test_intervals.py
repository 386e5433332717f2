"""1 - δ as printed: never rounded up to a certainty it is not."""

from __future__ import annotations

import pytest

from runner.evaluation import confidence_text


@pytest.mark.parametrize(
    ("delta", "text"),
    [(0.1, "0.9"), (0.05, "0.95"), (0.5, "0.5"), (1e-6, "0.999999"), (1e-9, "1 - 1e-09"),
     (0.123456789, "1 - 0.123456789")],
)  # fmt: skip
def test_one_minus_delta_is_printed_exactly(delta, text):
    assert confidence_text(delta) == text


@pytest.mark.parametrize("delta", [1e-7, 1e-9, 1e-15, 2.5e-8])
def test_a_tiny_delta_never_reads_as_probability_one(delta):
    text = confidence_text(delta)
    assert text != "1" and text.startswith("1 - ")
    assert float(text.removeprefix("1 - ")) == delta
