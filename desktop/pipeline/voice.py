"""The one voice pipeline: microphone → echo canceller → VAD → barge-in → Ears, and Piper → speaker.

The window, `parley run`, the bench and the self-test all run it, on real or fixture devices and any clock
(`open_pipeline`). It is bound to one conversation at a time (`attached`): the window rebuilds its conversation
when settings change, while the devices, the listening chain and the models live as long as the pipeline.
Hands-free (`listening`) feeds VAD onsets and ends to Ears and arms VAD barge-in; without it the microphone is
heard only while push-to-talk is held (Ears keeps 0.4 s of pre-roll). What happens is reported as facts
(desktop.pipeline.facts) through `on_fact`; only the app turns them into words.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio
import numpy as np

from adapters.contract import CancelSignal
from adapters.contract.clock import Clock
from adapters.contract.speech_io import Synthesizer, Transcriber
from adapters.contract.turn import EndOfTurnModel
from adapters.runtime.model_files import ModelError
from adapters.runtime.tasks import Tasks, open_tasks
from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.events import (
    AudioUnavailable,
    CaptureFailed,
    EchoCancellerUnavailable,
    EchoProtectionLost,
    EchoProtectionRestored,
    EchoRunDropped,
    OnsetPaused,
    OnsetResumed,
    PlaybackFailed,
    VadUnavailable,
)
from audio.listen import Listener, ListenEvent
from audio.own_voice import TimedWord
from audio.ports import Frame, run_blocking
from audio.turns.ears import Ears, open_ears
from audio.turns.endpoint import PAUSE_SILENCE_MS, EndpointConfig
from audio.turns.facts import UtteranceDropped
from audio.turns.utterance import TurnTaking
from audio.vad import Vad, VadConfig
from desktop.config import AudioConfig
from desktop.languages import ENGLISH, word_rules_apply
from desktop.pipeline.audio_io import Devices
from desktop.pipeline.facts import (
    EchoProtectionOff,
    EchoProtectionOn,
    MicLevel,
    MicrophoneFailed,
    MicrophoneRecovered,
    ModelLoading,
    PipelineFact,
    PipelineFailed,
    SpeakerFailed,
    SpeechModel,
    SpeechModelFailed,
)
from desktop.pipeline.metrics import SessionMetrics
from desktop.pipeline.speech import SIMULATED_MS_PER_WORD, FallbackSpeech
from desktop.pipeline.voice_output import VoiceOutput
from engine.conversation import Conversation
from engine.silent_speech import SilentSpeech

if TYPE_CHECKING:
    from adapters.turn.smart_turn import SmartTurn

log = logging.getLogger(__name__)

LEVEL_EVERY = 1600  # samples (100 ms at 16 kHz) per reported microphone level
LEVEL_FLOOR_DB = -60.0  # this quiet or quieter shows as an empty meter; 0 dBFS as a full one
RELISTEN_S = 1.0  # after the microphone failed, listen again this often: a stalled device may come back
WHISPER = "speech recognition (Whisper)"
PIPER = "Parley's voice (Piper)"
SMART_TURN = "end-of-turn model (Smart Turn)"


class _Preloads(Protocol):
    async def preload(self, signal: CancelSignal) -> None: ...


class _Transcribes(Transcriber, _Preloads, Protocol): ...


class _Synthesizes(Synthesizer, _Preloads, Protocol): ...


_Judge = TypeVar("_Judge", bound=_Preloads)


@dataclass(frozen=True)
class Binding:
    """What the pipeline runs for the attached conversation."""

    conversation: Conversation
    ears: Ears
    metrics: SessionMetrics
    first_heard: Callable[[int], float | None]  # when a turn's reply was first audible, by the device's clock
    played_words: Callable[[float], list[TimedWord]]  # what the speaker played since a clock time


def endpoint_config(audio: AudioConfig, *, use_model: bool, word_rules: bool = True) -> EndpointConfig:
    """The end-of-turn policy's settings from the [audio] configuration; `word_rules` where they apply (English)."""
    return EndpointConfig(
        max_wait_ms=audio.max_turn_wait_ms,
        min_silence_ms=audio.min_silence_ms,
        doubt_wait_ms=audio.statement_wait_ms,
        use_model=use_model,
        word_rules=word_rules,
    )


def pause_ms(audio: AudioConfig) -> float:
    """The VAD's silence: a pause this long asks whether the turn is over (audio.turns.endpoint)."""
    return min(PAUSE_SILENCE_MS, float(audio.min_silence_ms))


def level_of(samples: np.ndarray) -> float:
    """A meter reading 0..1 for cleaned audio: its RMS on a decibel scale from LEVEL_FLOOR_DB to 0 dBFS."""
    if len(samples) == 0:
        return 0.0
    rms = math.sqrt(float(np.mean(np.square(samples, dtype=np.float64))))
    decibels = 20 * math.log10(max(rms, 1e-9))
    return min(1.0, max(0.0, (decibels - LEVEL_FLOOR_DB) / -LEVEL_FLOOR_DB))


class VoicePipeline:
    """Devices, models and the listening chain. Built idle (its `speech` port exists at once, for the engine);
    `running()` opens the devices and loads the models for as long as its block lasts. `speaker=False`: there
    is no output device, replies are shown and timed as if spoken, silently."""

    def __init__(
        self,
        devices: Devices,
        transcriber: _Transcribes,
        synthesizer: _Synthesizes,
        clock: Clock,
        audio: AudioConfig,
        *,
        listening: bool = False,
        speaker: bool = True,
        turn_model: EndOfTurnModel | None = None,
    ) -> None:
        """`turn_model`: the end-of-turn model to use (default: Smart Turn, loaded with the others when
        `audio.turn_model` is on; the words and the silence alone decide while it is missing)."""
        self.devices = devices
        self.transcriber = transcriber
        self.synthesizer = synthesizer
        self.clock = clock
        self.audio = audio
        self._on_fact: Callable[[PipelineFact], None] = _ignore
        self._tasks: Tasks | None = None
        self._has_speaker = speaker
        self.detector = BargeInDetector(
            devices.sink, clock, min_speech_ms=audio.min_speech_ms, resolve_window_ms=audio.false_interruption_window_ms
        )
        self._output = output = VoiceOutput(synthesizer, devices.sink, clock, on_first_audio=self._first_audio)
        self.speech = FallbackSpeech(output, SilentSpeech(clock, ms_per_word=SIMULATED_MS_PER_WORD), self._speaks)
        self.listener: Listener | None = None
        self.loaded = anyio.Event()  # the speech models loaded (or failed to)
        self.microphone_open = anyio.Event()  # the listening chain runs
        self.unheard: MicrophoneFailed | SpeechModelFailed | None = None  # why spoken input cannot work
        self._capture_failed_at: float | None = None  # the microphone stopped delivering (it may come back)
        self._speaker_on = False
        self._voice_loaded = True
        self._listening = listening
        self._held = False
        self._binding: Binding | None = None
        self._level: list[np.ndarray] = []
        self._level_samples = 0
        self._turn_model = turn_model

    # What runs it

    @property
    def binding(self) -> Binding | None:
        return self._binding

    @property
    def speaks(self) -> bool:
        """Replies go to the speaker (else they are 'spoken' silently, see FallbackSpeech)."""
        return self._speaks()

    @property
    def listening(self) -> bool:
        return self._listening

    def listen(self, on: bool) -> None:
        """Hands-free on or off: VAD decides when the person speaks, and arms barge-in by voice."""
        self._listening = on
        if self.listener is not None:
            self.listener.barge_in = self.detector if on else None
        if not on:
            if self._binding is not None and not self._held:
                self._binding.ears.release()  # an utterance under way ends here
            self._quiet()

    def press(self) -> None:
        if self._held:
            return
        self._held = True
        if self._binding is not None and self.unheard is None:
            self._binding.ears.press()

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        if self._binding is not None and self.unheard is None:
            self._binding.ears.release()
        if not self._listening:
            self._quiet()

    def use_models(self, transcriber: _Transcribes | None, synthesizer: _Synthesizes | None) -> None:
        """Listen and speak with these (loaded) models from now on; called while no conversation is attached, so
        no utterance or reply changes model half way (the next `attached` gives Ears the transcriber)."""
        if transcriber is not None:
            self.transcriber = transcriber
            if isinstance(self.unheard, SpeechModelFailed):
                self.unheard = None
        if synthesizer is not None:
            self.synthesizer = synthesizer
            self._output.use(synthesizer)
            self._voice_loaded = True

    def played_words(self, since: float) -> list[TimedWord]:
        """What Parley's speaker has played since `since` (clock), word by word: its echo may be heard."""
        return self._output.played_words(since)

    def turn_taking(self) -> TurnTaking:
        """How Ears decides that a turn is over (read at each utterance: the model may load later)."""
        model = self._turn_model if self.audio.turn_model else None
        words = word_rules_apply(getattr(self.transcriber, "language", ENGLISH))  # the transcriber in use now
        return TurnTaking(endpoint_config(self.audio, use_model=model is not None, word_rules=words), model)

    @asynccontextmanager
    async def attached(self, conversation: Conversation) -> AsyncIterator[Binding]:
        """Spoken input goes to `conversation` and barge-in cancels its turns, for the block."""
        metrics = SessionMetrics(conversation)
        async with open_ears(
            conversation,
            self.transcriber,
            self.detector,
            self.devices.sink,
            self.clock,
            on_error=self._failed,
            turn_taking=self.turn_taking,
            on_dropped=self._dropped,
            resume_false_interruptions=self.audio.false_interruption_resume,
            played_words=self.played_words,
        ) as ears:
            self._binding = binding = Binding(
                conversation, ears, metrics, self._output.first_heard_at, self.played_words
            )
            try:
                yield binding
            finally:
                self._binding = None
                metrics.close()
                self.detector.disarm()
                self.devices.sink.resume()  # a barge-in left unresolved must not keep the next one silent

    @asynccontextmanager
    async def running(self, on_fact: Callable[[PipelineFact], None]) -> AsyncIterator[VoicePipeline]:
        """Open the speaker, start loading the models, open the microphone (a scenario's once the models are in);
        on leaving, the devices are closed and every task and thread of the pipeline has ended."""
        self._on_fact = on_fact
        async with open_tasks(on_error=self._failed, cancel_on_exit=True) as tasks:
            self._tasks = tasks
            try:
                await self._start(tasks)
                yield self
            finally:
                with anyio.CancelScope(shield=True):
                    await self._close()
        self._tasks, self._on_fact = None, _ignore

    # Start-up

    async def _start(self, tasks: Tasks) -> None:
        await self._start_speaker()
        tasks.start(self._load_models, name="load-models")
        try:
            vad = await run_blocking(
                lambda: Vad(VadConfig(self.audio.vad_threshold, min_silence_ms=pause_ms(self.audio)))
            )
        except VadUnavailable as error:
            self._unheard(MicrophoneFailed(str(error)))
            return
        self.listener = Listener(self.devices.source, vad, echo=self._echo_canceller(), barge_in=None)
        self.listen(self._listening)
        if self.devices.fixture:
            tasks.start(self._listen_once_loaded, name="listener")
            return
        await self._open_microphone()

    async def _start_speaker(self) -> None:
        if not self._has_speaker:
            return
        try:
            await self.devices.sink.start()
        except AudioUnavailable as error:
            self._on_fact(SpeakerFailed(str(error)))
            return
        self._speaker_on = True

    async def _open_microphone(self) -> bool:
        try:
            await self.devices.source.start()
        except AudioUnavailable as error:
            self._unheard(MicrophoneFailed(str(error)))
            return False
        assert self._tasks is not None
        self._tasks.start(self._listen, name="listener")
        self.microphone_open.set()
        return True

    async def _listen_once_loaded(self) -> None:
        """A scenario's timeline starts once the models are in, so its first utterance is heard like any other."""
        await self.loaded.wait()
        if self.unheard is None:
            await self._open_microphone()

    def _echo_canceller(self) -> EchoCanceller | None:
        """WebRTC AEC on what the speaker plays, where sound can travel from the speaker to the microphone (none
        with a headset or without a speaker: no echo to guard against, so no echo guards either)."""
        if not (self.devices.acoustic and self._speaker_on):
            return None
        try:
            return EchoCanceller(self.devices.sink.tap(), enabled=self.audio.echo_cancellation)
        except EchoCancellerUnavailable:  # the listener reports the protection lost (push-to-talk only)
            return EchoCanceller(None, enabled=False)

    async def _load_models(self) -> None:
        try:
            await self._load(WHISPER, self.transcriber, "speech recognition")
            await self._load(PIPER, self.synthesizer, "Parley's voice")
            await self._load_turn_model()
        finally:
            self.loaded.set()

    async def _load_turn_model(self) -> None:
        """Smart Turn, unless turned off or given; without it the words and the silence decide (logged)."""
        if self._turn_model is None and self.audio.turn_model:
            self._turn_model = await self._load_judge(SMART_TURN, _smart_turn, "the words and the silence decide")

    async def _load_judge(self, label: str, make: Callable[[], _Judge], without: str) -> _Judge | None:
        """An end-of-turn model imported and made (importing llama.cpp alone runs seconds of Python: on the loop it
        starved the microphone; finding a file scans a wheel's file list) and loaded in a worker thread;
        None, logged and reported, when it cannot be: the turn is then decided without it."""
        started = self.clock.now()
        self._on_fact(ModelLoading(label, "loading"))
        try:
            model = await run_blocking(make)
            await model.preload(CancelSignal())
        except ModelError as error:
            log.warning("no %s, %s: %s", label, without, error)
            self._on_fact(ModelLoading(label, "failed", self.clock.now() - started))
            return None
        self._on_fact(ModelLoading(label, "ready", self.clock.now() - started))
        return model

    async def _load(self, label: str, model: _Preloads, what: SpeechModel) -> None:
        started = self.clock.now()
        self._on_fact(ModelLoading(label, "loading"))
        try:
            await model.preload(CancelSignal())
        except ModelError as error:
            self._on_fact(ModelLoading(label, "failed", self.clock.now() - started))
            failed = SpeechModelFailed(what, str(error))
            if model is self.transcriber:
                self._unheard(failed)
            else:
                self._voice_loaded = False
                self._on_fact(failed)
            return
        self._on_fact(ModelLoading(label, "ready", self.clock.now() - started))

    # The listening chain (on the loop)

    async def _listen(self) -> None:
        """Listen until the source ends; after a failure listen again (a stall is not always the end)."""
        assert self.listener is not None
        while await self.listener.run(self._on_event, self._on_audio) is not None:
            await self.clock.sleep(RELISTEN_S)

    def _on_event(self, event: ListenEvent) -> None:
        if isinstance(event, CaptureFailed):
            if not self.loaded.is_set():  # starting: loading models can starve the audio callback; not judged
                log.info("microphone quiet while the models load (%s); listening on", event.reason)
                return
            self._capture_failed(event)
        elif isinstance(event, EchoProtectionLost | EchoProtectionRestored):
            self._protection(event)
        elif isinstance(event, OnsetPaused | OnsetResumed):
            self._onset(event)
        elif isinstance(event, EchoRunDropped):  # on the record like any speech the ears do not take
            self._record(
                "utterance/dropped",
                reason="echo",
                detail=event.why,
                start=event.at,
                end=event.end,
                level_dbfs=event.level_dbfs,
            )
        elif self._binding is not None and self._listening and self.unheard is None:
            self._binding.ears.on_event(event)

    def _protection(self, event: EchoProtectionLost | EchoProtectionRestored) -> None:
        """On the record and in the window: while lost, only push-to-talk interrupts (the detector knows)."""
        lost = isinstance(event, EchoProtectionLost)
        reason = event.reason if isinstance(event, EchoProtectionLost) else ""
        self._record("audio/echo_protection", state="lost" if lost else "restored", reason=reason, at=event.at)
        self._on_fact(EchoProtectionOff(reason) if lost else EchoProtectionOn())

    def _onset(self, event: OnsetPaused | OnsetResumed) -> None:
        if isinstance(event, OnsetPaused):
            self._record("barge_in/onset_paused", onset=event.at, at=event.paused_at)
        else:
            self._record("barge_in/onset_resumed", onset=event.at, at=event.resumed_at)

    def _record(self, type_: str, **fields: object) -> None:
        if self._binding is not None:
            self._binding.conversation.record(type_, **fields)

    def _on_audio(self, frame: Frame) -> None:
        if self._capture_failed_at is not None:
            self._recovered()
        if self._binding is not None:
            self._binding.ears.on_audio(frame)  # only pre-roll is kept unless an utterance is under way
            if self.listener is not None:
                self._binding.ears.on_quiet(self.listener.vad.silence_from, self.listener.vad.silence_ms)
        if not (self._listening or self._held):
            return
        self._level.append(frame.samples)
        self._level_samples += len(frame.samples)
        if self._level_samples >= LEVEL_EVERY:
            self._on_fact(MicLevel(level_of(np.concatenate(self._level))))
            self._level, self._level_samples = [], 0

    def _capture_failed(self, failure: CaptureFailed) -> None:
        if self._binding is not None:
            self._binding.ears.on_event(failure)
            self._binding.ears.release()
        if self._capture_failed_at is None:  # reported once, however often listening again fails
            self._capture_failed_at = self.clock.now()
            self._unheard(MicrophoneFailed(failure.reason))
        self._quiet()

    def _recovered(self) -> None:
        """Audio flows again after a capture failure: spoken input works again (hands-free stays off)."""
        self._capture_failed_at = None
        if isinstance(self.unheard, MicrophoneFailed):
            self.unheard = None
            self._on_fact(MicrophoneRecovered())

    def _quiet(self) -> None:
        self._level, self._level_samples = [], 0
        self._on_fact(MicLevel(0.0))

    def _unheard(self, why: MicrophoneFailed | SpeechModelFailed) -> None:
        self.unheard = why
        self._listening = False
        if self.listener is not None:
            self.listener.barge_in = None
        self._on_fact(why)

    def _dropped(self, dropped: UtteranceDropped) -> None:
        self._on_fact(dropped)

    def _speaks(self) -> bool:
        return self._speaker_on and self.devices.sink.failure is None and self._voice_loaded

    def _first_audio(self, turn: int, queued_at: float, synth_ms: float) -> None:
        tasks = self._tasks
        if self._binding is not None and tasks is not None and not tasks.cancelled:  # not while the pipeline closes
            tasks.start(self._first_audible, self._binding.metrics, turn, synth_ms, name=f"first-audible-{turn}")

    async def _first_audible(self, metrics: SessionMetrics, turn: int, synth_ms: float) -> None:
        """ttfa ends at the device's stamp of the turn's first sample, once a block holding it is rendered, not at
        its queueing plus a nominal latency: a device that holds the stream back shows in it (issue 37)."""
        while (audible := self._output.first_heard_at(turn)) is None:
            if turn in metrics.ended:
                return  # silenced before any of it was rendered: nothing was audible
            await self.clock.sleep(self.devices.sink.block_s)
        metrics.first_audio(turn, audible, synth_ms)

    def _failed(self, part: str, error: Exception) -> None:
        _reporter(self._on_fact)(part, error)

    async def _close(self) -> None:
        await self.devices.source.close()  # the listener's frames end
        await self.devices.sink.close()


def _smart_turn() -> SmartTurn:
    from adapters.turn.smart_turn import SmartTurn

    return SmartTurn()


def _ignore(_fact: PipelineFact) -> None:
    return None


def _reporter(on_fact: Callable[[PipelineFact], None]) -> Callable[[str, Exception], None]:
    def failed(part: str, error: Exception) -> None:
        log.error("voice pipeline: %s failed", part, exc_info=error)
        on_fact(PipelineFailed(part, error))

    return failed


def playback_failed_to(on_fact: Callable[[PipelineFact], None]) -> Callable[[PlaybackFailed], None]:
    """The speaker's failure callback, as a fact."""
    return lambda failure: on_fact(SpeakerFailed(failure.reason))


@asynccontextmanager
async def open_pipeline(
    devices: Devices,
    transcriber: _Transcribes,
    synthesizer: _Synthesizes,
    clock: Clock,
    audio: AudioConfig,
    *,
    on_fact: Callable[[PipelineFact], None],
    listening: bool = False,
    turn_model: EndOfTurnModel | None = None,
) -> AsyncIterator[VoicePipeline]:
    """A running pipeline for the block (see VoicePipeline.running)."""
    pipeline = VoicePipeline(
        devices,
        transcriber,
        synthesizer,
        clock,
        audio,
        listening=listening,
        turn_model=turn_model,
    )
    async with pipeline.running(on_fact):
        yield pipeline
