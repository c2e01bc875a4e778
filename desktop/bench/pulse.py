"""`--devices pulse`: spoken questions and barge-ins through audio.Player and audio.Microphone on PulseAudio null
sinks, in real time, on the system's default devices as the window opens them; the spoken turns with the speaker's
sink as a headset's (no other client keeping it at low latency).

ttfa: the user's clip is played into `micwire`; its end of speech is the last loud 10 ms window the Microphone
captured (ADC time), the reply's first audible sample the Player's (DAC time): both monotonic.
The private PulseAudio of the real-device tests (tests/audio/pulse.py) gives two null sinks: the Player plays
into `speaker`, the Microphone hears `micwire`'s monitor, and the user's "stop, what time is it" is played into
`micwire`. The speech onset is found in the captured frames (ADC time, monotonic); `speaker`'s monitor is
recorded with parec and placed on the same time base by the reply's first sample (the Player's DAC time).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from adapters.runtime.workers import run_blocking
from audio.portaudio import refresh
from audio.ports import Frame
from desktop.assets import fixture
from desktop.bench.http_provider import source_tree_on_path
from desktop.bench.loudspeaker import LoudspeakerRuns, loudspeaker_runs
from desktop.bench.pulse_rig import RATE, TALK_OVER_AFTER_S, TIMEOUT_S, measure, rig
from desktop.bench.scenarios import Heard
from desktop.bench.sessions import QUESTION, Models, cpu_while_idle
from desktop.bench.signals import offset_s, onset_s
from engine.inbox import UserInput
from engine.journal import read_events

SETTLE_S = 0.5
SPOKEN = ("whats_the_weather.wav", "tell_a_story.wav")  # a question and a statement, in turn
IDLE_S = 5.0


class PulseUnavailable(Exception):
    """No private PulseAudio here; the message says why."""


@dataclass(frozen=True)
class PulseRuns:
    stop_ms: list[float]
    heard: list[Heard]
    ttfa_ms: list[float]
    ttfa_metrics: list[dict[str, Any]]  # each spoken turn's metrics/turn
    idle_cpu: list[float]  # % of one core per window while listening to a silent room
    loudspeaker: LoudspeakerRuns  # the same pipeline with the speaker looped into the microphone


async def pulse_barge_ins(models: Models, root: Path, reps: int, loud_reps: int, progress: Any) -> PulseRuns:
    kit = _kit()
    try:
        server = kit.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        raise PulseUnavailable(f"cannot start a private PulseAudio: {error}") from None
    stops: list[float] = []
    heard: list[Heard] = []
    ttfa: list[float] = []
    metrics: list[dict[str, Any]] = []
    try:
        refresh()  # PortAudio enumerates devices only when it initialises
        for n in range(reps):
            stop, words = await _one(kit, models, root / f"pulse{n}")
            stops += [stop] if stop is not None else []
            heard += [words] if words is not None else []
            progress(f"pulse barge-in {n + 1}/{reps}")
        idle = await _idle(models, root / "pulse_idle", IDLE_S)
        progress("pulse idle listening")
        with kit.headset(server):  # as a headset: nothing else asks the sound server for low latency
            for n in range(2 * reps):
                took, turn = await _spoken(kit, models, root / f"pulse_ttfa{n}", SPOKEN[n % len(SPOKEN)])
                ttfa += [took] if took is not None else []
                metrics += [turn] if turn is not None else []
                progress(f"pulse spoken turn {n + 1}/{2 * reps}")
        loud = await loudspeaker_runs(kit, server, models, root, loud_reps, progress)
    finally:
        kit.stop(server)
    return PulseRuns(stops, heard, ttfa, metrics, idle, loud)


def _kit() -> ModuleType:
    source_tree_on_path()
    try:
        from tests.audio import pulse
    except ImportError as error:
        raise PulseUnavailable(f"tests/audio/pulse.py is not importable: {error}") from None
    return pulse


async def _one(kit: Any, models: Models, out: Path) -> tuple[float | None, Heard | None]:
    recorder = kit.Recorder(f"{kit.SPEAKER}.monitor", RATE)
    try:
        async with rig(models, out) as live:
            live.conversation.submit(UserInput(QUESTION))
            turn = await _until(lambda: next(iter(live.metrics.first_audible), None))
            first = live.metrics.first_audible[turn]
            await asyncio.sleep(TALK_OVER_AFTER_S)
            injected = time.monotonic()
            user = kit.play_into(kit.MICWIRE, fixture("stop_what_time.wav"))
            await _until(lambda: live.metrics.ended.get(turn))
            await run_blocking(lambda: user.wait(30))
            await asyncio.sleep(SETTLE_S)
            onset = _onset_at(live.frames, injected)
            paused = live.ears.silent_at.get(turn, 0.0)
            reply = live.metrics.generated.get(turn)
    finally:
        recording = await run_blocking(recorder.finish)
    return await measure(models, recording, out, turn, (first, paused), onset, reply)


async def _idle(models: Models, out: Path, seconds: float) -> list[float]:
    """% of one core this process uses per window while the pipeline listens on the real devices to silence."""
    async with rig(models, out):
        return await cpu_while_idle(seconds)


async def _spoken(kit: Any, models: Models, out: Path, wav: str) -> tuple[float | None, dict[str, Any] | None]:
    """A spoken turn: the clip's end of speech in the captured signal → the reply's first audible sample."""
    async with rig(models, out) as live:
        await asyncio.sleep(SETTLE_S)
        injected = time.monotonic()
        user = kit.play_into(kit.MICWIRE, fixture(wav))
        turn = await _until(lambda: next(iter(live.metrics.first_audible), None))
        first = live.metrics.first_audible[turn]
        await asyncio.to_thread(user.wait, 30)
        end = _speech_end_at(live.frames, injected)  # the reply is cancelled when the session closes
    turn_metrics = next((e for e in read_events(out / "journal.jsonl") if e["type"] == "metrics/turn"), None)
    return (None if end is None else round((first - end) * 1000, 1)), turn_metrics


def _speech_end_at(frames: list[Frame], after: float) -> float | None:
    """ADC time of the end of the last loud 10 ms window captured after `after`."""
    later = [f for f in frames if f.end >= after]
    if not later:
        return None
    end = offset_s(np.concatenate([f.samples for f in later]), RATE)
    return None if end is None else later[0].at + end


def _onset_at(frames: list[Frame], after: float) -> float | None:
    """ADC time of the first loud 10 ms window captured after `after`."""
    later = [f for f in frames if f.end >= after]
    if not later:
        return None
    samples = np.concatenate([f.samples for f in later])
    at = later[0].at + onset_s(samples, RATE)
    return at if at > later[0].at else None


async def _until(probe: Any) -> Any:
    deadline = time.monotonic() + TIMEOUT_S
    while (value := probe()) is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the PulseAudio barge-in waited for a reply that never came")
        await asyncio.sleep(0.01)
    return value
