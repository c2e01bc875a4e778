"""Tool registry and dispatch with side-effect-aware cancellation codes (SPEC §5)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import anyio

from adapters.contract import CancelSignal, ToolCall, ToolSpec, stopped
from adapters.contract.clock import Clock
from adapters.runtime.tasks import open_tasks
from engine.turn import Turn

OK = "OK"
TOOL_ERROR = "TOOL_ERROR"
UNKNOWN_TOOL = "UNKNOWN_TOOL"
DENIED = "DENIED"
ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
ABORTED = "ABORTED"
TOOL_TIMEOUT = "TOOL_TIMEOUT"

ToolBody = Callable[[str, CancelSignal], Awaitable[str]]
Approver = Callable[[ToolCall, CancelSignal], Awaitable[bool]]


@dataclass(frozen=True)
class Tool:
    """A tool gets the model's raw JSON arguments and the turn's signal; parsing is its own business."""

    spec: ToolSpec
    body: ToolBody
    timeout_s: float = 30.0
    needs_approval: bool = False
    side_effects: bool = False


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    code: str
    output: str


async def approve_all(call: ToolCall, signal: CancelSignal) -> bool:
    return True


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = (), approver: Approver = approve_all) -> None:
        self._tools = {tool.spec.name: tool for tool in tools}
        self.approver = approver

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)


class ToolRunner:
    """Runs one call; `phase_codes` says, at any instant, which code a cancel right now would mean."""

    def __init__(self, registry: ToolRegistry, clock: Clock) -> None:
        self._registry = registry
        self._clock = clock
        self.phase_codes: dict[str, str] = {}

    async def run(self, turn: Turn, call: ToolCall) -> ToolResult:
        self.phase_codes[call.call_id] = ABORTED_BEFORE_DISPATCH
        tool = self._registry.get(call.name)
        if tool is None:
            return ToolResult(call.call_id, UNKNOWN_TOOL, f"there is no tool named {call.name!r}")
        if tool.needs_approval and not await self._registry.approver(call, turn.signal):
            return ToolResult(call.call_id, DENIED, "the user declined this tool call")
        if turn.signal.cancelled:
            await stopped()
        self.phase_codes[call.call_id] = ABORTED
        return await self._dispatch(turn, tool, call)

    async def _dispatch(self, turn: Turn, tool: Tool, call: ToolCall) -> ToolResult:
        """The body under the tool's timeout (on the injected clock); a cancel of the turn passes through."""
        outcome: list[ToolResult] = []
        with anyio.CancelScope() as scope:
            async with open_tasks() as tasks:
                tasks.start(self._time_out, tool.timeout_s, scope, name=f"tool-timeout:{call.name}")
                outcome.append(await _body(tool, call, turn.signal))
                tasks.cancel()
        if not outcome:  # only the timeout cancels this scope; the turn's cancel is raised, not caught
            return ToolResult(call.call_id, TOOL_TIMEOUT, f"gave up after {tool.timeout_s:g} s")
        return outcome[0]

    async def _time_out(self, seconds: float, scope: anyio.CancelScope) -> None:
        await self._clock.sleep(seconds)
        scope.cancel()


async def _body(tool: Tool, call: ToolCall, signal: CancelSignal) -> ToolResult:
    try:
        output = await tool.body(call.arguments, signal)
    except Exception as error:  # noqa: BLE001 (a tool's failure is its result, given to the model)
        return ToolResult(call.call_id, TOOL_ERROR, f"{type(error).__name__}: {error}")
    return ToolResult(call.call_id, OK, output)
