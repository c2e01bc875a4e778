"""The session's port to the voice pipeline, and the simulated voice used when there is no microphone.

The real pipeline (microphone → VAD → Whisper; Piper → speaker with the heard cursor) is
`desktop.model.live_voice.LiveVoice` over desktop.pipeline; it reports what happens through the
`VoiceEvents` it runs with, and is attached to each conversation the session runs (barge-in cancels
that conversation's turn). Every `VoiceEvents` call happens on the event loop's thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from adapters.contract.clock import Clock
from desktop.config import Config
from desktop.model.facts import ModelLoading, Problem
from desktop.model.wording import voice_not_wired
from desktop.pipeline.speech import SIMULATED_MS_PER_WORD
from engine.conversation import Conversation
from engine.events import State
from engine.inbox import UserInput
from engine.silent_speech import SilentSpeech
from engine.speech import SpeechOutput


class VoiceUnavailable(Exception):
    """The voice cannot do what was asked (no microphone, not wired); `problem` says why and how to fix it."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class VoiceEvents(Protocol):
    """What the voice pipeline tells the session."""

    def level(self, value: float) -> None:
        """Microphone input level, 0..1, a few times a second while the microphone is open."""

    def input_state(self, state: State) -> None:
        """LISTENING, TRANSCRIBING or IDLE as the capture side moves along."""

    def speech_started(self) -> None:
        """VAD speech onset (not the assistant's own echo): the session barges in."""

    def utterance(self, item: UserInput) -> None:
        """A final transcript (`source="voice"`, ASR timings in `metrics`) to answer."""

    def problem(self, problem: Problem) -> None:
        """Something the person must fix (device gone, model missing)."""

    def problem_cleared(self, kind: str) -> None:
        """What was wrong (a Problem of this kind) is fixed by itself."""

    def loading(self, progress: ModelLoading) -> None:
        """Progress of loading Whisper, Piper or the VAD model."""

    def listening_stopped(self) -> None:
        """The microphone can no longer be listened to (it failed): hands-free is off."""


@dataclass(frozen=True)
class VoiceCallbacks:
    """`VoiceEvents` made of plain callables: how the session hands itself to the voice."""

    level: Callable[[float], None]
    input_state: Callable[[State], None]
    speech_started: Callable[[], None]
    utterance: Callable[[UserInput], None]
    problem: Callable[[Problem], None]
    problem_cleared: Callable[[str], None]
    loading: Callable[[ModelLoading], None]
    listening_stopped: Callable[[], None]


class VoiceIO(Protocol):
    """Microphone and speaker behind one port; `speech` is what the engine speaks through."""

    @property
    def simulated(self) -> bool: ...

    @property
    def description(self) -> str:
        """One honest sentence for the window, e.g. what is simulated."""
        ...

    @property
    def speech(self) -> SpeechOutput: ...

    def running(self, events: VoiceEvents) -> AbstractAsyncContextManager[None]:
        """Devices open and models loading for the block; on leaving, capture and playback have stopped and
        every worker has returned. Problems are reported through `events`, never raised."""
        ...

    def attached(self, conversation: Conversation) -> AbstractAsyncContextManager[None]:
        """Spoken input goes to `conversation` and barge-in cancels its turns, for the block."""
        ...

    async def models_loaded(self) -> None:
        """Returns once the speech models `running` started to load have loaded (or failed to)."""

    async def prepare_models(self, config: Config) -> None:
        """Load the speech models `config` names while a turn may still be under way (problems are reported)."""

    async def use_models(self, config: Config) -> None:
        """Speak and listen with the models `config` names from now on (called between two conversations, when
        nothing is attached); the ones replaced are released."""

    def start_listening(self) -> None:
        """Hands-free: VAD decides when the person speaks; may raise VoiceUnavailable."""

    def stop_listening(self) -> None: ...

    def press(self) -> None:
        """Push-to-talk went down: start capturing (the session has already barged in)."""

    def release(self) -> None:
        """Push-to-talk went up: end of the utterance; transcribe it and report `utterance`."""


class SimulatedVoice:
    """No microphone; a silent speaker on the real clock that 'speaks' at a fixed rate per word.

    Push-to-talk still works as a barge-in. Utterances queued with `queue_utterance` are
    delivered on release, as if transcribed; that is how a scenario driver speaks.
    `why` is the reason there is no real voice (shown when the person tries to talk).
    """

    simulated = True

    def __init__(self, clock: Clock, *, ms_per_word: float = SIMULATED_MS_PER_WORD, why: Problem | None = None) -> None:
        self._speech = SilentSpeech(clock, ms_per_word=ms_per_word)
        self._ms_per_word = ms_per_word
        self._why = why or voice_not_wired()
        self._events: VoiceEvents | None = None
        self._scripted: deque[str] = deque()

    @property
    def description(self) -> str:
        return (
            f"{self._why.message}: replies are spoken silently at {self._ms_per_word:.0f} ms a word so you can "
            "interrupt them; type to talk."
        )

    @property
    def speech(self) -> SilentSpeech:
        return self._speech

    @asynccontextmanager
    async def running(self, events: VoiceEvents) -> AsyncIterator[None]:
        self._events = events
        try:
            yield
        finally:
            self._events = None

    @asynccontextmanager
    async def attached(self, conversation: Conversation) -> AsyncIterator[None]:
        yield

    async def models_loaded(self) -> None:
        return None  # no models to load

    async def prepare_models(self, config: Config) -> None:
        return None  # no models: replies are timed, not spoken

    async def use_models(self, config: Config) -> None:
        return None

    def start_listening(self) -> None:
        raise VoiceUnavailable(self._why)

    def stop_listening(self) -> None:
        pass

    def queue_utterance(self, text: str) -> None:
        self._scripted.append(text)

    def press(self) -> None:
        if self._events is not None:
            self._events.input_state(State.LISTENING)

    def release(self) -> None:
        if self._events is None:
            return
        self._events.input_state(State.IDLE)
        if self._scripted:
            self._events.utterance(UserInput(self._scripted.popleft(), source="voice"))
        else:
            self._events.problem(self._why)
