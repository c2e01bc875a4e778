"""Speculative prefill (engine.speculation): the request the next turn would send, read ahead and dropped without a
trace; never a turn, never beside a real generation, quiescent on cancel, and nothing to a remote provider unless
the user opted in (then on the record)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from adapters.contract import CancelSignal, GenerateOptions, StreamChunk, User
from adapters.contract.workers import running
from engine.inbox import UserInput
from engine.prompt import HistoryPrompt
from engine.testing import FakeLlm, reply
from tests.engine_kit import Kit, kit

pytestmark = pytest.mark.anyio
NOON = HistoryPrompt(wall=lambda: dt.datetime(2025, 6, 3, 12, 0, tzinfo=dt.UTC))
QUESTION = "What is the capital of France?"


class RemoteLike:
    """A provider that cannot prefill (like any OpenAI-compatible server): only `stream`."""

    def __init__(self, llm: FakeLlm) -> None:
        self.llm = llm

    @property
    def provider(self) -> str:
        return "remote"

    @property
    def model(self) -> str:
        return "remote-1"

    def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        return self.llm.stream(options, signal)


async def _ended(k: Kit) -> None:
    await k.until(lambda: k.conversation.speculator.current is None, "the speculation to end")


async def test_a_speculation_reads_the_request_the_turn_then_sends(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Paris.")], prompt=NOON) as k:
        assert k.conversation.speculate(QUESTION) is not None
        await _ended(k)
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        (prefill,) = k.llm.prefills
        (request,) = k.llm.calls
        assert prefill.messages == request.messages
        assert k.of_type("metrics/turn")[0]["prefilled"] == 1.0


async def test_a_dropped_speculation_leaves_nothing_on_the_record(tmp_path: Path) -> None:
    async with kit(tmp_path, prompt=NOON) as k:
        spec = k.conversation.speculate("Tell me about")
        assert spec is not None
        spec.drop()
        await _ended(k)
        assert [e["type"] for e in k.of_type("turn/start") + k.of_type("llm/request")] == []
        assert k.llm.calls == []


async def test_the_words_so_far_can_be_left_out(tmp_path: Path) -> None:
    async with kit(tmp_path, prompt=NOON) as k:
        assert k.conversation.speculate("") is not None
        await _ended(k)
        (prefill,) = k.llm.prefills
        assert [m.role for m in prefill.messages] == ["system", "user"]
        assert prefill.messages[-1].content == ""


async def test_a_turn_on_other_words_drops_the_speculation_and_sends_its_own(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Paris.")], prompt=NOON) as k:
        k.llm.prefill_s = 60.0  # reads until stopped
        k.conversation.speculate("What is the capital")
        await k.until(lambda: k.llm.prefill_threads == 1, "the prefill thread")
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert k.llm.prefill_threads == 0
        assert k.llm.calls[0].messages[-1].content == QUESTION
        assert "prefilled" not in k.of_type("metrics/turn")[0]


async def test_cancel_during_the_speculative_window_returns_once_the_prefill_has_ended(tmp_path: Path) -> None:
    async with kit(tmp_path, prompt=NOON) as k:
        k.llm.prefill_s = 60.0
        k.conversation.speculate(QUESTION)
        await k.until(lambda: k.llm.prefill_threads == 1, "the prefill thread")
        await k.conversation.cancel(User())
        assert k.llm.prefill_threads == 0
        assert running() == 0
        assert k.conversation.speculator.current is None


async def test_nothing_is_speculated_while_a_turn_is_live_or_waiting(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("One two three four five six.")], prompt=NOON) as k:
        k.submit("Count to six.")
        await k.until(lambda: k.conversation.live_turn is not None, "the turn")
        assert k.conversation.speculate(QUESTION) is None
        k.conversation.inbox.put(UserInput("And to seven?"))
        await k.until(lambda: k.conversation.live_turn is not None and k.conversation.live_turn.id == 2, "turn 2")
        assert k.conversation.speculate(QUESTION) is None
        assert k.llm.prefills == []


async def test_a_remote_provider_gets_no_speculative_request_unless_the_user_opted_in(tmp_path: Path) -> None:
    llm = FakeLlm([reply("Paris.")])
    async with kit(tmp_path, prompt=NOON, adapter=RemoteLike(llm)) as k:
        assert k.conversation.speculate(QUESTION) is None
        assert k.conversation.speculate("") is None
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert len(llm.calls) == 1
        assert k.of_type("llm/prefill") == []


async def test_an_opted_in_speculative_request_is_on_the_record(tmp_path: Path) -> None:
    llm = FakeLlm([reply("P"), reply("Paris.")])
    async with kit(tmp_path, prompt=NOON, adapter=RemoteLike(llm), speculative_requests=True) as k:
        assert k.conversation.speculate("") is None  # a warm-up without the words is not worth a request
        assert k.conversation.speculate(QUESTION) is not None
        await _ended(k)
        (prefill,) = k.of_type("llm/prefill")
        assert prefill["provider"] == "remote"
        assert "turn" not in prefill
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert [c.max_tokens for c in llm.calls] == [1, None]
        assert len(k.of_type("llm/request")) == 1


async def test_a_speculation_reads_the_journal_as_it_was_when_it_started(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Paris.")], prompt=NOON) as k:
        k.llm.prefill_s = 60.0
        k.conversation.speculate("")
        await k.until(lambda: k.llm.prefill_threads == 1, "the first prefill thread")
        k.llm.prefill_s = 0.005
        k.conversation.speculate(QUESTION)  # starts reading once the first has stopped
        k.submit(QUESTION)  # and the turn starts meanwhile
        await k.until_turn_ended(1)
        contents = [m.content for m in k.llm.prefills[-1].messages]
        assert contents.count(QUESTION) == 1
        assert k.llm.prefills[-1].messages == k.llm.calls[0].messages
