"""The OpenAI-compatible backend against a real server: llama.cpp's, serving SmolLM2-135M.

The server (`python -m llama_cpp.server`, package llama-cpp-python[server]) is started on
127.0.0.1 on a free port by the fixture and stopped by its PID afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.claims.judges import JudgeBackendError, OpenAICompatibleJudge
from runner.errors import ConfigError

CLAIMS = [
    (
        "Where is the tower?",
        "The Eiffel Tower is in Paris.",
        ["The Eiffel Tower is a wrought-iron tower in Paris, France."],
    ),
    (
        "",
        "The Eiffel Tower is made of wood.",
        ["The Eiffel Tower is a wrought-iron tower in Paris, France."],
    ),
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(gguf, log: Path) -> Iterator[str]:
    """Start a llama.cpp server on a free port; yield its base URL; stop it by PID.

    Threads (prompt and generation alike) and the seed are fixed, so two servers started
    alike compute alike on any machine.
    """
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.fail("llama-cpp-python[server]==0.3.36 is not installed (see docs/claims_format.md)")
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "2",
        "--n_threads_batch",
        "2",
        "--model_alias",
        "smollm2",
        "--seed",
        "13",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited ({proc.returncode}):\n{log.read_text()}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    models = json.loads(response.read())
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server not up after 120 s:\n{log.read_text()}")
                time.sleep(0.5)
        assert [m["id"] for m in models["data"]] == ["smollm2"]
        yield base_url
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def llama_server(smollm2_gguf, tmp_path_factory):
    """Base URL of a running llama.cpp server shared by the module's tests."""
    with serving(smollm2_gguf, tmp_path_factory.mktemp("llama_server") / "server.log") as url:
        yield url


def judge(base_url: str, **kw) -> OpenAICompatibleJudge:
    # A generous request timeout: a loaded 2-core machine can take minutes over a long
    # prompt, and these tests are about what the server answers, not how fast.
    return OpenAICompatibleJudge(
        base_url=base_url,
        model="smollm2",
        name="smollm2_server",
        family="smollm2-135m",
        max_new_tokens=kw.pop("max_new_tokens", 48),
        timeout_s=kw.pop("timeout_s", 900.0),
        **kw,
    )


@pytest.mark.slow
def test_a_real_server_judges_claims_and_fails_closed(llama_server):
    j = judge(llama_server)
    for question, claim, passages in CLAIMS:
        verdict = j.judge(question, claim, passages)
        assert verdict.outputs and all(isinstance(o, str) for o in verdict.outputs)
        assert verdict.calls == len(verdict.outputs) in (1, 2)
        assert verdict.label in ("green", "yellow", "red")
        if verdict.abstained:
            assert verdict.label == "yellow" and verdict.parsed_label is None
        else:
            assert verdict.parsed_label == verdict.label


@pytest.mark.slow
def test_greedy_requests_give_the_same_answer_on_servers_started_alike(smollm2_gguf, tmp_path):
    # What the server guarantees: the same requests from the same state give the same text.
    # Asking one server twice is not that: llama-cpp-python reuses the cached prefix and
    # evaluates only the rest, in batches of another shape, so a near tie can flip.
    question, claim, passages = CLAIMS[0]
    outputs = []
    for attempt in ("first", "second"):
        with serving(smollm2_gguf, tmp_path / f"{attempt}.log") as url:
            outputs.append(judge(url).judge(question, claim, passages).outputs)
    assert outputs[0] == outputs[1]
    assert outputs[0] and all(isinstance(o, str) for o in outputs[0])


@pytest.mark.slow
def test_the_answer_length_is_bounded_by_max_tokens(llama_server):
    j = judge(llama_server, max_new_tokens=5, repair="none")
    text = j.generate([{"role": "user", "content": "Write a long story about a tower."}], 5)
    assert 0 < len(text.split()) <= 8


@pytest.mark.slow
def test_a_wrong_endpoint_is_a_backend_error_naming_the_url(llama_server):
    wrong = llama_server.replace("/v1", "/v9")
    with pytest.raises(JudgeBackendError, match="HTTP 404"):
        judge(wrong).judge(*CLAIMS[0])


def test_a_closed_port_is_a_backend_error_not_an_abstention():
    j = judge(f"http://127.0.0.1:{free_port()}/v1", timeout_s=5)
    with pytest.raises(JudgeBackendError, match="cannot reach"):
        j.judge(*CLAIMS[0])


def test_settings_are_checked_before_any_request(monkeypatch):
    with pytest.raises(ConfigError, match="base_url"):
        judge("127.0.0.1:8080/v1")
    with pytest.raises(ConfigError, match="extra_body may not set"):
        judge("http://127.0.0.1:1/v1", extra_body={"temperature": 1.0})
    with pytest.raises(ConfigError, match="prefill"):
        judge("http://127.0.0.1:1/v1", repair="prefill")
    monkeypatch.delenv("RUNNER_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="RUNNER_TEST_KEY is not set"):
        judge("http://127.0.0.1:1/v1", api_key_env="RUNNER_TEST_KEY").judge(*CLAIMS[0])
    monkeypatch.setenv("RUNNER_TEST_KEY", "secret")
    headers = judge("http://127.0.0.1:1/v1", api_key_env="RUNNER_TEST_KEY")._headers()
    assert headers["Authorization"] == "Bearer secret"


def test_describe_names_the_endpoint():
    info = judge("http://127.0.0.1:1/v1/").describe()
    assert info["backend"] == "openai_compatible" and info["base_url"] == "http://127.0.0.1:1/v1"
    assert info["model"] == "smollm2@http://127.0.0.1:1/v1"
