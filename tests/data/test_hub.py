"""Deciding, fast, whether the Hub can be used at all."""

from __future__ import annotations

import socket

import pytest

from runner.data import hub
from runner.errors import DataNotFoundError


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on"])
def test_offline_flag_true_values(monkeypatch, value):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", value)
    assert hub.offline_flag() == "HF_DATASETS_OFFLINE"


@pytest.mark.parametrize("value", ["0", "false", "", "no"])
def test_offline_flag_false_values(monkeypatch, value):
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", value)
    assert hub.offline_flag() is None


def test_probe_sees_a_listening_endpoint(monkeypatch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert hub.hub_reachable(timeout=2.0)


def test_probe_sees_a_closed_endpoint_with_one_bounded_attempt(monkeypatch):
    attempts = []
    real = socket.create_connection

    def counted(address, timeout=None, *args, **kwargs):
        attempts.append((address, timeout))
        return real(address, timeout, *args, **kwargs)

    monkeypatch.setattr(hub.socket, "create_connection", counted)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound but not listening: connection refused
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        assert not hub.hub_reachable(timeout=2.0)
    assert attempts == [(("127.0.0.1", port), 2.0)]  # no retry; the wait is bounded


def test_flag_is_reported_without_probing(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: pytest.fail("probed"))
    assert hub.hub_unavailable_reason() == "HF_HUB_OFFLINE is set"
    with pytest.raises(DataNotFoundError, match=r"HF_HUB_OFFLINE is set\. Do this"):
        hub.load_hub_split("a/b", "test", "Do this.")
