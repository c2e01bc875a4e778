"""Play a scenario into a pipeline on fixture devices: each utterance at its time on the session clock, or after
the reply to the previous one started or ended; typed texts after that. Shared by `parley run`, the window's
`--fixture`, the bench and the self-test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from audio.fixtures import FileSource, RecordingSink
from audio.wav import load_wav
from desktop.pipeline.voice import Binding
from desktop.scenario import Say, Scenario
from engine.clock import Clock
from engine.inbox import UserInput

QUIET_FOR_S = 1.0  # the run ends once everything has been idle this long after the last utterance
MAX_SESSION_S = 300.0
POLL_S = 0.05
T = TypeVar("T")


@dataclass
class Stage:
    """What a scenario plays into: the conversation the pipeline is bound to, and the simulated microphone."""

    clock: Clock
    binding: Binding
    files: FileSource
    recording: RecordingSink
    delivered: list[tuple[str, float]] = field(default_factory=list)  # (what, clock time) of each utterance


async def play(stage: Stage, scenario: Scenario | None, texts: list[str]) -> None:
    if scenario is not None:
        last = 0.0
        for say in scenario.says:
            last = await _deliver(stage, say, await _when(stage, say, last))
    for text in texts:
        stage.binding.conversation.submit(UserInput(text))
        await until_quiet(stage)
    await until_quiet(stage)


async def _when(stage: Stage, say: Say, previous: float) -> float:
    """The clock time at which `say` starts."""
    metrics = stage.binding.metrics
    if say.timing == "at":
        return stage.files.started_at + say.seconds
    turn = await poll(stage.clock, lambda: next((t for t, at in metrics.started_at.items() if at >= previous), None))
    if say.timing == "after_reply_starts":
        return await poll(stage.clock, lambda: metrics.first_audible.get(turn)) + say.seconds
    await poll(stage.clock, lambda: metrics.ended.get(turn))
    return stage.clock.now() + say.seconds


async def _deliver(stage: Stage, say: Say, at: float) -> float:
    clock, binding = stage.clock, stage.binding
    await clock.sleep(at - clock.now())
    stage.delivered.append((say.text if say.text is not None else str(say.wav), at))
    if say.text is not None:
        binding.conversation.submit(UserInput(say.text))
        return at
    assert say.wav is not None
    samples = load_wav(say.wav)
    stage.files.add(samples, at - stage.files.started_at)
    if say.push_to_talk:
        binding.ears.press()
        await clock.sleep(len(samples) / 16000 + 0.1)
        binding.ears.release()
    return at


async def poll(clock: Clock, probe: Callable[[], T | None]) -> T:
    """The probe's first non-None value, checked every POLL_S of the clock, within the session limit."""
    deadline = clock.now() + MAX_SESSION_S
    while (value := probe()) is None:
        if clock.now() > deadline:
            raise TimeoutError("the scenario waited for a reply that never came")
        await clock.sleep(POLL_S)
    return value


async def until_quiet(stage: Stage) -> None:
    clock, binding = stage.clock, stage.binding
    conversation = binding.conversation
    quiet_since: float | None = None
    deadline = clock.now() + MAX_SESSION_S
    while clock.now() < deadline:
        idle = conversation.live_turn is None and not len(conversation.inbox) and not binding.ears.busy
        quiet_since = (quiet_since or clock.now()) if idle else None
        if quiet_since is not None and clock.now() - quiet_since >= QUIET_FOR_S:
            return
        await clock.sleep(POLL_S)
    raise TimeoutError("the conversation did not settle within the session limit")
