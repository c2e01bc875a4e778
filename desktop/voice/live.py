"""The window's real voice: microphone → echo canceller → VAD → barge-in → Ears, and Piper → speaker.

`LiveVoice` is the desktop's `VoiceIO` over the parts `parley run` wires in desktop.voice.fixture_run
(Listener, EchoCanceller, Vad, BargeInDetector, Ears, VoiceOutput, SessionMetrics), composed here:
- on real devices (`LiveVoice(config, clock)`): PortAudio's Microphone and Player;
- on a scenario (`LiveVoice(config, clock, scenario=...)`): FileSource (+ EchoMixer) and RecordingSink,
  with fixture_run's driver playing the scenario in real time once the models are loaded.

The session rebuilds its conversation when settings are saved, so Ears and SessionMetrics (which bind to
one conversation) are made per attached conversation; the devices, the Listener and the speaker live as
long as the voice. Hands-free feeds VAD onsets and ends to Ears and arms VAD barge-in; without it the
microphone is heard only while push-to-talk is held (Ears keeps 0.4 s of pre-roll so the first syllable
is not cut). Models load in their worker threads while the window is usable. No Qt here.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from adapters.contract import CancelSignal
from adapters.llm.models import ModelError
from audio import devices as audio_devices
from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.capture import Microphone
from audio.events import AudioUnavailable, CaptureFailed, EchoCancellerUnavailable, PlaybackFailed, VadUnavailable
from audio.fixtures import EchoMixer, FileSource, RecordingSink
from audio.listen import Listener, ListenEvent
from audio.player import Player
from audio.ports import AudioSink, AudioSource, Frame, run_blocking
from audio.vad import Vad, VadConfig
from desktop.app.facts import ModelLoading, Problem
from desktop.app.voice import SIMULATED_MS_PER_WORD, VoiceEvents, VoiceUnavailable
from desktop.app.wording import (
    device_not_found,
    fixture_done,
    fixture_playing,
    fixture_problem,
    microphone_failed,
    no_microphone,
    no_portaudio,
    no_speaker,
    speaker_failed,
    speech_model_missing,
    voice_stopped,
)
from desktop.config import AudioConfig, Config
from desktop.scenario import Scenario
from desktop.voice.assembly import BadInput, speech_models
from desktop.voice.ears import Ears
from desktop.voice.fixture_run import Rig
from desktop.voice.fixture_run import _play as play_scenario
from desktop.voice.session_metrics import SessionMetrics
from desktop.voice.voice_output import VoiceOutput
from engine.clock import Clock
from engine.conversation import Conversation
from engine.speech import SpeechKey, SpeechOutput, SpokenSegment
from engine.testing import FakeSpeechOutput

log = logging.getLogger(__name__)
T = TypeVar("T")

LEVEL_EVERY = 1600  # samples (100 ms at 16 kHz) per reported microphone level
LEVEL_FLOOR_DB = -60.0  # this quiet or quieter shows as an empty meter; 0 dBFS as a full one
WHISPER = "speech recognition (Whisper)"
PIPER = "Parley's voice (Piper)"


class _Speaker(AudioSink, Protocol):
    @property
    def latency_s(self) -> float: ...


class _Preloads(Protocol):
    async def preload(self, signal: CancelSignal) -> None: ...


@dataclass(frozen=True)
class _Fixture:
    scenario: Scenario
    files: FileSource
    sink: RecordingSink


def probe_devices(audio: AudioConfig) -> tuple[Problem | None, Problem | None]:
    """Why the configured microphone and speaker cannot be used (None: they can), without opening them."""
    return _probe(audio.input_device, "input"), _probe(audio.output_device, "output")


def _probe(device: str, kind: str) -> Problem | None:
    try:
        audio_devices.resolve_device(device or None, "input" if kind == "input" else "output")
    except AudioUnavailable as error:
        text = str(error)
        if text == audio_devices.NO_PORTAUDIO:
            return no_portaudio()
        if device and ("not found" in text or "matches several" in text):
            return device_not_found("microphone" if kind == "input" else "speaker", text)
        return no_microphone() if kind == "input" else no_speaker()
    return None


def level_of(samples: np.ndarray) -> float:
    """A meter reading 0..1 for cleaned audio: its RMS on a decibel scale from LEVEL_FLOOR_DB to 0 dBFS."""
    if len(samples) == 0:
        return 0.0
    rms = math.sqrt(float(np.mean(np.square(samples, dtype=np.float64))))
    decibels = 20 * math.log10(max(rms, 1e-9))
    return min(1.0, max(0.0, (decibels - LEVEL_FLOOR_DB) / -LEVEL_FLOOR_DB))


class _Speech:
    """The engine's SpeechOutput: Piper through the speaker while it works, else silent simulated speech.

    Chosen per turn at its first call, so a turn never changes speaker half way.
    """

    def __init__(self, live: VoiceOutput, silent: FakeSpeechOutput, voice: LiveVoice) -> None:
        self.live, self.silent = live, silent
        self._voice = voice
        self._turns: dict[int, SpeechOutput] = {}

    def _for(self, turn: int) -> SpeechOutput:
        if turn not in self._turns:
            self._turns[turn] = self.live if self._voice.speaks else self.silent
        return self._turns[turn]

    async def say(self, key: SpeechKey, text: str, signal: CancelSignal) -> None:
        await self._for(key.turn).say(key, text, signal)

    async def drain(self, turn: int, signal: CancelSignal) -> None:
        await self._for(turn).drain(turn, signal)

    def discard(self, key: SpeechKey) -> None:
        self._for(key.turn).discard(key)

    def silence(self, turn: int) -> None:
        self._for(turn).silence(turn)

    def report(self, turn: int) -> tuple[SpokenSegment, ...]:
        return self._for(turn).report(turn)

    def release(self, turn: int) -> None:
        speech = self._turns.pop(turn, None)
        if speech is not None:
            speech.release(turn)


class LiveVoice:
    """Microphone and speaker (or a scenario's files) behind the session's VoiceIO port.

    Raises VoiceUnavailable when the speech models are not installed. `speaker=False` means there is no
    output device: replies are then shown and timed as if spoken, silently.
    """

    simulated = False

    def __init__(self, config: Config, clock: Clock, *, scenario: Scenario | None = None, speaker: bool = True) -> None:
        try:
            self._transcriber, self._synth = speech_models(config)
        except BadInput as error:
            raise VoiceUnavailable(speech_model_missing("the speech models", str(error))) from None
        self._clock = clock
        self._config = config
        self._fixture: _Fixture | None = None
        self._sink: _Speaker
        self._source: AudioSource
        if scenario is None:
            audio = config.audio
            self._sink = Player(audio.output_device or None, rate=self._synth.sample_rate, on_failure=self._failed)
            self._source = Microphone(audio.input_device or None)
        else:
            sink = RecordingSink(clock, rate=self._synth.sample_rate)
            files = FileSource(clock)
            echo = scenario.echo
            self._sink, self._fixture = sink, _Fixture(scenario, files, sink)
            self._source = EchoMixer(files, sink, gain=echo.gain, delay_s=echo.delay_ms / 1000) if echo else files
        self._has_speaker = speaker
        self._speaker_on = False  # the output device is open
        self._voice_loaded = True  # False once Piper failed to load
        output = VoiceOutput(self._synth, self._sink, clock, on_first_audio=self._first_audio)
        self._speech = _Speech(output, FakeSpeechOutput(clock, ms_per_word=SIMULATED_MS_PER_WORD), self)
        self._events: VoiceEvents | None = None
        self._detector: BargeInDetector | None = None
        self._listener: Listener | None = None
        self._conversation: Conversation | None = None
        self._ears: Ears | None = None
        self._metrics: SessionMetrics | None = None
        self._unheard: Problem | None = None  # why spoken input cannot work (no microphone, no Whisper)
        self._hands_free = scenario is not None  # a scenario speaks without pressing Talk
        self._held = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loads: list[asyncio.Task[None]] = []
        self._driver: asyncio.Task[None] | None = None
        self._closed = False
        self._level: list[np.ndarray] = []
        self._level_samples = 0

    # What the window shows

    @property
    def description(self) -> str:
        if self._fixture is not None:
            return (
                f"Playing {self._fixture.scenario.path.name} into a simulated microphone in real time "
                "(real Whisper and Piper; the reply audio is recorded, not played)."
            )
        audio = self._config.audio
        speaker = (audio.output_device or "system default") if self._has_speaker else "none (replies are silent)"
        return (
            "Hold Talk (or Space) while you speak, or turn on Hands-free; talk over Parley to interrupt it. "
            f"Microphone: {audio.input_device or 'system default'}; speaker: {speaker}."
        )

    @property
    def speech(self) -> SpeechOutput:
        return self._speech

    @property
    def speaks(self) -> bool:
        """Replies go to the speaker (else they are 'spoken' silently, see `_Speech`)."""
        return self._speaker_on and self._sink.failure is None and self._voice_loaded

    # Lifecycle

    async def open(self, events: VoiceEvents, config: Config) -> None:
        """Open the speaker, start loading the models, then open the microphone (or queue the scenario)."""
        self._events = events
        audio = config.audio
        await self._start_speaker()
        self._detector = BargeInDetector(
            self._sink,
            self._clock,
            min_speech_ms=audio.min_speech_ms,
            resolve_window_ms=audio.false_interruption_window_ms,
        )
        self._loads = [
            self._own(self._load(WHISPER, self._transcriber, "speech recognition"), "load-whisper"),
            self._own(self._load(PIPER, self._synth, "Parley's voice"), "load-piper"),
        ]
        vad_config = VadConfig(audio.vad_threshold, min_silence_ms=audio.min_silence_ms)
        try:
            vad = await run_blocking(lambda: Vad(vad_config))
        except VadUnavailable as error:
            self._unheard = microphone_failed(str(error))
        else:
            barge_in = self._detector if self._hands_free else None
            self._listener = Listener(self._source, vad, echo=self._echo_canceller(config), barge_in=barge_in)
        self._bind()
        if self._unheard is not None:
            raise VoiceUnavailable(self._unheard)
        if self._fixture is not None:
            self._driver = self._own(self._play(self._fixture), "scenario")
            return
        try:
            await self._source.start()
        except AudioUnavailable as error:
            self._unheard = microphone_failed(str(error))
            raise VoiceUnavailable(self._unheard) from None
        self._own(self._listen(), "listener")

    async def attach(self, conversation: Conversation | None) -> None:
        await self._unbind()
        self._conversation = None if self._closed else conversation
        self._bind()

    async def aclose(self) -> None:
        await self.attach(None)
        self._closed = True
        await self._source.close()  # the listener's frames end
        for task in list(self._tasks):
            task.cancel()
        while pending := {t for t in self._tasks if not t.done()}:
            await asyncio.wait(pending)
        await self._sink.close()
        self._events = None

    # Talking

    def start_listening(self) -> None:
        if self._unheard is not None:
            raise VoiceUnavailable(self._unheard)
        self._hands_free = True
        if self._listener is not None:
            self._listener.barge_in = self._detector

    def stop_listening(self) -> None:
        self._hands_free = False
        if self._listener is not None:
            self._listener.barge_in = None
        if self._ears is not None and not self._held:
            self._ears.release()  # an utterance under way ends here
        self._quiet()

    def press(self) -> None:
        if self._held:
            return
        self._held = True
        if self._unheard is not None:
            self._report(self._unheard)
        elif self._ears is not None:
            self._ears.press()

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        if self._ears is not None and self._unheard is None:
            self._ears.release()
        if not self._hands_free:
            self._quiet()

    # The listening chain's callbacks (on the loop)

    def _on_event(self, event: ListenEvent) -> None:
        if isinstance(event, CaptureFailed):
            self._capture_failed(event)
        elif self._ears is not None and self._hands_free and self._unheard is None:
            self._ears.on_event(event)

    def _on_audio(self, frame: Frame) -> None:
        if self._ears is not None:
            self._ears.on_audio(frame)  # only pre-roll is kept unless an utterance is under way
        if not (self._hands_free or self._held) or self._events is None:
            return
        self._level.append(frame.samples)
        self._level_samples += len(frame.samples)
        if self._level_samples >= LEVEL_EVERY:
            self._events.level(level_of(np.concatenate(self._level)))
            self._level, self._level_samples = [], 0

    def _quiet(self) -> None:
        self._level, self._level_samples = [], 0
        if self._events is not None:
            self._events.level(0.0)

    def _capture_failed(self, failure: CaptureFailed) -> None:
        if self._ears is not None:
            self._ears.on_event(failure)
            self._ears.release()
        self._unheard = microphone_failed(failure.reason)
        self._report(self._unheard)
        self._quiet()
        if self._events is not None:
            self._events.listening_stopped()

    def _failed(self, failure: PlaybackFailed) -> None:
        self._report(speaker_failed(failure.reason))

    def _first_audio(self, turn: int, queued_at: float, synth_ms: float) -> None:
        if self._metrics is not None:
            self._metrics.first_audio(turn, queued_at, synth_ms)

    # Parts

    async def _start_speaker(self) -> None:
        if not self._has_speaker:
            return
        try:
            await self._sink.start()
        except AudioUnavailable as error:
            self._report(speaker_failed(str(error)))
            return
        self._speaker_on = True

    def _echo_canceller(self, config: Config) -> EchoCanceller:
        """WebRTC AEC on what the speaker plays, where sound can travel from the speaker to the microphone."""
        acoustic = self._fixture.scenario.echo is not None if self._fixture else self._speaker_on
        try:
            return EchoCanceller(self._sink.tap(), enabled=config.audio.echo_cancellation and acoustic)
        except EchoCancellerUnavailable as error:
            self._report(Problem(str(error), "Parley may interrupt itself on loudspeakers; use headphones", "aec"))
            return EchoCanceller(None, enabled=False)

    async def _load(self, label: str, model: _Preloads, what: str) -> None:
        started = self._clock.now()
        self._loading(ModelLoading(label, "loading"))
        try:
            await model.preload(CancelSignal())
        except ModelError as error:
            self._loading(ModelLoading(label, "failed", self._clock.now() - started))
            problem = speech_model_missing(what, str(error))
            if model is self._transcriber:
                self._unheard = problem
            else:
                self._voice_loaded = False
            self._report(problem)
            return
        self._loading(ModelLoading(label, "ready", self._clock.now() - started))

    async def _listen(self) -> None:
        assert self._listener is not None
        await self._listener.run(self._on_event, self._on_audio)

    def _bind(self) -> None:
        """Ears and metrics for the attached conversation, once the listening chain exists."""
        conversation = self._conversation
        if conversation is None or self._detector is None or self._ears is not None:
            return
        self._metrics = SessionMetrics(conversation, self._sink.latency_s)
        self._ears = Ears(
            conversation,
            self._transcriber,
            self._detector,
            self._sink,
            self._clock,
            on_utterance=self._metrics.utterance,
        )

    async def _unbind(self) -> None:
        driver, self._driver = self._driver, None
        ears, self._ears, self._metrics, self._conversation = self._ears, None, None, None
        if driver is not None:
            driver.cancel()
            await asyncio.wait({driver})
        if ears is not None:
            await ears.aclose()
        if self._detector is not None:
            self._detector.disarm()
            self._sink.resume()  # a barge-in left unresolved must not keep the next conversation silent

    async def _play(self, fixture: _Fixture) -> None:
        """Play the scenario into the attached conversation in real time, as `parley run` does."""
        await asyncio.wait(self._loads)  # never gather: cancelling this must not cancel the loads
        if self._unheard is not None:
            return
        await self._source.start()
        self._own(self._listen(), "listener")
        conversation, ears, metrics = self._conversation, self._ears, self._metrics
        if conversation is None or ears is None or metrics is None:
            self._report(fixture_problem("No language model is running, so the scenario cannot be answered"))
            return
        rig = Rig(self._clock, conversation, fixture.files, fixture.sink, ears, metrics, conversation.parts.journal)
        self._report(fixture_playing(fixture.scenario.path))
        try:
            await play_scenario(rig, fixture.scenario, [])
        except TimeoutError as error:
            self._report(fixture_problem(f"The scenario stopped: {error}"))
            return
        self._report(fixture_done(fixture.scenario.path))

    # Plumbing

    def _report(self, problem: Problem) -> None:
        if self._events is not None:
            self._events.problem(problem)

    def _loading(self, progress: ModelLoading) -> None:
        if self._events is not None:
            self._events.loading(progress)

    def _own(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        task = asyncio.get_running_loop().create_task(coro, name=f"live-voice:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.error("voice task %s failed", task.get_name(), exc_info=error)
            self._report(voice_stopped(error))


def scenario_path(path: Path) -> Path:
    """A scenario given on the command line: as written, or else one of the bundled ones by that name."""
    from desktop.assets import fixture

    bundled = fixture(path.name)
    return bundled if not path.exists() and path.parent == Path() and bundled.exists() else path
