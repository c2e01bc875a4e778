"""The window on the real voice: a microphone on PulseAudio null sinks, a scenario played into the window,
and the fallback to typing when there is no audio device."""

from __future__ import annotations

import asyncio
from argparse import Namespace
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from pytestqt.qtbot import QtBot

import audio.portaudio
import desktop.pipeline.audio_io
from adapters.runtime.clock import SystemClock
from audio.events import AudioUnavailable, CaptureFailed
from audio.fixtures import RecordingSink
from audio.portaudio import NO_PORTAUDIO, DeviceInfo
from audio.ports import Frame
from desktop.assets import fixture
from desktop.config import AudioConfig, Config
from desktop.model.facts import MicLevel, ModelLoading
from desktop.model.live_voice import LiveVoice, probe_devices
from desktop.model.session import Session
from desktop.pipeline.voice import level_of
from desktop.qt.main import voice_for
from desktop.qt.window import MainWindow
from engine.events import State
from engine.journal import read_events
from engine.testing import FakeLlm, reply
from tests.audio import pulse as pulse_kit
from tests.desktop.helpers import AnswersByContent, running_window, until

WEATHER = "It is sunny and mild today, with a light breeze."
STORY = " ".join(
    f"Chapter {n}: the little dragon climbed the hill again, spread its wings, and tried once more to fly."
    for n in range(1, 13)
)
TIME = "It is ten past three."


def _plain(html: str) -> str:
    document = QTextDocument()
    document.setHtml(html)
    return document.toPlainText()


def _models_ready(window: MainWindow) -> bool:
    return not window.banners.loading.loading


def test_the_level_meter_reads_speech_high_and_silence_empty() -> None:
    assert level_of(np.zeros(1600, dtype=np.float32)) == 0.0
    assert level_of(np.zeros(0, dtype=np.float32)) == 0.0
    assert 0.6 < level_of(np.full(1600, 0.1, dtype=np.float32)) < 0.7  # -20 dBFS
    assert level_of(np.ones(1600, dtype=np.float32)) == 1.0


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_question_spoken_into_the_microphone_is_answered_through_the_speaker(
    run: Any, qtbot: QtBot, tmp_path: Path, pulse: pulse_kit.Pulse
) -> None:
    config = replace(Config(), audio=AudioConfig(input_device="pulse", output_device="pulse"))
    voice, notes = voice_for(Namespace(fixture=None), config)
    assert isinstance(voice, LiveVoice)
    assert notes == []
    clock = SystemClock()
    session = Session(config, journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply(WEATHER)]), clock=clock)
    levels: list[float] = []
    loading: list[tuple[str, str]] = []
    session.subscribe(lambda e: levels.append(e.level) if isinstance(e, MicLevel) else None)
    session.subscribe(lambda e: loading.append((e.label, e.phase)) if isinstance(e, ModelLoading) else None)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            assert not window.controls.hint.text().startswith("No microphone")
            await until(lambda: _models_ready(window), within=60, what="Whisper and Piper loaded")
            recorder = pulse_kit.Recorder(f"{pulse.speaker}.monitor", 16000)
            try:
                qtbot.mousePress(window.controls.talk, Qt.MouseButton.LeftButton)
                await until(lambda: window.chip.state is State.LISTENING, what="listening")
                speaking = pulse_kit.play_into(pulse.micwire, fixture("whats_the_weather.wav"))
                assert await asyncio.to_thread(speaking.wait, 30) == 0
                qtbot.mouseRelease(window.controls.talk, Qt.MouseButton.LeftButton)
                await until(lambda: window.transcript_model.bubbles, within=30, what="a transcript")
                user = window.transcript_model.bubbles[0]
                assert (user.role, user.source) == ("user", "voice")
                assert "weather" in user.text.lower()
                bubble = window.transcript_model.assistant(1)
                assert bubble is not None
                await until(lambda: bubble.settled, within=30, what="the reply spoken to the end")
                await until(lambda: recorder.seconds > 1.0, what="the recording")
            finally:
                recording = await asyncio.to_thread(recorder.finish)
            assert bubble.heard == WEATHER
            assert not bubble.interrupted
            assert np.abs(recording).max() > 0.05, "the reply reached the speaker"
            assert max(levels) > 0.4, "the meter moved while the question was spoken"
            assert levels[-1] == 0.0, "the meter falls back once Talk is released"
            assert window.banners.banners == {}

    run(scenario(), within=100)
    assert ("speech recognition (Whisper)", "ready") in loading
    assert ("Parley's voice (Piper)", "ready") in loading
    events = read_events(session.journal_path)
    (message,) = [e for e in events if e["type"] == "assistant/message"]
    assert (message["text"], message["interrupted"]) == (WEATHER, False)
    assert [e["source"] for e in events if e["type"] == "turn/start"] == ["voice"]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_barge_in_scenario_plays_into_the_window_and_strikes_what_was_not_heard(run: Any, tmp_path: Path) -> None:
    voice, notes = voice_for(Namespace(fixture=Path("barge_in.toml")), Config())  # the bundled one, by name
    assert isinstance(voice, LiveVoice)
    assert notes == []
    llm = AnswersByContent([("story", reply(STORY, delay=0.01)), ("time", reply(TIME))])
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=llm, clock=SystemClock())
    states: list[State] = []
    session.subscribe(lambda e: states.append(e.state) if hasattr(e, "state") else None)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            session.set_hands_free(True)  # as `parley --fixture` does
            assert window.controls.hands_free.isChecked()
            assert "barge_in.toml" in window.controls.hint.text()
            await until(lambda: "finished" in _banner(window), within=120, what="the scenario played to the end")
            bubble = window.transcript_model.assistant(1)
            assert bubble is not None
            assert bubble.interrupted
            widget = window.transcript.bubble_widget(bubble)
            assert "line-through" in widget.body.text()
            assert widget.marker.isVisible()
            assert _plain(widget.body.text()) == f"{bubble.heard} {bubble.unheard}"
            users = [b for b in window.transcript_model.bubbles if b.role == "user"]
            assert [u.source for u in users] == ["voice", "voice"]
            assert "story" in users[0].text.lower()
            assert "time" in users[1].text.lower()
            assert 2 in window.trace.turns

    run(scenario(), within=170)
    events = read_events(session.journal_path)
    messages = [e for e in events if e["type"] == "assistant/message"]
    assert messages[0]["interrupted"] is True
    assert 0 < len(messages[0]["text"]) < len(STORY)
    assert STORY.startswith(messages[0]["text"])
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["aborted", "completed"]
    assert {State.LISTENING, State.TRANSCRIBING, State.THINKING, State.SPEAKING, State.STOPPING} <= set(states)


@pytest.mark.slow
def test_a_failure_inside_one_utterance_loses_it_and_not_the_voice(run: Any, tmp_path: Path) -> None:
    """Whisper raising once (a bug, a bad buffer) costs that utterance's pass, said in a banner that does not ask
    for a restart: the pipeline goes on listening, and the barge-in scenario still ends with both turns."""
    voice, _ = voice_for(Namespace(fixture=Path("barge_in.toml")), Config())
    assert isinstance(voice, LiveVoice)
    transcriber = voice.pipeline.transcriber
    real = transcriber.transcribe
    calls: list[int] = []

    async def first_one_fails(audio: Any, signal: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a pass that went wrong")
        return await real(audio, signal)

    transcriber.transcribe = first_one_fails  # type: ignore[method-assign]
    llm = AnswersByContent([("story", reply(STORY, delay=0.01)), ("time", reply(TIME))])
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=llm, clock=SystemClock())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            session.set_hands_free(True)
            await until(lambda: "utterance_lost" in window.banners.banners, within=60, what="the lost utterance")
            lost = window.banners.banners["utterance_lost"].label.text()
            assert "missed what you just said" in lost
            assert "RuntimeError" in lost
            await until(lambda: "finished" in _banner(window), within=120, what="the scenario played to the end")
            assert "voice_failed" not in window.banners.banners
            assert "restart" not in window.banners.banners["utterance_lost"].label.text().lower()

    run(scenario(), within=170)
    outcomes = [e["outcome"] for e in read_events(session.journal_path) if e["type"] == "turn/end"]
    assert outcomes[-1] == "completed", "an utterance after the failure was answered"


def _banner(window: MainWindow) -> str:
    banner = window.banners.banners.get("fixture")
    return banner.label.text() if banner is not None else ""


def test_without_audio_devices_the_window_says_so_and_typing_still_works(
    run: Any, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audio.portaudio, "list_devices", list)
    voice, notes = voice_for(Namespace(fixture=None), Config())
    assert voice.simulated
    clock = SystemClock()
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply("Hello there.")]), clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            for note in notes:
                session.raise_problem(note)
            banner = window.banners.banners["no_microphone"].label.text()
            assert "No microphone found" in banner
            assert "check PulseAudio; typing still works" in banner
            assert window.controls.hint.text().startswith("No microphone found")
            qtbot.keyClicks(window.controls.message, "hello")
            qtbot.keyClick(window.controls.message, Qt.Key.Key_Return)
            assert window.controls.message.text() == ""
            await until(lambda: 1 in window.trace.turns and window.trace.turns[1].outcome == "completed")
            window.controls.hands_free.click()
            assert not window.controls.hands_free.isChecked()  # no pretending
            assert window.banners.banners["no_microphone"].label.text() == banner

    run(scenario())


def _device(index: int, name: str, inputs: int, outputs: int) -> DeviceInfo:
    return DeviceInfo(index, name, "ALSA", inputs, outputs, 48000.0, inputs > 0, outputs > 0)


def test_device_problems_name_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    speaker_only = [_device(0, "HDMI", 0, 2)]
    monkeypatch.setattr(audio.portaudio, "list_devices", lambda: speaker_only)
    microphone, speaker = probe_devices(AudioConfig())
    assert microphone is not None
    assert speaker is None
    assert (microphone.message, microphone.kind) == ("No microphone found", "no_microphone")
    both = [_device(0, "USB headset", 1, 2)]
    monkeypatch.setattr(audio.portaudio, "list_devices", lambda: both)
    assert probe_devices(AudioConfig()) == (None, None)
    microphone, speaker = probe_devices(AudioConfig(input_device="Blue Yeti", output_device="USB"))
    assert microphone is not None
    assert speaker is None
    assert "'Blue Yeti' not found" in microphone.message
    assert "Settings" in microphone.fix

    def no_portaudio() -> list[DeviceInfo]:
        raise AudioUnavailable(NO_PORTAUDIO)

    monkeypatch.setattr(audio.portaudio, "list_devices", no_portaudio)
    microphone, speaker = probe_devices(AudioConfig())
    assert microphone is not None
    assert speaker is not None
    assert "libportaudio2" in microphone.fix


class _DyingMicrophone:
    """Half a second of silence, then the device goes away for good (listening again fails again)."""

    dropped = 0
    UNPLUGGED = "the input device stopped (unplugged, taken away or the sound server quit)"

    def __init__(self, device: str | None = None) -> None:
        self.closed = False
        self.listens = 0

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True

    async def frames(self) -> Any:
        self.listens += 1
        for k in range(25 if self.listens == 1 else 0):
            await asyncio.sleep(0.02)
            yield Frame(np.zeros(320, dtype=np.float32), k * 0.02, k * 320)
        await asyncio.sleep(0.1)
        yield CaptureFailed(self.UNPLUGGED)


class _StallingMicrophone(_DyingMicrophone):
    """A device that delivers nothing for a while (a cold start), then audio again."""

    def __init__(self, device: str | None = None) -> None:
        super().__init__(device)
        self.flowing = asyncio.Event()
        self.loaded: Any = None  # the pipeline's models-loaded event, once the test has it
        self.judged = asyncio.Event()  # the test has looked: a stall after loading may be reported now

    async def frames(self) -> Any:
        self.listens += 1
        if not self.flowing.is_set():
            await asyncio.sleep(0.1)
            if self.loaded is not None and self.loaded.is_set():
                await self.judged.wait()  # else a slow poll of `loaded` can miss the 0.1 s before the report
            yield CaptureFailed("no audio from the input device for 1 s")
            return
        for k in range(10_000):
            await asyncio.sleep(0.02)
            yield Frame(np.zeros(320, dtype=np.float32), k * 0.02, k * 320)

    async def close(self) -> None:
        self.closed = True


@pytest.mark.slow
def test_a_microphone_that_fails_mid_stream_is_a_banner_and_hands_free_turns_off(
    run: Any, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SystemClock()
    monkeypatch.setattr(desktop.pipeline.audio_io, "Microphone", _DyingMicrophone)
    monkeypatch.setattr(desktop.pipeline.audio_io, "Player", lambda *a, **k: RecordingSink(clock, rate=k["rate"]))
    voice = LiveVoice(Config(), clock)
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply("Still here.")]), clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            window.controls.hands_free.click()
            assert window.controls.hands_free.isChecked()
            await until(lambda: "no_microphone" in window.banners.banners, what="the microphone failed")
            assert "unplugged" in window.banners.banners["no_microphone"].label.text()
            assert not window.controls.hands_free.isChecked()
            window.controls.hands_free.click()
            assert not window.controls.hands_free.isChecked()  # no pretending
            qtbot.mousePress(window.controls.talk, Qt.MouseButton.LeftButton)
            qtbot.mouseRelease(window.controls.talk, Qt.MouseButton.LeftButton)
            session.send_text("Are you there?")
            await until(lambda: 1 in window.trace.turns and window.trace.turns[1].outcome == "completed", within=30)

    run(scenario(), within=60)


@pytest.mark.slow
def test_a_microphone_quiet_while_the_models_load_is_not_judged_and_a_banner_clears_when_audio_flows(
    run: Any, qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = SystemClock()
    microphones: list[_StallingMicrophone] = []
    monkeypatch.setattr(
        desktop.pipeline.audio_io, "Microphone", lambda *a: microphones.append(_StallingMicrophone()) or microphones[-1]
    )
    monkeypatch.setattr(desktop.pipeline.audio_io, "Player", lambda *a, **k: RecordingSink(clock, rate=k["rate"]))
    voice = LiveVoice(Config(), clock)
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm(), clock=clock)
    seen: list[str] = []
    session.subscribe(lambda e: seen.append(type(e).__name__))

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            (microphone,) = microphones
            microphone.loaded = voice.pipeline.loaded
            await until(lambda: voice.pipeline.loaded.is_set(), within=60, what="models loaded")
            loading_listens = microphone.listens
            assert loading_listens >= 1  # it was quiet while they loaded ...
            assert "no_microphone" not in session.problems  # ... and that was not held against it
            microphone.judged.set()
            await until(lambda: "no_microphone" in window.banners.banners, what="quiet after loading: reported")
            assert "ProblemRaised" in seen
            microphone.flowing.set()
            await until(lambda: "no_microphone" not in window.banners.banners, what="audio flows: the banner goes")
            assert voice.pipeline.unheard is None
            window.controls.hands_free.click()
            assert window.controls.hands_free.isChecked()  # listening works again

    run(scenario(), within=90)
