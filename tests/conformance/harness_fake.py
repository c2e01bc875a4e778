"""The engine's FakeLlm under the conformance suite: the fake must keep the contract it stands in for."""

from __future__ import annotations

from adapters.contract import LlmAdapter, TextDelta
from adapters.contract.llm import CONTEXT_WINDOW_EXCEEDED, TRANSPORT
from engine.testing import FakeLlm, Hang, empty_reply, failure, reply, stream_failure, tool_reply
from engine.testing.fake_llm import Emit, Script
from tests.conformance.llm_harness import (
    EMPTY,
    HANG,
    OVERFLOW,
    PROVIDER_ERROR,
    TEXT,
    TOOL,
    TRANSPORT_ERROR,
    Case,
)


def _script(case: Case) -> Script:
    if case.kind == TEXT:
        return reply(case.text)
    if case.kind == TOOL:
        args = case.tool_arguments
        return tool_reply("weather", [args[:7], args[7:19], args[19:]])
    if case.kind == PROVIDER_ERROR:
        return stream_failure("SERVER_ERROR", after="Partial")
    if case.kind == TRANSPORT_ERROR:
        return failure(TRANSPORT)
    if case.kind == EMPTY:
        return empty_reply()
    if case.kind == HANG:
        return [Emit(TextDelta("Hello ")), Hang()]
    return failure(CONTEXT_WINDOW_EXCEEDED, status=400)


class FakeHarness:
    name = "fake"
    _kinds = frozenset({TEXT, TOOL, PROVIDER_ERROR, TRANSPORT_ERROR, EMPTY, HANG, OVERFLOW})

    def __init__(self) -> None:
        self._llm = FakeLlm()

    def supports(self, kind: str) -> bool:
        return kind in self._kinds

    def arrange(self, case: Case) -> LlmAdapter:
        self._llm.push(_script(case))
        return self._llm

    def attempts(self) -> int:
        return len(self._llm.calls)

    async def released(self) -> bool:
        return self._llm.open_streams == 0

    async def aclose(self) -> None:
        return None
