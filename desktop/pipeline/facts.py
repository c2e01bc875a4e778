"""What the voice pipeline reports to whoever runs it (frozen, past tense); only the app turns them into words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from audio.turns.facts import UTTERANCE_PART, UtteranceDropped

SpeechModel = Literal["speech recognition", "Parley's voice"]


@dataclass(frozen=True)
class ModelLoading:
    """A model is loading in the background (the window stays usable), is ready, or failed."""

    label: str
    phase: Literal["loading", "ready", "failed"]
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class SpeechModelFailed:
    """Whisper or Piper could not be loaded; `detail` is one line naming the problem and the fix."""

    model: SpeechModel
    detail: str

    @property
    def message(self) -> str:
        return f"{self.model} could not be loaded: {self.detail}"


@dataclass(frozen=True)
class MicrophoneFailed:
    """The microphone cannot be listened to (failed to open, stopped, or the VAD model is missing)."""

    reason: str

    @property
    def message(self) -> str:
        return f"the microphone cannot be used: {self.reason}"


@dataclass(frozen=True)
class MicrophoneRecovered:
    """Audio flows from the microphone again after a failure was reported."""


@dataclass(frozen=True)
class SpeakerFailed:
    """The output device cannot be used; replies fall back to silent, timed text."""

    reason: str


@dataclass(frozen=True)
class EchoProtectionOff:
    """Parley cannot tell its own voice from the user's (no canceller, or one not removing the echo): talking over
    it does not interrupt until protection is back; push-to-talk always does."""

    reason: str


@dataclass(frozen=True)
class EchoProtectionOn:
    """Echo protection works (again)."""


@dataclass(frozen=True)
class MicLevel:
    """The cleaned microphone level, 0..1, a few times a second while the microphone is listened to."""

    level: float


TOO_QUIET_DBFS = -50.0  # speech softer than this is hard to make out: the person is told to speak up or move closer


@dataclass(frozen=True)
class PipelineFailed:
    """A part of the pipeline stopped with an unexpected error (logged); typing still works."""

    part: str
    error: Exception

    @property
    def listening_goes_on(self) -> bool:
        """Only one utterance (or interruption) was lost: the microphone is still listened to, the next one counts.
        Otherwise (the listener, the model loading) the voice has stopped until Parley restarts."""
        return self.part.startswith(UTTERANCE_PART)


PipelineFact = (
    ModelLoading
    | SpeechModelFailed
    | MicrophoneFailed
    | MicrophoneRecovered
    | SpeakerFailed
    | EchoProtectionOff
    | EchoProtectionOn
    | MicLevel
    | PipelineFailed
    | UtteranceDropped
)
