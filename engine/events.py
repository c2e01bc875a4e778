"""Facts the engine publishes (past tense), each carrying its turn id, and the gate that drops stale ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from adapters.contract import LlmFailure, ToolCall
from adapters.runtime.listeners import Listeners


class State(Enum):
    IDLE = "idle"
    LISTENING = "listening"
    TRANSCRIBING = "transcribing"
    THINKING = "thinking"
    SPEAKING = "speaking"
    STOPPING = "stopping"
    BACKING_OFF = "backing_off"


@dataclass(frozen=True)
class BackoffInfo:
    """Why and until when the engine is waiting before the next attempt."""

    delay_ms: int
    code: str
    resume_at: float
    retry: int


@dataclass(frozen=True)
class StateChanged:
    turn: int | None
    state: State
    backoff: BackoffInfo | None = None


@dataclass(frozen=True)
class TurnStarted:
    turn: int
    source: str
    text: str
    ended_at: float | None = None  # when the person finished saying it (clock), for a voice input


@dataclass(frozen=True)
class TextGenerated:
    turn: int
    step: int
    attempt: int
    text: str


@dataclass(frozen=True)
class AttemptFailed:
    turn: int
    step: int
    attempt: int
    failure: LlmFailure


@dataclass(frozen=True)
class RetryScheduled:
    turn: int
    step: int
    backoff: BackoffInfo


@dataclass(frozen=True)
class ToolCalled:
    turn: int
    step: int
    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    turn: int
    step: int
    call_id: str
    code: str
    output: str


@dataclass(frozen=True)
class ReplyHeard:
    """What of a step's reply reached the listener; `generated` is everything the model produced."""

    turn: int
    step: int
    heard: str
    generated: str
    interrupted: bool
    heard_ms: float


@dataclass(frozen=True)
class TurnWithdrawn:
    """The person went on before any of the reply was heard: the turn is gone, its words go on in the next one."""

    turn: int


@dataclass(frozen=True)
class TurnEnded:
    turn: int
    outcome: str
    failure: LlmFailure | None = None
    metrics: dict[str, float] = field(default_factory=dict)


EngineEvent = (
    StateChanged
    | TurnStarted
    | TextGenerated
    | AttemptFailed
    | RetryScheduled
    | ToolCalled
    | ToolFinished
    | ReplyHeard
    | TurnWithdrawn
    | TurnEnded
)
Listener = Callable[[Any], None]


class TurnGate:
    """The single place that drops any event whose turn is not the live one (late tails of old turns)."""

    def __init__(self) -> None:
        self.live: int | None = None
        self.dropped = 0
        self._listeners: Listeners[Any] = Listeners()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def publish(self, event: Any) -> bool:
        """Deliver `event` unless it belongs to a turn that is not live; True if delivered."""
        turn = getattr(event, "turn", None)
        if turn is not None and turn != self.live:
            self.dropped += 1
            return False
        self._listeners.publish(event)
        return True
