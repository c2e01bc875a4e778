"""The one pipeline on PulseAudio's devices, for the `--devices pulse` bench (desktop.bench.pulse) and its
loudspeaker runs (desktop.bench.loudspeaker): the rig both open, and how a barge-in's recording is read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapters.runtime.clock import SystemClock
from adapters.runtime.workers import run_blocking
from audio.capture import Microphone
from audio.player import Player
from audio.ports import Frame
from audio.turns.ears import Ears
from desktop.bench.scenarios import Heard, hear
from desktop.bench.sessions import Models
from desktop.bench.signals import onset_s, silent_from_s
from desktop.pipeline.audio_io import Devices
from desktop.pipeline.metrics import SessionMetrics
from desktop.pipeline.run import open_voice_session
from engine.conversation import Conversation
from engine.journal import read_events

RATE = 16000
TALK_OVER_AFTER_S = 2.0
TIMEOUT_S = 60.0


@dataclass
class _Live:
    conversation: Conversation
    metrics: SessionMetrics
    ears: Ears
    frames: list[Frame]


class _Keeping:
    """The microphone, keeping every captured frame (to find the user's onset in the signal)."""

    def __init__(self, mic: Microphone, frames: list[Frame]) -> None:
        self._mic = mic
        self._frames = frames

    @property
    def dropped(self) -> int:
        return self._mic.dropped

    def pace(self, frames: int) -> None:
        self._mic.pace(frames)

    async def start(self) -> None:
        await self._mic.start()

    async def frames(self) -> AsyncIterator[Any]:
        async for item in self._mic.frames():
            if isinstance(item, Frame):
                self._frames.append(item)
            yield item

    async def close(self) -> None:
        await self._mic.close()


@asynccontextmanager
async def rig(models: Models, out: Path, *, acoustic: bool = False) -> AsyncIterator[_Live]:
    """The one pipeline (desktop.pipeline) on the real devices: a headset (no echo path, AEC off) or, `acoustic`,
    loudspeakers (the canceller and the echo guards on, as in the window)."""
    await run_blocking(lambda: out.mkdir(parents=True, exist_ok=True))
    frames: list[Frame] = []
    devices = Devices(_Keeping(Microphone(None), frames), Player(None), acoustic=acoustic)  # the window's defaults
    session = open_voice_session(models.config, out, SystemClock(), models.transcriber, models.synthesizer, devices)
    async with session as binding:
        yield _Live(binding.conversation, binding.metrics, binding.ears, frames)


async def measure(
    models: Models,
    recording: np.ndarray,
    out: Path,
    turn: int,
    times: tuple[float, float],
    onset: float | None,
    reply: str | None = None,
) -> tuple[float | None, Heard | None]:
    """Place the recording on the monotonic time base by the reply's first sample, then read stop and words.

    `times`: when the reply's first sample was audible, and when the pipeline paused the output; `reply`: all the
    model wrote for the turn (the words past the cut, to read the ear's last words against).
    """
    first, paused = times
    start_in_recording = onset_s(recording, RATE)
    shift = first - start_in_recording  # monotonic time of the recording's sample 0
    if onset is None:
        return None, None
    silent = max(silent_from_s(recording, RATE, onset - shift, onset - shift + 1.5) + shift, paused)
    played = recording[round(start_in_recording * RATE) : round((silent - shift) * RATE)]
    kept = next((e["text"] for e in read_events(out / "journal.jsonl") if e["type"] == "assistant/message"
                 and e["turn"] == turn), "")  # fmt: skip
    heard = await hear(models.hearing, kept, played, reply)
    return round(max(0.0, silent - onset) * 1000, 1), heard
