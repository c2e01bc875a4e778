"""The end of a turn in the one voice pipeline, on the virtual clock: real Silero on the pause fixtures, scripted
transcripts, a scripted end-of-turn model, the engine's fake LLM (which prefills) and the fake voice."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adapters.contract import CancelSignal, User
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, SynthSegment, Transcript
from adapters.runtime.workers import running
from adapters.testing_speech import FakeSynthesizer, FakeTranscriber
from adapters.testing_turn import FakeEndOfTurnModel
from audio.turns.endpoint import PAUSE_SILENCE_MS, TurnDecided
from audio.wav import load_wav
from desktop.assets import fixture
from desktop.config import AudioConfig
from desktop.pipeline.audio_io import fixture_devices
from desktop.pipeline.scenario_play import Stage, poll, until_quiet
from desktop.pipeline.voice import open_pipeline
from engine.conversation import GOING_ON_S, EngineParts, open_conversation
from engine.journal import Journal, read_events
from engine.testing import FakeLlm, VirtualClock, reply
from engine.testing.fake_llm import Delay
from tests.conformance.speech_harness import until

pytestmark = pytest.mark.anyio
ROME = "Tell me about the history of the city of Rome."
WEATHER = "What's the weather like today?"


class ByLength:
    """Hears `text` of the last step whose start (seconds of audio) the input reaches: a growing utterance is heard
    as it grows. Same thread and cancellation as FakeTranscriber."""

    def __init__(self, steps: Sequence[tuple[float, str]]) -> None:
        self._steps = [(at, FakeTranscriber(text)) for at, text in steps]
        self.heard: list[str] = []
        self.clock: VirtualClock | None = None  # set it to note when each pass begins and ends
        self.began: list[float] = []
        self.ended: list[float] = []
        self.pass_s = 0.0  # (with a clock) how long each pass takes

    @property
    def sample_rate(self) -> int:
        return ASR_SAMPLE_RATE

    async def preload(self, signal: CancelSignal) -> None:
        return None

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        seconds = len(samples) / sample_rate
        fake = next(f for at, f in reversed(self._steps) if seconds >= at)
        if self.clock is not None:
            self.began.append(self.clock.now())
            await self.clock.sleep(self.pass_s)
        transcript = await fake.transcribe(samples, signal, sample_rate=sample_rate)
        self.heard.append(transcript.text)
        if self.clock is not None:
            self.ended.append(self.clock.now())
        return transcript


class Voice(FakeSynthesizer):
    async def preload(self, signal: CancelSignal) -> None:
        return None


@dataclass
class Rig:
    stage: Stage
    llm: FakeLlm
    journal: Journal
    model: FakeEndOfTurnModel | None
    voice: Voice

    def say(self, name: str, after_s: float = 0.2) -> float:
        """Play a pause fixture into the microphone `after_s` from now; returns when its speech ends (clock)."""
        files, clip = self.stage.files, fixture("turns") / f"{name}.wav"
        at = self.stage.clock.now() + after_s - files.started_at
        files.add(clip, at)
        return files.started_at + at + len(load_wav(clip)) / ASR_SAMPLE_RATE

    def of(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in read_events(self.journal.path) if e["type"] == type_]


@asynccontextmanager
async def rig(
    tmp_path: Path,
    transcriber: ByLength,
    *,
    probability: float = 0.9,
    statement_wait_ms: int = 1000,
    model_factory: Callable[[VirtualClock], FakeEndOfTurnModel | None] | None = None,
    voice_factory: Callable[[VirtualClock], Voice] = lambda _clock: Voice(),
    min_silence_ms: int | None = None,
) -> AsyncIterator[Rig]:
    clock = VirtualClock()
    audio = replace(AudioConfig(), statement_wait_ms=statement_wait_ms, max_turn_wait_ms=2000)
    audio = audio if min_silence_ms is None else replace(audio, min_silence_ms=min_silence_ms)
    devices = fixture_devices(clock, 16000, output=tmp_path / "output.wav")
    assert devices.files is not None
    assert devices.recording is not None
    llm = FakeLlm([reply(f"Answer {n}. " * 3) for n in range(1, 4)], clock=clock)
    model = FakeEndOfTurnModel(probability) if model_factory is None else model_factory(clock)
    audio = audio if model is not None else replace(audio, turn_model=False)  # no default model either
    synthesizer = voice_factory(clock)
    async with clock.autojump():
        pipeline = open_pipeline(
            devices,
            transcriber,
            synthesizer,
            clock,
            audio,
            on_fact=lambda _f: None,
            listening=True,
            turn_model=model,
        )
        async with pipeline as voice:
            await voice.loaded.wait()
            with Journal(tmp_path / "journal.jsonl", wall=clock.now) as journal:
                parts = EngineParts(llm=llm, speech=voice.speech, journal=journal, clock=clock)
                async with open_conversation(parts) as conversation, voice.attached(conversation) as binding:
                    await voice.microphone_open.wait()
                    yield Rig(Stage(clock, binding, devices.files, devices.recording), llm, journal, model, synthesizer)


async def test_a_pause_mid_sentence_stays_one_turn_holding_both_halves(tmp_path: Path) -> None:
    heard = ByLength([(0.0, "Tell me about"), (2.0, ROME)])
    async with rig(tmp_path, heard) as r:
        r.say("rome_about")  # "Tell me about" . . . 0.8 s . . . "the history of the city of Rome."
        await until_quiet(r.stage)
        assert [e["text"] for e in r.of("user/message")] == [ROME]
        assert len(r.of("turn/start")) == 1
        assert "Tell me about" in heard.heard, "the pause was heard (and its words held the turn open)"
        assert r.llm.calls[0].messages[-1].content == ROME


async def test_a_complete_question_is_decided_without_waiting_for_the_maximum(tmp_path: Path) -> None:
    async with rig(tmp_path, ByLength([(0.0, WEATHER)])) as r:
        decided = await _decided(r, "q_weather")
        assert decided.reason == "model"
        (metrics,) = r.of("metrics/turn")
        assert metrics["eot_ms"] < 2000, "the maximum wait (2 s) did not end it"
        assert metrics["asr_final_ms"] == 0, "the text was the speculative pass, ready at the decision"
        assert metrics["prefilled"] == 1.0, "the model had read the very request before the decision"


async def test_the_final_pass_is_made_before_the_pause_opens(tmp_path: Path) -> None:
    """Two of the VAD's silent windows start the pass; the pause, opening later, finds it made and makes none."""
    heard = ByLength([(0.0, WEATHER)])
    async with rig(tmp_path, heard) as r:
        heard.clock = r.stage.clock
        decided = await _decided(r, "q_weather")
        assert [e["text"] for e in r.of("user/message")] == [WEATHER]
    opened = decided.speech_ended_at + PAUSE_SILENCE_MS / 1000  # the VAD can tell the pause no sooner
    assert heard.began, "no pass at all"
    assert max(heard.began) < opened, f"a pass began at {max(heard.began) - decided.speech_ended_at:.3f} s"


async def _decided(r: Rig, name: str) -> TurnDecided:
    """Say a pause fixture, wait until all is quiet, and give the one decision its utterance had."""
    r.say(name)
    await until_quiet(r.stage)
    (decided,) = r.stage.binding.ears.decisions
    return decided


class TimedModel(FakeEndOfTurnModel):
    """Notes the clock time of each question."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(0.9)
        self.clock, self.asked = clock, list[float]()

    async def predict(self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        self.asked.append(self.clock.now())
        return await super().predict(samples, signal, sample_rate=sample_rate)


async def test_the_end_of_turn_model_waits_for_a_final_pass_begun_at_the_pause(tmp_path: Path) -> None:
    """The pass's words lead to the reply, the model's answer only to the decision: Whisper has the cores. A noisy
    room gives the pass no quiet to begin in before the pause opens."""
    heard = ByLength([(0.0, WEATHER)])
    async with rig(tmp_path, heard, model_factory=TimedModel) as r:
        heard.clock, heard.pass_s = r.stage.clock, 0.3  # a real pass takes about this long
        noise = np.random.default_rng(7).normal(0, 10 ** (-35 / 20), 5 * ASR_SAMPLE_RATE).astype(np.float32)
        r.stage.files.add(noise, r.stage.clock.now() - r.stage.files.started_at)
        decided = await _decided(r, "q_weather")
        assert decided.reason == "model"
    model = r.model
    assert isinstance(model, TimedModel)
    assert model.asked, "the model was never asked"
    opened = decided.speech_ended_at + PAUSE_SILENCE_MS / 1000  # the VAD can tell the pause no sooner
    at_the_pause = [end for began, end in zip(heard.began, heard.ended, strict=True) if began >= opened]
    assert at_the_pause, "the pass began before the pause opened"
    assert min(model.asked) >= at_the_pause[0]


async def test_the_end_of_turn_model_listens_beside_a_final_pass_begun_at_the_silence(tmp_path: Path) -> None:
    """In a quiet room the pass begins at the VAD's first silent windows and is nearly made when the pause opens:
    the model hears the pause meanwhile, and the decision follows the words, not the words and then the model."""
    heard = ByLength([(0.0, WEATHER)])
    async with rig(tmp_path, heard, model_factory=TimedModel) as r:
        heard.clock, heard.pass_s = r.stage.clock, 0.3
        decided = await _decided(r, "q_weather")
        assert decided.reason == "model"
    model = r.model
    assert isinstance(model, TimedModel)
    assert model.asked, "the model was never asked"
    assert min(model.asked) < max(heard.ended), "the model waited for the pass"
    assert decided.at >= max(heard.ended), "the turn was decided before its words"


async def test_going_on_before_the_reply_is_heard_reopens_the_turn(tmp_path: Path) -> None:
    """A breath after a finished-sounding clause: the turn is decided at once, and the speaker goes on before any
    of the reply was heard. One turn holds the whole sentence; the one taken back leaves no trace but the request
    that was sent; the window's bubble goes too."""
    heard = ByLength([(0.0, "Tell me about Rome."), (2.0, ROME)])
    async with rig(tmp_path, heard, probability=0.9) as r:
        slow = [Delay(3.0), *reply("Rome was founded long ago. ")]  # nothing audible before the speaker goes on
        r.llm._scripts[:0] = [slow, slow]  # the reply begun ahead, and the turn's own request
        withdrawn: list[object] = []
        r.stage.binding.conversation.subscribe(
            lambda e: withdrawn.append(e) if type(e).__name__ == "TurnWithdrawn" else None
        )
        r.say("rome_about")
        await until_quiet(r.stage)
        decided = [d.reason for d in r.stage.binding.ears.decisions]
        assert decided[0] == "model", "the fragment was decided as a turn before the speaker went on"
        assert [e["text"] for e in r.of("user/message")] == [ROME]
        assert [(e["turn"], e["outcome"]) for e in r.of("turn/end")] == [(2, "completed")], "no aborted turn"
        assert len(r.of("turn/start")) == 1
        assert [e["requests"] for e in r.of("llm/withdrawn")] == [1], "the request sent is on the record"
        assert not r.of("barge_in/detected"), "going on is not interrupting"
        assert [getattr(e, "turn", None) for e in withdrawn] == [1]
        assert 2 in r.stage.binding.metrics.first_audible, "the whole sentence's reply was played"
        assert "ttfa_ms" in r.of("metrics/turn")[0]


async def test_a_reply_just_begun_when_the_speaker_goes_on_is_taken_back(tmp_path: Path) -> None:
    """The reply is audible within the 0.8 s pause, a word or two of it before the speaker goes on: they were
    going on, not answering it (engine.conversation.GOING_ON_S). One turn with the whole sentence."""
    heard = ByLength([(0.0, "Tell me about Rome."), (2.0, ROME)])
    async with rig(tmp_path, heard, probability=0.9) as r:
        story = reply("Once upon a time there was a dragon who wanted to fly over the mountains. " * 4)
        r.llm._scripts[:0] = [story, story]
        r.say("rome_about")
        await until_quiet(r.stage)
        assert r.stage.binding.metrics.first_audible.get(1) is not None, "the first reply was audible"
        assert [e["outcome"] for e in r.of("turn/end")] == ["completed"]
        assert [e["text"] for e in r.of("user/message")] == [ROME]
        assert [e["requests"] for e in r.of("llm/withdrawn")] == [1]


async def test_words_begun_within_the_going_on_time_reopen_the_turn_though_told_of_after_it(tmp_path: Path) -> None:
    """A breath of 1.45 s over a reply already audible: the VAD tells of the words that go on only after their first
    windows, past the going-on time by the clock. They began within it, so the turn is taken back (issue 36:
    breaths of up to ~1.5 s keep the turn)."""
    lead_s = 0.45  # of silence before the voice in the fixture
    whole = f"{WEATHER} And what is two plus two?"
    async with rig(tmp_path, ByLength([(0.0, WEATHER), (3.0, whole)]), probability=0.9) as r:
        story = reply("Once upon a time there was a dragon who wanted to fly over the mountains. " * 4)
        r.llm._scripts[:0] = [story, story]
        r.say("q_weather")
        decided = await poll(r.stage.clock, lambda: next(iter(r.stage.binding.ears.decisions), None))
        went_on = decided.speech_ended_at + GOING_ON_S - 0.05
        r.say("q_two_plus_two", after_s=went_on - lead_s - r.stage.clock.now())
        await until_quiet(r.stage)
        assert r.stage.binding.metrics.first_audible[1] < went_on, "the first reply was audible when they went on"
        assert [e["outcome"] for e in r.of("turn/end")] == ["completed"]
        assert [e["text"] for e in r.of("user/message")] == [whole]
        assert [e["requests"] for e in r.of("llm/withdrawn")] == [1]


async def test_a_reply_heard_as_an_answer_is_interrupted_not_reopened(tmp_path: Path) -> None:
    """Speaking again once the going-on time has passed, over a reply being heard, is interrupting it."""
    async with rig(tmp_path, ByLength([(0.0, WEATHER)]), probability=0.9) as r:
        story = reply("Once upon a time there was a dragon who wanted to fly over the mountains. " * 4)
        r.llm._scripts[:0] = [story, story]
        ended = r.say("q_weather")
        r.say("q_two_plus_two", after_s=ended + GOING_ON_S + 0.5 - r.stage.clock.now())
        await until_quiet(r.stage)
        assert [e["outcome"] for e in r.of("turn/end")] == ["aborted", "completed"]
        assert len(r.of("user/message")) == 2, "the first question was answered (and heard): it stays a turn"
        assert not r.of("llm/withdrawn")


async def test_a_turn_resumed_after_a_speculative_start_is_one_turn_one_request_and_no_early_audio(
    tmp_path: Path,
) -> None:
    # at the pause the words look finished (the model doubts them: held for the doubt wait): the request is prefilled
    heard = ByLength([(0.0, "Tell me about Rome."), (2.0, ROME)])
    async with rig(tmp_path, heard, probability=0.3) as r:
        speech_end = r.say("rome_about")
        await poll(r.stage.clock, lambda: next((p for p in r.llm.prefills if _user(p) == "Tell me about Rome."), None))
        await until_quiet(r.stage)
        assert [e["text"] for e in r.of("user/message")] == [ROME]
        assert len(r.of("llm/request")) == 1
        # the embedded model began a reply to the words at the pause; dropped when the user went on, unheard
        assert [_user(c) for c in r.llm.calls] == ["Tell me about Rome.", ROME]
        (message,) = r.of("assistant/message")
        assert "Answer 2." in message["text"]
        assert "Answer 1." not in message["text"]
        first_audio = r.stage.binding.metrics.first_audible[1]
        assert first_audio > speech_end
        recording, origin = r.stage.recording.recording(), r.stage.recording.recording_start
        before = recording[: max(0, round((first_audio - origin) * r.stage.recording.rate) - 1)]
        assert float(np.abs(before).max(initial=0.0)) == 0.0, "nothing played before the turn's own reply"


async def test_cancel_during_the_speculative_window_is_quiescent(tmp_path: Path) -> None:
    heard = ByLength([(0.0, "Tell me about Rome."), (2.0, ROME)])
    async with rig(tmp_path, heard, probability=0.3) as r:
        r.llm.prefill_s = 60.0  # a prefill that only a stop ends
        conversation = r.stage.binding.conversation
        r.say("rome_about")
        assert await until(lambda: r.llm.prefill_threads > 0)  # (the clock stands still while a thread works)
        r.llm.prefill_s = 0.005  # the ones the pipeline starts after this
        spec = conversation.speculator.current
        assert spec is not None
        await conversation.cancel(User())
        assert spec.ended.is_set(), "cancel returned while the speculation it found was still at work"
        await until_quiet(r.stage)
    assert running() == 0, "a thread outlived the pipeline"


async def test_the_user_still_interrupts_a_reply(tmp_path: Path) -> None:
    async with rig(tmp_path, ByLength([(0.0, WEATHER)])) as r:
        r.llm.push(reply("Once upon a time there was a dragon who wanted to fly over the mountains. " * 6))
        r.llm._scripts.insert(0, r.llm._scripts.pop())  # the long story first
        r.say("q_weather")
        first = await poll(r.stage.clock, lambda: r.stage.binding.metrics.first_audible.get(1))
        r.say("q_weather", after_s=first - r.stage.clock.now() + 1.0)
        await until_quiet(r.stage)
        assert [e["outcome"] for e in r.of("turn/end")] == ["aborted", "completed"]
        assert [e["source"] for e in r.of("barge_in/confirmed")] == ["vad"]


def _user(options: Any) -> str:
    return str(options.messages[-1].content)


async def test_figures_are_words(tmp_path: Path) -> None:
    """A person reading out digits: Whisper writes figures, which are words to answer, not noise to drop."""
    async with rig(tmp_path, ByLength([(0.0, "1 0 0 0 1 9 0 2 1 0")])) as r:
        r.say("q_weather")
        await until_quiet(r.stage)
        assert [e["text"] for e in r.of("user/message")] == ["1 0 0 0 1 9 0 2 1 0"]
        assert not r.of("utterance/dropped")


@pytest.mark.parametrize(("heard", "reason"), [("", "no words"), ("Mm-hmm.", "only fillers")])
async def test_an_utterance_dropped_is_on_the_record_with_its_reason_span_and_level(
    tmp_path: Path, heard: str, reason: str
) -> None:
    async with rig(tmp_path, ByLength([(0.0, heard)])) as r:
        speech_end = r.say("q_weather")
        await until_quiet(r.stage)
        assert not r.of("turn/start")
        (dropped,) = r.of("utterance/dropped")
        assert dropped["reason"] == reason
        assert dropped["start"] < speech_end <= dropped["end"] + 0.5
        assert -40 < dropped["level_dbfs"] < 0, "the clip's speech level, not its silence"


class TimedVoice(Voice):
    """Notes the clock time at which each segment was made."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self.clock, self.made = clock, list[tuple[float, str]]()

    async def stream(self, text: Any, signal: CancelSignal) -> AsyncGenerator[SynthSegment, None]:
        async for segment in super().stream(text, signal):
            self.made.append((self.clock.now(), segment.text))
            yield segment


async def test_while_a_doubted_turn_waits_its_reply_opening_is_synthesized(tmp_path: Path) -> None:
    """The model doubts the pause, so the decision waits: the reply generated ahead has its first clause made
    meanwhile, and the turn plays that rather than making it again after the decision."""
    async with rig(
        tmp_path, ByLength([(0.0, WEATHER)]), probability=0.1, statement_wait_ms=600, voice_factory=TimedVoice
    ) as r:
        decided = await _decided(r, "q_weather")
        assert decided.reason == "doubt"
    _made_before(r.voice, decided)


async def test_without_an_end_of_turn_model_the_reply_opening_is_made_during_the_wait(tmp_path: Path) -> None:
    """With no model the turn waits on silence alone (no_model_wait_ms): that wait is used the same way."""
    async with rig(
        tmp_path, ByLength([(0.0, WEATHER)]), model_factory=lambda _clock: None, voice_factory=TimedVoice
    ) as r:
        decided = await _decided(r, "q_weather")
        assert decided.reason == "no_model"
    _made_before(r.voice, decided)


def _made_before(voice: Voice, decided: TurnDecided) -> None:
    """The reply's first clause was made before the decision, and played rather than made again."""
    assert isinstance(voice, TimedVoice)
    first_at, first = voice.made[0]
    assert first == "Answer 1."
    assert first_at < decided.at, "made while the decision waited"
    assert [text for _at, text in voice.made].count("Answer 1.") == 1, "played, not made again"


class SlowModel(TimedModel):
    """Takes a real model's time to answer: long enough for the reply ahead to have its first clause."""

    async def predict(self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        await self.clock.sleep(0.3)
        return await super().predict(samples, signal, sample_rate=sample_rate)


async def test_a_turn_decided_when_the_model_answers_makes_no_audio_before(tmp_path: Path) -> None:
    """Beside the end-of-turn model a synthesis would only delay the decision (the silence's floor is under the
    time the model takes, so its answer decides)."""
    async with rig(
        tmp_path, ByLength([(0.0, WEATHER)]), model_factory=SlowModel, voice_factory=TimedVoice, min_silence_ms=100
    ) as r:
        decided = await _decided(r, "q_weather")
        assert decided.reason == "model"
    voice = r.voice
    assert isinstance(voice, TimedVoice)
    assert voice.made
    assert min(at for at, _text in voice.made) >= decided.at
