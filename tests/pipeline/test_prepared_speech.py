"""A reply's opening synthesized while its turn is still being decided (engine.speech.PreparesSpeech): the turn
plays it rather than waiting for Piper, and only if it says the very same words."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from adapters.contract import CancelSignal, Hook
from adapters.testing_speech import FakeSynthesizer
from audio.fixtures import RecordingSink
from desktop.pipeline.voice_output import VoiceOutput
from engine.speech import PreparesSpeech, SpeechKey
from engine.testing import VirtualClock

pytestmark = pytest.mark.anyio

REPLY = "The weather today is sunny and warm. Enjoy it."
KEY = SpeechKey(1, 1, 1)


def _voice() -> tuple[VirtualClock, RecordingSink, FakeSynthesizer, VoiceOutput]:
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=16_000)
    synth = FakeSynthesizer(ms_per_char=20, gap_ms=40)
    return clock, sink, synth, VoiceOutput(synth, sink, clock)


async def _speak(clock: VirtualClock, sink: RecordingSink, voice: VoiceOutput, text: str) -> list[str]:
    """The turn's words as the listener heard them."""
    started = clock.now()
    await voice.say(KEY, text, CancelSignal())
    await voice.drain(1, CancelSignal())
    return [w.text for w in voice.played_words(since=started)]


async def test_the_voice_output_prepares_speech() -> None:
    assert isinstance(_voice()[3], PreparesSpeech)


async def test_a_first_clause_prepared_ahead_is_played_not_synthesized_again() -> None:
    clock, sink, synth, voice = _voice()
    async with clock.autojump():
        await sink.start()
        assert not await voice.prepare("The weather today", CancelSignal()), "its first phrase may go on"
        assert synth.spoken == []
        assert await voice.prepare("The weather today is", CancelSignal())
        assert synth.spoken == ["The weather today"]
        heard = await _speak(clock, sink, voice, REPLY)
        await sink.close()
    assert heard == REPLY.split()
    assert synth.spoken == ["The weather today", " is sunny and warm.", " Enjoy it."]


async def test_a_whole_reply_without_a_seam_is_prepared_at_its_end() -> None:
    clock, sink, synth, voice = _voice()
    async with clock.autojump():
        await sink.start()
        assert not await voice.prepare("The child almost hurt the small dog.", CancelSignal())
        assert await voice.prepare("The child almost hurt the small dog.", CancelSignal(), whole=True)
        heard = await _speak(clock, sink, voice, "The child almost hurt the small dog.")
        await sink.close()
    assert heard == "The child almost hurt the small dog.".split()
    assert synth.spoken == ["The child almost hurt the small dog."]


async def test_a_turn_that_says_something_else_is_not_given_the_prepared_audio() -> None:
    clock, sink, synth, voice = _voice()
    async with clock.autojump():
        await sink.start()
        assert await voice.prepare("The weather tomorrow is ", CancelSignal())
        heard = await _speak(clock, sink, voice, REPLY)
        await sink.close()
    assert heard == REPLY.split()
    assert synth.spoken == ["The weather tomorrow", "The weather today", " is sunny and warm.", " Enjoy it."]


async def test_a_turn_that_comes_while_its_opening_is_synthesized_waits_for_it_and_does_not_repeat_it() -> None:
    clock, sink, synth, voice = _voice()
    async with clock.autojump():
        await sink.start()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(voice.prepare, "The weather today is ", CancelSignal())
            await anyio.lowlevel.checkpoint()  # the preparation is under way: its synthesis has begun
            heard = await _speak(clock, sink, voice, REPLY)
        await sink.close()
    assert heard == REPLY.split()
    assert synth.spoken == ["The weather today", " is sunny and warm.", " Enjoy it."]


async def test_a_preparation_given_up_leaves_the_turn_to_synthesize_its_own() -> None:
    clock, sink, synth, voice = _voice()
    async with clock.autojump():
        await sink.start()
        dropped = CancelSignal()
        dropped.set(Hook("speculation dropped"))
        assert not await voice.prepare("The weather today is ", dropped)
        heard = await _speak(clock, sink, voice, REPLY)
        await sink.close()
    assert heard == REPLY.split()
    assert synth.spoken == ["The weather today", " is sunny and warm.", " Enjoy it."]
