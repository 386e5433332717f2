"""Deciding, fast, whether the Hub can be used at all."""

from __future__ import annotations

import socket
import time

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


def test_probe_sees_a_closed_endpoint_quickly(monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound but not listening: connection refused
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        start = time.perf_counter()
        assert not hub.hub_reachable(timeout=2.0)
        assert time.perf_counter() - start < 2.5


def test_flag_is_reported_without_probing(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: pytest.fail("probed"))
    assert hub.hub_unavailable_reason() == "HF_HUB_OFFLINE is set"
    with pytest.raises(DataNotFoundError, match=r"HF_HUB_OFFLINE is set\. Do this"):
        hub.load_hub_split("a/b", "test", "Do this.")
