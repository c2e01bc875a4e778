"""`parley doctor` says what works and what to fix; `parley devices` never crashes without devices."""

from __future__ import annotations

from dataclasses import replace

import pytest

from desktop.config import Config, LlmConfig, SpeechConfig
from desktop.doctor import devices_table, doctor
from tests.fault_behaviours import status, unauthorized
from tests.fault_server import FaultServer


def _by_name(config: Config) -> dict[str, tuple[bool, str]]:
    return {c.name: (c.ok, c.detail) for c in doctor(config)}


def test_the_packaged_models_are_found() -> None:
    checks = _by_name(Config())
    for name in ("speech recognition model", "Piper voice", "local LLM", "voice activity detector"):
        assert checks[name][0], checks[name]


def test_a_missing_model_path_is_named(tmp_path: object) -> None:
    config = replace(Config(), speech=SpeechConfig(voice_path="/nowhere/voice.onnx"))
    ok, detail = _by_name(config)["Piper voice"]
    assert not ok
    assert "/nowhere/voice.onnx" in detail


def test_an_unreachable_provider_is_reported(fault_server: FaultServer) -> None:
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url="http://127.0.0.1:9/v1", connect_timeout=1))
    ok, detail = _by_name(config)["LLM provider"]
    assert not ok
    assert "cannot be reached" in detail


def test_a_refused_key_is_reported(fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-doctor-test")
    fault_server.push(unauthorized())
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=fault_server.base_url))
    ok, detail = _by_name(config)["LLM provider"]
    assert not ok
    assert "refused the API key" in detail
    assert "sk-doctor-test" not in detail


def test_the_provider_check_keeps_the_urls_query_and_shows_no_credential(fault_server: FaultServer) -> None:
    fault_server.push(status(200, {"object": "list", "data": []}))
    base = fault_server.base_url.replace("http://", "http://me:pw-SECRET@") + "?api-key=qs-SECRET&api-version=1"
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=base))
    ok, detail = _by_name(config)["LLM provider"]
    assert ok, detail
    assert "SECRET" not in detail
    assert "/v1/models?api-key=[redacted]&api-version=1 answered (HTTP 200)" in detail
    assert fault_server.requests[0].path == "/v1/models?api-key=qs-SECRET&api-version=1"


def test_a_wrong_server_address_fails_and_is_named(fault_server: FaultServer) -> None:
    """A 404 passed as "answered HTTP 404" (issue 37): nothing Parley needs is at that address."""
    fault_server.push(status(404, {"error": "not found"}))
    config = replace(Config(), llm=LlmConfig(provider="openai", base_url=fault_server.base_url + "/wrong"))
    ok, detail = _by_name(config)["LLM provider"]
    assert not ok
    assert f"nothing answers at {fault_server.base_url}/wrong/models (HTTP 404)" in detail


def test_devices_table_is_one_readable_answer() -> None:
    table = devices_table()
    assert table.strip()
    assert "Traceback" not in table
