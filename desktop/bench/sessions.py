"""Fixture sessions driven by the bench itself: idle listening (CPU) and barge-in cycles (the soak)."""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.asr.whisper import WhisperTranscriber
from adapters.runtime.clock import SystemClock
from adapters.runtime.workers import run_blocking
from adapters.tts.piper_voice import PiperSynthesizer
from audio.wav import load_wav
from desktop.assets import fixture
from desktop.bench.scenarios import Hearing
from desktop.config import Config
from desktop.pipeline.run import open_fixture_session
from desktop.pipeline.scenario_play import Stage, poll
from desktop.scenario import Echo, Scenario
from engine.clock import SkippingClock
from engine.inbox import UserInput

IDLE_WARM_S = 0.5
IDLE_WINDOW_S = 0.5
QUESTION = "Tell me a long story about a lighthouse keeper and his cat."
BARGE_IN_AFTER_S = 0.2  # of reply audio before the user interrupts
SPOKEN_EVERY = 10  # every 10th soak cycle interrupts by voice (VAD + Whisper), the others by push-to-talk


@dataclass(frozen=True)
class Models:
    config: Config
    transcriber: WhisperTranscriber
    synthesizer: PiperSynthesizer
    hearing: Hearing  # the bench's ears for what a cut reply let the user hear


async def idle_cpu(models: Models, out: Path, seconds: float, *, loudspeaker: bool = True) -> list[float]:
    """% of one core used by this process per window while listening to a silent mic (VAD + AEC running; without
    `loudspeaker`, a headset: no echo path to simulate, no canceller)."""
    echo = Echo(gain=0.5, delay_ms=40.0) if loudspeaker else None  # an [echo] turns the canceller on
    session = open_fixture_session(
        models.config, out, SystemClock(), models.transcriber, models.synthesizer, Scenario(Path("idle"), (), echo)
    )
    async with session as stage:
        samples = await cpu_while_idle(seconds)
        if stage.binding.ears.barge_ins or stage.binding.conversation.live_turn is not None:
            raise RuntimeError("the idle measurement heard something: the fixture mic should be silent")
    return samples


@dataclass(frozen=True)
class Cycle:
    outcome: str  # "aborted" unless the reply ended before the interruption
    metrics: dict[str, Any]
    spoken: bool


async def barge_in_cycle(models: Models, out: Path, spoken: bool) -> Cycle:
    """A fresh session: a typed question, its reply's first audio, then an interruption; closed once aborted."""
    clock = SkippingClock(real=True)
    async with open_fixture_session(models.config, out, clock, models.transcriber, models.synthesizer, None) as stage:
        metrics = stage.binding.metrics
        stage.binding.conversation.submit(UserInput(QUESTION))
        turn = await poll(clock, lambda: next(iter(metrics.first_audible), None))
        await _interrupt(stage, spoken)
        ended = await poll(clock, lambda: metrics.ended.get(turn))
    await run_blocking(lambda: shutil.rmtree(out, ignore_errors=True))
    return Cycle(ended.outcome, dict(ended.metrics), spoken)


async def _interrupt(stage: Stage, spoken: bool) -> None:
    if spoken:
        at = stage.clock.now() + BARGE_IN_AFTER_S - stage.files.started_at
        stage.files.add(load_wav(fixture("stop_what_time.wav")), at)
        return
    await stage.clock.sleep(BARGE_IN_AFTER_S)
    stage.binding.ears.press()
    stage.binding.ears.release()


async def cpu_while_idle(seconds: float) -> list[float]:
    """% of one core this process uses per window, after a warm-up, while whatever is open sits idle."""
    await asyncio.sleep(IDLE_WARM_S)
    samples = []
    for _ in range(max(1, round(seconds / IDLE_WINDOW_S))):
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(IDLE_WINDOW_S)
        samples.append(round(100 * (time.process_time() - cpu) / (time.perf_counter() - wall), 2))
    return samples
