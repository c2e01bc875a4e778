"""A reply has a length limit: `max_tokens` on every request, and a duration the engine enforces itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.contract import TextDelta, User
from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret
from desktop.config import Config, LlmConfig
from desktop.pipeline.parts import llm_choice
from engine.retry import Budgets
from engine.testing import Emit, Hang, reply
from tests.engine_kit import Kit, kit
from tests.fault_behaviours import endless_stream, text_stream
from tests.fault_server import FaultServer

pytestmark = pytest.mark.anyio
KEY = "sk-test-SECRET"


def _adapter(server: FaultServer) -> OpenAICompatAdapter:
    return OpenAICompatAdapter(server.base_url, "test-model", Secret(KEY), idle_timeout=2.0)


async def _finish_turn(k: Kit, turn: int) -> None:
    """Let virtual time run (the queued words play out) until the turn has ended."""
    async with k.clock.autojump():
        await k.until_turn_ended(turn)


async def test_the_configured_max_tokens_is_on_the_request_body(
    tmp_path: Path, fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", KEY)
    fault_server.push(text_stream("Short."), text_stream("Also short."))
    for turn, llm in enumerate((LlmConfig(max_tokens=123), LlmConfig()), start=1):
        config = Config(llm=LlmConfig(**{**vars(llm), "provider": "openai", "base_url": fault_server.base_url}))
        adapter = llm_choice(config, None).adapter
        async with kit(tmp_path / str(turn), adapter=adapter) as k:
            k.submit("Hi")
            await k.until_turn_ended(1)
    assert [r.json["max_tokens"] for r in fault_server.requests] == [123, 300]


async def test_a_provider_that_streams_forever_is_closed_at_the_reply_limit(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(endless_stream("la ", every_s=0.02))
    budgets = Budgets(retries=0, reply_s=5.0)
    # 10 ms of speech a word: the queued speech stays far below the limit, so only time can reach it
    async with kit(tmp_path, budgets=budgets, adapter=_adapter(fault_server), autojump=False, ms_per_word=10) as k:
        k.submit("Sing forever")
        assert await fault_server.until(lambda: len(k.speech.report(1)) >= 3)
        await k.clock.advance(4.9)
        seen = len(k.speech.report(1))
        assert await fault_server.until(lambda: len(k.speech.report(1)) >= seen + 3), "still streaming at 4.9 s"
        assert not fault_server.closed(0)
        await k.clock.advance(0.1)
        assert await fault_server.until_closed(0)
        assert fault_server.connections[0].closed_by == "client"
        await _finish_turn(k, 1)
        (end,) = k.of_type("turn/end")
        (message,) = k.of_type("assistant/message")
        assert not k.of_type("assistant/attempt")
    assert end["outcome"] == "completed"
    assert message["text"].startswith("la la la")
    assert set(message["text"].split()) == {"la"}
    assert (message["finish"], message["reply_limit_s"], message["interrupted"]) == ("length", 5.0, False)
    assert len(fault_server.requests) == 1
    assert fault_server.all_closed()


async def test_a_reply_whose_queued_speech_reaches_the_limit_is_closed_at_once(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(endless_stream("la ", every_s=0.005))
    budgets = Budgets(retries=0, reply_s=3.0)
    async with kit(tmp_path, budgets=budgets, adapter=_adapter(fault_server), autojump=False) as k:
        started = k.clock.now()
        k.submit("Sing forever")
        assert await fault_server.until_closed(0)
        assert k.clock.now() == started, "no time passed: the speech (300 ms a word), not the clock, hit the limit"
        await _finish_turn(k, 1)
        (message,) = k.of_type("assistant/message")
    assert message["text"] == " ".join(["la"] * 10)  # 10 words = 3 s of speech
    assert (message["finish"], message["reply_limit_s"]) == ("length", 3.0)
    assert fault_server.connections[0].closed_by == "client"


async def test_a_stream_with_nothing_to_say_by_the_limit_is_a_timeout_and_retried(tmp_path: Path) -> None:
    budgets = Budgets(retries=1, reply_s=2.0)
    async with kit(tmp_path, [[Hang()], reply("Here I am.")], budgets=budgets) as k:
        k.submit("Hello?")
        await k.until_turn_ended(1)
        (attempt,) = k.of_type("assistant/attempt")
        (message,) = k.of_type("assistant/message")
        (end,) = k.of_type("turn/end")
    assert attempt["failure"]["code"] == "TIMEOUT"
    assert "reply limit of 2 s" in attempt["failure"]["message"]
    assert (message["text"], message["finish"]) == ("Here I am.", "stop")
    assert "reply_limit_s" not in message
    assert end["outcome"] == "completed"
    assert k.llm.open_streams == 0


async def test_a_barge_in_under_an_armed_limit_is_an_abort_not_a_cut(tmp_path: Path) -> None:
    script = [Emit(TextDelta("One ")), Emit(TextDelta("two ")), Hang()]
    async with kit(tmp_path, [script], budgets=Budgets(reply_s=30.0), autojump=False) as k:
        k.submit("Count")
        await k.until(lambda: len(k.speech.report(1)) == 2, "two spoken segments")
        turn = k.conversation.live_turn
        assert turn is not None
        await k.clock.advance(0.4)
        await k.conversation.cancel(User())
        assert turn.quiescent, turn.pending()  # the limit's timer ended with the turn
        (message,) = k.of_type("assistant/message")
        (end,) = k.of_type("turn/end")
    assert end["outcome"] == "aborted"
    assert (message["text"], message["interrupted"]) == ("One", True)
    assert "finish" not in message
    assert k.llm.open_streams == 0
