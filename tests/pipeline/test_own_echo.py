"""Parley's own voice heard through the room never becomes a turn: when the acoustic guards let it through, the
transcript — the words Parley was playing at that moment — gives it away, the reply resumes and the journal says
why. The same rig with the user's own words still interrupts (tests/pipeline/test_turn_taking.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapters.contract import CancelSignal
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcript, Word
from audio.own_voice import TimedWord
from desktop.pipeline.scenario_play import poll, until_quiet
from engine.testing import reply
from tests.pipeline.test_turn_taking import ByLength, rig

STORY = "Once upon a time there was a dragon who wanted to fly over the mountains. " * 4
ECHO_DELAY_S = 0.05
pytestmark = pytest.mark.anyio


class HearsTheSpeaker(ByLength):
    """A transcriber in a room whose microphone hears the speaker: it hears, in the audio it is given, the words
    Parley played then, each `ECHO_DELAY_S` later. The audio is taken to end now (the pipeline transcribes live)."""

    def __init__(self, played: object, now: object) -> None:
        super().__init__([])
        self._played, self._now = played, now

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        seconds = len(samples) / sample_rate
        start = self._now() - seconds  # type: ignore[operator]
        words: list[TimedWord] = self._played(start)  # type: ignore[operator]
        heard = tuple(
            Word(w.text, w.start - start + ECHO_DELAY_S, w.end - start + ECHO_DELAY_S, 0.9)
            for w in words
            if w.end - start + ECHO_DELAY_S <= seconds
        )
        text = " ".join(w.text for w in heard)
        self.heard.append(text)
        return Transcript(text, heard, 0.0 if heard else 1.0, "en", seconds)


async def test_an_utterance_made_of_parleys_own_words_resumes_the_reply_and_starts_no_turn(tmp_path: Path) -> None:
    ears = ByLength([(0.0, "What's the weather like today?")])
    async with rig(tmp_path, ears) as r:
        r.llm.push(reply(STORY))
        r.llm._scripts.insert(0, r.llm._scripts.pop())  # the long story first
        r.say("q_weather")
        first = await poll(r.stage.clock, lambda: r.stage.binding.metrics.first_audible.get(1))
        # from now on the microphone "hears" the speaker: the sound is there, and its words are Parley's
        echo = HearsTheSpeaker(r.stage.binding.played_words, r.stage.clock.now)
        ears._steps = [(0.0, echo)]  # type: ignore[list-item]
        r.say("q_weather", after_s=first - r.stage.clock.now() + 1.0)
        await until_quiet(r.stage)
        assert [e["outcome"] for e in r.of("turn/end")] == ["completed"], "no self-interruption, no self-turn"
        assert len(r.of("user/message")) == 1
        rejected = r.of("barge_in/echo_rejected")
        assert {e["stage"] for e in rejected} == {"barge_in", "turn"}
        assert all(e["share"] >= 0.8 and e["matched"] for e in rejected)
        lags = [m["lag_ms"] for e in rejected for m in e["matched"]]
        assert all(0 <= lag <= 150 for lag in lags), lags  # the echo's delay (the transcriber's frame timing aside)
        assert r.of("barge_in/detected"), "the sound did pause the reply"
        assert r.of("barge_in/resumed")
        assert not r.of("barge_in/confirmed")
        (message,) = r.of("assistant/message")
        assert message["text"].strip() == STORY.strip(), "the whole story was heard"
        assert any(echo.heard), "the echo transcriber was asked"
        assert np.isfinite(first)
