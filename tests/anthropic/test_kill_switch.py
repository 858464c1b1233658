"""The kill switch for real model requests: on in the test suite, it refuses any endpoint but a loopback fake."""

from __future__ import annotations

import os

import pytest

from orchestrator.models import base
from orchestrator.models.anthropic import AnthropicBackend
from orchestrator.models.base import ModelRequestsDisabled, model_requests_allowed
from orchestrator.settings import Settings


def test_the_suite_runs_with_real_model_requests_disabled():
    assert os.environ["INVESTIGATE_ALLOW_MODEL_REQUESTS"] == "0"
    assert not model_requests_allowed(None)  # the SDK's default endpoint is the real API


@pytest.mark.parametrize("url, allowed", [
    (None, False), ("https://api.anthropic.com", False), ("http://10.0.0.1:8080", False),
    ("http://user:pw@proxy.example:443/v1", False), ("http://127.0.0.1:5000", True), ("http://localhost:9/x", True),
    ("http://[::1]:8000", True), ("http://127.9.9.9", True), ("not a url", False),
])
def test_only_loopback_endpoints_pass_while_disabled(url, allowed):
    assert model_requests_allowed(url) is allowed


def test_a_backend_refuses_to_make_a_client_for_the_real_api(monkeypatch):
    backend = AnthropicBackend(Settings(), api_key="sk-ant-api03-NOTAREALKEY")
    with pytest.raises(ModelRequestsDisabled) as err:
        backend.client()
    assert "api.anthropic.com" in str(err.value) and "NOTAREALKEY" not in str(err.value)
    assert backend._client is None


def test_the_switch_can_be_turned_back_on(monkeypatch):
    monkeypatch.setenv("INVESTIGATE_ALLOW_MODEL_REQUESTS", "1")
    assert model_requests_allowed(None)
    monkeypatch.setattr(base, "ALLOW_MODEL_REQUESTS", False)
    assert not model_requests_allowed("https://api.anthropic.com")
