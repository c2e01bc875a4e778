"""SPEC §4-§5: one signal per turn, cancel at every stage, quiescence before `cancel()` returns."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from adapters.contract import CancelSignal, Message, TextDelta, ToolCallDelta, ToolSpec, User
from adapters.runtime.workers import run_blocking
from engine.events import State, TextGenerated
from engine.history import CUT_NOTE
from engine.inbox import UserInput
from engine.journal import Event
from engine.prompt import HistoryPrompt
from engine.testing import Hang, Stubborn, reply, tool_reply
from engine.testing.fake_llm import Emit
from engine.tools import Tool, ToolRegistry
from tests.engine_kit import Kit, kit

pytestmark = pytest.mark.anyio


async def cancel_and_check(k: Kit, *, keep_inbox: bool = False) -> None:
    """Cancel the live turn; when `cancel()` returns, none of its tasks or thread jobs may still run."""
    turn = k.conversation.live_turn
    assert turn is not None
    await k.conversation.cancel(User(), keep_inbox=keep_inbox)
    assert turn.quiescent, turn.pending()
    assert turn.finished.is_set()


def assert_closed_cleanly(k: Kit, turn: int = 1) -> None:
    """Exactly one turn/end, every call answered once, nothing of the turn still running."""
    assert len(k.of_type("turn/end", turn)) == 1
    calls = [e["call_id"] for e in k.of_type("tool/call", turn)]
    results = [e["call_id"] for e in k.of_type("tool/result", turn)]
    assert sorted(calls) == sorted(results)
    assert k.conversation.live_turn is None or k.conversation.live_turn.id != turn
    assert k.llm.open_streams == 0


class GatedPrompt(HistoryPrompt):
    """Prompt assembly that blocks until released, to cancel inside that stage."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()
        self.signals: list[CancelSignal] = []

    async def build(self, events: Sequence[Event], signal: CancelSignal, *, drop_oldest: int) -> tuple[Message, ...]:
        self.signals.append(signal)
        self.entered.set()
        await signal.wait()
        return ()


async def test_cancel_during_prompt_assembly_sends_nothing(tmp_path: Path) -> None:
    prompt = GatedPrompt()
    async with kit(tmp_path, prompt=prompt) as k:
        k.submit("Hi")
        await prompt.entered.wait()
        await cancel_and_check(k)
        assert k.llm.calls == []
        assert k.of_type("turn/end")[0]["outcome"] == "aborted"
        assert_closed_cleanly(k)


async def test_cancel_while_the_request_is_pending_closes_the_stream(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Hang()]]) as k:
        k.submit("Hi")
        await k.until(lambda: k.llm.open_streams == 1, "the request")
        await cancel_and_check(k)
        assert not k.of_type("assistant/message")
        assert_closed_cleanly(k)


async def test_cancel_mid_stream_keeps_only_the_heard_words(tmp_path: Path) -> None:
    script = [Emit(TextDelta("One ")), Emit(TextDelta("two ")), Emit(TextDelta("three ")), Hang()]
    async with kit(tmp_path, [script], autojump=False) as k:
        k.submit("Count")
        await k.until(lambda: len(k.speech.report(1)) == 3, "three spoken segments")
        await k.clock.advance(0.7)  # 300 ms a word: "One", "two", a third of "three"
        await cancel_and_check(k)
        (message,) = k.of_type("assistant/message")
        assert message["text"] == "One two"
        assert message["interrupted"] is True
        assert message["heard_ms"] == pytest.approx(700, abs=1)
        assert message["generated_chars"] == len("One two three ")
        assert k.of_type("turn/end")[0]["outcome"] == "aborted"
        assert "quiesce_ms" in k.of_type("metrics/turn")[0]
        assert_closed_cleanly(k)


async def test_cancel_before_anything_was_heard_writes_no_assistant_message(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Emit(TextDelta("Unheard words")), Hang()]], autojump=False) as k:
        k.submit("Hi")
        await k.until(lambda: bool(k.speech.report(1)), "speech")
        await cancel_and_check(k)
        assert not k.of_type("assistant/message")
        assert_closed_cleanly(k)


async def test_history_holds_only_what_was_heard(tmp_path: Path) -> None:
    long = [Emit(TextDelta("Alpha ")), Emit(TextDelta("beta ")), Emit(TextDelta("gamma")), Hang()]
    async with kit(tmp_path, [long, reply("Next.")], autojump=False) as k:
        k.submit("first")
        await k.until(lambda: len(k.speech.report(1)) == 3, "speech")
        await k.clock.advance(0.35)
        await k.conversation.cancel(User(), keep_inbox=True)
        k.submit("second")
        await k.until(lambda: len(k.llm.calls) == 2, "second request")
        sent = [(m.role, m.content) for m in k.llm.calls[1].messages if m.role != "system"]
        assert sent == [("user", "first"), ("assistant", "Alpha"), ("user", f"second\n{CUT_NOTE}")]  # heard, then cut


def _tools(*tools: Tool) -> ToolRegistry:
    return ToolRegistry(tools)


def _tool(name: str, body: Any, *, timeout_s: float = 30, needs_approval: bool = False) -> Tool:
    return Tool(ToolSpec(name, f"{name} tool"), body, timeout_s=timeout_s, needs_approval=needs_approval)


async def test_cancel_while_a_tool_runs_gives_aborted_and_before_dispatch_for_the_rest(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(arguments: str, signal: CancelSignal) -> str:
        started.set()
        await signal.wait()
        return "unreachable"

    two_calls = [
        Emit(ToolCallDelta(0, "{}", "c1", "slow")),
        Emit(ToolCallDelta(1, "{}", "c2", "slow")),
        *reply("")[-2:],
    ]
    async with kit(tmp_path, [two_calls], tools=_tools(_tool("slow", slow))) as k:
        k.submit("Do two things")
        await started.wait()
        await cancel_and_check(k)
        codes = {e["call_id"]: e["code"] for e in k.of_type("tool/result")}
        assert codes == {"c1": "ABORTED", "c2": "ABORTED_BEFORE_DISPATCH"}
        assert_closed_cleanly(k)


async def test_cancel_during_approval_is_aborted_before_dispatch(tmp_path: Path) -> None:
    asked = asyncio.Event()
    ran: list[str] = []

    async def approver(call: Any, signal: CancelSignal) -> bool:
        asked.set()
        await signal.wait()
        return True

    async def write(arguments: str, signal: CancelSignal) -> str:
        ran.append(arguments)
        return "written"

    registry = ToolRegistry([_tool("write", write, needs_approval=True)], approver=approver)
    async with kit(tmp_path, [tool_reply("write", ['{"x":', "1}"])], tools=registry) as k:
        k.submit("Write it")
        await asked.wait()
        await cancel_and_check(k)
        assert [e["code"] for e in k.of_type("tool/result")] == ["ABORTED_BEFORE_DISPATCH"]
        assert ran == []
        assert k.of_type("tool/call")[0]["arguments"] == '{"x":1}'
        assert_closed_cleanly(k)


async def test_a_tool_past_its_timeout_gets_tool_timeout_and_the_turn_goes_on(tmp_path: Path) -> None:
    async def forever(arguments: str, signal: CancelSignal) -> str:
        await asyncio.Event().wait()
        return "never"

    registry = _tools(_tool("forever", forever, timeout_s=2))
    async with kit(tmp_path, [tool_reply("forever", ["{}"]), reply("It took too long.")], tools=registry) as k:
        k.submit("Go")
        await k.until_turn_ended(1)
        assert [e["code"] for e in k.of_type("tool/result")] == ["TOOL_TIMEOUT"]
        assert k.of_type("turn/end")[0]["outcome"] == "completed"
        tool_message = [m for m in k.llm.calls[1].messages if m.role == "tool"]
        assert tool_message[0].tool_call_id == "call_1"
        assert_closed_cleanly(k)


async def test_cancel_in_a_thread_job_waits_for_the_thread_to_return(tmp_path: Path) -> None:
    inside = threading.Event()
    finished = threading.Event()

    async def blocking(arguments: str, signal: CancelSignal) -> str:
        def work() -> str:
            inside.set()
            while not signal.wait_blocking(0.005):
                pass
            finished.set()
            return "stopped"

        return await run_blocking(work)

    async with kit(tmp_path, [tool_reply("block", ["{}"])], tools=_tools(_tool("block", blocking))) as k:
        k.submit("Go")
        await asyncio.to_thread(inside.wait, 5)
        await cancel_and_check(k)
        assert finished.is_set(), "cancel() returned before the worker thread did"
        assert [e["code"] for e in k.of_type("tool/result")] == ["ABORTED"]
        assert_closed_cleanly(k)


async def test_a_component_that_ignores_cancel_keeps_the_turn_stopping(tmp_path: Path) -> None:
    stubborn = Stubborn()
    try:
        async with kit(tmp_path, [[Emit(TextDelta("Hmm ")), stubborn]]) as k:
            k.submit("Hi")
            await k.until(lambda: k.conversation.state is State.SPEAKING, "speaking")
            await asyncio.to_thread(stubborn.entered.wait, 10)
            cancelling = asyncio.create_task(k.conversation.cancel(User()))
            await k.until_state(State.STOPPING)
            for _ in range(200):
                await asyncio.sleep(0)
            assert not cancelling.done()
            assert k.conversation.state is State.STOPPING
            assert k.conversation.live_turn is not None
            assert k.conversation.live_turn.pending() == ["turn1:answer"]
            assert not k.of_type("turn/end")
            stubborn.release.set()
            await cancelling
            assert k.conversation.state is State.IDLE
            assert_closed_cleanly(k)
    finally:
        stubborn.release.set()


async def test_keep_inbox_aborts_only_the_current_turn(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Hang()], reply("Second."), reply("Third.")]) as k:
        for text in ("one", "two", "three"):
            k.submit(text)
        await k.until(lambda: k.llm.open_streams == 1, "first request")
        await k.conversation.cancel(User(), keep_inbox=True)
        await k.until_turn_ended(3)
        assert [e["outcome"] for e in k.of_type("turn/end")] == ["aborted", "completed", "completed"]


async def test_cancel_without_keep_inbox_clears_queued_input(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Hang()], reply("never")]) as k:
        k.submit("one")
        k.submit("two")
        await k.until(lambda: k.llm.open_streams == 1, "first request")
        await cancel_and_check(k)
        assert len(k.conversation.inbox) == 0
        k.submit("three")
        await k.until_turn_ended(2)
        assert [e["text"] for e in k.of_type("user/message")] == ["one", "three"]


async def test_every_turn_gets_a_fresh_signal(tmp_path: Path) -> None:
    prompt = GatedPrompt()
    async with kit(tmp_path, prompt=prompt) as k:
        k.submit("a")
        await prompt.entered.wait()
        prompt.entered.clear()
        await k.conversation.cancel(User(), keep_inbox=True)
        k.submit("b")
        await prompt.entered.wait()
        assert prompt.signals[0].cancelled
        assert not prompt.signals[1].cancelled
        assert prompt.signals[0] is not prompt.signals[1]
        await cancel_and_check(k)


async def test_late_events_of_an_old_turn_are_dropped_by_the_gate(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Hang()], [Hang()]]) as k:
        k.submit("a")
        await k.until(lambda: k.llm.open_streams == 1, "request")
        await k.conversation.cancel(User(), keep_inbox=True)
        k.submit("b")
        await k.until(lambda: k.conversation.live_turn is not None, "second turn")
        before = len(k.events)
        assert not k.conversation.gate.publish(TextGenerated(1, 1, 1, "late tail"))
        assert len(k.events) == before
        assert k.conversation.gate.publish(TextGenerated(2, 1, 1, "live"))
        await cancel_and_check(k)


async def test_disposing_the_conversation_aborts_the_live_turn_and_waits(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Hang()]]) as k:
        k.conversation.submit(UserInput("Hi", source="voice"))
        await k.until(lambda: k.llm.open_streams == 1, "request")
    assert [e["outcome"] for e in k.of_type("turn/end")] == ["aborted"]
    assert k.of_type("turn/start")[0]["source"] == "voice"
    assert k.llm.open_streams == 0
