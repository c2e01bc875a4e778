"""The engine's retry layer on top of the real HTTP adapter and the fault-injecting server."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret
from tests.engine_kit import kit
from tests.fault_behaviours import rate_limited, text_stream, unauthorized
from tests.fault_server import FaultServer

pytestmark = pytest.mark.anyio
KEY = "sk-test-SECRET"


def _adapter(server: FaultServer) -> OpenAICompatAdapter:
    return OpenAICompatAdapter(server.base_url, "test-model", Secret(KEY), idle_timeout=2.0)


async def test_429_then_success_is_retried_after_the_providers_delay(tmp_path: Path, fault_server: FaultServer) -> None:
    fault_server.push(rate_limited("2"), text_stream("All good now."))
    async with kit(tmp_path, adapter=_adapter(fault_server)) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        assert len(k.of_type("llm/request")) == 2
        (attempt,) = k.of_type("assistant/attempt")
        assert attempt["failure"]["code"] == "RATE_LIMITED"
        assert attempt["failure"]["status"] == 429
        (retry,) = k.of_type("llm/retry")
        assert retry["delay_ms"] == 2000
        assert k.of_type("turn/end")[0]["outcome"] == "completed"
        assert k.of_type("assistant/message")[0]["text"] == "All good now."
    assert len(fault_server.requests) == 2
    assert KEY not in (tmp_path / "journal.jsonl").read_text()


async def test_401_is_one_request_and_a_failed_turn_with_auth(tmp_path: Path, fault_server: FaultServer) -> None:
    fault_server.push(unauthorized())
    async with kit(tmp_path, adapter=_adapter(fault_server)) as k:
        k.submit("Hi")
        await k.until_turn_ended(1)
        (end,) = k.of_type("turn/end")
        assert end["outcome"] == "failed"
        assert end["failure"]["code"] == "AUTH"
        assert not k.of_type("llm/retry")
    assert len(fault_server.requests) == 1
