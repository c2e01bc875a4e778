"""The window's real voice: the session's `VoiceIO` over the one voice pipeline (desktop.pipeline).

On real devices (`LiveVoice(config, clock)`) it runs PortAudio's microphone and speaker; on a scenario
(`LiveVoice(config, clock, scenario=...)`) the scenario's files and a recording sink, and plays the scenario into
the first conversation once the models are loaded, as `parley run` does. The pipeline's facts become the
problems and progress the window shows; nothing here imports Qt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract import CancelSignal
from adapters.contract.clock import Clock
from adapters.runtime.model_files import ModelError
from adapters.runtime.tasks import open_tasks
from adapters.tts.piper_voice import PiperSynthesizer
from audio.events import AudioUnavailable
from audio.portaudio import NO_PORTAUDIO
from audio.turns.facts import UTTERANCE_PART, UtteranceDropped
from desktop.catalog.languages import running
from desktop.config import AudioConfig, Config
from desktop.errors import BadInput
from desktop.model.device_lists import shown_device
from desktop.model.facts import ModelLoading, Problem
from desktop.model.hearing import dropped_problem
from desktop.model.voice import VoiceEvents, VoiceUnavailable
from desktop.model.wording import (
    device_not_found,
    echo_protection_off,
    fixture_done,
    fixture_playing,
    fixture_problem,
    microphone_failed,
    no_microphone,
    no_portaudio,
    no_speaker,
    speaker_failed,
    speech_model_missing,
    utterance_lost,
    voice_stopped,
)
from desktop.pipeline import facts
from desktop.pipeline.audio_io import fixture_devices, probe, real_devices
from desktop.pipeline.parts import speech_models
from desktop.pipeline.scenario_play import Stage, play
from desktop.pipeline.voice import PIPER, WHISPER, Binding, VoicePipeline, playback_failed_to
from desktop.scenario import Scenario
from engine.conversation import Conversation
from engine.speech import SpeechOutput


def probe_devices(audio: AudioConfig) -> tuple[Problem | None, Problem | None]:
    """Why the configured microphone and speaker cannot be used (None: they can), without opening them."""
    microphone, speaker = probe(audio)
    return (
        _device_problem(microphone, audio.input_device, "microphone"),
        _device_problem(speaker, audio.output_device, "speaker"),
    )


def _device_problem(error: AudioUnavailable | None, device: str, kind: str) -> Problem | None:
    if error is None:
        return None
    text = str(error)
    if text == NO_PORTAUDIO:
        return no_portaudio()
    if device and ("not found" in text or "matches several" in text):
        return device_not_found(kind, text)
    return no_microphone() if kind == "microphone" else no_speaker()


class LiveVoice:
    """Microphone and speaker (or a scenario's files) behind the session's VoiceIO port.

    Raises VoiceUnavailable when the speech models are not installed. `speaker=False` means there is no
    output device: replies are then shown and timed as if spoken, silently.
    """

    simulated = False

    def __init__(self, config: Config, clock: Clock, *, scenario: Scenario | None = None, speaker: bool = True) -> None:
        try:
            transcriber, synth = speech_models(running(config))
        except BadInput as error:
            raise VoiceUnavailable(speech_model_missing("the speech models", str(error))) from None
        self._config = config
        self._models: dict[str, WhisperTranscriber | PiperSynthesizer] = {"asr": transcriber, "tts": synth}
        self._next: dict[str, WhisperTranscriber | PiperSynthesizer] = {}  # loaded for settings not yet in use
        self._scenario = scenario
        self._has_speaker = speaker
        self._events: VoiceEvents | None = None
        self._played = False
        if scenario is None:
            devices = real_devices(config.audio, synth.sample_rate, playback_failed_to(self._on_fact))
        else:
            devices = fixture_devices(clock, synth.sample_rate, echo=scenario.echo)
        self.pipeline = VoicePipeline(
            devices, transcriber, synth, clock, config.audio, listening=scenario is not None, speaker=speaker
        )

    # What the window shows

    @property
    def description(self) -> str:
        if self._scenario is not None:
            return (
                f"Playing {self._scenario.path.name} into a simulated microphone in real time "
                "(real Whisper and Piper; the reply audio is recorded, not played)."
            )
        audio = self._config.audio
        speaker = shown_device(audio.output_device) if self._has_speaker else "none (replies are silent)"
        return (
            "Hold Talk (or Space) while you speak, or while Parley speaks to stop it; with Hands-free on, just talk. "
            f"Microphone: {shown_device(audio.input_device)}; speaker: {speaker}."
        )

    @property
    def speech(self) -> SpeechOutput:
        return self.pipeline.speech

    @property
    def speaks(self) -> bool:
        return self.pipeline.speaks

    # Lifecycle

    @asynccontextmanager
    async def running(self, events: VoiceEvents) -> AsyncIterator[None]:
        self._events = events
        try:
            async with self.pipeline.running(self._on_fact):
                yield
        finally:
            self._events = None

    @asynccontextmanager
    async def attached(self, conversation: Conversation) -> AsyncIterator[None]:
        async with self.pipeline.attached(conversation) as binding, open_tasks(cancel_on_exit=True) as tasks:
            if self._scenario is not None and not self._played:
                self._played = True  # once: a conversation rebuilt by Settings does not replay it
                tasks.start(self._play, self._scenario, binding, name="scenario")
            yield

    async def models_loaded(self) -> None:
        await self.pipeline.loaded.wait()

    # Switching models between turns

    async def prepare_models(self, config: Config) -> None:
        """Load the models `config` names that differ from those in use (a model that will not load is reported
        and the one in use stays)."""
        try:
            transcriber, synth = speech_models(running(config))
        except BadInput as error:
            self._report(speech_model_missing("the chosen speech model", str(error)))
            return
        wanted: dict[str, WhisperTranscriber | PiperSynthesizer] = {"asr": transcriber, "tts": synth}
        for kind, model in wanted.items():
            ready = self._next.get(kind)
            if _same(model, self._models[kind]) or (ready is not None and _same(ready, model)):
                continue
            if ready is not None:
                await self._next.pop(kind).release()  # loaded for settings that were changed again
            if await self._preload(kind, model):
                self._next[kind] = model

    async def use_models(self, config: Config) -> None:
        """Swap in the models prepared for `config` (loading them now if need be) and release the old ones."""
        await self.prepare_models(config)
        transcriber, synth = self._next.pop("asr", None), self._next.pop("tts", None)
        if transcriber is None and synth is None:
            return
        assert transcriber is None or isinstance(transcriber, WhisperTranscriber)
        assert synth is None or isinstance(synth, PiperSynthesizer)
        self.pipeline.use_models(transcriber, synth)
        for kind, new in (("asr", transcriber), ("tts", synth)):
            if new is not None:
                old, self._models[kind] = self._models[kind], new
                if _path(old) != _path(new):  # another language for the same Whisper: the model loaded is kept
                    await old.release()
        self._config = config

    async def _preload(self, kind: str, model: WhisperTranscriber | PiperSynthesizer) -> bool:
        label = WHISPER if kind == "asr" else PIPER
        started = self.pipeline.clock.now()
        self._loading(ModelLoading(label, "loading"))
        try:
            await model.preload(CancelSignal())
        except ModelError as error:
            self._loading(ModelLoading(label, "failed", self.pipeline.clock.now() - started))
            self._report(speech_model_missing(label, str(error)))
            return False
        self._loading(ModelLoading(label, "ready", self.pipeline.clock.now() - started))
        return True

    def _loading(self, progress: ModelLoading) -> None:
        if self._events is not None:
            self._events.loading(progress)

    # Talking

    def start_listening(self) -> None:
        if self.pipeline.unheard is not None:
            raise VoiceUnavailable(self._problem(self.pipeline.unheard))
        self.pipeline.listen(True)

    def stop_listening(self) -> None:
        self.pipeline.listen(False)

    def press(self) -> None:
        if self.pipeline.unheard is not None:
            self._report(self._problem(self.pipeline.unheard))
        self.pipeline.press()

    def release(self) -> None:
        self.pipeline.release()

    # The pipeline's facts, in words

    def _on_fact(self, fact: facts.PipelineFact) -> None:
        events = self._events
        if events is None:
            return
        if isinstance(fact, facts.MicLevel):
            events.level(fact.level)
        elif isinstance(fact, facts.ModelLoading):
            events.loading(fact)
        elif isinstance(fact, facts.MicrophoneFailed):
            events.problem(self._problem(fact))
            events.listening_stopped()
        elif isinstance(fact, facts.MicrophoneRecovered):
            events.problem_cleared("no_microphone")
        elif isinstance(fact, facts.SpeechModelFailed | facts.SpeakerFailed | facts.PipelineFailed):
            events.problem(self._problem(fact))
        elif isinstance(fact, facts.EchoProtectionOff):
            events.problem(echo_protection_off(fact.reason))
        elif isinstance(fact, facts.EchoProtectionOn):
            events.problem_cleared("aec")
        elif isinstance(fact, UtteranceDropped):
            notice = dropped_problem(fact)
            if notice is not None:
                events.problem(notice)

    def _problem(
        self, fact: facts.MicrophoneFailed | facts.SpeechModelFailed | facts.SpeakerFailed | facts.PipelineFailed
    ) -> Problem:
        if isinstance(fact, facts.MicrophoneFailed):
            return microphone_failed(fact.reason)
        if isinstance(fact, facts.SpeechModelFailed):
            return speech_model_missing(fact.model, fact.detail)
        if isinstance(fact, facts.SpeakerFailed):
            return speaker_failed(fact.reason)
        if fact.listening_goes_on:
            return utterance_lost(fact.part.removeprefix(UTTERANCE_PART), fact.error)
        return voice_stopped(fact.error)

    def _report(self, problem: Problem) -> None:
        """A problem for the window (dropped while the voice is not running)."""
        if self._events is not None:
            self._events.problem(problem)

    async def _play(self, scenario: Scenario, binding: Binding) -> None:
        """Play the scenario into the attached conversation in real time, once the models are loaded."""
        await self.pipeline.loaded.wait()
        if self.pipeline.unheard is not None:
            return
        await self.pipeline.microphone_open.wait()
        devices = self.pipeline.devices
        assert devices.files is not None
        assert devices.recording is not None
        self._report(fixture_playing(scenario.path))
        try:
            await play(Stage(self.pipeline.clock, binding, devices.files, devices.recording), scenario, [])
        except TimeoutError as error:
            self._report(fixture_problem(f"The scenario stopped: {error}"))
            return
        self._report(fixture_done(scenario.path))


def _path(model: WhisperTranscriber | PiperSynthesizer) -> Path:
    return model.model_dir if isinstance(model, WhisperTranscriber) else model.voice_path


def _same(one: WhisperTranscriber | PiperSynthesizer, other: WhisperTranscriber | PiperSynthesizer) -> bool:
    """The same model file, told the same language."""
    return _path(one) == _path(other) and getattr(one, "language", None) == getattr(other, "language", None)
