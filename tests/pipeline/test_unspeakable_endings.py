"""Issue 38 item 8: a reply that ends in something the voice cannot say (`***`, `---`, an emoji, a closing code
fence) is not an interrupted reply: only a real stop makes one. On the real speech path (chunker, a synthesizer
that reads only the speakable text, a speaker with its heard cursor), through the engine."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from adapters.contract import User
from adapters.testing_speech import FakeSynthesizer
from audio.fixtures import RecordingSink
from desktop.pipeline.voice_output import VoiceOutput
from engine.conversation import Conversation, EngineParts, open_conversation
from engine.events import State
from engine.inbox import UserInput
from engine.journal import Journal, read_events
from engine.testing import FakeLlm, VirtualClock, reply

pytestmark = pytest.mark.anyio
ENDINGS = ["Here you go. ***", "All done.\n\n---", "Have a lovely day! 😀🎉", "Like this:\n```", "Sure thing. **"]


@asynccontextmanager
async def _voiced(tmp_path: Path, llm: FakeLlm, clock: VirtualClock) -> AsyncIterator[Conversation]:
    sink = RecordingSink(clock, rate=16_000, latency_s=0.03)
    speech = VoiceOutput(FakeSynthesizer(ms_per_char=20, gap_ms=40), sink, clock)
    with Journal(tmp_path / "journal.jsonl", wall=clock.now) as journal:
        parts = EngineParts(llm, speech, journal, clock, rng=random.Random(3))
        await sink.start()
        try:
            async with clock.autojump(), open_conversation(parts) as conversation:
                yield conversation
        finally:
            await sink.close()


async def _ended(journal: Path, turn: int, clock: VirtualClock) -> None:
    for _ in range(10_000):
        if any(e["type"] == "turn/end" and e["turn"] == turn for e in read_events(journal)):
            return
        await clock.sleep(0.05)
    raise AssertionError(f"turn {turn} did not end")


@pytest.mark.parametrize("text", ENDINGS)
async def test_an_unspeakable_ending_is_skipped_not_unheard(tmp_path: Path, text: str) -> None:
    clock = VirtualClock()
    llm = FakeLlm([reply(text), reply("Next.")], clock=clock)
    async with _voiced(tmp_path, llm, clock) as conversation:
        conversation.submit(UserInput("hello"))
        await _ended(tmp_path / "journal.jsonl", 1, clock)
        conversation.submit(UserInput("and then?"))
        await _ended(tmp_path / "journal.jsonl", 2, clock)
    (message, _) = [e for e in read_events(tmp_path / "journal.jsonl") if e["type"] == "assistant/message"]
    assert message["interrupted"] is False, message
    assert message["text"].strip()
    sent = llm.calls[1].messages
    assert [m.content for m in sent if m.role == "assistant"] == [message["text"]], "no cut-off mark for the model"


async def test_a_real_stop_still_makes_the_reply_interrupted(tmp_path: Path) -> None:
    clock = VirtualClock()
    story = "Once upon a time there was a lighthouse. Its keeper had a cat. The cat liked fish a lot. " * 3
    llm = FakeLlm([reply(story)], clock=clock)
    async with _voiced(tmp_path, llm, clock) as conversation:
        conversation.submit(UserInput("tell me a story"))
        for _ in range(10_000):
            if conversation.state is State.SPEAKING:
                break
            await clock.sleep(0.01)
        await clock.sleep(1.5)
        await conversation.cancel(User())
    (message,) = [e for e in read_events(tmp_path / "journal.jsonl") if e["type"] == "assistant/message"]
    assert message["interrupted"] is True
    assert 0 < len(message["text"]) < len(story.strip())
