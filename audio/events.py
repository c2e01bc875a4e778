"""Facts the audio layer reports (frozen, past tense) and the errors it raises (one clear line each)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BargeInSource = Literal["vad", "push_to_talk"]


@dataclass(frozen=True)
class CaptureFailed:
    """The microphone stopped delivering audio (unplugged, taken away, stalled)."""

    reason: str

    @property
    def message(self) -> str:
        return f"microphone failed: {self.reason}"


@dataclass(frozen=True)
class PlaybackFailed:
    """The output device stopped taking audio."""

    reason: str

    @property
    def message(self) -> str:
        return f"speaker failed: {self.reason}"


@dataclass(frozen=True)
class SpeechStarted:
    """Speech began at `at` (clock seconds of its first window); reported once it lasted the minimum."""

    at: float


@dataclass(frozen=True)
class SpeechEnded:
    """Speech ended at `at` (clock seconds of the first silent window); reported after the hangover."""

    at: float


@dataclass(frozen=True)
class BargeIn:
    """The person started talking (or pressed push-to-talk) over the assistant; output was paused."""

    at: float
    source: BargeInSource
    detected_at: float
    paused_at: float | None = None  # when the output went silent, if an onset paused it before the detection


@dataclass(frozen=True)
class OnsetPaused:
    """Sound the played signal cannot explain began at `at` (audio time): the output paused at `paused_at`
    (clock) until the VAD confirms speech (a BargeIn follows) or the sound proves to be none (OnsetResumed)."""

    at: float
    paused_at: float


@dataclass(frozen=True)
class OnsetResumed:
    """The onset paused at `at` was not speech: the reply went on at `resumed_at` from where it stopped."""

    at: float
    resumed_at: float


@dataclass(frozen=True)
class EchoRunDropped:
    """A speech run from `at` to `end` that the played signal explained: Parley's own voice, not the user's."""

    at: float
    end: float
    level_dbfs: float | None = None  # what the VAD heard of it, after the canceller (None: digital silence)
    why: str = ""  # the evidence, in words


@dataclass(frozen=True)
class EchoProtectionLost:
    """Parley can no longer tell its own voice from the user's (no echo canceller, or one that stopped removing
    the echo): barge-in is push-to-talk only until EchoProtectionRestored."""

    reason: str
    at: float


@dataclass(frozen=True)
class EchoProtectionRestored:
    """Echo protection works again: talking over Parley interrupts it again."""

    at: float


@dataclass(frozen=True)
class BargeInConfirmed:
    """The interruption holds words (or was push-to-talk): the caller cancels the turn."""

    at: float
    source: BargeInSource
    confirmed_at: float


@dataclass(frozen=True)
class FalseBargeInResumed:
    """The interruption held no words: the paused reply resumed where it stopped."""

    at: float
    resumed_at: float


class AudioError(Exception):
    """Base of the audio layer's errors; `str(error)` is one line naming the problem and the fix."""


class AudioUnavailable(AudioError):
    """No PortAudio, no device, or a device that cannot be opened."""


class WavError(AudioError):
    """A WAV file that cannot be read."""


class VadUnavailable(AudioError):
    """The Silero VAD model cannot be loaded."""


class EchoCancellerUnavailable(AudioError):
    """The WebRTC audio processing module cannot be loaded."""
