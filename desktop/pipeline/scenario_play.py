"""Play a scenario into a pipeline on fixture devices: each utterance at its time on the session clock, or after
the reply to the previous one started or ended; typed texts after that. Shared by `parley run`, the window's
`--fixture`, the bench and the self-test.

A reply that never comes is a fact of the run, not a reason to stop it: an `after_reply_starts` entry whose turn
ended without any audio (failed, or stopped before it spoke) is delivered `seconds` after that turn ended, and an
entry after an utterance that started no turn at all (nothing in it was heard as words) is delivered `seconds`
after the conversation went quiet. Either is noted on the delivery (`Delivered.rule`), and so in report.json.
The play ends once the microphone has played every clip, every reply has played and all has been quiet a while."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from adapters.contract.clock import Clock
from audio.fixtures import FileSource, RecordingSink
from audio.wav import load_wav
from desktop.pipeline.voice import Binding
from desktop.scenario import Say, Scenario
from engine.inbox import UserInput

QUIET_FOR_S = 1.0  # the run ends once everything has been idle this long after the microphone's last clip
MAX_SESSION_S = 300.0
POLL_S = 0.05
T = TypeVar("T")


@dataclass(frozen=True)
class Delivered:
    """An utterance put into the microphone (or typed) at `at` on the clock; `rule` says why then, when the
    reply it waited for never came."""

    what: str  # the WAV's path, or the text typed
    at: float
    rule: str | None = None
    typed: bool = False

    @property
    def label(self) -> str:
        return self.what if self.typed else Path(self.what).name


@dataclass
class Stage:
    """What a scenario plays into: the conversation the pipeline is bound to, and the simulated microphone."""

    clock: Clock
    binding: Binding
    files: FileSource
    recording: RecordingSink
    delivered: list[Delivered] = field(default_factory=list)


async def play(stage: Stage, scenario: Scenario | None, texts: list[str]) -> None:
    if scenario is not None:
        last = 0.0
        for say in scenario.says:
            at, rule = await _when(stage, say, last)
            last = await _deliver(stage, say, at, rule)
    for text in texts:
        stage.binding.conversation.submit(UserInput(text))
        await until_quiet(stage)
    await until_quiet(stage)


async def _when(stage: Stage, say: Say, previous: float) -> tuple[float, str | None]:
    """The clock time at which `say` starts, and the rule that chose it when the awaited reply never came."""
    metrics = stage.binding.metrics
    if say.timing == "at":
        return stage.files.started_at + say.seconds, None
    turn = await _turn_since(stage, previous)
    if turn is None:
        return stage.clock.now() + say.seconds, "the previous utterance started no turn; delivered after the quiet"
    if say.timing == "after_reply_starts":
        audible = await poll(stage.clock, lambda: _audible_or_ended(stage, turn))
        if stage.binding.first_heard(turn) is None and turn not in metrics.first_audible:
            outcome = metrics.ended[turn].outcome
            return audible + say.seconds, f"turn {turn} ended {outcome} before its reply started; delivered after"
        return audible + say.seconds, None
    await poll(stage.clock, lambda: metrics.ended.get(turn))
    return stage.clock.now() + say.seconds, None


def _audible_or_ended(stage: Stage, turn: int) -> float | None:
    """When the reply of `turn` became audible (by the speaker's own clock: a starved output plays late); else
    now, if the turn has ended without a sound."""
    metrics = stage.binding.metrics
    heard = stage.binding.first_heard(turn)
    if heard is not None:
        return heard
    if turn in metrics.first_audible and turn not in metrics.ended:
        return None  # queued, not yet played
    return metrics.first_audible.get(turn) or (stage.clock.now() if turn in metrics.ended else None)


async def _turn_since(stage: Stage, since: float) -> int | None:
    """The first turn started at or after `since`; None once everything went quiet without one."""
    started = stage.binding.metrics.started_at
    quiet = _Quiet(stage)
    while True:
        turn = next((t for t, at in started.items() if at >= since), None)
        if turn is not None or quiet.long_enough():
            return turn
        await stage.clock.sleep(POLL_S)


async def _deliver(stage: Stage, say: Say, at: float, rule: str | None) -> float:
    clock, binding = stage.clock, stage.binding
    await clock.sleep(at - clock.now())
    what, typed = (say.text, True) if say.text is not None else (str(say.wav), False)
    stage.delivered.append(Delivered(what, at, rule, typed))
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
    """Until the microphone has played every clip, no turn is live or queued, nothing is being heard or
    transcribed, and it has stayed so for QUIET_FOR_S."""
    quiet = _Quiet(stage)
    while not quiet.long_enough():
        if quiet.overdue():
            raise TimeoutError("the conversation did not settle within the session limit")
        await stage.clock.sleep(POLL_S)


class _Quiet:
    """Tracks how long the stage has been idle, looking each time `long_enough` is asked."""

    def __init__(self, stage: Stage) -> None:
        self._stage = stage
        self._since: float | None = None
        files = stage.files
        self._deadline = max(stage.clock.now(), files.started_at + files.end_s) + MAX_SESSION_S

    def long_enough(self) -> bool:
        now = self._stage.clock.now()
        self._since = (self._since if self._since is not None else now) if self._idle() else None
        return self._since is not None and now - self._since >= QUIET_FOR_S

    def overdue(self) -> bool:
        return self._stage.clock.now() > self._deadline

    def _idle(self) -> bool:
        conversation, ears = self._stage.binding.conversation, self._stage.binding.ears
        exhausted = self._stage.files.exhausted
        return exhausted and conversation.live_turn is None and not len(conversation.inbox) and not ears.busy
