"""The conversation: an inbox of inputs, one turn at a time, cancel that waits for quiescence."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from adapters.contract import CancelCause, Disposed, LlmAdapter, LlmFailure, User
from adapters.contract.clock import Clock
from adapters.contract.llm import FailureCode
from adapters.runtime.clock import SystemClock
from adapters.runtime.tasks import open_tasks
from engine.events import (
    BackoffInfo,
    State,
    StateChanged,
    ToolCalled,
    ToolFinished,
    TurnEnded,
    TurnGate,
    TurnStarted,
    TurnWithdrawn,
)
from engine.finalize import finalize_turn
from engine.inbox import Inbox, UserInput
from engine.journal import Journal
from engine.prompt import HistoryPrompt, PromptBuilder
from engine.retry import Backoff, Budgets
from engine.speculation import Speculation, SpeculationParts, Speculator
from engine.speech import PreparesSpeech, SpeechOutput
from engine.step import StepContext, StepFailed, StepResult, TurnRecord, run_step
from engine.tools import ToolRegistry, ToolRunner
from engine.turn import Answered, Turn

VERSION = "0.1.0"
HEARD_POLL_S = 0.05  # how often a provisional turn's reply is checked for its first heard sample
# A person who speaks again this soon after the end of their words is going on, not answering a reply just begun,
# however much of it played. Real speech: "The child almost hurt [0.6 s] the small dog" had its reply audible 370 ms
# before they went on; "And so my fellow Americans, [1.15 s] ask not ..." on PulseAudio had 800 ms of it played,
# once in ten, when the VAD heard them go on (1.17-1.21 s after their words).
GOING_ON_S = 1.5
# The ears tell of speech only after its first windows (the VAD's shortest run, a capture block, a turn of the loop):
# a turn stays open this much past the going-on time for words begun within it and told of since. Words told of
# later than this after they began (a run held back as echo, then let go) count from when they were told of.
TOLD_LATE_S = 0.3
log = logging.getLogger(__name__)
TOO_MANY_STEPS = FailureCode.TOO_MANY_STEPS
INTERNAL = FailureCode.INTERNAL


@dataclass
class EngineParts:
    """What the engine is built from; everything that waits gets `clock`."""

    llm: LlmAdapter
    speech: SpeechOutput
    journal: Journal
    clock: Clock = field(default_factory=SystemClock)
    fallback: LlmAdapter | None = None
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    prompt: PromptBuilder = field(default_factory=HistoryPrompt)
    budgets: Budgets = field(default_factory=Budgets)
    backoff: Backoff = field(default_factory=Backoff)
    rng: random.Random = field(default_factory=random.Random)
    max_steps: int = 6
    summary: Mapping[str, Any] = field(default_factory=dict)
    speculative_requests: bool = False  # a remote provider may be sent a prefill request before the turn is decided


class Conversation:
    """Drives turns from the inbox; `cancel` returns only when the cancelled turn has fully ended."""

    def __init__(self, parts: EngineParts) -> None:
        self.parts = parts
        self.gate = TurnGate()
        self.inbox = Inbox()
        self.runner = ToolRunner(parts.tools, parts.clock)
        self._live: Turn | None = None
        self._next_id = _next_turn_id(parts.journal)
        self._input_state = State.IDLE
        self._state = State.IDLE
        self.backoff: BackoffInfo | None = None
        self._cancelled_at: dict[int, float] = {}
        self._record: TurnRecord | None = None
        self._provisional: tuple[Turn, UserInput] | None = None  # a live turn the person may still go on from
        self._provisional_began = anyio.Event()
        self.speculator = Speculator(
            SpeculationParts(
                parts.llm,
                parts.journal,
                parts.prompt,
                parts.tools,
                parts.clock,
                parts.speculative_requests,
                parts.speech.prepare if isinstance(parts.speech, PreparesSpeech) else None,
            ),
            lambda: self._next_id,
        )

    @property
    def state(self) -> State:
        return self._state

    @property
    def live_turn(self) -> Turn | None:
        return self._live

    @property
    def busy(self) -> bool:
        """An input submitted now would wait: a turn is under way or queued, or no next turn may start yet."""
        return self._live is not None or len(self.inbox) > 0 or self.inbox.held

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]:
        return self.gate.subscribe(listener)

    def submit(self, item: UserInput) -> None:
        self.inbox.put(item)

    def record(self, type_: str, **fields: Any) -> None:
        """Put an outside fact (a barge-in, a resumed reply) on the record, under the live turn if there is one."""
        if self._live is not None:
            fields["turn"] = self._live.id
        self.parts.journal.append(type_, **fields)

    def speculate(self, text: str, *, ahead: bool = False) -> Speculation | None:
        """Have the model read the request the next turn would send with `text`, and with `ahead` begin its reply
        (engine.speculation); None when that gains nothing, or a turn is live or waiting."""
        if self._live is not None or len(self.inbox):
            return None
        return self.speculator.start(text, ahead=ahead)

    def withdrawable(self, item: UserInput, went_on_at: float | None = None) -> bool:
        """Could `withdraw(item)` still take it back (queued, or its turn live, provisional and unheard)? Without
        `went_on_at`, could it for words that begin now or were begun but not yet told of?"""
        if any(queued is item for queued in self.inbox):
            return True
        provisional = self._provisional
        if provisional is None or provisional[1] is not item or self.parts.journal.held != provisional[0].id:
            return False
        return not provisional[0].withdrawn and not self._heard(*provisional, went_on_at)

    def withdraw(self, item: UserInput, went_on_at: float | None = None) -> bool:
        """The person went on after `item` (a provisional input), beginning at `went_on_at` (clock; None: now):
        take it back if none of its reply was heard. Queued, it leaves the inbox; live, its turn is cancelled and
        leaves no trace in the journal (see `_withdrawn`). False once any of the reply was heard, or the turn was
        committed (a tool ran, a retry was shown): then the person is interrupting it, and that is a barge-in."""
        if self.inbox.remove(item):
            return True
        if not self.withdrawable(item, self.parts.clock.now() if went_on_at is None else went_on_at):
            return False
        assert self._provisional is not None
        turn = self._provisional[0]
        turn.withdrawn = True
        if turn.cancel(User()):
            self.parts.speech.silence(turn.id)
        return True

    async def watch_provisional(self) -> None:
        """Commit each provisional turn to the journal once any of its reply is heard (or it ends)."""
        while True:
            await self._provisional_began.wait()
            self._provisional_began = anyio.Event()
            while (provisional := self._provisional) is not None and self.parts.journal.held == provisional[0].id:
                if self._heard(*provisional) and not provisional[0].withdrawn:
                    self.parts.journal.commit()
                    break
                await self.parts.clock.sleep(HEARD_POLL_S)

    def _heard(self, turn: Turn, said: UserInput, went_on_at: float | None = None) -> bool:
        """The reply was heard as an answer: some of it played, and the person did not go on within the going-on
        time (`went_on_at`: when they began again; None: by now, words not yet told of included). Until then a
        person who speaks again takes the turn back, and the few words they heard over their own go with it."""
        played = sum(segment.played_ms for segment in self.parts.speech.report(turn.id))
        if played <= 0:
            return False
        if said.ended_at is None:
            return True
        now = self.parts.clock.now()
        earliest = now - TOLD_LATE_S  # words not yet told of began no sooner
        if went_on_at is None:
            went_on_at = earliest
        began = went_on_at if went_on_at >= earliest else now
        return began >= said.ended_at + GOING_ON_S

    def add_metrics(self, turn: int, **values: float) -> None:
        """Measurements made outside the engine (audio timing) for the live turn's `metrics/turn`."""
        if self._live is not None and self._live.id == turn and self._record is not None:
            self._record.metrics.update(values)

    def set_input_state(self, state: State) -> None:
        """Listening/transcribing/idle as reported by the audio side; shown while no turn is live."""
        self._input_state = state
        if self._live is None:
            self._set_state(state, None)

    async def cancel(self, cause: CancelCause, *, keep_inbox: bool = False) -> None:
        """Abort the live turn (and clear queued input unless `keep_inbox`), then wait until it has ended."""
        if not keep_inbox:
            self.inbox.clear()
        self.speculator.drop()
        turn = self._live
        if turn is not None:
            if turn.cancel(cause):
                self._cancelled_at[turn.id] = self.parts.clock.now()
                self.parts.speech.silence(turn.id)
                self._set_state(State.STOPPING, None)
            await turn.finished.wait()
        await self.speculator.cancel()

    async def run(self) -> None:
        """Take inputs one at a time until closed."""
        self.parts.journal.append("session/start", version=VERSION, **self.parts.summary)
        while (item := await self.inbox.get()) is not None:
            await self._run_turn(item)

    async def aclose(self) -> None:
        self.inbox.close()
        await self.cancel(Disposed())

    async def _run_turn(self, item: UserInput) -> None:
        turn = Turn(self._next_id, item.source)
        self._next_id += 1
        self._live, self.gate.live = turn, turn.id
        record = self._record = TurnRecord(metrics=dict(item.metrics))
        outcome, failure = "aborted", None
        if item.provisional:
            self.parts.journal.hold(turn.id)
            self._provisional = (turn, item)
            self._provisional_began.set()
        try:
            self.parts.journal.append("turn/start", turn=turn.id, source=item.source)
            self.parts.journal.append("user/message", turn=turn.id, text=item.text)
            self.gate.publish(TurnStarted(turn.id, item.source, item.text, item.ended_at))
            self._set_state(State.THINKING, None)
            answered = await turn.run(lambda: self._answer(turn, record, item.text))
            outcome, failure = _outcome(turn, answered)
        finally:  # always closed, also when cancelled from outside (a shutdown) or when the journal fails
            self._quiesced(turn, record)
            self._provisional = None
            try:
                self._close(turn, record, outcome, failure)
            finally:
                self._live, self.gate.live, self._record = None, None, None
                self._set_state(self._input_state, None)
                turn.finished.set()

    async def _answer(self, turn: Turn, record: TurnRecord, text: str) -> None:
        await self.speculator.settle(text, record.metrics)
        ctx = self._step_context()
        for step in range(1, self.parts.max_steps + 1):
            result = await run_step(ctx, turn, step, record)
            if not result.calls:
                await self.parts.speech.drain(turn.id, turn.signal)
                return
            await self._dispatch(turn, step, result)
        raise StepFailed(LlmFailure(f"no final answer after {self.parts.max_steps} steps", TOO_MANY_STEPS))

    async def _dispatch(self, turn: Turn, step: int, result: StepResult) -> None:
        journal = self.parts.journal
        journal.commit()  # a tool may act on the world: the turn is no longer provisional
        for call in result.calls:
            journal.append(
                "tool/call",
                turn=turn.id,
                step=step,
                call_id=call.call_id,
                name=call.name,
                arguments=call.arguments,
            )
            self.gate.publish(ToolCalled(turn.id, step, call))
        for call in result.calls:
            outcome = await self.runner.run(turn, call)
            journal.append(
                "tool/result",
                turn=turn.id,
                step=step,
                call_id=outcome.call_id,
                code=outcome.code,
                output=outcome.output,
            )
            self.gate.publish(ToolFinished(turn.id, step, outcome.call_id, outcome.code, outcome.output))

    def _step_context(self) -> StepContext:
        p = self.parts
        return StepContext(
            p.llm,
            p.fallback,
            p.journal,
            p.prompt,
            p.speech,
            p.tools,
            p.clock,
            p.budgets,
            p.backoff,
            p.rng,
            self.gate.publish,
            self._set_state,
            self.speculator.claim,
        )

    def _quiesced(self, turn: Turn, record: TurnRecord) -> None:
        cancelled_at = self._cancelled_at.pop(turn.id, None)
        if cancelled_at is not None:
            record.metrics["quiesce_ms"] = round((self.parts.clock.now() - cancelled_at) * 1000, 1)

    def _close(self, turn: Turn, record: TurnRecord, outcome: str, failure: LlmFailure | None) -> None:
        if turn.withdrawn and self.parts.journal.held == turn.id:
            self._withdrawn(turn)
            return
        self.parts.journal.commit()
        finalize_turn(
            self.parts.journal,
            self.parts.speech,
            turn.id,
            record,
            outcome,
            failure,
            phase_codes=self.runner.phase_codes,
            publish=self.gate.publish,
        )
        self.runner.phase_codes.clear()
        self.gate.publish(TurnEnded(turn.id, outcome, failure, dict(record.metrics)))

    def _withdrawn(self, turn: Turn) -> None:
        """No trace in the conversation: its events are dropped (its number is not reused: a late tail of its
        streams must never reach the next turn). A request a provider was sent stays on the record, as a
        speculative one would, without the words."""
        dropped = self.parts.journal.withdraw()
        requests = [e for e in dropped if e["type"] == "llm/request"]
        if requests:
            last = requests[-1]
            self.parts.journal.append("llm/withdrawn", requests=len(requests), provider=last["provider"],
                                      model=last["model"])  # fmt: skip
        self.parts.speech.release(turn.id)
        self.gate.publish(TurnWithdrawn(turn.id))

    def _set_state(self, state: State, backoff: BackoffInfo | None) -> None:
        self._state, self.backoff = state, backoff
        self.gate.publish(StateChanged(self._live.id if self._live else None, state, backoff))


def _outcome(turn: Turn, answered: Answered) -> tuple[str, LlmFailure | None]:
    """Decided by how the answer ended: work disposed of after it does not make a finished answer aborted."""
    if answered.cancelled:
        return "aborted", None
    error = answered.error
    if error is None:
        return "completed", None
    if isinstance(error, StepFailed):
        return "failed", error.failure
    log.error("turn %d failed", turn.id, exc_info=error)
    return "failed", LlmFailure(f"internal error: {type(error).__name__}: {error}", INTERNAL)


def _next_turn_id(journal: Journal) -> int:
    return 1 + max((int(e["turn"]) for e in journal.events if e.get("type") == "turn/start"), default=0)


@asynccontextmanager
async def open_conversation(parts: EngineParts) -> AsyncIterator[Conversation]:
    """Run a conversation for the duration of the block; leaving it disposes the live turn and waits."""
    conversation = Conversation(parts)
    async with open_tasks(cancel_on_exit=True) as tasks, conversation.speculator.running():
        tasks.start(conversation.run, name="conversation")
        tasks.start(conversation.watch_provisional, name="provisional-turns")
        try:
            yield conversation
        finally:
            await conversation.aclose()
