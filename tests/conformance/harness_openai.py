"""The OpenAI-compatible adapter under the conformance suite, against a real misbehaving HTTP server."""

from __future__ import annotations

import asyncio

from adapters.contract import LlmAdapter
from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret
from tests import fault_behaviours as faults
from tests.conformance.llm_harness import (
    EMPTY,
    HANG,
    OVERFLOW,
    PROVIDER_ERROR,
    STALL,
    TEXT,
    TOOL,
    TRANSPORT_ERROR,
    Case,
)
from tests.fault_behaviours import Behaviour
from tests.fault_server import FaultServer

STALL_IDLE_TIMEOUT = 0.5
RELEASE_BOUND = 3.0


def _behaviour(case: Case) -> Behaviour:
    if case.kind == TEXT:
        return faults.text_stream(case.text)
    if case.kind == TOOL:
        return faults.tool_call(case.tool_arguments)
    if case.kind == PROVIDER_ERROR:
        return faults.error_in_stream(after="Partial")
    if case.kind == TRANSPORT_ERROR:
        return faults.reset_mid_stream("Hello ")
    if case.kind == EMPTY:
        return faults.empty_completion()
    if case.kind in (STALL, HANG):
        return faults.stall_mid_stream("Hello ")
    return faults.context_overflow()


class OpenAIHarness:
    """Starts its fault server on first use (the suite builds probe harnesses it never closes)."""

    name = "openai"
    _kinds = frozenset({TEXT, TOOL, PROVIDER_ERROR, TRANSPORT_ERROR, EMPTY, STALL, HANG, OVERFLOW})

    def __init__(self) -> None:
        self._server: FaultServer | None = None

    def supports(self, kind: str) -> bool:
        return kind in self._kinds

    def arrange(self, case: Case) -> LlmAdapter:
        if self._server is None:
            self._server = FaultServer().start()
        self._server.push(_behaviour(case))
        idle = STALL_IDLE_TIMEOUT if case.kind == STALL else 10.0
        return OpenAICompatAdapter(self._server.base_url, "fault-1", Secret("sk-conformance"), idle_timeout=idle)

    def attempts(self) -> int:
        return len(self._server.requests) if self._server else 0

    async def released(self) -> bool:
        """Every connection the server saw has been closed (bounded poll)."""
        return self._server is None or await self._server.until(self._server.all_closed, RELEASE_BOUND)

    async def aclose(self) -> None:
        if self._server is not None:
            await asyncio.to_thread(self._server.stop)
