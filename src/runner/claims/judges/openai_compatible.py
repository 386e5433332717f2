"""A judge behind any OpenAI-style chat endpoint: vLLM, Ollama, llama.cpp's server, ...

Why plain HTTP: every local serving stack speaks ``POST <base_url>/chat/completions``, so
one small client covers them all without an SDK. ``base_url`` includes the version prefix
(``http://127.0.0.1:8080/v1``). Decoding is greedy (``temperature: 0``, ``top_p: 1``)
with a bounded ``max_tokens`` and the judge's ``seed``; servers that ignore ``seed`` are
still deterministic under greedy decoding. The API key, when the server wants one, is read
from the environment variable named by ``api_key_env``, never from the config file.

A failed request (connection refused, timeout, HTTP error, a reply without a message) is
a `JudgeBackendError` naming the endpoint: a broken server stops the run instead of
turning into abstentions.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from dataclasses import field
from typing import Any

from runner.claims.judges.base import JudgeBackendError, LLMJudge
from runner.errors import ConfigError
from runner.settings import settings_class


@settings_class()
class OpenAICompatibleJudge(LLMJudge):
    """LLM judge that asks an OpenAI-compatible chat-completions endpoint.

    Besides `LLMJudge`'s fields (name, family, prompt, ...), the endpoint's:

    Parameters
    ----------
    base_url : str
        Endpoint root including the version, e.g. ``http://127.0.0.1:8080/v1``.
    model : str
        Model name as the server knows it.
    api_key_env : str, optional
        Name of the environment variable holding a bearer token.
    timeout_s : float
        Per-request timeout in seconds.
    extra_body : dict
        Extra request fields for a particular server (e.g. ``{"options": {...}}``); may not
        override the decoding fields.
    """

    backend = "openai_compatible"
    _FIXED = ("model", "messages", "temperature", "top_p", "max_tokens", "seed", "stream")

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_s: float = 120.0
    extra_body: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check the endpoint and the extra request fields (nothing is sent yet)."""
        super().__post_init__()
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"judge {self.name!r}: base_url must be http(s)://..., got {self.base_url!r}"
            )
        clash = sorted(set(self.extra_body or {}) & set(self._FIXED))
        if clash:
            raise ConfigError(f"judge {self.name!r}: extra_body may not set {clash}")
        self.base_url = self.base_url.rstrip("/")
        self.timeout_s = float(self.timeout_s)
        self.extra_body = dict(self.extra_body or {})

    def model_id(self) -> str:
        """``<model>@<base_url>``."""
        return f"{self.model}@{self.base_url}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ConfigError(
                    f"judge {self.name!r}: environment variable {self.api_key_env} is not set"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def generate(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        """The endpoint's greedy answer to ``messages``."""
        body = {
            **self.extra_body,
            "model": self.model,
            "messages": messages,
            "temperature": 0.0,
            "top_p": 1.0,
            "max_tokens": max_new_tokens,
            "seed": self.seed,
            "stream": False,
        }
        url = f"{self.base_url}/chat/completions"
        request = urllib.request.Request(
            url, data=json.dumps(body).encode("utf-8"), headers=self._headers(), method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            raise JudgeBackendError(
                f"judge {self.name!r}: {url} answered HTTP {exc.code}: {detail}"
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise JudgeBackendError(f"judge {self.name!r}: cannot reach {url}: {exc}") from exc
        try:
            content = json.loads(payload)["choices"][0]["message"]["content"]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
            raise JudgeBackendError(
                f"judge {self.name!r}: {url} sent no chat message: {payload[:300]!r}"
            ) from exc
        if not isinstance(content, str):
            raise JudgeBackendError(f"judge {self.name!r}: {url} sent non-text content {content!r}")
        return content

    def describe(self) -> dict[str, Any]:
        """`LLMJudge.describe` plus the endpoint."""
        return {**super().describe(), "base_url": self.base_url, "timeout_s": self.timeout_s}
