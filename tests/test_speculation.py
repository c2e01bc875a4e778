"""Speculative prefill (engine.speculation): the request the next turn would send, read ahead and dropped without a
trace; never a turn, never beside a real generation, quiescent on cancel, and nothing to a remote provider unless
the user opted in (then on the record)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

from adapters.contract import CancelSignal, GenerateOptions, StreamChunk, User
from adapters.runtime.workers import running
from engine.ahead import AHEAD_PIECES, Ahead
from engine.inbox import UserInput
from engine.prompt import HistoryPrompt
from engine.speculation import Speculation
from engine.speech import SpeechKey
from engine.testing import FakeLlm, FakeSpeechOutput, VirtualClock, reply
from tests.engine_kit import Kit, kit

pytestmark = pytest.mark.anyio
NOON = HistoryPrompt(wall=lambda: dt.datetime(2025, 6, 3, 12, 0, tzinfo=dt.UTC))
QUESTION = "What is the capital of France?"
STORY = " ".join(f"word{n}" for n in range(AHEAD_PIECES * 3))


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


async def _ended(k: Kit, spec: Speculation | None) -> None:
    assert spec is not None
    await k.until(spec.ended.is_set, "the speculation to end")


async def test_the_turn_takes_the_reply_its_speculation_began_one_request_on_the_record(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Paris is the capital.")], prompt=NOON) as k:
        spec = k.conversation.speculate(QUESTION, ahead=True)
        await _ended(k, spec)  # read, and the whole (short) reply generated ahead
        assert spec is not None
        assert spec.ahead is not None
        assert spec.ahead.done
        assert k.of_type("llm/request") == []
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        (prefill,) = k.llm.prefills
        (request,) = k.llm.calls  # the turn took the generation: no second one
        assert prefill.messages == request.messages
        assert len(k.of_type("llm/request")) == 1
        assert k.of_type("assistant/message")[0]["text"] == "Paris is the capital."
        assert k.of_type("metrics/turn")[0]["prefilled"] == 1.0


async def _ahead(k: Kit, pieces: int = AHEAD_PIECES) -> tuple[Speculation, Ahead]:
    """A speculation on QUESTION that has generated `pieces` of its reply ahead."""
    spec = k.conversation.speculate(QUESTION, ahead=True)
    assert spec is not None
    await k.until(lambda: spec.ahead is not None and spec.ahead.pieces >= pieces, "the reply ahead")
    assert spec.ahead is not None
    return spec, spec.ahead


async def test_a_reply_generated_ahead_stops_after_a_sentence_or_so_until_its_turn_takes_it(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply(STORY)], prompt=NOON) as k:
        _, ahead = await _ahead(k)
        await k.clock.advance(5.0)
        assert ahead.pieces == AHEAD_PIECES
        assert not ahead.done
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert k.of_type("assistant/message")[0]["text"] == STORY
        assert len(k.llm.calls) == 1


async def test_once_taken_a_reply_ahead_is_generated_only_as_the_turn_speaks_it(tmp_path: Path) -> None:
    """A piece generated while the voice is still busy with the last one would take a core from Piper."""
    async with kit(tmp_path, [reply(STORY)], prompt=NOON) as k:
        _, ahead = await _ahead(k)
        busy, said, say = anyio.Event(), [], k.speech.say

        async def slow_say(key: SpeechKey, text: str, signal: CancelSignal) -> None:
            said.append(text)
            if len(said) == AHEAD_PIECES + 1:  # the first piece generated after the turn took the reply
                await busy.wait()
            await say(key, text, signal)

        k.speech.say = slow_say  # type: ignore[method-assign]
        k.submit(QUESTION)
        await k.until(lambda: len(said) == AHEAD_PIECES + 1, "the turn to speak past what was ahead")
        await k.clock.advance(5.0)
        assert ahead.pieces == AHEAD_PIECES + 1, "generated while the turn was still speaking"
        busy.set()
        await k.until_turn_ended(1)
        assert k.of_type("assistant/message")[0]["text"] == STORY


async def test_a_dropped_speculation_leaves_nothing_on_the_record(tmp_path: Path) -> None:
    async with kit(tmp_path, prompt=NOON) as k:
        spec = k.conversation.speculate("Tell me about")
        assert spec is not None
        spec.drop()
        await _ended(k, spec)
        assert [e["type"] for e in k.of_type("turn/start") + k.of_type("llm/request")] == []


async def test_the_words_so_far_can_be_left_out(tmp_path: Path) -> None:
    async with kit(tmp_path, prompt=NOON) as k:
        spec = k.conversation.speculate("")
        await _ended(k, spec)
        (prefill,) = k.llm.prefills
        assert [m.role for m in prefill.messages] == ["system", "user"]
        assert prefill.messages[-1].content == ""
        assert k.llm.calls == [], "nothing is generated ahead of words"


async def test_a_turn_on_other_words_drops_the_speculation_and_sends_its_own(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Paris.")], prompt=NOON) as k:
        k.llm.prefill_s = 60.0  # reads until stopped
        k.conversation.speculate("What is the capital")
        await k.until(lambda: k.llm.prefill_threads == 1, "the prefill thread")
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert k.llm.prefill_threads == 0
        (request,) = k.llm.calls
        assert request.messages[-1].content == QUESTION
        assert "prefilled" not in k.of_type("metrics/turn")[0]


async def test_cancel_during_the_speculative_window_returns_once_the_prefill_has_ended(tmp_path: Path) -> None:
    async with kit(tmp_path, prompt=NOON) as k:
        k.llm.prefill_s = 60.0
        k.conversation.speculate(QUESTION, ahead=True)
        await k.until(lambda: k.llm.prefill_threads == 1, "the prefill thread")
        await k.conversation.cancel(User())
        assert k.llm.prefill_threads == 0
        assert running() == 0
        assert k.conversation.speculator.current is None


async def test_nothing_is_speculated_while_a_turn_is_live_or_waiting(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("One two three four five six.")], prompt=NOON) as k:
        k.submit("Count to six.")
        await k.until(lambda: k.conversation.live_turn is not None, "the turn")
        assert k.conversation.speculate(QUESTION, ahead=True) is None
        k.conversation.inbox.put(UserInput("And to seven?"))
        await k.until(lambda: k.conversation.live_turn is not None and k.conversation.live_turn.id == 2, "turn 2")
        assert k.conversation.speculate(QUESTION, ahead=True) is None
        assert k.llm.prefills == []


async def test_a_remote_provider_gets_no_speculative_request_unless_the_user_opted_in(tmp_path: Path) -> None:
    llm = FakeLlm([reply("Paris.")])
    async with kit(tmp_path, prompt=NOON, adapter=RemoteLike(llm)) as k:
        assert k.conversation.speculate(QUESTION, ahead=True) is None
        assert k.conversation.speculate("") is None
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert len(llm.calls) == 1
        assert k.of_type("llm/prefill") == []


async def test_an_opted_in_speculative_request_is_on_the_record(tmp_path: Path) -> None:
    llm = FakeLlm([reply("P"), reply("Paris.")])
    async with kit(tmp_path, prompt=NOON, adapter=RemoteLike(llm), speculative_requests=True) as k:
        assert k.conversation.speculate("") is None  # a warm-up without the words is not worth a request
        await _ended(k, k.conversation.speculate(QUESTION, ahead=True))
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
        k.conversation.speculate(QUESTION, ahead=True)  # starts reading once the first has stopped
        k.submit(QUESTION)  # and the turn starts meanwhile
        await k.until_turn_ended(1)
        contents = [m.content for m in k.llm.prefills[-1].messages]
        assert contents.count(QUESTION) == 1
        assert k.llm.prefills[-1].messages == k.llm.calls[0].messages


async def test_cancelling_a_turn_that_took_a_reply_generated_ahead_ends_that_generation(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply(STORY, delay=0.2)], prompt=NOON) as k:
        spec, _ = await _ahead(k, pieces=2)
        k.submit(QUESTION)
        await k.until(lambda: len(k.speech.report(1)) > AHEAD_PIECES, "the turn to go past what was ahead")
        await k.conversation.cancel(User())
        assert spec.ended.is_set()
        assert k.llm.open_streams == 0
        assert k.of_type("turn/end")[0]["outcome"] == "aborted"


class PreparingSpeech(FakeSpeechOutput):
    """A voice that could synthesize a reply's opening ahead: it has "begun" once the text holds a sentence."""

    def __init__(self, clock: VirtualClock, *, ready_at: str = ".") -> None:
        super().__init__(clock)
        self.asked: list[tuple[str, bool]] = []
        self._ready_at = ready_at

    async def prepare(self, text: str, signal: CancelSignal, *, whole: bool = False) -> bool:
        self.asked.append((text, whole))
        return self._ready_at in text or whole


def _asked(k: Kit) -> list[tuple[str, bool]]:
    assert isinstance(k.speech, PreparingSpeech)
    return k.speech.asked


async def test_the_voice_is_handed_the_reply_ahead_until_it_has_its_opening(tmp_path: Path) -> None:
    answer = "Paris is the capital. " + STORY
    async with kit(tmp_path, [reply(answer)], prompt=NOON, speech=PreparingSpeech) as k:
        spec = k.conversation.speculate(QUESTION, ahead=True)
        assert spec is not None
        spec.rehearse()  # the decision waits: as soon as there is a reply
        await k.until(lambda: spec.ahead is not None and spec.ahead.pieces >= AHEAD_PIECES, "the reply ahead")
        texts = [text for text, _whole in _asked(k)]
        assert texts == ["Paris ", "Paris is ", "Paris is the ", "Paris is the capital. "], "each piece so far"
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert len(_asked(k)) == 4
        assert k.of_type("assistant/message")[0]["text"] == answer


async def test_the_voice_is_not_asked_while_the_turn_may_be_decided_at_once(tmp_path: Path) -> None:
    """Beside the end-of-turn model, a synthesis would take its core and delay the decision it hopes to beat."""
    async with kit(tmp_path, [reply("Paris is the capital. " + STORY)], prompt=NOON, speech=PreparingSpeech) as k:
        spec, _ = await _ahead(k)
        assert _asked(k) == []
        spec.rehearse()  # the model doubted: now the text so far is handed over at once
        await k.until(lambda: bool(_asked(k)), "the voice to be asked")
        assert len(_asked(k)) == 1
        assert _asked(k)[0][0].startswith("Paris is the capital. ")


async def test_a_reply_ahead_that_ended_before_the_decision_waited_is_handed_over_whole(tmp_path: Path) -> None:
    async with kit(tmp_path, [reply("Paris, of course")], prompt=NOON, speech=PreparingSpeech) as k:
        spec, ahead = await _ahead(k, pieces=3)
        await k.until(lambda: ahead.done, "the reply to end")
        spec.rehearse()
        await k.until(lambda: bool(_asked(k)), "the voice to be asked")
        assert _asked(k) == [("Paris, of course", True)]
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert k.of_type("assistant/message")[0]["text"] == "Paris, of course"
        assert len(k.llm.calls) == 1, "the turn took the reply that waited for it"


async def test_a_reply_the_turn_has_taken_is_not_prepared_any_more(tmp_path: Path) -> None:
    """From then on the turn speaks it as it streams, and a synthesis made ahead would only duplicate it."""
    never = functools.partial(PreparingSpeech, ready_at="never said")
    async with kit(tmp_path, [reply(STORY)], prompt=NOON, speech=never) as k:
        spec, _ = await _ahead(k)
        spec.rehearse()
        await k.until(lambda: bool(_asked(k)), "the voice to be asked")
        asked = len(_asked(k))
        k.submit(QUESTION)
        await k.until_turn_ended(1)
        assert len(_asked(k)) == asked
