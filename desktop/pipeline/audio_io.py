"""The devices a pipeline runs on: PortAudio's microphone and speaker, or a scenario's files and a recording sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from adapters.contract.clock import Clock
from audio import portaudio
from audio.capture import Microphone
from audio.events import AudioUnavailable, PlaybackFailed
from audio.fixtures import EchoMixer, FileSource, RecordingSink
from audio.player import Player
from audio.ports import AudioSink, AudioSource
from desktop.config import AudioConfig
from desktop.scenario import Echo


class Speaker(AudioSink, Protocol):
    @property
    def latency_s(self) -> float:
        """From a sample leaving the queue to it being audible."""
        ...

    @property
    def block_s(self) -> float:
        """Seconds of audio rendered at a time."""
        ...


@dataclass(frozen=True)
class Devices:
    """`acoustic`: sound travels from the speaker to the microphone (echo cancellation applies).
    `files`/`recording` are the scenario's microphone and speaker when these are fixture devices."""

    source: AudioSource
    sink: Speaker
    acoustic: bool
    files: FileSource | None = None
    recording: RecordingSink | None = None

    @property
    def fixture(self) -> bool:
        return self.files is not None


def fixture_devices(clock: Clock, rate: int, *, echo: Echo | None = None, output: Path | None = None) -> Devices:
    """A simulated microphone hearing the scenario's clips (and the speaker's echo, with [echo]); a headset
    without it: no acoustic path, so nothing for the canceller to remove."""
    sink = RecordingSink(clock, rate=rate, path=output)
    files = FileSource(clock)
    if echo is None:
        return Devices(files, sink, acoustic=False, files=files, recording=sink)
    mixer = EchoMixer(
        files,
        sink,
        gain=echo.gain,
        delay_s=echo.delay_ms / 1000,
        jitter_s=echo.jitter_ms / 1000,
        drift_ppm=echo.drift_ppm,
        nonlinearity=echo.nonlinearity,
        noise_db=echo.noise_db,
    )
    return Devices(mixer, sink, acoustic=True, files=files, recording=sink)


def real_devices(audio: AudioConfig, rate: int, on_failure: Callable[[PlaybackFailed], None]) -> Devices:
    """PortAudio's devices (opened when the pipeline starts); loudspeakers are assumed, so the canceller runs."""
    speaker = Player(audio.output_device or None, rate=rate, on_failure=on_failure)
    return Devices(Microphone(audio.input_device or None), speaker, acoustic=True)


def probe(audio: AudioConfig) -> tuple[AudioUnavailable | None, AudioUnavailable | None]:
    """Why the configured microphone and speaker cannot be used (None: they can), without opening them."""
    return _probe(audio.input_device, "input"), _probe(audio.output_device, "output")


def _probe(device: str, kind: str) -> AudioUnavailable | None:
    try:
        portaudio.resolve_device(device or None, "input" if kind == "input" else "output")
    except AudioUnavailable as error:
        return error
    return None
